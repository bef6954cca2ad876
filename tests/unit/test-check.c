/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iver_check end to end on real files in /tmp: hit, re-hash, tamper,
 * inode reuse, racy guard, vanishing files. (Per-filesystem operation
 * matrix: tests/integration/test-fsops.sh.) */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "iver/check.h"
#include "check-run.h"

static char dir[] = "/tmp/iver-test-check-XXXXXX";
static char path[600];
static IverContext *ctx;

static void setup_mode(IverVersionMode mode, const IverKernelInfo *kernel) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/f", dir);
        ck_assert_int_eq(iver_measure_prepare_signals(), 0);
        IverContextOptions o = { .version_mode = mode, .algo = IVER_HASH_SHA256, .kernel = kernel };
        ck_assert_int_eq(iver_context_new(&o, &ctx), 0);
}

static void setup(void) {
        setup_mode(IVER_VERSION_AUTO, NULL);
}

static void setup_coarse(void) {
        /* a kernel before multigrain timestamps (6.13): coarse ctime + racy guard */
        static const IverKernelInfo old = { 6, 6 };
        setup_mode(IVER_VERSION_AUTO, &old);
}

static void teardown(void) {
        char cmd[700];
        ctx = iver_context_free(ctx);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(dir, "/tmp/iver-test-check-XXXXXX");
}

static void put(const char *p, const char *content) {
        int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, content, strlen(content)), (ssize_t) strlen(content));
        close(fd);
}

static void expect_digest_of(const IverCheckOutcome *o, const char *content) {
        uint8_t want[32];
        unsigned len;
        ck_assert_int_eq(EVP_Digest(content, strlen(content), want, &len, EVP_sha256(), NULL), 1);
        ck_assert_mem_eq(o->digest.bytes, want, 32);
}

static IverCheckResult check(IverCheckOutcome *o) {
        (void) iver_check(ctx, AT_FDCWD, path, o);
        return o->result;
}

static const IverLedgerCounters *counters(void) {
        return iver_ledger_counters(iver_context_ledger(ctx));
}

START_TEST(test_hit_and_changes) {
        IverCheckOutcome o;
        put(path, "one");
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert(o.verdict.first);
        expect_digest_of(&o, "one");
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);
        expect_digest_of(&o, "one");

        /* a read: no re-hash, the atime heuristic would have */
        char b[8];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(read(fd, b, sizeof(b)), 3);
        close(fd);
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);

        /* chmod: re-hash, same content */
        ck_assert_int_eq(chmod(path, 0600), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert(!o.digest_changed);

        /* same-size rewrite with mtime and atime restored: the tamper */
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        put(path, "two");
        struct timespec ts[2] = { st.st_atim, st.st_mtim };
        ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert(o.digest_changed);
        expect_digest_of(&o, "two");
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);

        const IverLedgerCounters *c = counters();
        ck_assert_uint_eq(c->checks, 6);
        ck_assert_uint_eq(c->first_seen, 1);
        ck_assert_uint_eq(c->remeasured, 2);
        ck_assert_uint_eq(c->extra_vs_mtime, 2);
        ck_assert_uint_eq(c->missed_by_mtime, 1);
        ck_assert_uint_eq(c->unchanged_content, 1);
        ck_assert_uint_ge(c->avoided_vs_atime, 1);
        ck_assert_uint_eq(c->bytes_hashed, 9);
}
END_TEST

START_TEST(test_inode_reuse_never_inherits) {
        IverCheckOutcome o;
        char content[32];
        for (int i = 0; i < 200; i++) {
                snprintf(content, sizeof(content), "gen %d", i % 2 ? 1 : 0); /* same size, alternating */
                put(path, content);
                ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
                expect_digest_of(&o, content);
                ck_assert_int_eq(unlink(path), 0);
        }
}
END_TEST

START_TEST(test_rename_over) {
        IverCheckOutcome o;
        char other[700];
        snprintf(other, sizeof(other), "%s/g", dir);
        put(path, "aaaa");
        put(other, "bbbb");
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        struct timespec ts[2] = { st.st_atim, st.st_mtim };
        ck_assert_int_eq(utimensat(AT_FDCWD, other, ts, 0), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert_int_eq(rename(other, path), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        expect_digest_of(&o, "bbbb");
        ck_assert(!o.verdict.mtime); /* same mtime and size at this path */
        ck_assert_uint_eq(counters()->missed_by_mtime, 1);
        ck_assert_uint_eq(iver_cache_size(iver_context_cache(ctx)), 1);
}
END_TEST

START_TEST(test_vanish_and_fifo) {
        IverCheckOutcome o;
        put(path, "x");
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_ERROR);
        ck_assert_int_eq(o.error, -ENOENT);
        ck_assert_uint_eq(iver_cache_size(iver_context_cache(ctx)), 0);
        ck_assert_int_eq(mkfifo(path, 0600), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_NOT_REGULAR);
}
END_TEST

/* a symlink is measured by its target string: a hit while unchanged, a new
 * digest when it is replaced by one pointing elsewhere */
START_TEST(test_symlink_target) {
        IverCheckOutcome o;
        ck_assert_int_eq(symlink("one/target", path), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        expect_digest_of(&o, "one/target");
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);
        expect_digest_of(&o, "one/target");
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(symlink("/elsewhere", path), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        expect_digest_of(&o, "/elsewhere");
}
END_TEST

START_TEST(test_racy_guard_coarse) {
        IverCheckOutcome o;
        IverEntry e;
        bool saw_racy = false;
        /* just written: its ctime is within a tick of the measurement. Under
         * heavy load the check may come later than that; try a few times
         * rather than assume a schedule. */
        for (int i = 0; i < 20 && !saw_racy; i++) {
                char content[32];
                snprintf(content, sizeof(content), "racy %d", i);
                put(path, content);
                ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
                iver_cache_get(iver_context_cache(ctx), o.idx, &e);
                ck_assert_int_eq(e.source, IVER_COOKIE_CTIME_COARSE);
                if (e.flags & IVER_ENTRY_RACY) {
                        saw_racy = true;
                        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED); /* not trusted: re-hashed */
                }
        }
        ck_assert(saw_racy);
        /* the re-hash above may itself have come more than a tick after the
         * write (load): then it is trusted already */
        iver_cache_get(iver_context_cache(ctx), o.idx, &e);
        bool still_racy = e.flags & IVER_ENTRY_RACY;
        struct timespec ts = { 0, 3 * IVER_COARSE_GRANULARITY_NS };
        nanosleep(&ts, NULL);
        ck_assert_int_eq(check(&o), still_racy ? IVER_CHECK_MEASURED : IVER_CHECK_HIT); /* now older than a tick */
        iver_cache_get(iver_context_cache(ctx), o.idx, &e);
        ck_assert(!(e.flags & IVER_ENTRY_RACY));
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);
}
END_TEST

START_TEST(test_algo_change_rehashes) {
        IverCheckOutcome o;
        IverPending p;
        put(path, "algo");
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert_int_eq(iver_check_begin(ctx, AT_FDCWD, path, IVER_HASH_SHA512, &p, &o), 1);
        IverMeasureOptions mo = iver_check_measure_options(ctx, &p);
        IverMeasurement m;
        int r = iver_measure(AT_FDCWD, path, &mo, &m);
        ck_assert_int_eq(iver_check_finish(ctx, path, &p, r, &m, &o), 0);
        ck_assert_int_eq(o.digest.algo, IVER_HASH_SHA512);
        ck_assert_int_eq(iver_check_begin(ctx, AT_FDCWD, path, IVER_HASH_SHA512, &p, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_HIT);
}
END_TEST

START_TEST(test_invalidate_forces_rehash) {
        IverCheckOutcome o;
        put(path, "mapped");
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);
        iver_check_invalidate(ctx, path);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED); /* a close-write: no timestamp needed */
        ck_assert(!o.verdict.first);
        ck_assert(!o.digest_changed);
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);      /* the flag is gone with the re-hash */
        ck_assert_uint_eq(counters()->unchanged_content, 1);
}
END_TEST

static int attest_yes(void *userdata, const IverStat *st) {
        (void) userdata, (void) st;
        return 1; /* whole-filesystem tracking, no write seen */
}

/* A rename moves the cookie (ctime) of an unwritten file: metadata-only, and
 * the entry takes the new name, so that the old name's vanishing leaves it. */
START_TEST(test_rename_follows) {
        IverCheckOutcome o;
        char other[700];
        snprintf(other, sizeof(other), "%s/g", dir);
        iver_context_set_attest(ctx, attest_yes, NULL);
        put(path, "kept");
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        ck_assert_int_eq(rename(path, other), 0);
        ck_assert_int_eq(iver_check(ctx, AT_FDCWD, other, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_HIT);
        ck_assert(o.metadata_only);
        ck_assert(o.renamed);
        expect_digest_of(&o, "kept");
        char name[700];
        iver_cache_path(iver_context_cache(ctx), o.idx, name, sizeof(name));
        ck_assert_str_eq(name, other);
        ck_assert_int_eq(check(&o), IVER_CHECK_ERROR); /* the old name: gone */
        ck_assert_uint_eq(iver_cache_size(iver_context_cache(ctx)), 1);
        ck_assert_int_eq(iver_check(ctx, AT_FDCWD, other, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_HIT);
        ck_assert(!o.renamed);
        ck_assert_uint_eq(counters()->remeasured, 0);
        ck_assert_uint_eq(counters()->bytes_hashed, 4); /* "kept", once */
}
END_TEST

/* Begin a check of name p that needs a hash, and hash it: the pending
 * measurement, finished later by the caller. */
static void hashed(const char *p, unsigned flags, IverPending *pend, IverMeasurement *m) {
        IverStat st;
        IverCheckOutcome o;
        ck_assert_int_eq(iver_context_stat(ctx, AT_FDCWD, p, &st), 0);
        ck_assert_int_eq(iver_check_begin_stat(ctx, AT_FDCWD, p, &st, IVER_HASH_SHA256, flags, pend, &o), 1);
        IverMeasureOptions mo = iver_check_measure_options(ctx, pend);
        ck_assert_int_eq(iver_measure(AT_FDCWD, p, &mo, m), 0);
}

/* NAME.tmp written and hashed; renamed over NAME while hashed; NAME's own
 * hash comes back first, the temporary name's last: the entry keeps NAME
 * (the old name's outcome records nothing, as if found gone), and a check
 * of NAME hits. A use's outcome (IVER_CHECK_USE) is recorded under its name. */
START_TEST(test_late_outcome_of_old_name) {
        IverCheckOutcome o;
        IverPending pt, pn;
        IverMeasurement mt, mn;
        char final[700], name[700];
        snprintf(final, sizeof(final), "%s/final", dir);
        put(path, "new version");
        hashed(path, 0, &pt, &mt);          /* the temporary name's job */
        ck_assert_int_eq(rename(path, final), 0);
        hashed(final, 0, &pn, &mn);         /* the final name's job */
        ck_assert_int_eq(iver_check_finish(ctx, final, &pn, 0, &mn, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_MEASURED);
        ck_assert_int_eq(iver_check_finish(ctx, path, &pt, 0, &mt, &o), -ENOENT);
        ck_assert_int_eq(o.result, IVER_CHECK_ERROR);
        ck_assert_int_eq(o.error, -ENOENT);
        ck_assert_uint_eq(o.bytes_hashed, 11);
        ck_assert_uint_eq(iver_cache_size(iver_context_cache(ctx)), 1);
        uint32_t idx = iver_cache_find_path(iver_context_cache(ctx), final, strlen(final));
        ck_assert_uint_ne(idx, IVER_CACHE_NONE);
        ck_assert_int_eq(iver_check(ctx, AT_FDCWD, final, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_HIT);
        expect_digest_of(&o, "new version");
        ck_assert_uint_eq(counters()->bytes_hashed, 22); /* both hashes counted */

        /* a use by the old name: recorded under it */
        put(path, "used");
        hashed(path, IVER_CHECK_USE, &pt, &mt);
        ck_assert_int_eq(rename(path, final), 0);
        hashed(final, 0, &pn, &mn);
        ck_assert_int_eq(iver_check_finish(ctx, final, &pn, 0, &mn, &o), 0);
        ck_assert_int_eq(iver_check_finish(ctx, path, &pt, 0, &mt, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_MEASURED);
        iver_cache_path(iver_context_cache(ctx), o.idx, name, sizeof(name));
        ck_assert_str_eq(name, path);
}
END_TEST

/* A file found by name (its directory entry's inode number), no statx:
 * begin asks for a hash only when its filesystem is known and nothing is on
 * record for the inode; finish records the open file's own observation, so
 * the next check by statx hits. */
START_TEST(test_begin_unseen) {
        IverCheckOutcome o;
        IverPending p;
        IverMeasurement m;
        IverCache *c = iver_context_cache(ctx);
        char other[700], tmp[700];
        snprintf(other, sizeof(other), "%s/other", dir);
        snprintf(tmp, sizeof(tmp), "%s/f.tmp", dir);
        put(path, "one");
        put(other, "other");
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        uint32_t dev = (major(st.st_dev) << 20) | (minor(st.st_dev) & 0xfffffU);
        /* the filesystem not looked at yet: a statx first */
        ck_assert(!iver_check_unseen_fs(ctx, dev));
        ck_assert_int_eq(iver_check_begin_unseen(ctx, path, dev, st.st_ino, IVER_HASH_SHA256, &p), 0);
        ck_assert_int_eq(iver_check(ctx, AT_FDCWD, other, &o), 0);
        ck_assert(iver_check_unseen_fs(ctx, dev));
        ck_assert_int_eq(iver_check_begin_unseen(ctx, path, dev, st.st_ino, IVER_HASH_SHA256, &p), 1);
        ck_assert(p.unseen);
        ck_assert_int_eq(p.reason, IVER_REASON_NEW);
        ck_assert_uint_eq(p.idx, IVER_CACHE_NONE);
        IverMeasureOptions mo = iver_check_measure_options(ctx, &p);
        ck_assert(mo.lease_proves); /* ext4 or tmpfs under /tmp */
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &mo, &m), 0);
        ck_assert_int_eq(iver_check_finish(ctx, path, &p, 0, &m, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_MEASURED);
        expect_digest_of(&o, "one");
        ck_assert_uint_eq(o.owner, getuid());
        ck_assert_uint_eq(o.id.ino, st.st_ino);
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);
        /* on record now: the hit rule needs its statx */
        ck_assert_int_eq(iver_check_begin_unseen(ctx, path, dev, st.st_ino, IVER_HASH_SHA256, &p), 0);

        /* replaced by another inode: that one is new, the name's entry is replaced */
        put(tmp, "two");
        ck_assert_int_eq(rename(tmp, path), 0);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(iver_check_begin_unseen(ctx, path, dev, st.st_ino, IVER_HASH_SHA256, &p), 1);
        ck_assert_int_eq(p.reason, IVER_REASON_IDENTITY);
        ck_assert_uint_ne(p.idx, IVER_CACHE_NONE);
        mo = iver_check_measure_options(ctx, &p);
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &mo, &m), 0);
        ck_assert_int_eq(iver_check_finish(ctx, path, &p, 0, &m, &o), 0);
        ck_assert_int_eq(o.result, IVER_CHECK_MEASURED);
        expect_digest_of(&o, "two");
        ck_assert_uint_eq(iver_cache_size(c), 2);
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT);
        expect_digest_of(&o, "two");
}
END_TEST

static IverCheckOutcome begin_flags(unsigned flags) {
        IverStat st;
        IverPending p;
        IverCheckOutcome o;
        ck_assert_int_eq(iver_context_stat(ctx, AT_FDCWD, path, &st), 0);
        ck_assert_int_eq(iver_check_begin_stat(ctx, AT_FDCWD, path, &st, IVER_HASH_SHA256, flags, &p, &o), 0);
        return o;
}

static bool written(uint32_t idx) {
        IverEntry e;
        iver_cache_get(iver_context_cache(ctx), idx, &e);
        return e.flags & IVER_ENTRY_WRITTEN;
}

/* A write flag set before an observation made now that hits is cleared (the
 * write came before the measurement); one made earlier keeps it. */
START_TEST(test_observed_now_clears_written) {
        IverCheckOutcome o;
        IverCache *c = iver_context_cache(ctx);
        iver_context_set_attest(ctx, attest_yes, NULL);
        put(path, "w");
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED);
        iver_cache_update_flags(c, o.idx, IVER_ENTRY_WRITTEN, 0);
        o = begin_flags(0);
        ck_assert_int_eq(o.result, IVER_CHECK_HIT);
        ck_assert(written(o.idx));
        ck_assert_int_eq(chmod(path, 0600), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_MEASURED); /* cookie moved, flag kept: re-hashed */
        ck_assert_int_eq(o.reason, IVER_REASON_WRITTEN);
        iver_cache_update_flags(c, o.idx, IVER_ENTRY_WRITTEN, 0);
        o = begin_flags(IVER_CHECK_OBSERVED_NOW);
        ck_assert_int_eq(o.result, IVER_CHECK_HIT);
        ck_assert(!written(o.idx));
        ck_assert_int_eq(chmod(path, 0644), 0);
        ck_assert_int_eq(check(&o), IVER_CHECK_HIT); /* cookie moved, no write: metadata-only */
        ck_assert(o.metadata_only);
}
END_TEST

int main(void) {
        Suite *s = suite_create("check");
        TCase *tc = tcase_create("auto");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_hit_and_changes);
        tcase_add_test(tc, test_inode_reuse_never_inherits);
        tcase_add_test(tc, test_rename_over);
        tcase_add_test(tc, test_vanish_and_fifo);
        tcase_add_test(tc, test_symlink_target);
        tcase_add_test(tc, test_algo_change_rehashes);
        tcase_add_test(tc, test_invalidate_forces_rehash);
        tcase_add_test(tc, test_rename_follows);
        tcase_add_test(tc, test_late_outcome_of_old_name);
        tcase_add_test(tc, test_begin_unseen);
        tcase_add_test(tc, test_observed_now_clears_written);
        suite_add_tcase(s, tc);
        tc = tcase_create("coarse");
        tcase_add_checked_fixture(tc, setup_coarse, teardown);
        tcase_add_test(tc, test_racy_guard_coarse);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
