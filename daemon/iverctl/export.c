/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl policy export --keylime: a Keylime runtime policy built from the
 * daemon's current measurement list, for a golden host.
 *
 * The document follows Keylime's RuntimePolicyType (keylime/ima/types.py,
 * version 1; EMPTY_RUNTIME_POLICY in keylime/ima/ima.py):
 *   meta       {"version": 1, "generator": 0, "timestamp": "…"}   generator is
 *              Keylime's RUNTIME_POLICY_GENERATOR integer enum (0 = Unknown:
 *              none of Keylime's own generators; a string there is not the schema)
 *   release    0
 *   digests    {path: [hex file digest, …]}   every digest the list holds for
 *              the path, in list order: the golden host's own list must pass
 *              its policy, and Keylime replays the list from its first entry
 *   excludes   []     keyrings {}     ima-buf {}     verification-keys ""
 *   ima        {"ignored_keyrings": [], "log_hash_alg": "sha1", "dm_policy": null}
 *              log_hash_alg is the template hash of the list (SHA-1 here)
 * Keylime compares the file digest as lower-case hex without the "algo:" prefix.
 *
 * The list is read in the binary format from the fd the verb "log" passes.
 * Names are stored in the kernel form (include/iver/imalog.h: space, controls
 * and bytes outside UTF-8 as '_'), the form the list itself holds and Keylime's
 * policy generators use, so every key is valid UTF-8 and matches the name a
 * verifier reads from the list. A list written before iverd used that form
 * may hold raw names: they are converted too (and reported), since a raw name
 * with a space or newline breaks Keylime's parser anyway. Violations (zero
 * digests) are not policy material and are left out. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "client.h"
#include "export.h"
#include "iver/imalog.h"
#include "fileio.h"
#include "macro.h"
#include "iverctl.h"
#include "output.h"

static void hex(const uint8_t *p, size_t n, char *out) {
        static const char x[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++)
                out[2 * i] = x[p[i] >> 4], out[2 * i + 1] = x[p[i] & 15];
        out[2 * n] = 0;
}

static int fetch_list(IverImaLog **ret) {
        json_object *req = request("log"), *r;
        _cleanup_close_ int fd = -1;
        int ret_code = call_fd(req, 0, &r, &fd);
        json_object_put(req);
        if (ret_code)
                return ret_code;
        uint8_t *buf = NULL;
        size_t len = 0, consumed = 0;
        IverImaLog *l = NULL;
        int k;
        ret_code = reply_list(r, fd, "policy export", &buf, &len);
        json_object_put(r);
        if (ret_code)
                return ret_code;
        if (iver_imalog_new(&l) < 0 || (k = iver_imalog_parse_binary(l, buf, len, &consumed)) < 0 || consumed != len) {
                fprintf(stderr, "iverctl policy export: the daemon's list does not parse\n");
                iver_imalog_free(l);
                free(buf);
                return IVERCTL_EXIT_DAEMON;
        }
        free(buf);
        *ret = l;
        return 0;
}

json_object *export_skeleton(json_object *digests) {
        json_object *root = json_object_new_object(), *meta = json_object_new_object(), *ima = json_object_new_object();
        char ts[64];
        struct timespec now;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
        /* json_add() consumes its value even after a failure: no && chains */
        (void) json_add(&meta, "version", json_object_new_int(1));
        (void) json_add(&meta, "generator", json_object_new_int(0));
        (void) json_add(&meta, "timestamp", json_object_new_string(ts));
        (void) json_add(&ima, "ignored_keyrings", json_object_new_array());
        (void) json_add(&ima, "log_hash_alg", json_object_new_string("sha1"));
        if (ima && json_object_object_add(ima, "dm_policy", NULL) < 0) { /* an explicit null */
                json_object_put(ima);
                ima = NULL;
        }
        (void) json_add(&root, "meta", meta);
        (void) json_add(&root, "release", json_object_new_int(0));
        (void) json_add(&root, "digests", digests);
        (void) json_add(&root, "excludes", json_object_new_array());
        (void) json_add(&root, "keyrings", json_object_new_object());
        (void) json_add(&root, "ima", ima);
        (void) json_add(&root, "ima-buf", json_object_new_object());
        (void) json_add(&root, "verification-keys", json_object_new_string(""));
        return root;
}

int export_write(json_object *policy, const char *out) {
        const char *s = json_object_to_json_string_ext(policy, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                       JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return oom();
        size_t len = strlen(s);
        if (!out) {
                puts(s);
                fputs("Keylime runtime policy", stderr);
                return 0;
        }
        _cleanup_free_ char *doc = malloc(len + 2);
        if (!doc)
                return oom();
        memcpy(doc, s, len);
        doc[len] = '\n';
        int r = iver_write_file_atomic(out, doc, len + 1, 0644, IVER_WRITE_SYNC);
        if (r < 0) {
                fprintf(stderr, "iverctl policy export: cannot write %s: %s\n", out, strerror(-r));
                return IVERCTL_EXIT_FAILURE;
        }
        fprintf(stderr, "Keylime runtime policy written to %s", out);
        return 0;
}

bool export_add_digest(json_object *digests, const char *name, const char *h, size_t *n_paths, size_t *n_digests) {
        json_object *arr; /* borrowed from digests */
        if (!json_object_object_get_ex(digests, name, &arr)) {
                arr = json_object_new_array();
                if (!arr || json_object_object_add(digests, name, arr) < 0) {
                        json_object_put(arr);
                        return false;
                }
                (*n_paths)++;
        }
        for (size_t j = 0; j < json_object_array_length(arr); j++)
                if (strcmp(json_object_get_string(json_object_array_get_idx(arr, j)) ?: "", h) == 0)
                        return true;
        json_object *d = json_object_new_string(h);
        if (!d || json_object_array_add(arr, d) < 0) {
                json_object_put(d);
                return false;
        }
        (*n_digests)++;
        return true;
}

/* The Keylime runtime policy of the list; NULL when out of memory (never
 * a policy with entries left out). */
static json_object *build_policy(const IverImaLog *l, size_t *ret_paths, size_t *ret_digests, size_t *ret_violations,
                                 size_t *ret_skipped) {
        json_object *digests = json_object_new_object();
        size_t n_paths = 0, n_digests = 0, n_viol = 0, n_skipped = 0;
        for (size_t i = 0; digests && i < iver_imalog_size(l); i++) {
                const IverImaEntry *e = iver_imalog_get(l, i);
                if (e->violation) {
                        n_viol++;
                        continue;
                }
                if (e->digest_len > 64)
                        continue;
                _cleanup_free_ char *name = strndup(e->path, e->path_len);
                if (!name) {
                        json_object_put(digests);
                        digests = NULL;
                        break;
                }
                if (!iver_imalog_name_is_kernel_form(name, e->path_len)) {
                        fprintf(stderr, "iverctl policy export: warning: raw name in the list, stored in the kernel form: ");
                        print_path(stderr, name);
                        fputc('\n', stderr);
                        iver_imalog_name_kernel_form(name, e->path_len);
                        n_skipped++;
                }
                char h[2 * 64 + 1];
                hex(e->digest, e->digest_len, h);
                if (!export_add_digest(digests, name, h, &n_paths, &n_digests)) {
                        json_object_put(digests);
                        digests = NULL;
                        break;
                }
        }
        json_object *root = export_skeleton(digests);
        if (!root)
                return NULL;
        *ret_paths = n_paths, *ret_digests = n_digests, *ret_violations = n_viol, *ret_skipped = n_skipped;
        return root;
}

int verb_policy_export(int argc, char *argv[]) {
        static const struct option options[] = {
                { "keylime", no_argument, NULL, 'k' },
                { "out", required_argument, NULL, 'o' },
                { "from-deb", no_argument, NULL, 'd' },
                { "base", required_argument, NULL, 'b' },
                { "root", required_argument, NULL, 'r' },
                { "algo", required_argument, NULL, 'a' },
                {},
        };
        const char *out = NULL, *base = NULL, *root = NULL, *algo = NULL;
        bool keylime = false, from_deb = false;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'k': keylime = true; break;
                case 'o': out = optarg; break;
                case 'd': from_deb = true; break;
                case 'b': base = optarg; break;
                case 'r': root = optarg; break;
                case 'a': algo = optarg; break;
                default: return IVERCTL_EXIT_USAGE;
                }
        if (!keylime || (from_deb ? optind == argc : optind != argc || base || root || algo)) {
                fprintf(stderr, "iverctl policy export: usage: policy export --keylime [--out FILE]\n"
                                "       policy export --keylime --from-deb [--base POLICY.json] [--root DIR] "
                                "[--algo ALGO] [--out FILE] FILE.deb...\n");
                return IVERCTL_EXIT_USAGE;
        }
        if (from_deb)
                return export_from_deb(argv + optind, (size_t) (argc - optind), base, root ?: "", algo, out);
        IverImaLog *l = NULL;
        int ret = fetch_list(&l);
        if (ret)
                return ret;
        size_t n_paths, n_digests, n_viol, n_skipped;
        json_object *policy = build_policy(l, &n_paths, &n_digests, &n_viol, &n_skipped);
        size_t n_entries = iver_imalog_size(l);
        iver_imalog_free(l);
        if (!policy)
                return oom();
        int r = export_write(policy, out);
        json_object_put(policy);
        if (r)
                return r;
        fprintf(stderr, ": %zu paths, %zu digests from %zu list entries", n_paths, n_digests, n_entries);
        if (n_viol)
                fprintf(stderr, "; %zu violations left out", n_viol);
        if (n_skipped)
                fprintf(stderr, "; %zu raw names converted to the kernel form", n_skipped);
        fputs(".\n", stderr);
        return IVERCTL_EXIT_OK;
}
