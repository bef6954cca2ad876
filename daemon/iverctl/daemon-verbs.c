/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl verbs answered by the daemon. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "iver/tpm.h"
#include "client.h"
#include "fileio.h"
#include "iver/imalog.h"
#include "iver/ledger.h"
#include "macro.h"
#include "iverctl.h"
#include "output.h"

static void print_json(json_object *o) {
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static bool has_flag(int argc, char *argv[], const char *flag) {
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], flag) == 0)
                        return true;
        return false;
}

int verb_status(int argc, char *argv[]) {
        json_object *req = request("status"), *r;
        int ret = call(req, 0, &r);
        json_object_put(req);
        if (ret)
                return ret;
        json_object_object_del(r, "ok");
        if (has_flag(argc, argv, "--json"))
                print_json(r);
        else {
                json_object_object_foreach(r, k, v) {
                        if (json_object_is_type(v, json_type_array)) {
                                printf("%-20s\n", k);
                                for (size_t i = 0; i < json_object_array_length(v); i++) {
                                        fputs("  ", stdout);
                                        print_text(stdout, json_object_to_json_string_ext(json_object_array_get_idx(v, i),
                                                                                          JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));
                                        putchar('\n');
                                }
                        } else {
                                printf("%-20s ", k);
                                print_text(stdout, json_object_get_string(v));
                                putchar('\n');
                        }
                }
        }
        json_object_put(r);
        return IVERCTL_EXIT_OK;
}

/* The ledger's own field table (lib/ledger.c), then the daemon's violations and
 * the places given up in the ledger's top set. */
typedef struct StatField {
        const char *key, *help, *unit;
} StatField;

static bool stat_field(size_t i, StatField *ret) {
        size_t n;
        const IverLedgerField *f = iver_ledger_fields(&n);
        if (i < n)
                *ret = (StatField) { f[i].name, f[i].help, f[i].unit };
        else if (i == n)
                *ret = (StatField) { "violations", "integrity violations (unstable files, failed appraisals)", "" };
        else if (i == n + 1)
                *ret = (StatField) { "top_paths_dropped", "paths that gave their place among the 1,024 followed for --top", "" };
        else
                return false;
        return true;
}

/* The ledger's counters, then the appraisal_<result> family, in Prometheus text format. */
static void write_prometheus(FILE *f, json_object *s) {
        StatField sf;
        for (size_t i = 0; stat_field(i, &sf); i++) {
                json_object *v;
                if (!json_object_object_get_ex(s, sf.key, &v))
                        continue;
                bool ns = strcmp(sf.unit, "ns") == 0;
                const char *suffix = ns ? "_seconds_total" : "_total";
                char name[128];
                snprintf(name, sizeof(name), "iverd_%.*s%s",
                         ns ? (int) (strlen(sf.key) - 3) : (int) strlen(sf.key),
                         sf.key, suffix);
                fprintf(f, "# HELP %s %s.\n# TYPE %s counter\n", name, sf.help, name);
                if (ns)
                        fprintf(f, "%s %.9f\n", name, (double) json_object_get_uint64(v) / 1e9);
                else
                        fprintf(f, "%s %" PRIu64 "\n", name, json_object_get_uint64(v));
        }
        /* appraisal_<result> counters: one family, the result as a label */
        bool family = false;
        json_object_object_foreach(s, key, val) {
                if (strncmp(key, "appraisal_", 10) != 0)
                        continue;
                if (!family)
                        fprintf(f, "# HELP iverd_appraisals_total signature appraisals of security.ima, by result.\n"
                                   "# TYPE iverd_appraisals_total counter\n");
                family = true;
                fprintf(f, "iverd_appraisals_total{result=\"%s\"} %" PRIu64 "\n", key + 10,
                        json_object_get_uint64(val));
        }
}

/* --prometheus: to stdout, or with --output built in memory, then written atomically
 * through a new temporary (O_EXCL|O_NOFOLLOW, lib/fileio.h): the textfile collector's
 * directory may belong to another user. */
static int print_prometheus(json_object *s, const char *output) {
        char *doc = NULL;
        size_t doc_len = 0;
        FILE *f = output ? open_memstream(&doc, &doc_len) : stdout;
        if (!f) {
                fprintf(stderr, "iverctl stats: %s\n", strerror(errno));
                return IVERCTL_EXIT_FAILURE;
        }
        write_prometheus(f, s);
        if (output) {
                int k = fclose(f) == 0 ? iver_write_file_atomic(output, doc, doc_len, 0644,
                                                                IVER_WRITE_SYNC | IVER_WRITE_EXACT_MODE)
                                       : -ENOMEM;
                free(doc);
                if (k < 0) {
                        fprintf(stderr, "iverctl stats: cannot write %s: %s\n", output, strerror(-k));
                        return IVERCTL_EXIT_FAILURE;
                }
        }
        return IVERCTL_EXIT_OK;
}

/* The ledger as a table, then the most remeasured files. */
static void print_stats_text(json_object *s, json_object *rows) {
        StatField sf;
        for (size_t i = 0; stat_field(i, &sf); i++) {
                json_object *v;
                if (json_object_object_get_ex(s, sf.key, &v))
                        printf("%-24s %14" PRIu64 "  %s\n", sf.key, json_object_get_uint64(v), sf.help);
        }
        if (rows && json_object_array_length(rows) > 0) {
                printf("\n%-12s %-12s %-14s %s\n", "REMEASURED", "AVOIDED", "BYTES", "PATH");
                for (size_t i = 0; i < json_object_array_length(rows); i++) {
                        json_object *row = json_object_array_get_idx(rows, i), *v;
                        json_object_object_get_ex(row, "remeasured", &v);
                        printf("%-12" PRIu64, json_object_get_uint64(v));
                        json_object_object_get_ex(row, "avoided_vs_atime", &v);
                        printf(" %-12" PRIu64, json_object_get_uint64(v));
                        json_object_object_get_ex(row, "bytes_hashed", &v);
                        printf(" %-14" PRIu64 " ", json_object_get_uint64(v));
                        json_object_object_get_ex(row, "path", &v);
                        print_path(stdout, json_object_get_string(v));
                        putchar('\n');
                }
        }
}

int verb_stats(int argc, char *argv[]) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "prometheus", no_argument, NULL, 'p' },
                { "top", required_argument, NULL, 't' },
                { "output", required_argument, NULL, 'o' },
                {},
        };
        int c, top = 0, mode = 0;
        const char *output = NULL;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'j': mode = 1; break;
                case 'p': mode = 2; break;
                case 't': top = atoi(optarg); break;
                case 'o': output = optarg; break;
                default: return IVERCTL_EXIT_USAGE;
                }
        /* --output FILE (with --prometheus): for node_exporter's textfile
         * collector, which must never read a half-written file: write
         * FILE.tmp (0644, synced) in the same directory, then rename. On any
         * failure FILE is left as it was. */
        if (output && mode != 2) {
                fprintf(stderr, "iverctl stats: --output needs --prometheus\n");
                return IVERCTL_EXIT_USAGE;
        }
        json_object *req = request("stats"), *r, *s, *rows;
        (void) json_add(&req, "top", json_object_new_int(top));
        int ret = call(req, 0, &r);
        json_object_put(req);
        if (ret)
                return ret;
        json_object_object_get_ex(r, "stats", &s);
        json_object_object_get_ex(r, "top", &rows);
        if (mode == 1)
                print_json(s);
        else if (mode == 2)
                ret = print_prometheus(s, output);
        else
                print_stats_text(s, rows);
        json_object_put(r);
        return ret;
}

int verb_list(int argc, char *argv[]) {
        json_object *req = request("list"), *r, *files;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--violations") == 0)
                        (void) json_add(&req, "violations", json_object_new_boolean(1));
                else
                        (void) json_add(&req, "prefix", json_object_new_string(argv[i]));
        int ret = call(req, 0, &r);
        json_object_put(req);
        if (ret)
                return ret;
        json_object_object_get_ex(r, "files", &files);
        for (size_t i = 0; i < json_object_array_length(files); i++) {
                json_object *f = json_object_array_get_idx(files, i), *p, *d, *st;
                json_object_object_get_ex(f, "path", &p);
                json_object_object_get_ex(f, "state", &st);
                json_object *vio;
                bool violation = json_object_object_get_ex(f, "violation", &vio) && json_object_get_boolean(vio);
                printf("%s  %-11s%s ", json_object_object_get_ex(f, "digest", &d) ? json_object_get_string(d) : "-",
                       json_object_get_string(st), violation ? " VIOLATION" : "");
                print_path(stdout, json_object_get_string(p));
                putchar('\n');
        }
        json_object_put(r);
        return IVERCTL_EXIT_OK;
}

/* The base64 field key of reply r: -EBADMSG when missing or not base64, -ENOMEM. */
static int decode_b64(json_object *r, const char *key, uint8_t **ret, size_t *ret_len) {
        json_object *s;
        if (!json_object_object_get_ex(r, key, &s) || !json_object_is_type(s, json_type_string))
                return -EBADMSG;
        return base64_decode(json_object_get_string(s), ret, ret_len);
}

/* log [--binary]: the daemon passes a read-only fd on its list and the bytes
 * written so far; iverctl copies or decodes them itself. */
int verb_log(int argc, char *argv[]) {
        bool binary = has_flag(argc, argv, "--binary");
        json_object *req = request("log"), *r;
        _cleanup_close_ int fd = -1;
        int ret = call_fd(req, 0, &r, &fd);
        json_object_put(req);
        if (ret)
                return ret;
        uint64_t end;
        ret = reply_list_bytes(r, "log", &end);
        json_object_put(r);
        if (ret)
                return ret;
        if (binary) {
                static uint8_t buf[1 << 20];
                for (uint64_t off = 0; off < end;) {
                        size_t k = (size_t) MIN(end - off, (uint64_t) sizeof(buf));
                        int e = iver_pread_full(fd, buf, k, off, NULL);
                        if (e < 0) {
                                fprintf(stderr, "iverctl log: cannot read the list at byte %" PRIu64 ": %s\n", off,
                                        e == -EIO ? "the file is shorter than the daemon said" : strerror(-e));
                                return IVERCTL_EXIT_DAEMON;
                        }
                        if (fwrite(buf, 1, k, stdout) != k)
                                return IVERCTL_EXIT_FAILURE;
                        off += k;
                }
                return IVERCTL_EXIT_OK;
        }
        _cleanup_(iver_imalog_reader_freep) IverImaReader *rd = NULL;
        int k = iver_imalog_reader_new(fd, 0, &rd);
        if (k < 0)
                return oom();
        for (size_t i = 0;; i++) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *ent = NULL;
                _cleanup_free_ char *line = NULL;
                size_t len;
                k = iver_imalog_reader_next(rd, end, &ent);
                if (k == 0)
                        break;
                if (k < 0 || (k = iver_imalog_entry_to_ascii(ent, &line, &len)) < 0) {
                        fprintf(stderr, "iverctl log: entry %zu of the list: %s\n", i, strerror(-k));
                        return IVERCTL_EXIT_DAEMON;
                }
                print_line(stdout, line, len);
        }
        return IVERCTL_EXIT_OK;
}

int verb_remeasure(int argc, char *argv[]) {
        if (argc < 2) {
                fprintf(stderr, "iverctl remeasure: no path given\n");
                return IVERCTL_EXIT_USAGE;
        }
        json_object *req = request("remeasure"), *paths = json_object_new_array(), *r;
        for (int i = 1; i < argc; i++) {
                char abs[PATH_MAX];
                const char *p = argv[i];
                if (p[0] != '/') {
                        if (!getcwd(abs, sizeof(abs)) || strlen(abs) + strlen(p) + 2 > sizeof(abs)) {
                                fprintf(stderr, "iverctl remeasure: cannot make %s absolute\n", p);
                                json_object_put(paths);
                                json_object_put(req);
                                return IVERCTL_EXIT_USAGE;
                        }
                        strcat(abs, "/");
                        strcat(abs, p);
                        p = abs;
                }
                (void) json_append(&paths, json_object_new_string(p));
        }
        (void) json_add(&req, "paths", paths); /* call() reports a NULL req: out of memory */
        int ret = call(req, 0, &r);
        json_object_put(req);
        if (!ret)
                json_object_put(r);
        return ret;
}

static int simple(const char *verb) {
        json_object *req = request(verb), *r;
        int ret = call(req, 0, &r);
        json_object_put(req);
        if (!ret)
                json_object_put(r);
        return ret;
}

int verb_rescan(int argc, char *argv[]) {
        return simple("rescan");
}

int verb_reload(int argc, char *argv[]) {
        return simple("reload");
}

static uint64_t get_u64(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && v ? json_object_get_uint64(v) : 0;
}

/* On a terminal: a progress bar from status while the daemon works, until it
 * settles or the timeout passes. Returns true when it saw it settled. */
static bool settle_progress(double timeout) {
        struct timespec t0, now;
        bool drawn = false, settled = false;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                json_object *req = request("status"), *r, *v;
                int ret = call(req, 5, &r);
                json_object_put(req);
                if (ret)
                        break;
                settled = json_object_object_get_ex(r, "settled", &v) && json_object_get_boolean(v);
                uint64_t done = get_u64(r, "scan_files_done"), est = get_u64(r, "scan_files_estimate");
                uint64_t bytes = get_u64(r, "scan_bytes_hashed"), rate = get_u64(r, "scan_files_per_sec");
                uint64_t pending = get_u64(r, "pending");
                bool eta_known = json_object_object_get_ex(r, "scan_eta_sec", &v) && v;
                uint64_t eta = eta_known ? json_object_get_uint64(v) : 0;
                json_object_put(r);
                if (settled && !drawn)
                        break;
                double frac = settled ? 1.0 : est ? (double) done / (double) est : 0.0;
                if (frac > 1.0)
                        frac = 1.0;
                char bar[31];
                int fill = (int) (frac * 30);
                for (int i = 0; i < 30; i++)
                        bar[i] = i < fill ? '#' : '.';
                bar[30] = 0;
                char etas[32] = "";
                if (!settled && eta_known)
                        snprintf(etas, sizeof(etas), "  ETA %" PRIu64 " s", eta);
                fprintf(stderr, "\r[%s] %3.0f%%  %" PRIu64 "/~%" PRIu64 " files  %.1f MB  %" PRIu64 " files/s  %" PRIu64
                        " pending%s\033[K", bar, frac * 100, done, est, (double) bytes / 1e6, rate, pending, etas);
                drawn = true;
                if (settled)
                        break;
                clock_gettime(CLOCK_MONOTONIC, &now);
                if ((double) (now.tv_sec - t0.tv_sec) + (double) (now.tv_nsec - t0.tv_nsec) / 1e9 >= timeout)
                        break;
                struct timespec d = { 0, 250 * 1000 * 1000 };
                nanosleep(&d, NULL);
        }
        if (drawn)
                fputc('\n', stderr);
        return settled;
}

int verb_settle(int argc, char *argv[]) {
        double timeout = 60;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
                        char *end;
                        timeout = strtod(argv[++i], &end);
                        if (*end || !(timeout > 0)) {
                                fprintf(stderr, "iverctl settle: bad --timeout '%s'\n", argv[i]);
                                return IVERCTL_EXIT_USAGE;
                        }
                } else {
                        fprintf(stderr, "iverctl settle: unknown argument '%s'\n", argv[i]);
                        return IVERCTL_EXIT_USAGE;
                }
        /* the progress bar only where someone looks; then the settle call
         * itself, so the answer is the same either way */
        if (isatty(STDERR_FILENO) && !getenv("IVERCTL_NO_PROGRESS")) {
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                (void) settle_progress(timeout);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                timeout -= (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
                if (timeout < 0.001)
                        timeout = 0.001;
        }
        json_object *req = request("settle"), *r;
        (void) json_add(&req, "timeout", json_object_new_double(timeout));
        int ret = call(req, timeout + 5, &r);
        json_object_put(req);
        if (!ret)
                json_object_put(r);
        return ret;
}

static int write_file(const char *dir, const char *name, const void *p, size_t len) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int r = iver_write_file_atomic(path, p, len, 0644, 0);
        if (r < 0) {
                fprintf(stderr, "iverctl quote: cannot write %s: %s\n", path, strerror(-r));
                return -1;
        }
        return 0;
}

/* The quote's parts decoded from the reply, and the list read from fd, each written to
 * its file in out. */
static int write_parts(json_object *r, int fd, const char *out) {
        static const struct {
                const char *key, *file;
        } parts[] = { { "msg", IVER_QUOTE_MSG_FILE },
                      { "sig", IVER_QUOTE_SIG_FILE },
                      { "pcrs", IVER_QUOTE_PCRS_FILE },
                      { NULL, IVER_QUOTE_LIST_FILE } };
        for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
                uint8_t *buf;
                size_t len;
                if (!parts[i].key) {
                        /* the list, up to the bytes written when the quote was answered */
                        int k = reply_list(r, fd, "quote", &buf, &len);
                        if (k)
                                return k;
                } else {
                        int k = decode_b64(r, parts[i].key, &buf, &len);
                        if (k < 0) {
                                if (k == -ENOMEM)
                                        return oom();
                                fprintf(stderr, "iverctl quote: no valid '%s' in the reply\n", parts[i].key);
                                return IVERCTL_EXIT_DAEMON;
                        }
                }
                int k = write_file(out, parts[i].file, buf, len);
                free(buf);
                if (k < 0)
                        return IVERCTL_EXIT_FAILURE;
        }
        return IVERCTL_EXIT_OK;
}

int verb_quote(int argc, char *argv[]) {
        const char *nonce = NULL, *out = NULL;
        json_object *banks = json_object_new_array();
        for (int i = 1; i + 1 < argc; i += 2)
                if (strcmp(argv[i], "--nonce") == 0)
                        nonce = argv[i + 1];
                else if (strcmp(argv[i], "--out") == 0)
                        out = argv[i + 1];
                else if (strcmp(argv[i], "--bank") == 0)
                        /* sha1, sha256, sha384 or sha512; repeatable; checked by iverd */
                        json_object_array_add(banks, json_object_new_string(argv[i + 1]));
        if (!nonce || !out) {
                fprintf(stderr, "iverctl quote: usage: quote --nonce HEX --out DIR [--bank ALGO]...\n");
                json_object_put(banks);
                return IVERCTL_EXIT_USAGE;
        }
        if (mkdir(out, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "iverctl quote: cannot create %s: %s\n", out, strerror(errno));
                json_object_put(banks);
                return IVERCTL_EXIT_FAILURE;
        }
        json_object *req = request("quote"), *r;
        (void) json_add(&req, "nonce", json_object_new_string(nonce));
        if (json_object_array_length(banks) > 0)
                (void) json_add(&req, "banks", banks);
        else
                json_object_put(banks);
        _cleanup_close_ int fd = -1;
        int ret = call_fd(req, 25, &r, &fd);
        json_object_put(req);
        if (ret)
                return ret;
        ret = write_parts(r, fd, out);
        if (ret) {
                json_object_put(r);
                return ret;
        }
        json_object *ak, *sel, *pcr;
        json_object_object_get_ex(r, "ak_pem", &ak);
        json_object_object_get_ex(r, "selection", &sel);
        json_object_object_get_ex(r, "pcr", &pcr);
        if (write_file(out, IVER_QUOTE_AK_FILE, json_object_get_string(ak), (size_t) json_object_get_string_len(ak)) < 0 ||
            write_file(out, IVER_QUOTE_NONCE_FILE, nonce, strlen(nonce)) < 0) {
                json_object_put(r);
                return IVERCTL_EXIT_FAILURE;
        }
        printf("Quote written to %s (PCR %d, selection %s).\n"
               "Verify: tpm2_checkquote -u %s/" IVER_QUOTE_AK_FILE " -m %s/" IVER_QUOTE_MSG_FILE " -s %s/" IVER_QUOTE_SIG_FILE
               " -f %s/" IVER_QUOTE_PCRS_FILE " -l %s -g sha256 -q %s\n",
               out, json_object_get_int(pcr), json_object_get_string(sel), out, out, out, out,
               json_object_get_string(sel), nonce);
        json_object_put(r);
        return IVERCTL_EXIT_OK;
}

/* explain's list entries: the entries of the served list (read from the fd
 * the daemon passed, up to list_bytes) that name path, as {index, line,
 * extended} in r's "list_entries" (the daemon does not decode the list). */
static int explain_entries(json_object *r, int fd, const char *path) {
        _cleanup_(iver_imalog_reader_freep) IverImaReader *rd = NULL;
        json_object *v;
        uint64_t bytes, extended = 0;
        bool tpm = json_object_object_get_ex(r, "list_extended", &v);
        if (tpm)
                extended = json_object_get_uint64(v);
        int k = reply_list_bytes(r, "explain", &bytes);
        if (k)
                return k;
        if (fd < 0 || iver_imalog_reader_new(fd, 0, &rd) < 0) {
                fprintf(stderr, "iverctl explain: no measurement list in the reply\n");
                return IVERCTL_EXIT_DAEMON;
        }
        json_object *entries = json_object_new_array();
        size_t len = strlen(path);
        for (uint64_t i = 0;; i++) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *ent = NULL;
                _cleanup_free_ char *line = NULL;
                size_t n;
                k = iver_imalog_reader_next(rd, bytes, &ent);
                if (k < 0) {
                        json_object_put(entries);
                        fprintf(stderr, "iverctl explain: cannot read the measurement list: %s\n", strerror(-k));
                        return k == -ENOMEM ? oom() : IVERCTL_EXIT_DAEMON;
                }
                if (k == 0)
                        break;
                if (!iver_imalog_entry_names(ent, path, len) || iver_imalog_entry_to_ascii(ent, &line, &n) < 0)
                        continue;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "index", json_object_new_uint64(i));
                json_object_object_add(o, "line", json_object_new_string_len(line, (int) (n && line[n - 1] == '\n' ? n - 1 : n)));
                json_object_object_add(o, "extended", json_object_new_boolean(tpm && i < extended));
                json_object_array_add(entries, o);
        }
        json_object_object_add(r, "list_entries", entries);
        return IVERCTL_EXIT_OK;
}

int verb_explain(int argc, char *argv[]) {
        if (argc != 2) {
                fprintf(stderr, "iverctl explain: usage: explain PATH\n");
                return IVERCTL_EXIT_USAGE;
        }
        char abs[PATH_MAX];
        const char *p = argv[1];
        if (p[0] != '/') {
                if (!getcwd(abs, sizeof(abs)) || strlen(abs) + strlen(p) + 2 > sizeof(abs))
                        return IVERCTL_EXIT_USAGE;
                strcat(abs, "/");
                strcat(abs, p);
                p = abs;
        }
        json_object *req = request("explain"), *r;
        (void) json_add(&req, "path", json_object_new_string(p));
        _cleanup_close_ int fd = -1;
        int ret = call_fd(req, 0, &r, &fd);
        json_object_put(req);
        if (ret)
                return ret;
        ret = explain_entries(r, fd, p);
        if (ret == IVERCTL_EXIT_OK) {
                json_object_object_del(r, "ok");
                json_object_object_del(r, "list_bytes");
                json_object_object_del(r, "list_extended");
                print_json(r);
        }
        json_object_put(r);
        return ret;
}
