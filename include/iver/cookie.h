/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "iver/stat.h"

/* Where a file's change cookie comes from (DESIGN §3), in order of trust. */
typedef enum IverCookieSource {
        IVER_COOKIE_STATX_VERSION,  /* seed stx_ino_version, proven by a probe */
        IVER_COOKIE_CTIME,          /* multigrain ctime (+ mtime, size) */
        IVER_COOKIE_CTIME_COARSE,   /* tick ctime (+ mtime, size) with the racy guard */
        _IVER_COOKIE_MAX,
        _IVER_COOKIE_INVALID = -22,
} IverCookieSource;

/* What the user configured: VersionSource=auto|statx|ctime. */
typedef enum IverVersionMode {
        IVER_VERSION_AUTO,
        IVER_VERSION_STATX,
        IVER_VERSION_CTIME,
        _IVER_VERSION_MAX,
        _IVER_VERSION_INVALID = -22,
} IverVersionMode;

/* The cookie: equal cookies (and identities) mean no explicit change since. */
typedef struct IverCookie {
        IverCookieSource source;
        int64_t ctime;
        int64_t mtime;
        uint64_t size;
        uint64_t version;           /* STATX_VERSION only */
} IverCookie;

const char *iver_cookie_source_to_string(IverCookieSource s);
IverCookieSource iver_cookie_source_from_string(const char *s);
const char *iver_version_mode_to_string(IverVersionMode m);
IverVersionMode iver_version_mode_from_string(const char *s);

IverCookie iver_cookie_from_stat(IverCookieSource source, const IverStat *st);
bool iver_cookie_equal(const IverCookie *a, const IverCookie *b);

/* The racy guard (git's racy-timestamp rule): a measurement taken at
 * measured_at (ns, realtime) of a file whose ctime lies within granularity_ns
 * of it cannot prove that a later same-tick change would move the cookie.
 * Only CTIME_COARSE is ever racy. */
bool iver_cookie_is_racy(const IverCookie *c, int64_t measured_at, int64_t granularity_ns);

/* Timestamp tick of a coarse filesystem when nothing better is known (HZ=250). */
#define IVER_COARSE_GRANULARITY_NS 10000000LL  /* 10 ms, > one 4 ms tick with margin */

/* Per-filesystem choice of cookie source. Opaque. */
typedef struct IverCookieTable IverCookieTable;

typedef struct IverKernelInfo {
        int major, minor;            /* running kernel version */
} IverKernelInfo;

/* uname() → version. */
int iver_kernel_info(IverKernelInfo *ret);

int iver_cookie_table_new(IverVersionMode mode, iver_statx_fn fn, const IverKernelInfo *kernel, IverCookieTable **ret);
IverCookieTable *iver_cookie_table_free(IverCookieTable *t);

/* Source for the filesystem holding (dirfd, path) and device dev: decided
 * once per dev from the statfs magic of path's parent directory and the
 * kernel version; where the seed ABI may be used (VersionSource=statx, or
 * auto on a kernel before 6.1) iver_cookie_probe_statx() runs in that parent
 * directory and must prove it. Remembered per dev (if the table cannot grow,
 * decided again next time). Never fails: falls back to CTIME_COARSE. The
 * racy guard's granularity is IVER_COARSE_GRANULARITY_NS. */
IverCookieSource iver_cookie_table_source(IverCookieTable *t, uint32_t dev, int dirfd, const char *path);
/* Cached lookup only; _IVER_COOKIE_INVALID when dev was never seen. */
IverCookieSource iver_cookie_table_peek(const IverCookieTable *t, uint32_t dev);
/* statfs magic of a decided filesystem, 0 if unknown. */
uint64_t iver_cookie_table_fs_magic(const IverCookieTable *t, uint32_t dev);
/* Whether every change to a file's content on the decided filesystem dev
 * moves its cookie in the next statx, stores through a shared mapping
 * included: an exact cookie (the proven inode version, multigrain ctime) on
 * ext4, xfs or btrfs, whose write faults update the file's times (each new
 * mapping's first store to a page, also to a page still dirty from an earlier
 * one; checked on this kernel). Then a writer's close tells nothing a cookie
 * does not (kernel IMA's last-writer check with i_version); elsewhere (tmpfs)
 * it must re-hash the file. False for an undecided dev. */
bool iver_cookie_table_stores_move(const IverCookieTable *t, uint32_t dev);
/* FS_IOC_GETVERSION on a decided filesystem (probed once on a directory):
 * 1 works, -1 not supported (ENOTTY, EOPNOTSUPP, EINVAL), 0 unknown. */
int iver_cookie_table_getversion(const IverCookieTable *t, uint32_t dev);
/* Whether seed-ABI values must be requested from statx. */
bool iver_cookie_table_wants_version(const IverCookieTable *t);
/* Iterate decided filesystems: i from 0; returns false at end. */
bool iver_cookie_table_get(const IverCookieTable *t, unsigned i, uint32_t *ret_dev, IverCookieSource *ret_source, uint64_t *ret_fs_magic);

/* Whether the filesystem type (statfs f_type) has multigrain timestamps on
 * a kernel >= 6.13: ext4, xfs, btrfs, tmpfs. */
bool iver_fs_is_multigrain(uint64_t fs_magic, const IverKernelInfo *kernel);

/* Prove that the seed ABI behaves as a version in directory dirfd: a write
 * to a probe file changes it, a read does not, two files do not share a
 * constant value. Returns 1 proven, 0 disproven, -errno if it could not run.
 * The table additionally never uses the seed ABI in auto mode on a kernel
 * >= 6.1, where 0x2000 is STATX_DIOALIGN. */
int iver_cookie_probe_statx(iver_statx_fn fn, int dirfd);
