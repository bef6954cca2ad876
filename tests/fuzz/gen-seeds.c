/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writes the binary seed corpora of the fuzz targets with the library itself:
 *   gen-seeds DIR   → DIR/imalog-binary/, DIR/imalog-ascii/, DIR/snapshot/
 * (DIR is tests/fuzz/corpus). Deterministic: the same files every run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "iver/imalog.h"
#include "iver/snapshot.h"

/* the same fixed values as fuzz-snapshot.c */
static const uint8_t key[IVER_SNAPSHOT_KEY_SIZE] = "iverd-fuzz-snapshot-key-0123456";
static const uint8_t boot_id[16] = { 0x6b, 0x1f, 0x0e, 0x7a, 0x52, 0x33, 0x4c, 0x1d,
                                     0x9a, 0x8e, 0x27, 0x41, 0xc0, 0xde, 0xf0, 0x0d };

static void die(const char *what, int r) {
        fprintf(stderr, "gen-seeds: %s: %s\n", what, strerror(r < 0 ? -r : r));
        exit(1);
}

static void write_file(const char *dir, const char *sub, const char *name, const void *p1, size_t n1,
                       const void *p2, size_t n2) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, sub);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
        FILE *f = fopen(path, "wb");
        if (!f)
                die(path, errno);
        if ((n1 && fwrite(p1, 1, n1, f) != n1) || (n2 && fwrite(p2, 1, n2, f) != n2) || fclose(f) != 0)
                die(path, EIO);
}

static IverImaEntry *entry(IverImaTemplate t, uint32_t pcr, IverHashAlgo algo, const char *path, const uint8_t *sig,
                           size_t sig_len) {
        uint8_t digest[IVER_DIGEST_MAX];
        for (size_t i = 0; i < sizeof(digest); i++)
                digest[i] = (uint8_t) (i * 7 + strlen(path));
        IverImaEntry *e = NULL;
        int r = iver_imalog_entry_new(t, pcr, algo, digest, iver_hash_algo_size(algo), path, strlen(path), sig, sig_len,
                                      IVER_IMA_NAME_RAW, &e);
        if (r < 0)
                die("entry", r);
        return e;
}

/* Append e's binary record and ASCII line to the growing lists. */
static void add(IverImaEntry *e, uint8_t **bin, size_t *bin_len, char **asc, size_t *asc_len) {
        size_t n = iver_imalog_entry_binary_size(e);
        *bin = realloc(*bin, *bin_len + n);
        if (!*bin || iver_imalog_entry_to_binary(e, *bin + *bin_len, n) < 0)
                die("to_binary", ENOMEM);
        *bin_len += n;
        char *line;
        size_t len;
        int r = iver_imalog_entry_to_ascii(e, &line, &len);
        if (r < 0)
                die("to_ascii", r);
        *asc = realloc(*asc, *asc_len + len);
        if (!*asc)
                die("realloc", ENOMEM);
        memcpy(*asc + *asc_len, line, len);
        *asc_len += len;
        free(line);
}

static void gen_imalog(const char *dir) {
        static const uint8_t sig[] = { 0x03, 0x02, 0x04, 0x12, 0x34, 0x56, 0x78, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef };
        struct {
                const char *name;
                IverImaTemplate t;
                uint32_t pcr;
                IverHashAlgo algo;
                const char *path;
                bool sig, violation;
        } seeds[] = {
                { "ng-sha256", IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA256, "/usr/bin/ls", false, false },
                { "ng-sha1", IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA1, "/etc/passwd", false, false },
                { "ng-sha512-pcr14", IVER_IMA_TEMPLATE_NG, 14, IVER_HASH_SHA512, "/opt/app/bin/run", false, false },
                { "ng-spaces", IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA384, "/srv/a name with spaces", false, false },
                { "sig-empty", IVER_IMA_TEMPLATE_SIG, 10, IVER_HASH_SHA256, "/usr/sbin/iverd", false, false },
                { "sig-signed", IVER_IMA_TEMPLATE_SIG, 10, IVER_HASH_SHA256, "/usr/lib/libiver.so.0", true, false },
                { "violation", IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA256, "/var/tmp/open-writers", false, true },
        };
        uint8_t *bin = NULL;
        size_t bin_len = 0;
        char *asc = NULL;
        size_t asc_len = 0;
        for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
                IverImaEntry *e = NULL;
                if (seeds[i].violation) {
                        int r = iver_imalog_entry_new_violation(seeds[i].t, seeds[i].pcr, seeds[i].algo, seeds[i].path,
                                                                strlen(seeds[i].path), 0, &e);
                        if (r < 0)
                                die("violation", r);
                } else
                        e = entry(seeds[i].t, seeds[i].pcr, seeds[i].algo, seeds[i].path, seeds[i].sig ? sig : NULL,
                                  seeds[i].sig ? sizeof(sig) : 0);
                uint8_t *b1 = NULL;
                size_t b1_len = 0;
                char *a1 = NULL;
                size_t a1_len = 0;
                add(e, &b1, &b1_len, &a1, &a1_len);
                write_file(dir, "imalog-binary", seeds[i].name, b1, b1_len, NULL, 0);
                write_file(dir, "imalog-ascii", seeds[i].name, a1, a1_len, NULL, 0);
                free(b1);
                free(a1);
                add(e, &bin, &bin_len, &asc, &asc_len);
                iver_imalog_entry_free(e);
        }
        write_file(dir, "imalog-binary", "list", bin, bin_len, NULL, 0);
        write_file(dir, "imalog-ascii", "list", asc, asc_len, NULL, 0);
        /* a torn tail: the list with its last record cut short */
        write_file(dir, "imalog-binary", "list-torn", bin, bin_len - 5, NULL, 0);
        write_file(dir, "imalog-ascii", "list-torn", asc, asc_len - 1, NULL, 0);
        free(bin);
        free(asc);
}

static void gen_snapshot(const char *dir) {
        IverCache *c = NULL;
        int r = iver_cache_new(&c);
        if (r < 0)
                die("cache", r);
        static const char *const paths[] = { "/usr/bin/ls", "/etc/passwd", "/opt/app/bin/run", "/srv/a name", "/tmp/x" };
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
                IverEntry e = {
                        .id = { .dev = 0x800001, .ino = 1000 + i, .gen = i * 3 },
                        .source = (IverCookieSource) (i % _IVER_COOKIE_MAX),
                        .version = i,
                        .size = 4096 * i,
                        .mtime = 1700000000000000000LL,
                        .ctime = 1700000000000000000LL,
                        .mode = 0100755,
                        .flags = i == 4 ? IVER_ENTRY_UNSTABLE : IVER_ENTRY_MEASURED | (i == 2 ? IVER_ENTRY_RACY : 0),
                        .shadow_atime = (uint32_t) (0x1111 * i),
                        .shadow_mtime = (uint32_t) (0x2222 * i),
                };
                if (e.flags & IVER_ENTRY_MEASURED) {
                        e.digest.algo = i == 1 ? IVER_HASH_SHA1 : i == 3 ? IVER_HASH_SHA512 : IVER_HASH_SHA256;
                        e.digest.len = (uint8_t) iver_hash_algo_size(e.digest.algo);
                        memset(e.digest.bytes, (int) (0x40 + i), e.digest.len);
                }
                r = iver_cache_put(c, &e, paths[i], strlen(paths[i]), NULL);
                if (r < 0)
                        die("cache_put", r);
        }
        IverLedgerCounters counters = { .checks = 42, .first_seen = 5, .remeasured = 3, .bytes_hashed = 123456 };
        uint8_t *buf = NULL;
        size_t len = 0;
        r = iver_snapshot_encode(c, &counters, boot_id, key, &buf, &len);
        if (r < 0)
                die("encode", r);
        static const uint8_t raw = 0, mac = 1, mac_hdr = 3;
        write_file(dir, "snapshot", "raw", &raw, 1, buf, len);
        write_file(dir, "snapshot", "mac", &mac, 1, buf, len - 32);
        write_file(dir, "snapshot", "mac-header", &mac_hdr, 1, buf, len - 32);
        free(buf);

        /* an empty cache */
        IverCache *empty = NULL;
        if (iver_cache_new(&empty) < 0 || iver_snapshot_encode(empty, &counters, boot_id, key, &buf, &len) < 0)
                die("encode empty", ENOMEM);
        write_file(dir, "snapshot", "empty-raw", &raw, 1, buf, len);
        write_file(dir, "snapshot", "empty-mac", &mac, 1, buf, len - 32);
        free(buf);
        iver_cache_free(empty);
        iver_cache_free(c);
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: gen-seeds CORPUS-DIR\n");
                return 2;
        }
        gen_imalog(argv[1]);
        gen_snapshot(argv[1]);
        return 0;
}
