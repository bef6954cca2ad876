/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/stat.c: one statx() call → IverStat (identity, times, seed-ABI value). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "check-run.h"
#include "iver/stat.h"

static char dir[] = "/tmp/iver-test-stat.XXXXXX";
static char file[600], link_[600];

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/f", dir);
        snprintf(link_, sizeof(link_), "%s/l", dir);
        FILE *f = fopen(file, "we");
        ck_assert_ptr_nonnull(f);
        fputs("twelve bytes", f);
        fclose(f);
        ck_assert_int_eq(symlink(file, link_), 0);
}

static void teardown(void) {
        unlink(link_);
        unlink(file);
        rmdir(dir);
        strcpy(dir, "/tmp/iver-test-stat.XXXXXX");
}

static int64_t ns(const struct timespec *t) {
        return (int64_t) t->tv_sec * 1000000000LL + t->tv_nsec;
}

START_TEST(test_real_file) {
        IverStat st, fst;
        struct stat ref;

        ck_assert_int_eq(stat(file, &ref), 0);
        ck_assert_int_eq(iver_stat(NULL, AT_FDCWD, file, false, &st), 0);
        ck_assert(S_ISREG(st.mode));
        ck_assert_uint_eq(st.mode, ref.st_mode);
        ck_assert_uint_eq(st.size, 12);
        ck_assert_uint_eq(st.ino, ref.st_ino);
        ck_assert_uint_eq(st.nlink, 1);
        ck_assert_uint_eq(st.uid, ref.st_uid);
        ck_assert_uint_eq(st.gid, ref.st_gid);
        ck_assert_uint_eq(st.dev, (major(ref.st_dev) << 20) | minor(ref.st_dev));
        ck_assert_int_eq(st.mtime, ns(&ref.st_mtim));
        ck_assert_int_eq(st.ctime, ns(&ref.st_ctim));
        ck_assert_int_eq(st.atime, ns(&ref.st_atim));
        ck_assert(!st.has_ino_version);
        if (st.has_btime)
                ck_assert_uint_eq(st.gen, iver_gen_of_btime(st.btime));
        else
                ck_assert_uint_eq(st.gen, 0);

        /* the fd form sees the same file */
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(iver_stat_fd(NULL, fd, false, &fst), 0);
        close(fd);
        IverIdentity a = iver_stat_identity(&st), b = iver_stat_identity(&fst);
        ck_assert(iver_identity_equal(&a, &b));
        ck_assert_int_eq(fst.mtime, st.mtime);

        /* relative to a directory fd */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_eq(iver_stat(NULL, dfd, "f", false, &fst), 0);
        close(dfd);
        ck_assert_uint_eq(fst.ino, st.ino);
}
END_TEST

START_TEST(test_symlink_not_followed) {
        IverStat st;
        ck_assert_int_eq(iver_stat(NULL, AT_FDCWD, link_, false, &st), 0);
        ck_assert(S_ISLNK(st.mode));
        ck_assert_uint_eq(st.size, strlen(file));
        ck_assert_int_eq(iver_stat(NULL, AT_FDCWD, "/nonexistent/iver-test", false, &st), -ENOENT);
        ck_assert_int_eq(iver_stat_fd(NULL, -1, false, &st), -EBADF);
}
END_TEST

/* A fake statx: records what it was asked, answers a prepared buffer. */
static struct {
        int dirfd, flags;
        unsigned mask;
        char path[64];
        struct statx answer;
        int err;
} fake;

static int fake_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf) {
        fake.dirfd = dirfd;
        fake.flags = flags;
        fake.mask = mask;
        snprintf(fake.path, sizeof(fake.path), "%s", path);
        if (fake.err) {
                errno = fake.err;
                return -1;
        }
        *buf = fake.answer;
        return 0;
}

START_TEST(test_injected_statx) {
        IverStat st;
        uint64_t v = 0x1122334455667788ULL;

        memset(&fake, 0, sizeof(fake));
        fake.answer.stx_mask = STATX_BASIC_STATS | IVER_STATX_INO_VERSION;
        fake.answer.stx_mode = S_IFREG | 0644;
        memcpy((uint8_t *) &fake.answer + IVER_STATX_INO_VERSION_OFFSET, &v, sizeof(v));

        /* without want_ino_version the seed bit is not requested */
        ck_assert_int_eq(iver_stat(fake_statx, 7, "x", false, &st), 0);
        ck_assert_int_eq(fake.dirfd, 7);
        ck_assert_str_eq(fake.path, "x");
        ck_assert_uint_eq(fake.mask & IVER_STATX_INO_VERSION, 0);
        ck_assert(fake.mask & STATX_BTIME);
        ck_assert(fake.flags & AT_SYMLINK_NOFOLLOW);
        ck_assert_int_eq(fake.flags & AT_STATX_SYNC_TYPE, AT_STATX_SYNC_AS_STAT); /* never forces a sync (NFS) */
        ck_assert(!(fake.flags & AT_EMPTY_PATH));
        /* the kernel said the bit is set: the value is read (a probe decides whether to trust it) */
        ck_assert(st.has_ino_version);
        ck_assert_uint_eq(st.ino_version, v);

        ck_assert_int_eq(iver_stat_fd(fake_statx, 9, true, &st), 0);
        ck_assert_int_eq(fake.dirfd, 9);
        ck_assert_str_eq(fake.path, "");
        ck_assert(fake.flags & AT_EMPTY_PATH);
        ck_assert(fake.mask & IVER_STATX_INO_VERSION);

        fake.answer.stx_mask = STATX_BASIC_STATS;       /* an old kernel: bit not returned */
        ck_assert_int_eq(iver_stat(fake_statx, AT_FDCWD, "x", true, &st), 0);
        ck_assert(!st.has_ino_version);
        ck_assert_uint_eq(st.ino_version, 0);

        fake.err = EACCES;
        ck_assert_int_eq(iver_stat(fake_statx, AT_FDCWD, "x", false, &st), -EACCES);
        fake.err = 0;
}
END_TEST

START_TEST(test_decode) {
        struct statx sx;
        IverStat st;

        memset(&sx, 0, sizeof(sx));
        sx.stx_mask = STATX_BASIC_STATS | STATX_BTIME;
        sx.stx_dev_major = 259;
        sx.stx_dev_minor = 0x12345;
        sx.stx_ino = 42;
        sx.stx_size = 1ULL << 40;
        sx.stx_mtime = (struct statx_timestamp) { .tv_sec = 1700000000, .tv_nsec = 123456789 };
        sx.stx_btime = (struct statx_timestamp) { .tv_sec = 1600000000, .tv_nsec = 1 };
        sx.stx_atime = (struct statx_timestamp) { .tv_sec = INT64_MAX / 2 };            /* far future */
        sx.stx_ctime = (struct statx_timestamp) { .tv_sec = -(INT64_MAX / 2) };         /* far past */
        iver_stat_from_statx(&sx, &st);
        ck_assert_uint_eq(st.dev, (259U << 20) | 0x12345U);
        ck_assert_uint_eq(st.ino, 42);
        ck_assert_uint_eq(st.size, 1ULL << 40);
        ck_assert_int_eq(st.mtime, 1700000000123456789LL);
        ck_assert(st.has_btime);
        ck_assert_int_eq(st.btime, 1600000000000000001LL);
        ck_assert_uint_eq(st.gen, (uint32_t) (1600000000000000001ULL ^ (1600000000000000001ULL >> 32))); /* btime, folded */
        ck_assert_int_eq(st.atime, INT64_MAX);                  /* saturated, not wrapped */
        ck_assert_int_eq(st.ctime, INT64_MIN);
        ck_assert(!st.has_ino_version);

        /* the last second that fits and the first that does not */
        sx.stx_atime = (struct statx_timestamp) { .tv_sec = INT64_MAX / 1000000000LL - 1, .tv_nsec = 999999999 };
        iver_stat_from_statx(&sx, &st);
        ck_assert_int_eq(st.atime, (INT64_MAX / 1000000000LL - 1) * 1000000000LL + 999999999);
        ck_assert_int_gt(st.atime, 0);
        sx.stx_atime.tv_sec = INT64_MAX / 1000000000LL;
        iver_stat_from_statx(&sx, &st);
        ck_assert_int_eq(st.atime, INT64_MAX);
        sx.stx_atime = (struct statx_timestamp) { .tv_sec = -1, .tv_nsec = 500000000 }; /* before 1970 */
        iver_stat_from_statx(&sx, &st);
        ck_assert_int_eq(st.atime, -500000000LL);

        /* no btime (tmpfs on old kernels, NFS): generation 0, identity by ino */
        sx.stx_mask = STATX_BASIC_STATS;
        iver_stat_from_statx(&sx, &st);
        ck_assert(!st.has_btime);
        ck_assert_uint_eq(st.gen, 0);
        ck_assert_int_eq(st.btime, 0);

        /* identity: a reused inode number with another btime is another file */
        IverStat a = { .dev = 1, .ino = 5, .gen = 100 }, b = a;
        b.gen = 101;
        IverIdentity ia = iver_stat_identity(&a), ib = iver_stat_identity(&b);
        ck_assert(!iver_identity_equal(&ia, &ib));
        b.gen = 100;
        ib = iver_stat_identity(&b);
        ck_assert(iver_identity_equal(&ia, &ib));
}
END_TEST

START_TEST(test_clocks) {
        int64_t now = iver_now_ns(), t = (int64_t) time(NULL) * 1000000000LL;
        ck_assert_int_lt(now > t ? now - t : t - now, 2000000000LL);
        int64_t m0 = iver_monotonic_ns(), c0 = iver_thread_cpu_ns();
        volatile uint64_t x = 0;
        for (uint64_t i = 0; i < 20000000; i++)
                x += i;
        int64_t m1 = iver_monotonic_ns(), c1 = iver_thread_cpu_ns();
        ck_assert_int_gt(m1, m0);
        ck_assert_int_gt(c1, c0);
        ck_assert_int_le(c1 - c0, (m1 - m0) + 10000000); /* one thread's CPU never outruns the clock (10 ms slack) */
}
END_TEST

int main(void) {
        Suite *s = suite_create("stat");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_real_file);
        tcase_add_test(tc, test_symlink_not_followed);
        tcase_add_test(tc, test_injected_statx);
        tcase_add_test(tc, test_decode);
        tcase_add_test(tc, test_clocks);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
