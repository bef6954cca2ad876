/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helper for tests/integration/test-tpm.sh: drives lib/imalog*.c, lib/tpm.c,
 * lib/replay.c and lib/quote-verify.c against a real (software) TPM.
 *
 *   itest-tpm extend  TCTI PCR DIR N      write-ahead N entries to DIR's list, extend each
 *   itest-tpm append  DIR PCR N TAG       only write N more entries (a crash before extending)
 *   itest-tpm resume  TCTI PCR DIR        restart logic: PCR → matching prefix → extend the rest
 *   itest-tpm replay  DIR PCR             print the replay: "sha1 HEX" / "sha256 HEX"
 *   itest-tpm pcrread TCTI PCR            print the PCR through lib/tpm.c
 *   itest-tpm quote   TCTI PCR NONCE OUT  quote into OUT (+ measurements.bin from $LIST)
 *   itest-tpm verify  DIR NONCE           lib/quote-verify.c: exit 0 accepted, 1 rejected
 *   itest-tpm bench   TCTI PCR N          extends/s of N extends
 *   itest-tpm drop    FILE I              remove record I from a binary list file
 *   itest-tpm mutate  DIR NONCE           every flipped bit / truncation of quote.msg,
 *                                         quote.sig, pcrs.out must be rejected
 *   itest-tpm outage  TCTI PCR DIR STOP START N
 *                     measure N entries, running the shell commands STOP at N/3 and
 *                     START at 2N/3 (kill / restart the TPM), with the in-order queue
 *                     a daemon keeps: write ahead, extend while the TPM answers, and
 *                     after a reconnect resume at the prefix the PCR holds
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iver/imalog.h"
#include "iver/tpm.h"

static int die(int r, const char *what, const IverTpm *t) {
        fprintf(stderr, "itest-tpm: %s: %s%s%s\n", what, strerror(-r), t && iver_tpm_last_error(t) ? " — " : "",
                t && iver_tpm_last_error(t) ? iver_tpm_last_error(t) : "");
        exit(2);
}

static void hex(const uint8_t *b, size_t n, char *out) {
        for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", b[i]);
}

static size_t unhex(const char *s, uint8_t *out, size_t max) {
        size_t n = strlen(s) / 2;
        if (n > max)
                exit(2);
        for (size_t i = 0; i < n; i++)
                if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
                        exit(2);
        return n;
}

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static IverTpm *tpm_open(const char *tcti) {
        IverTpm *t = NULL;
        int r = iver_tpm_new(tcti, &t);
        if (r < 0)
                die(r, "iver_tpm_new", NULL);
        r = iver_tpm_connect(t);
        if (r < 0)
                die(r, "connect", t);
        return t;
}

static int extend_entry(IverTpm *t, const IverImaEntry *e) {
        IverDigest d[4];
        size_t n = 0;
        for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++)
                if (iver_tpm_banks(t) & IVER_TPM_BANK(a)) {
                        int r = iver_imalog_entry_bank_digest(e, a, &d[n++]);
                        if (r < 0)
                                return r;
                }
        return iver_tpm_extend(t, e->pcr, d, n);
}

/* Entry i of a test run: weird names, an ima-sig with a signature, a
 * violation, and duplicates (which dedup must drop). */
static IverImaEntry *make_entry(unsigned pcr, unsigned i, const char *tag) {
        IverImaEntry *e = NULL;
        uint8_t digest[32], sig[72];
        char path[128];
        int r;

        memset(digest, 0, sizeof(digest));
        snprintf((char *) digest, sizeof(digest), "%s-%u", tag, i % 50 == 49 ? 0 : i);  /* every 50th repeats */
        switch (i % 7) {
        case 1:
                snprintf(path, sizeof(path), "/tmp/with space/%s %u", tag, i);
                break;
        case 2:
                snprintf(path, sizeof(path), "/tmp/\xff\xfe-not-utf8-%s-%u", tag, i);
                break;
        case 3:
                snprintf(path, sizeof(path), "/tmp/new\nline-%s-%u", tag, i);
                break;
        default:
                snprintf(path, sizeof(path), "/usr/bin/%s-%u", tag, i % 50 == 49 ? 0 : i);
        }
        if (i == 5) {
                r = iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, pcr, IVER_HASH_SHA256, path, strlen(path), 0,
                                                    &e);
        } else if (i == 4 || i == 11) { /* ima-sig: one with a (fake) signature, one without */
                sig[0] = 0x03;
                sig[1] = 0x02;
                for (size_t k = 2; k < sizeof(sig); k++)
                        sig[k] = (uint8_t) (k * i);
                r = iver_imalog_entry_new(IVER_IMA_TEMPLATE_SIG, pcr, IVER_HASH_SHA256, digest, 32, path, strlen(path),
                                          i == 4 ? sig : NULL, sizeof(sig), 0, &e);
        } else
                r = iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, pcr, IVER_HASH_SHA256, digest, 32, path, strlen(path),
                                          NULL, 0, 0, &e);
        if (r < 0)
                die(r, "entry_new", NULL);
        return e;
}

/* Open the live list in dir and read what it holds back whole (*l). */
static int open_list(const char *dir, IverImaFile **f, IverImaLog **l, size_t *trunc) {
        char p[PATH_MAX];
        int r = iver_imalog_file_open(dir, f, trunc);
        if (r < 0)
                return r;
        snprintf(p, sizeof(p), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        return iver_imalog_load(p, l);
}

/* Write-ahead N entries (with dedup); extend them if t. */
static void write_entries(IverTpm *t, unsigned pcr, const char *dir, unsigned n, const char *tag) {
        IverImaFile *f = NULL;
        IverImaLog *l = NULL;
        size_t trunc = 0;
        unsigned added = 0, dups = 0;
        double t0, spent = 0;
        int r;

        r = open_list(dir, &f, &l, &trunc);
        if (r < 0)
                die(r, "file_open", NULL);
        for (unsigned i = 0; i < n; i++) {
                IverImaEntry *e = make_entry(pcr, i, tag);
                if (iver_imalog_file_contains(f, e) > 0) {
                        iver_imalog_entry_free(e);
                        dups++;
                        continue;
                }
                r = iver_imalog_file_append(f, e);              /* write-ahead … */
                if (r < 0)
                        die(r, "file_append", NULL);
                if (t) {
                        t0 = now();
                        r = extend_entry(t, e);                 /* … then extend */
                        spent += now() - t0;
                        if (r < 0)
                                die(r, "extend", t);
                }
                r = iver_imalog_push(l, e);
                if (r < 0)
                        die(r, "imalog_push", NULL);
                added++;
        }
        printf("entries added %u, duplicates dropped %u, list now %zu%s", added, dups, iver_imalog_size(l),
               t ? "" : "\n");
        if (t)
                printf(", extend %.1f µs each (%.0f extends/s)\n", spent / added * 1e6, added / spent);
        iver_imalog_free(l);
        iver_imalog_file_free(f);
}

static void print_replay(const IverImaLog *l, unsigned pcr) {
        IverHashAlgo banks[] = { IVER_HASH_SHA1, IVER_HASH_SHA256 };
        for (size_t b = 0; b < 2; b++) {
                IverDigest d;
                char h[2 * IVER_DIGEST_MAX + 1];
                int r = iver_imalog_replay(l, SIZE_MAX, pcr, banks[b], &d);
                if (r < 0)
                        die(r, "replay", NULL);
                hex(d.bytes, d.len, h);
                printf("%s %s\n", iver_hash_algo_to_string(banks[b]), h);
        }
}

int main(int argc, char **argv) {
        int r;

        if (argc < 2)
                return 2;
        const char *cmd = argv[1];

        if (strcmp(cmd, "extend") == 0 && argc == 6) {
                IverTpm *t = tpm_open(argv[2]);
                write_entries(t, atoi(argv[3]), argv[4], atoi(argv[5]), "x");
                iver_tpm_free(t);
                return 0;
        }
        if (strcmp(cmd, "append") == 0 && argc == 6) {
                write_entries(NULL, atoi(argv[3]), argv[2], atoi(argv[4]), argv[5]);
                return 0;
        }
        if (strcmp(cmd, "resume") == 0 && argc == 5) {
                IverTpm *t = tpm_open(argv[2]);
                unsigned pcr = atoi(argv[3]);
                IverImaFile *f = NULL;
                IverImaLog *l = NULL;
                IverDigest v[4];
                size_t nv = 0, prefix, trunc;

                r = open_list(argv[4], &f, &l, &trunc);
                if (r < 0)
                        die(r, "file_open", NULL);
                for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++)
                        if (iver_tpm_banks(t) & IVER_TPM_BANK(a)) {
                                r = iver_tpm_pcr_read(t, pcr, a, &v[nv++]);
                                if (r < 0)
                                        die(r, "pcr_read", t);
                        }
                r = iver_imalog_match_prefix(l, pcr, v, nv, &prefix);
                if (r == -ENOENT) {
                        printf("desynced: no prefix of %zu entries matches PCR %u\n", iver_imalog_size(l), pcr);
                        return 1;
                }
                if (r < 0)
                        die(r, "match_prefix", NULL);
                printf("PCR %u holds %zu of %zu entries; extending %zu\n", pcr, prefix, iver_imalog_size(l),
                       iver_imalog_size(l) - prefix);
                for (size_t i = prefix; i < iver_imalog_size(l); i++) {
                        r = extend_entry(t, iver_imalog_get(l, i));
                        if (r < 0)
                                die(r, "extend", t);
                }
                iver_imalog_free(l);
                iver_imalog_file_free(f);
                iver_tpm_free(t);
                return 0;
        }
        if (strcmp(cmd, "replay") == 0 && argc == 4) {
                char p[4096];
                IverImaLog *l = NULL;
                snprintf(p, sizeof(p), "%s/%s", argv[2], IVER_IMA_BINARY_FILE);
                r = iver_imalog_load(p, &l);
                if (r < 0)
                        die(r, "load", NULL);
                print_replay(l, atoi(argv[3]));
                /* the ASCII twin must describe the same list: parse it (it holds a
                 * name with '\n', which must make the ASCII parse fail, as documented) */
                IverImaLog *la = NULL;
                snprintf(p, sizeof(p), "%s/%s", argv[2], IVER_IMA_ASCII_FILE);
                r = iver_imalog_load(p, &la);
                fprintf(stderr, "ascii twin: %s\n",
                        r == -EBADMSG ? "refused by the ASCII parser (a name holds '\\n': expected, see imalog.h)" :
                        r < 0 ? strerror(-r) : "parsed");
                iver_imalog_free(la);
                iver_imalog_free(l);
                return 0;
        }
        if (strcmp(cmd, "pcrread") == 0 && argc == 4) {
                IverTpm *t = tpm_open(argv[2]);
                for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++)
                        if (iver_tpm_banks(t) & IVER_TPM_BANK(a)) {
                                IverDigest d;
                                char h[2 * IVER_DIGEST_MAX + 1];
                                r = iver_tpm_pcr_read(t, atoi(argv[3]), a, &d);
                                if (r < 0)
                                        die(r, "pcr_read", t);
                                hex(d.bytes, d.len, h);
                                printf("%s %s\n", iver_hash_algo_to_string(a), h);
                        }
                iver_tpm_free(t);
                return 0;
        }
        if (strcmp(cmd, "quote") == 0 && argc == 6) {
                IverTpm *t = tpm_open(argv[2]);
                IverTpmQuote *q = NULL;
                uint8_t nonce[64];
                size_t nn = unhex(argv[4], nonce, sizeof(nonce));
                double t0 = now();
                r = iver_tpm_quote(t, 1u << atoi(argv[3]), IVER_TPM_BANK(IVER_HASH_SHA1) | IVER_TPM_BANK(IVER_HASH_SHA256),
                                   nonce, nn, &q);
                if (r < 0)
                        die(r, "quote", t);
                double dt = now() - t0;
                r = iver_tpm_quote_write(q, argv[5]);
                if (r < 0)
                        die(r, "quote_write", NULL);
                printf("selection %s, quote %.2f ms (first quote, AK created)\n", q->selection, dt * 1e3);
                iver_tpm_quote_free(q);
                t0 = now();
                r = iver_tpm_quote(t, 1u << atoi(argv[3]), 0, nonce, nn, &q);
                if (r < 0)
                        die(r, "quote", t);
                printf("second quote (all banks: %s) %.2f ms\n", q->selection, (now() - t0) * 1e3);
                iver_tpm_quote_free(q);
                iver_tpm_free(t);
                return 0;
        }
        if (strcmp(cmd, "verify") == 0 && argc == 4) {
                IverQuoteReport rep;
                uint8_t nonce[64];
                size_t nn = unhex(argv[3], nonce, sizeof(nonce));
                r = iver_quote_verify_dir(argv[2], NULL, nonce, nn, &rep);
                if (r < 0)
                        die(r, "verify", NULL);
                if (rep.failed) {
                        printf("REJECTED (0x%x): %s\n", rep.failed, rep.message);
                        return 1;
                }
                printf("VERIFIED: signature, nonce, PCR digest; list replay matches %zu of %zu entries\n",
                       rep.matched_prefix, rep.list_entries);
                return 0;
        }
        if (strcmp(cmd, "bench") == 0 && argc == 5) {
                IverTpm *t = tpm_open(argv[2]);
                unsigned n = atoi(argv[4]);
                IverDigest d[4];
                size_t nd = 0;
                for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++)
                        if (iver_tpm_banks(t) & IVER_TPM_BANK(a))
                                d[nd++] = (IverDigest) { .algo = a, .len = iver_hash_algo_size(a) };
                double t0 = now();
                for (unsigned i = 0; i < n; i++) {
                        d[0].bytes[0] = i;
                        r = iver_tpm_extend(t, atoi(argv[3]), d, nd);
                        if (r < 0)
                                die(r, "extend", t);
                }
                double dt = now() - t0;
                printf("%u extends (%zu banks each) in %.3f s: %.0f extends/s\n", n, nd, dt, n / dt);
                iver_tpm_free(t);
                return 0;
        }
        if (strcmp(cmd, "drop") == 0 && argc == 4) {
                static uint8_t buf[1 << 24];
                FILE *f = fopen(argv[2], "rb");
                size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0, off = 0;
                unsigned skip = atoi(argv[3]);
                if (f)
                        fclose(f);
                f = fopen(argv[2], "wb");
                if (!f)
                        die(-errno, "open", NULL);
                for (unsigned i = 0; off < n; i++) {
                        IverImaEntry *e = NULL;
                        r = iver_imalog_entry_from_binary(buf + off, n - off, &e);
                        if (r < 0)
                                die(r, "decode", NULL);
                        if (i != skip)
                                fwrite(buf + off, 1, r, f);
                        off += r;
                        iver_imalog_entry_free(e);
                }
                fclose(f);
                return 0;
        }
        if (strcmp(cmd, "outage") == 0 && argc == 8) {
                unsigned pcr = atoi(argv[3]), n = atoi(argv[7]), errors = 0, reconnects = 0, extends = 0;
                IverImaFile *f = NULL;
                IverImaLog *l = NULL;
                IverTpm *t = NULL;
                size_t next = SIZE_MAX, trunc;  /* next entry to extend; unknown until connected */
                int last_err = 0;

                r = open_list(argv[4], &f, &l, &trunc);
                if (r < 0)
                        die(r, "file_open", NULL);
                r = iver_tpm_new(argv[2], &t);
                if (r < 0)
                        die(r, "tpm_new", NULL);
                for (unsigned i = 0; i < n; i++) {
                        if (i == n / 3 && system(argv[5]) != 0)
                                die(-EIO, "stop command", NULL);
                        if (i == 2 * n / 3 && system(argv[6]) != 0)
                                die(-EIO, "start command", NULL);
                        IverImaEntry *e = make_entry(pcr, i, "outage");
                        if (iver_imalog_file_contains(f, e) > 0) {
                                iver_imalog_entry_free(e);
                                continue;
                        }
                        r = iver_imalog_file_append(f, e);      /* write-ahead */
                        if (r < 0)
                                die(r, "file_append", NULL);
                        r = iver_imalog_push(l, e);
                        if (r < 0)
                                die(r, "imalog_push", NULL);

                        if (!iver_tpm_is_connected(t)) {
                                r = iver_tpm_connect(t);
                                if (r < 0) {
                                        if (errors == 0 || last_err != -ENOTCONN)
                                                printf("connect failed at entry %u: %s (%s); retrying with every entry\n",
                                                       i, strerror(-r), iver_tpm_last_error(t));
                                        errors++;
                                        last_err = -ENOTCONN;   /* report the first failed connect only */
                                        continue;               /* the entry stays pending */
                                }
                                /* Where did the PCR get? Never extend an entry twice. */
                                IverDigest v[4];
                                size_t nv = 0;
                                for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++)
                                        if (iver_tpm_banks(t) & IVER_TPM_BANK(a)) {
                                                r = iver_tpm_pcr_read(t, pcr, a, &v[nv++]);
                                                if (r < 0)
                                                        die(r, "pcr_read", t);
                                        }
                                r = iver_imalog_match_prefix(l, pcr, v, nv, &next);
                                if (r < 0) {
                                        printf("desynced after reconnect\n");
                                        return 1;
                                }
                                printf("%s at entry %u: PCR holds %zu of %zu entries\n",
                                       reconnects++ ? "reconnected" : "connected", i, next, iver_imalog_size(l));
                        }
                        while (next < iver_imalog_size(l)) {
                                r = extend_entry(t, iver_imalog_get(l, next));
                                if (r < 0) {
                                        errors++;
                                        printf("extend of entry %zu failed: %s (%s); entries stay pending\n", next,
                                               strerror(-r), iver_tpm_last_error(t));
                                        last_err = r;
                                        iver_tpm_disconnect(t);
                                        break;
                                }
                                extends++;
                                next++;
                        }
                }
                printf("outage run: list %zu entries, %u extends, %u failed attempts (last: %s), %zu pending\n",
                       iver_imalog_size(l), extends, errors, last_err ? strerror(-last_err) : "none",
                       iver_imalog_size(l) - (next == SIZE_MAX ? 0 : next));
                iver_tpm_free(t);
                iver_imalog_free(l);
                iver_imalog_file_free(f);
                return 0;
        }
        if (strcmp(cmd, "mutate") == 0 && argc == 4) {
                const char *names[] = { IVER_QUOTE_AK_FILE, IVER_QUOTE_MSG_FILE, IVER_QUOTE_SIG_FILE,
                                        IVER_QUOTE_PCRS_FILE, IVER_QUOTE_LIST_FILE };
                static uint8_t buf[5][1 << 22];
                size_t len[5];
                uint8_t nonce[64];
                size_t nn = unhex(argv[3], nonce, sizeof(nonce));
                IverQuoteReport rep;
                unsigned tried = 0;

                for (size_t k = 0; k < 5; k++) {
                        char p[4096];
                        snprintf(p, sizeof(p), "%s/%s", argv[2], names[k]);
                        FILE *f = fopen(p, "rb");
                        if (!f)
                                die(-errno, names[k], NULL);
                        len[k] = fread(buf[k], 1, sizeof(buf[k]), f);
                        fclose(f);
                }
#define VERIFY() iver_quote_verify((const char *) buf[0], len[0], buf[1], len[1], buf[2], len[2], buf[3], len[3], \
                                   nonce, nn, buf[4], len[4], &rep)
                r = VERIFY();
                if (r < 0 || rep.failed)
                        die(-EBADMSG, "unmutated bundle rejected", NULL);
                for (size_t k = 1; k <= 3; k++) {
                        for (size_t i = 0; i < len[k]; i++)
                                for (unsigned bit = 0; bit < 8; bit++) {
                                        buf[k][i] ^= 1u << bit;
                                        r = VERIFY();
                                        buf[k][i] ^= 1u << bit;
                                        tried++;
                                        if (r < 0 || rep.failed == 0) {
                                                fprintf(stderr, "%s: flip of bit %u at %zu accepted\n", names[k], bit, i);
                                                return 1;
                                        }
                                }
                        size_t full = len[k];
                        for (len[k] = 0; len[k] < full; len[k]++, tried++) {
                                r = VERIFY();
                                if (r < 0 || rep.failed == 0) {
                                        fprintf(stderr, "%s: truncation to %zu accepted\n", names[k], len[k]);
                                        return 1;
                                }
                        }
                }
                printf("mutations: %u variants of quote.msg / quote.sig / pcrs.out, all rejected\n", tried);
                return 0;
        }
        fprintf(stderr, "itest-tpm: bad arguments\n");
        return 2;
}
