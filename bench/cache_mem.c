/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cache memory: resident bytes per cached file at N files (a /usr-like tree:
 * ~24 files per directory, directories three deep), and the rename-over churn
 * soak (dpkg-style: new inode written under NAME.dpkg-new, renamed over NAME).
 *
 *   bench-cache_mem [N]            RSS per file at N files (default 1000000)
 *   bench-cache_mem --churn F R    F files, R rename-over replacements
 *
 * Prints "key value" lines that bench/run (bench/benchlib/bulkmem.py) parses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iver/cache.h"

static long rss_kib(void) {
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        long v = -1;
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "VmRSS:", 6) == 0)
                        v = strtol(line + 6, NULL, 10);
        fclose(f);
        return v;
}

/* directory d, file i: "/usr/lib/pkg-<d/40>/sub-<d%40>/" + "libname-<i>.so.1" */
static int dir_of(char *buf, size_t n, uint32_t d) {
        return snprintf(buf, n, "/usr/lib/x86_64-linux-gnu/pkg-%u/sub-%u/", d / 40, d % 40);
}

static int path_of(char *buf, size_t n, uint32_t i, const char *suffix) {
        int l = dir_of(buf, n, i / 24);
        return l + snprintf(buf + l, n - (size_t) l, "libname-%u.so.1%s", i, suffix);
}

static IverEntry mkentry(uint64_t ino, uint8_t seed) {
        IverEntry e = {
                .id = { .dev = 1, .ino = ino, .gen = ino * 31 },
                .source = IVER_COOKIE_CTIME,
                .size = ino,
                .mtime = (int64_t) ino,
                .ctime = (int64_t) ino,
                .mode = 0100644,
                .flags = IVER_ENTRY_MEASURED,
                .digest = { .algo = IVER_HASH_SHA256, .len = 32 },
        };
        memset(e.digest.bytes, seed, 32);
        return e;
}

static int fill(IverCache *c, uint32_t n, size_t *ret_path_bytes, size_t *ret_unique_bytes) {
        char p[512];
        size_t full = 0, unique = 0;
        for (uint32_t i = 0; i < n; i++) {
                IverEntry e = mkentry(i + 100, 1);
                int l = path_of(p, sizeof(p), i, "");
                if (iver_cache_put(c, &e, p, (size_t) l, NULL) < 0)
                        return -1;
                full += (size_t) l;
                int dl = dir_of(p, sizeof(p), i / 24);
                unique += (size_t) (l - dl) + (i % 24 == 0 ? (size_t) dl : 0);
        }
        *ret_path_bytes = full;
        *ret_unique_bytes = unique;
        return 0;
}

static int per_file(uint32_t n) {
        IverCache *c = NULL;
        size_t full, unique;
        long before = rss_kib();
        if (iver_cache_new(&c) < 0 || fill(c, n, &full, &unique) < 0)
                return 1;
        long after = rss_kib();
        double rss = (double) (after - before) * 1024.0;
        printf("files %u\n", n);
        printf("rss_bytes %.0f\n", rss);
        printf("rss_per_file %.1f\n", rss / n);
        printf("path_bytes_per_file %.1f\n", (double) full / n);
        printf("unique_path_bytes_per_file %.1f\n", (double) unique / n);
        printf("rss_per_file_beyond_unique_paths %.1f\n", (rss - (double) unique) / n);
        printf("rss_per_file_beyond_full_paths %.1f\n", (rss - (double) full) / n);
        printf("path_records_per_file %.1f\n", (double) iver_cache_path_bytes(c) / n);
        printf("rss_per_file_beyond_path_records %.1f\n", (rss - (double) iver_cache_path_bytes(c)) / n);
        printf("cache_memory_per_file %.1f\n", (double) iver_cache_memory(c) / n);
        iver_cache_free(c);
        return 0;
}

static int churn(uint32_t files, uint32_t rounds) {
        IverCache *c = NULL;
        char p[512], tmp[512];
        size_t full, unique;
        if (iver_cache_new(&c) < 0 || fill(c, files, &full, &unique) < 0)
                return 1;
        uint64_t next_ino = 10000000;
        /* one warm-up pass so free lists and arenas reach their working size */
        long start = 0;
        for (uint32_t r = 0; r < rounds + files; r++) {
                if (r == files)
                        start = rss_kib();
                uint32_t i = r % files;
                IverEntry e = mkentry(next_ino++, (uint8_t) r);
                int tl = path_of(tmp, sizeof(tmp), i, ".dpkg-new");
                int l = path_of(p, sizeof(p), i, "");
                uint32_t idx;
                if (iver_cache_put(c, &e, tmp, (size_t) tl, &idx) < 0 || /* measured under its temporary name */
                    iver_cache_put(c, &e, p, (size_t) l, &idx) < 0)      /* renamed over the old file */
                        return 1;
        }
        long end = rss_kib();
        if (iver_cache_size(c) != files)
                return 2;
        printf("churn_files %u\n", files);
        printf("churn_replacements %u\n", rounds);
        printf("churn_rss_start_kib %ld\n", start);
        printf("churn_rss_end_kib %ld\n", end);
        printf("churn_rss_growth_pct %.2f\n", 100.0 * (double) (end - start) / (double) start);
        iver_cache_free(c);
        return 0;
}

int main(int argc, char *argv[]) {
        if (argc > 1 && strcmp(argv[1], "--churn") == 0) {
                uint32_t f = argc > 2 ? (uint32_t) strtoul(argv[2], NULL, 10) : 500;
                uint32_t r = argc > 3 ? (uint32_t) strtoul(argv[3], NULL, 10) : 100000;
                return churn(f ?: 500, r);
        }
        return per_file(argc > 1 ? (uint32_t) strtoul(argv[1], NULL, 10) : 1000000);
}
