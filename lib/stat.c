/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One statx() call → IverStat: identity, timestamps, seed-ABI value. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "iver/stat.h"
#include "macro.h"

#define IVER_STATX_MASK (STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_ATIME | \
                         STATX_MTIME | STATX_CTIME | STATX_INO | STATX_SIZE | STATX_BLOCKS | STATX_BTIME)

static int64_t ts_ns(const struct statx_timestamp *t) {
        /* Saturate instead of overflowing past 2262 / before 1678. */
        if (t->tv_sec > INT64_MAX / 1000000000LL - 1)
                return INT64_MAX;
        if (t->tv_sec < INT64_MIN / 1000000000LL + 1)
                return INT64_MIN;
        return t->tv_sec * 1000000000LL + t->tv_nsec;
}

void iver_stat_from_statx(const struct statx *sx, IverStat *ret) {
        IverStat st = {
                .mask = sx->stx_mask,
                /* kernel dev_t is 12 bits major, 20 bits minor: packing is lossless */
                .dev = (sx->stx_dev_major << 20) | (sx->stx_dev_minor & 0xfffffU),
                .ino = sx->stx_ino,
                .size = sx->stx_size,
                .blocks = sx->stx_blocks,
                .atime = ts_ns(&sx->stx_atime),
                .mtime = ts_ns(&sx->stx_mtime),
                .ctime = ts_ns(&sx->stx_ctime),
                .mode = sx->stx_mode,
                .uid = sx->stx_uid,
                .gid = sx->stx_gid,
                .nlink = sx->stx_nlink,
                .has_btime = (sx->stx_mask & STATX_BTIME) != 0,
                .has_ino_version = (sx->stx_mask & IVER_STATX_INO_VERSION) != 0,
        };
        if (st.has_btime) {
                st.btime = ts_ns(&sx->stx_btime);
                st.gen = iver_gen_of_btime(st.btime);
        }
        if (st.has_ino_version)
                memcpy(&st.ino_version, (const uint8_t *) sx + IVER_STATX_INO_VERSION_OFFSET, sizeof(uint64_t));
        *ret = st;
}

static int do_stat(iver_statx_fn fn, int dirfd, const char *path, int flags, bool want_ino_version, IverStat *ret) {
        struct statx sx;
        unsigned mask = IVER_STATX_MASK | (want_ino_version ? IVER_STATX_INO_VERSION : 0);

        /* no memset: the kernel writes the whole struct */
        if ((fn ?: statx)(dirfd, path, flags | AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, mask, &sx) < 0)
                return negative_errno();
        iver_stat_from_statx(&sx, ret);
        return 0;
}

int iver_stat(iver_statx_fn fn, int dirfd, const char *path, bool want_ino_version, IverStat *ret) {
        return do_stat(fn, dirfd, path, 0, want_ino_version, ret);
}

int iver_stat_fd(iver_statx_fn fn, int fd, bool want_ino_version, IverStat *ret) {
        return do_stat(fn, fd, "", AT_EMPTY_PATH, want_ino_version, ret);
}

static int64_t clock_ns(clockid_t id) {
        struct timespec ts;
        if (clock_gettime(id, &ts) < 0)
                return 0;
        return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t iver_now_ns(void) {
        return clock_ns(CLOCK_REALTIME);
}

int64_t iver_monotonic_ns(void) {
        return clock_ns(CLOCK_MONOTONIC);
}

int64_t iver_thread_cpu_ns(void) {
        return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}
