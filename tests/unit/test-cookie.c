/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cookie comparison, the racy guard, and the seed statx ABI through an
 * injected statx: a patched kernel is accepted, the DIOALIGN reuse of 0x2000
 * and an unpatched kernel are rejected, and auto never picks it on >= 6.1. */
#include <check.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iver/cookie.h"
#include "check-run.h"

static IverStat mkstat(int64_t ctime, int64_t mtime, uint64_t size, uint64_t version) {
        return (IverStat) { .ctime = ctime, .mtime = mtime, .size = size, .ino_version = version,
                            .has_ino_version = true };
}

START_TEST(test_cookie_equal) {
        IverStat a = mkstat(100, 50, 10, 7);
        for (IverCookieSource s = 0; s < _IVER_COOKIE_MAX; s++) {
                IverCookie ca = iver_cookie_from_stat(s, &a), cb = ca;
                ck_assert(iver_cookie_equal(&ca, &cb));
                cb.ctime++;
                ck_assert(!iver_cookie_equal(&ca, &cb));
                cb = ca;
                cb.mtime--;
                ck_assert(!iver_cookie_equal(&ca, &cb));
                cb = ca;
                cb.size++;
                ck_assert(!iver_cookie_equal(&ca, &cb));
                cb = ca;
                cb.source = (s + 1) % _IVER_COOKIE_MAX;
                ck_assert(!iver_cookie_equal(&ca, &cb));
        }
        /* the version matters only for the seed source */
        IverStat b = a;
        b.ino_version = 8;
        IverCookie v1 = iver_cookie_from_stat(IVER_COOKIE_STATX_VERSION, &a);
        IverCookie v2 = iver_cookie_from_stat(IVER_COOKIE_STATX_VERSION, &b);
        ck_assert(!iver_cookie_equal(&v1, &v2));
        IverCookie c1 = iver_cookie_from_stat(IVER_COOKIE_CTIME, &a);
        IverCookie c2 = iver_cookie_from_stat(IVER_COOKIE_CTIME, &b);
        ck_assert(iver_cookie_equal(&c1, &c2));
}
END_TEST

START_TEST(test_racy_guard) {
        const int64_t g = IVER_COARSE_GRANULARITY_NS, now = 1000000000000LL;
        IverStat st = mkstat(now, now, 1, 0);
        IverCookie coarse = iver_cookie_from_stat(IVER_COOKIE_CTIME_COARSE, &st);
        IverCookie fine = iver_cookie_from_stat(IVER_COOKIE_CTIME, &st);

        /* ctime in the same tick as the measurement: racy */
        ck_assert(iver_cookie_is_racy(&coarse, now, g));
        ck_assert(iver_cookie_is_racy(&coarse, now + g - 1, g));
        /* ctime after the measurement began (clock skew): racy */
        ck_assert(iver_cookie_is_racy(&coarse, now - 5, g));
        /* older than one granule: trusted */
        ck_assert(!iver_cookie_is_racy(&coarse, now + g, g));
        ck_assert(!iver_cookie_is_racy(&coarse, now + 10 * g, g));
        /* multigrain ctime and the seed version are never racy */
        ck_assert(!iver_cookie_is_racy(&fine, now, g));
}
END_TEST

START_TEST(test_names) {
        for (IverCookieSource s = 0; s < _IVER_COOKIE_MAX; s++)
                ck_assert_int_eq(iver_cookie_source_from_string(iver_cookie_source_to_string(s)), s);
        for (IverVersionMode m = 0; m < _IVER_VERSION_MAX; m++)
                ck_assert_int_eq(iver_version_mode_from_string(iver_version_mode_to_string(m)), m);
        ck_assert_int_eq(iver_version_mode_from_string("mtime"), _IVER_VERSION_INVALID);
        ck_assert_ptr_null(iver_cookie_source_to_string(_IVER_COOKIE_MAX));
}
END_TEST

/* ---- injected kernels ---- */

enum { KERNEL_PATCHED, KERNEL_DIOALIGN, KERNEL_UNPATCHED };
static int kernel_kind;
static unsigned statx_calls;

static int fake_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf) {
        statx_calls++;
        /* ctime always asked for: a multigrain filesystem then gives the next
         * change a fine-grained ctime, so the emulated i_version below moves
         * on every change as the real one does */
        int r = statx(dirfd, path, flags, (mask & ~0x2000U) | STATX_CTIME, buf);
        if (r < 0)
                return r;
        uint64_t v;
        switch (kernel_kind) {
        case KERNEL_PATCHED:
                if (!(mask & 0x2000U))
                        break;
                /* i_version as the seed patch exposes it: moves on every
                 * explicit change, and is the inode's own (two files written
                 * in one tick share a ctime, never an i_version: the probe's
                 * "two files, one value" check failed now and then, mostly
                 * under ASan where a tick between the two writes is likely) */
                v = ((uint64_t) buf->stx_ctime.tv_sec * 1000000000ULL + buf->stx_ctime.tv_nsec) ^
                    (buf->stx_ino * 0x9e3779b97f4a7c15ULL);
                buf->stx_mask |= 0x2000U;
                memcpy((uint8_t *) buf + 0x98, &v, sizeof(v));
                break;
        case KERNEL_DIOALIGN:
                if (!(mask & 0x2000U))
                        break;
                /* 6.1+: the bit means STATX_DIOALIGN, the bytes are 512/512 */
                v = 0x0000020000000200ULL;
                buf->stx_mask |= 0x2000U;
                memcpy((uint8_t *) buf + 0x98, &v, sizeof(v));
                break;
        case KERNEL_UNPATCHED:
                buf->stx_mask &= ~0x2000U;
                break;
        }
        return r;
}

static char tmpdir[] = "/tmp/iver-test-cookie-XXXXXX";

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void) {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(tmpdir, "/tmp/iver-test-cookie-XXXXXX");
}

static int probe(int kind) {
        kernel_kind = kind;
        int dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);
        int r = iver_cookie_probe_statx(fake_statx, dfd);
        close(dfd);
        return r;
}

START_TEST(test_probe_patched_accepted) {
        ck_assert_int_eq(probe(KERNEL_PATCHED), 1);
}
END_TEST

START_TEST(test_probe_dioalign_rejected) {
        ck_assert_int_eq(probe(KERNEL_DIOALIGN), 0);
}
END_TEST

START_TEST(test_probe_unpatched_rejected) {
        ck_assert_int_eq(probe(KERNEL_UNPATCHED), 0);
}
END_TEST

START_TEST(test_probe_real_kernel_rejected) {
        /* This machine runs >= 6.1: the real statx must never pass. */
        int dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_eq(iver_cookie_probe_statx(NULL, dfd), 0);
        close(dfd);
}
END_TEST

START_TEST(test_seed_abi_parse) {
        kernel_kind = KERNEL_PATCHED;
        char p[512];
        snprintf(p, sizeof(p), "%s/f", tmpdir);
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        IverStat a, b;
        ck_assert_int_eq(iver_stat(fake_statx, AT_FDCWD, p, true, &a), 0);
        ck_assert(a.has_ino_version);
        ck_assert_uint_eq(a.ino_version, (uint64_t) a.ctime ^ (a.ino * 0x9e3779b97f4a7c15ULL));
        ck_assert_int_eq(write(fd, "x", 1), 1);
        ck_assert_int_eq(iver_stat(fake_statx, AT_FDCWD, p, true, &b), 0);
        ck_assert_uint_ne(a.ino_version, b.ino_version);
        /* not asked for: not reported */
        ck_assert_int_eq(iver_stat(fake_statx, AT_FDCWD, p, false, &b), 0);
        ck_assert(!b.has_ino_version);
        close(fd);
}
END_TEST

static IverCookieSource table_choice(IverVersionMode mode, int kind, int major, int minor) {
        IverKernelInfo k = { major, minor };
        IverCookieTable *t = NULL;
        char p[512];
        kernel_kind = kind;
        snprintf(p, sizeof(p), "%s/file", tmpdir);
        ck_assert_int_eq(iver_cookie_table_new(mode, fake_statx, &k, &t), 0);
        IverCookieSource s = iver_cookie_table_source(t, 42, AT_FDCWD, p);
        /* decided once per filesystem: asking again runs no probe */
        unsigned calls = statx_calls;
        ck_assert_int_eq(iver_cookie_table_source(t, 42, AT_FDCWD, p), s);
        ck_assert_uint_eq(statx_calls, calls);
        ck_assert_int_eq(iver_cookie_table_peek(t, 42), s);
        ck_assert_int_eq(iver_cookie_table_peek(t, 43), _IVER_COOKIE_INVALID);
        /* the generation ioctl is probed with the filesystem: known for 42, not for 43 */
        ck_assert(iver_cookie_table_getversion(t, 42) != 0);
        ck_assert_int_eq(iver_cookie_table_getversion(t, 43), 0);
        iver_cookie_table_free(t);
        return s;
}

START_TEST(test_table_choice) {
        /* /tmp here is on the root fs or tmpfs: both multigrain on >= 6.13 */
        ck_assert_int_eq(table_choice(IVER_VERSION_STATX, KERNEL_PATCHED, 6, 0), IVER_COOKIE_STATX_VERSION);
        ck_assert_int_eq(table_choice(IVER_VERSION_AUTO, KERNEL_PATCHED, 6, 0), IVER_COOKIE_STATX_VERSION);
        /* auto on a DIOALIGN kernel never even tries */
        ck_assert_int_eq(table_choice(IVER_VERSION_AUTO, KERNEL_PATCHED, 6, 18), IVER_COOKIE_CTIME);
        /* configured statx but the probe disproves: fall back */
        ck_assert_int_eq(table_choice(IVER_VERSION_STATX, KERNEL_DIOALIGN, 6, 18), IVER_COOKIE_CTIME);
        ck_assert_int_eq(table_choice(IVER_VERSION_STATX, KERNEL_UNPATCHED, 6, 18), IVER_COOKIE_CTIME);
        ck_assert_int_eq(table_choice(IVER_VERSION_CTIME, KERNEL_PATCHED, 6, 0), IVER_COOKIE_CTIME_COARSE);
        /* before multigrain timestamps: coarse ctime with the racy guard */
        ck_assert_int_eq(table_choice(IVER_VERSION_AUTO, KERNEL_UNPATCHED, 6, 12), IVER_COOKIE_CTIME_COARSE);
}
END_TEST

START_TEST(test_multigrain_fs) {
        IverKernelInfo new = { 6, 18 }, old = { 6, 6 };
        ck_assert(iver_fs_is_multigrain(EXT4_SUPER_MAGIC, &new));
        ck_assert(iver_fs_is_multigrain(0x58465342, &new));
        ck_assert(iver_fs_is_multigrain(BTRFS_SUPER_MAGIC, &new));
        ck_assert(iver_fs_is_multigrain(TMPFS_MAGIC, &new));
        ck_assert(!iver_fs_is_multigrain(RAMFS_MAGIC, &new));
        ck_assert(!iver_fs_is_multigrain(MSDOS_SUPER_MAGIC, &new));
        ck_assert(!iver_fs_is_multigrain(EXT4_SUPER_MAGIC, &old));
}
END_TEST

int main(void) {
        Suite *s = suite_create("cookie");
        TCase *tc = tcase_create("pure");
        tcase_add_test(tc, test_cookie_equal);
        tcase_add_test(tc, test_racy_guard);
        tcase_add_test(tc, test_names);
        tcase_add_test(tc, test_multigrain_fs);
        suite_add_tcase(s, tc);
        tc = tcase_create("statx");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_probe_patched_accepted);
        tcase_add_test(tc, test_probe_dioalign_rejected);
        tcase_add_test(tc, test_probe_unpatched_rejected);
        tcase_add_test(tc, test_probe_real_kernel_rejected);
        tcase_add_test(tc, test_seed_abi_parse);
        tcase_add_test(tc, test_table_choice);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
