/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/check_cost: what an unchanged-file check costs next to a bare statx,
 * how fast version-stable hashing is next to `openssl dgst -sha256`, and how
 * many bytes the cache needs per entry at 1M entries. Prints figures; it is
 * not a test.
 *
 *   build/bench/bench-check_cost [DIR]      (DIR: where to put the 1 GiB file, default /var/tmp)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iver/iver.h"

#define ROUNDS 21
#define PER_ROUND 20000

static int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, int n) {
        qsort(v, n, sizeof(*v), cmp_i64);
        return v[n / 2];
}

static void hit_vs_statx(const char *path) {
        IverContextOptions opt = { .version_mode = IVER_VERSION_AUTO, .algo = IVER_HASH_SHA256 };
        IverContext *ctx = NULL;
        IverCheckOutcome o;
        IverPending p;
        int64_t t_statx[ROUNDS], t_hit[ROUNDS];

        if (iver_context_new(&opt, &ctx) < 0 || iver_check(ctx, AT_FDCWD, path, &o) < 0) {
                fprintf(stderr, "cannot measure %s\n", path);
                exit(1);
        }
        /* rounds interleave the two so drift and frequency changes hit both */
        for (int r = 0; r < ROUNDS; r++) {
                struct statx sx;
                int64_t t0 = iver_monotonic_ns();
                for (int i = 0; i < PER_ROUND; i++)
                        if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &sx) < 0)
                                exit(1);
                int64_t t1 = iver_monotonic_ns();
                for (int i = 0; i < PER_ROUND; i++)
                        if (iver_check_begin(ctx, AT_FDCWD, path, IVER_HASH_SHA256, &p, &o) != 0 ||
                            o.result != IVER_CHECK_HIT)
                                exit(2);
                int64_t t2 = iver_monotonic_ns();
                t_statx[r] = (t1 - t0) / PER_ROUND;
                t_hit[r] = (t2 - t1) / PER_ROUND;
        }
        int64_t ms = median(t_statx, ROUNDS), mh = median(t_hit, ROUNDS);
        printf("unchanged-file check (cache hit)   %6lld ns   median of %d rounds x %d\n", (long long) mh, ROUNDS,
               PER_ROUND);
        printf("bare statx by path                 %6lld ns\n", (long long) ms);
        printf("ratio hit / statx                  %6.2f     (target <= 1.3)\n", (double) mh / (double) ms);
        iver_context_free(ctx);
}

static double openssl_dgst_mbs(const char *path, uint64_t size) {
        double best = 0;
        for (int i = 0; i < 3; i++) {
                int64_t t0 = iver_monotonic_ns();
                pid_t pid = fork();
                if (pid == 0) {
                        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                        dup2(null, 1);
                        execlp("openssl", "openssl", "dgst", "-sha256", path, (char *) NULL);
                        _exit(127);
                }
                int status;
                waitpid(pid, &status, 0);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        return -1;
                double mbs = (double) size / 1e6 / ((double) (iver_monotonic_ns() - t0) / 1e9);
                if (mbs > best)
                        best = mbs;
        }
        return best;
}

static void throughput(const char *dir) {
        char path[4096];
        const uint64_t size = 1ULL << 30;
        snprintf(path, sizeof(path), "%s/iver-bench-1g.bin", dir);

        int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0) {
                perror(path);
                exit(1);
        }
        static uint8_t buf[1 << 20];
        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t) (i * 2654435761U >> 13);
        for (uint64_t off = 0; off < size; off += sizeof(buf))
                if (write(fd, buf, sizeof(buf)) != (ssize_t) sizeof(buf)) {
                        perror("write");
                        exit(1);
                }
        close(fd);

        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        double best = 0;
        (void) iver_measure(AT_FDCWD, path, &o, &m); /* warm the page cache */
        for (int i = 0; i < 3; i++) {
                int64_t t0 = iver_monotonic_ns();
                if (iver_measure(AT_FDCWD, path, &o, &m) < 0 || m.status != IVER_MEASURE_STABLE)
                        exit(3);
                double mbs = (double) size / 1e6 / ((double) (iver_monotonic_ns() - t0) / 1e9);
                if (mbs > best)
                        best = mbs;
        }
        double ossl = openssl_dgst_mbs(path, size);
        printf("version-stable hash, 1 GiB cached  %6.0f MB/s (best of 3, read lease held)\n", best);
        printf("openssl dgst -sha256, same file    %6.0f MB/s (best of 3, incl. process start)\n", ossl);
        printf("ratio iverd / openssl              %6.2f     (target >= 1.0)\n", best / ossl);
        unlink(path);
}

static void cache_bytes(void) {
        IverCache *c = NULL;
        char path[128];
        const uint32_t n = 1000000;
        if (iver_cache_new(&c) < 0)
                exit(1);
        for (uint32_t i = 0; i < n; i++) {
                IverEntry e = {
                        .id = { .dev = 1, .ino = i + 100, .gen = i * 31ULL },
                        .source = IVER_COOKIE_CTIME,
                        .flags = IVER_ENTRY_MEASURED,
                        .digest = { .algo = IVER_HASH_SHA256, .len = 32 },
                };
                int len = snprintf(path, sizeof(path), "/usr/share/doc/package-%u/file-%u", i / 50, i);
                if (iver_cache_put(c, &e, path, (size_t) len, NULL) < 0)
                        exit(4);
        }
        size_t total = iver_cache_memory(c), paths = iver_cache_path_bytes(c);
        printf("cache at 1M entries (sha256)       %6.1f bytes/entry + %.1f bytes/entry of path arena "
               "(target <= 150 + path)\n",
               (double) (total - paths) / n, (double) paths / n);
        iver_cache_free(c);
}

int main(int argc, char *argv[]) {
        const char *dir = argc > 1 ? argv[1] : "/var/tmp";
        char self[4096];
        (void) iver_measure_prepare_signals();

        /* a small file on the same filesystem as the big one */
        snprintf(self, sizeof(self), "%s/iver-bench-small.txt", dir);
        int fd = open(self, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, "config=1\n", 9) != 9) {
                perror(self);
                return 1;
        }
        close(fd);
        hit_vs_statx(self);
        unlink(self);
        throughput(dir);
        cache_bytes();
        return 0;
}
