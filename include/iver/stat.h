/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* What one statx() call tells about a file: identity, the fields both
 * heuristics look at, and the raw material of the change cookie.
 * Times are nanoseconds since the epoch (saturating; good until 2262). */
typedef struct IverStat {
        uint32_t mask;          /* stx_mask as returned */
        uint32_t dev;           /* packed major:12 minor:20, lossless for kernel dev_t */
        uint64_t ino;
        uint64_t gen;           /* generation (32 bits): btime in ns folded (iver_gen_of_btime), else 0
                                 * from iver_stat(); iver_measure() fills FS_IOC_GETVERSION's where
                                 * there is no btime (see IverIdentity) */
        uint64_t size;
        uint64_t blocks;
        int64_t atime, mtime, ctime, btime;
        uint32_t mode, uid, gid, nlink;
        uint64_t ino_version;   /* seed ABI value at offset 0x98, if asked for and returned */
        bool has_btime;
        bool has_ino_version;   /* kernel set 0x2000 in stx_mask (may be DIOALIGN!) */
} IverStat;

/* (dev, ino, generation). Two files with equal ino but different generation
 * are different files: an inode number reused after delete never inherits.
 * A generation has 32 bits (the kernel's i_generation has no more; a btime
 * is folded): the cache keeps 4 bytes of it. A reused inode whose folded
 * btime matched by chance (2^-32) still has a new ctime, so its cookie
 * differs. */
typedef struct IverIdentity {
        uint32_t dev;
        uint64_t ino;
        uint64_t gen;
} IverIdentity;

/* The generation of a file born at btime (ns): the two halves xor-ed. */
static inline uint64_t iver_gen_of_btime(int64_t btime) {
        return (uint32_t) ((uint64_t) btime ^ ((uint64_t) btime >> 32));
}

/* The statx(2) signature, injectable so unit tests can play kernels with and
 * without the 2022 stx_ino_version patch. */
typedef int (*iver_statx_fn)(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf);

/* The seed ABI: STATX_INO_VERSION = 0x2000, u64 stx_ino_version at byte 0x98.
 * Upstream reused both for STATX_DIOALIGN; never trust without a probe. */
#define IVER_STATX_INO_VERSION 0x2000U
#define IVER_STATX_INO_VERSION_OFFSET 0x98

/* statx by (dirfd, path) without following a final symlink; with
 * want_ino_version the seed bit is requested too. fn NULL means statx(2).
 * Returns 0 or -errno. */
int iver_stat(iver_statx_fn fn, int dirfd, const char *path, bool want_ino_version, IverStat *ret);
/* The same on an open fd (AT_EMPTY_PATH). */
int iver_stat_fd(iver_statx_fn fn, int fd, bool want_ino_version, IverStat *ret);

/* Decode a raw statx buffer (exposed for tests and the probe). */
void iver_stat_from_statx(const struct statx *sx, IverStat *ret);

static inline IverIdentity iver_stat_identity(const IverStat *st) {
        return (IverIdentity) { .dev = st->dev, .ino = st->ino, .gen = st->gen };
}

static inline bool iver_identity_equal(const IverIdentity *a, const IverIdentity *b) {
        return a->dev == b->dev && a->ino == b->ino && a->gen == b->gen;
}

/* Current CLOCK_REALTIME in ns (the clock file timestamps are stamped from). */
int64_t iver_now_ns(void);
/* CLOCK_MONOTONIC / thread CPU time in ns. */
int64_t iver_monotonic_ns(void);
int64_t iver_thread_cpu_ns(void);
