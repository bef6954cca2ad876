/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Version-stable hashing: a digest is returned only together with the
 * observation it was computed under.
 *
 * ctime is stamped at the start of write(), before the data lands, so
 * comparing cookies before and after hashing is necessary but not sufficient
 * (notes/fs.md: stale data hashed 20/20 times). A read lease closes the gap:
 * it cannot be taken while anyone holds the file open for writing or mapped
 * writable, and any new open for writing breaks it. A held lease makes that
 * writer wait, so it is polled between chunks and released at once when a
 * break is pending: a writer waits at most one chunk.
 *
 * Where the lease proves the content (IverMeasureOptions.lease_proves) and
 * the caller made no statx, the order is open, lease, statx, read, close: the
 * statx of the open file under the lease is the observation, and nothing
 * can change the content until the close unless the kernel revokes the
 * lease, which it does only lease-break-time (at least one second when not
 * 0, which never revokes) after a writer asked. A file read in one chunk
 * well within that needs no statx after it. */
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "digest-internal.h"
#include "iver/appraise.h"
#include "iver/measure.h"
#include "macro.h"
#include "pseudofs.h"

#define READ_BUF (128U * 1024U)
#define DEFAULT_CHUNK (1024U * 1024U)
#define DEFAULT_ATTEMPTS 3U
/* A lease held no longer than this cannot have been revoked: the kernel
 * lets a waiting writer in lease-break-time after its open (whole seconds;
 * 0: never), and the lease was taken before this is counted from. */
#define LEASE_PROOF_NS (500 * 1000 * 1000LL)

bool iver_lease_proves_fs(uint64_t magic) {
        switch ((uint32_t) magic) {
        case 0xEF53U:     /* ext2/3/4 */
        case 0x58465342U: /* xfs */
        case 0x9123683EU: /* btrfs */
        case 0x01021994U: /* tmpfs */
                return true;
        default:
                return false;
        }
}

static const char *const status_names[_IVER_MEASURE_MAX] = {
        [IVER_MEASURE_STABLE] = "stable",
        [IVER_MEASURE_PROVISIONAL] = "provisional",
        [IVER_MEASURE_UNSTABLE] = "unstable",
        [IVER_MEASURE_NOT_REGULAR] = "not-regular",
        [IVER_MEASURE_WRITERS] = "writers",
};

const char *iver_measure_status_to_string(IverMeasureStatus s) {
        return s >= 0 && s < _IVER_MEASURE_MAX ? status_names[s] : NULL;
}

int iver_measure_prepare_signals(void) {
        struct sigaction sa = { .sa_handler = SIG_IGN };
        return sigaction(SIGIO, &sa, NULL) < 0 ? negative_errno() : 0;
}

/* A lease break is announced with SIGIO; at its default disposition that
 * would kill the process, so without an ignored/handled SIGIO, no lease. */
static bool sigio_safe(void) {
        struct sigaction sa;
        sigset_t blocked;
        if (sigaction(SIGIO, NULL, &sa) < 0)
                return false;
        if (sa.sa_handler != SIG_DFL)
                return true;
        return pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 && sigismember(&blocked, SIGIO) == 1;
}

/* Hash fd from offset 0. lease: poll F_GETLEASE every chunk bytes and stop
 * with -EAGAIN the moment a break is pending. */
static int64_t hash_range(int fd, const EVP_MD *md, EVP_MD_CTX *ctx, bool lease, size_t chunk, uint64_t expect,
                          const bool *cancel, IverDigest *ret, IverHashAlgo algo) {
        uint8_t buf[READ_BUF];
        uint64_t total = 0, since_poll = 0;
        unsigned int len = 0;

        if (EVP_DigestInit_ex(ctx, md, NULL) != 1)
                return -EIO;
        for (; expect > 0;) {
                ssize_t n = pread(fd, buf, sizeof(buf), (off_t) total);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))
                        return -ECANCELED;
                if (EVP_DigestUpdate(ctx, buf, (size_t) n) != 1)
                        return -EIO;
                total += (uint64_t) n;
                since_poll += (uint64_t) n;
                if (lease && since_poll >= chunk) {
                        since_poll = 0;
                        if (fcntl(fd, F_GETLEASE) != F_RDLCK)
                                return -EAGAIN;
                }
                /* all the "before" observation promised: no read for EOF. A
                 * file that grew meanwhile shows in the statx after. */
                if (total >= expect)
                        break;
        }
        if (EVP_DigestFinal_ex(ctx, ret->bytes, &len) != 1)
                return -EIO;
        ret->algo = algo;
        ret->len = (uint8_t) len;
        return (int64_t) total;
}

int64_t iver_hash_fd(int fd, IverHashAlgo algo, IverDigest *ret) {
        const EVP_MD *md;
        EVP_MD_CTX *ctx;
        int r = iver_digest_start(algo, &md, &ctx);
        if (r < 0)
                return r;
        IverDigest d = {};
        int64_t n = hash_range(fd, md, ctx, false, SIZE_MAX, UINT64_MAX, NULL, &d, algo);
        if (n >= 0)
                *ret = d;
        return n;
}

static bool same_observation(IverCookieSource source, const IverStat *a, const IverStat *b) {
        IverCookie ca = iver_cookie_from_stat(source, a), cb = iver_cookie_from_stat(source, b);
        return a->dev == b->dev && a->ino == b->ino && a->gen == b->gen && iver_cookie_equal(&ca, &cb);
}

/* The "before" observation: the caller's or a fresh statx, with the size bound and the
 * generation. Returns 1 when the file is not to be hashed (m says why), 0 to hash it. */
static int observe_before(int fd, const IverMeasureOptions *o, bool want_version, const IverStat *pre,
                          int64_t pre_at, IverMeasurement *m, IverStat *ret_before) {
        IverStat before;
        int r;

        if (pre) {
                /* the caller's statx, taken before the open (and so before the
                 * lease): a change since then moves the cookie or the identity,
                 * which the statx after hashing compares against like any other
                 * "before". One statx fewer per file. */
                m->started_at = pre_at;
                before = *pre;
        } else {
                m->started_at = iver_now_ns();
                r = iver_stat_fd(o->statx, fd, want_version, &before);
                if (r < 0)
                        return r;
        }
        if (o->max_size > 0 && S_ISREG(before.mode) && before.size > o->max_size)
                return -EFBIG;
        struct statfs sfs;
        if (!S_ISREG(before.mode) ||
            (!(o->fs_dev_checked && before.dev == o->fs_dev) && fstatfs(fd, &sfs) == 0 &&
             iver_fs_is_pseudo((uint64_t) sfs.f_type, NULL))) {
                /* a pseudo filesystem's file (proc, sysfs…) is never hashed: lib/pseudofs.h */
                m->st = before;
                m->status = IVER_MEASURE_NOT_REGULAR;
                return 1;
        }
        if (!before.has_btime && o->getversion >= 0) {
                /* FS_IOC_GETVERSION: the generation where btime is missing (ext4/xfs
                 * random per inode, btrfs transid); 0 where unsupported (tmpfs). */
                int gen = 0;
                if (ioctl(fd, FS_IOC_GETVERSION, &gen) == 0)
                        before.gen = (uint32_t) gen;
        }
        *ret_before = before;
        return 0;
}

/* Hashes the file and keeps the digest only if the statx after matches "before":
 * 1 with a result, 0 to retry. */
static int hash_and_compare(int fd, const IverMeasureOptions *o, const EVP_MD *md, EVP_MD_CTX *ctx, bool leased,
                            int64_t leased_at, bool want_version, const IverStat *before, IverMeasurement *m) {
        IverStat after;
        IverDigest d = {};
        int r;
        size_t chunk = o->chunk_size ?: DEFAULT_CHUNK;

        int64_t n = hash_range(fd, md, ctx, leased, chunk, before->size, o->cancel, &d, o->algo);
        if (n == -EAGAIN) {
                m->lease_broken = true;
                return 0;
        }
        if (n < 0)
                return (int) n;
        m->bytes_hashed += (uint64_t) n;
        /* leased_at: "before" was taken from the open file under a lease that
         * proves the content (see the top); read in one chunk, all of it, in
         * less than the least lease-break-time: the lease still held */
        if (leased_at > 0 && !o->read_ima_xattr && (uint64_t) n <= chunk && (uint64_t) n == before->size &&
            before->dev == o->fs_dev && iver_now_ns() - leased_at < LEASE_PROOF_NS) {
                m->st = *before;
                m->digest = d;
                m->status = IVER_MEASURE_STABLE;
                return 1;
        }
        if (o->read_ima_xattr) {
                /* between hash and closing statx: covered by the cookie check */
                iver_measurement_done(m);
                m->ima_xattr_r = iver_appraise_read_xattr(fd, &m->ima_xattr, &m->ima_xattr_size);
        }

        r = iver_stat_fd(o->statx, fd, want_version, &after);
        if (r < 0)
                return r;
        after.gen = before->gen;
        /* A file hashed in one chunk is not polled: while the lease was held
         * no writer could open it (a breaking open waits for us, or fails
         * with O_NONBLOCK) and no writable mapping could exist, and a writer
         * let in by a lease the kernel revoked after lease-break-time moves
         * the ctime the statx after compares (multigrain: later than the one
         * seen; coarse: the racy guard). What was hashed is a version that
         * existed under this cookie; the waiting writer is let in by close. */
        if (leased && (uint64_t) n > chunk && fcntl(fd, F_GETLEASE) != F_RDLCK) {
                m->lease_broken = true;
                return 0;
        }
        if (!same_observation(o->source, before, &after) || (uint64_t) n != before->size)
                return 0;
        m->st = *before;
        m->digest = d;
        m->status = leased ? IVER_MEASURE_STABLE : IVER_MEASURE_PROVISIONAL;
        return 1;
}

/* One attempt on an open fd. Returns 1 when the result is final (stable,
 * provisional, not regular), 0 to retry, -errno on error. */
static int attempt(int fd, const IverMeasureOptions *o, const EVP_MD *md, EVP_MD_CTX *ctx, bool may_lease,
                   bool closing, const IverStat *pre, int64_t pre_at, IverMeasurement *m) {
        bool want_version = o->source == IVER_COOKIE_STATX_VERSION;
        IverStat before;
        bool leased = false;
        int64_t lease_at = 0;
        int r;

        if (may_lease) {
                lease_at = iver_now_ns();
                if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0)
                        leased = true;
                else if (errno == EAGAIN && o->defer_writers) {
                        m->status = IVER_MEASURE_WRITERS;
                        m->digest = (IverDigest) { .algo = _IVER_HASH_INVALID };
                        if (pre)
                                m->st = *pre;
                        else if ((r = iver_stat_fd(o->statx, fd, want_version, &m->st)) < 0)
                                return r;
                        return 1;
                }
                /* EAGAIN: open writers or writable mappings; EACCES: not our
                 * file and no CAP_LEASE; EINVAL: fs without leases. All end
                 * in a provisional result. */
        }

        /* no "before" of the caller's, and a lease that proves: the statx of
         * the open file now, under the lease, is the observation */
        bool proves = leased && !pre && o->lease_proves;
        r = observe_before(fd, o, want_version, pre, pre_at, m, &before);
        if (r == 0)
                r = hash_and_compare(fd, o, md, ctx, leased, proves ? lease_at : 0, want_version, &before, m);
        /* closing: the caller closes fd right after a final result, and the
         * close ends the lease (one fcntl fewer a file) */
        if (leased && (r == 0 || !closing))
                (void) fcntl(fd, F_SETLEASE, F_UNLCK);
        return r;
}

void iver_measurement_done(IverMeasurement *m) {
        free(m->ima_xattr);
        m->ima_xattr = NULL;
        m->ima_xattr_size = 0;
        m->ima_xattr_r = -ENODATA;
}

static int measure_fd(int fd, const IverMeasureOptions *opt, bool closing, const IverStat *pre, int64_t pre_at,
                      IverMeasurement *ret) {
        IverMeasureOptions o = *opt;
        IverMeasurement m = { .status = IVER_MEASURE_UNSTABLE, .ima_xattr_r = -ENODATA };
        int64_t cpu0 = o.no_cpu_time ? 0 : iver_thread_cpu_ns();
        if (o.max_attempts == 0)
                o.max_attempts = DEFAULT_ATTEMPTS;
        const EVP_MD *md;
        EVP_MD_CTX *ctx;
        int r = iver_digest_start(o.algo, &md, &ctx);
        if (r < 0)
                return r;

        bool may_lease = o.sigio_ignored || sigio_safe();
        for (m.attempts = 1; m.attempts <= o.max_attempts; m.attempts++) {
                r = attempt(fd, &o, md, ctx, may_lease, closing, m.attempts == 1 ? pre : NULL, pre_at, &m);
                if (r != 0)
                        break;
        }
        if (m.attempts > o.max_attempts) {
                m.attempts = o.max_attempts;
                m.status = IVER_MEASURE_UNSTABLE;
                (void) iver_stat_fd(o.statx, fd, o.source == IVER_COOKIE_STATX_VERSION, &m.st);
                m.digest = (IverDigest) { .algo = _IVER_HASH_INVALID };
        }
        if (r < 0 || m.status == IVER_MEASURE_UNSTABLE || m.status == IVER_MEASURE_NOT_REGULAR ||
            m.status == IVER_MEASURE_WRITERS)
                iver_measurement_done(&m); /* no digest: no xattr of its version */
        if (r < 0)
                return r;
        m.cpu_ns = o.no_cpu_time ? 0 : iver_thread_cpu_ns() - cpu0;
        *ret = m;
        return 0;
}

int iver_measure_fd(int fd, const IverMeasureOptions *opt, IverMeasurement *ret) {
        return measure_fd(fd, opt, false, NULL, 0, ret); /* the caller's fd: the lease ends here */
}

int iver_measure_open_fd(int dirfd, const char *path) {
        int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
        int fd = openat(dirfd, path, flags | O_NOATIME);
        if (fd < 0 && errno == EPERM) /* O_NOATIME needs ownership or CAP_FOWNER */
                fd = openat(dirfd, path, flags);
        return fd < 0 ? negative_errno() : fd;
}

int iver_measure_opened(int fd, const IverStat *st, int64_t st_at, const IverMeasureOptions *opt,
                        IverMeasurement *ret) {
        return measure_fd(fd, opt, true, st, st_at, ret); /* the caller closes fd, and the lease with it */
}

int iver_measure_stat(int dirfd, const char *path, const IverStat *st, int64_t st_at, const IverMeasureOptions *opt,
                      IverMeasurement *ret) {
        /* Never open what is not a regular file: a FIFO must not block, a
         * device must not see an open. */
        if (!S_ISREG(st->mode)) {
                *ret = (IverMeasurement) { .status = IVER_MEASURE_NOT_REGULAR, .st = *st };
                return 0;
        }

        _cleanup_close_ int fd = iver_measure_open_fd(dirfd, path);
        if (fd < 0)
                return fd == -ELOOP ? (*ret = (IverMeasurement) { .status = IVER_MEASURE_NOT_REGULAR, .st = *st }, 0)
                                    : fd;
        return measure_fd(fd, opt, true, st, st_at, ret); /* closed on return */
}

int iver_measure_open(int dirfd, const char *path, const IverMeasureOptions *opt, IverMeasurement *ret) {
        _cleanup_close_ int fd = iver_measure_open_fd(dirfd, path);
        if (fd < 0)
                return fd == -ELOOP ? (*ret = (IverMeasurement) { .status = IVER_MEASURE_NOT_REGULAR }, 0) : fd;
        return measure_fd(fd, opt, true, NULL, 0, ret); /* closed on return */
}

int iver_measure(int dirfd, const char *path, const IverMeasureOptions *opt, IverMeasurement *ret) {
        IverStat st;
        int64_t at = iver_now_ns();
        int r = iver_stat(opt->statx, dirfd, path, opt->source == IVER_COOKIE_STATX_VERSION, &st);
        if (r < 0)
                return r;
        return iver_measure_stat(dirfd, path, &st, at, opt, ret);
}
