/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "iver/cookie.h"
#include "iver/digest.h"
#include "iver/stat.h"

/* Version-stable hashing: a digest is only ever returned together with the
 * stat observation it was computed under. */
typedef enum IverMeasureStatus {
        IVER_MEASURE_STABLE,       /* hashed under a read lease, cookie unmoved */
        IVER_MEASURE_PROVISIONAL,  /* no lease could be had (open writers, no permission): cookie unmoved, but trust only until next check */
        IVER_MEASURE_UNSTABLE,     /* kept changing through every attempt: no digest */
        IVER_MEASURE_NOT_REGULAR,  /* FIFO, socket, device, directory (symlink for iver_measure): never opened */
        IVER_MEASURE_WRITERS,      /* open for write, not hashed (IverMeasureOptions.defer_writers): no digest */
        _IVER_MEASURE_MAX,
        _IVER_MEASURE_INVALID = -22,
} IverMeasureStatus;

const char *iver_measure_status_to_string(IverMeasureStatus s);

typedef struct IverMeasureOptions {
        IverHashAlgo algo;         /* default sha256 */
        IverCookieSource source;   /* cookie to compare before/after */
        iver_statx_fn statx;       /* NULL: statx(2) */
        unsigned max_attempts;     /* 0: 3 */
        size_t chunk_size;         /* 0: 1 MiB; the lease is polled between chunks */
        bool sigio_ignored;        /* the caller ran iver_measure_prepare_signals(): no check per call */
        bool no_cpu_time;          /* leave cpu_ns 0 (the caller times a batch itself) */
        const bool *cancel;        /* non-NULL: stop with -ECANCELED once *cancel is true (read atomically) */
        int8_t getversion;         /* FS_IOC_GETVERSION where statx has no btime: -1 the fs has none (not
                                    * tried), else tried (iver_cookie_table_getversion) */
        bool read_ima_xattr;       /* also read security.ima from the hashed fd (IverMeasurement.ima_xattr) */
        bool defer_writers;        /* a file open for write (the read lease refused: EAGAIN) is not hashed:
                                    * IVER_MEASURE_WRITERS, for a caller that looks again at the writer's
                                    * close (a provisional digest of a file being written is of no version
                                    * its writer meant to keep) */
        uint64_t max_size;         /* 0: any; else an attempt whose statx before finds a regular file larger
                                    * ends the measurement with -EFBIG, nothing hashed (it grew since the
                                    * caller's look: the caller may want to hash it elsewhere) */
        /* fs_dev_checked: the caller knows that the filesystem of device fs_dev
         * is no pseudo filesystem (it keeps that fact once per filesystem): a
         * file found on fs_dev is not fstatfs'ed again */
        bool fs_dev_checked;
        uint32_t fs_dev;
        /* lease_proves: on fs_dev a held read lease proves the content
         * unchanged (a local filesystem where every change of content goes
         * through an open for write, a writable mapping of one, or a
         * truncate, each of which breaks the lease or makes it refused:
         * iver_lease_proves_fs). An attempt with no "before" from the caller
         * then takes its statx from the open file after the lease, and a
         * file read in one chunk needs no statx after: one statx a file. */
        bool lease_proves;
        /* read_ahead: fs_dev reads from a device (not tmpfs, ramfs, nor a
         * pseudo filesystem): a caller with several files to hash gains by
         * starting their reads before it hashes the first
         * (iver_measure_open_fd); measuring does not look at it */
        bool read_ahead;
} IverMeasureOptions;

typedef struct IverMeasurement {
        IverMeasureStatus status;
        IverStat st;               /* observation the digest belongs to (before == after) */
        IverDigest digest;         /* valid for STABLE and PROVISIONAL */
        unsigned attempts;
        uint64_t bytes_hashed;     /* all attempts */
        int64_t cpu_ns;            /* thread CPU time spent */
        int64_t started_at;        /* realtime ns when the accepted attempt began (racy guard) */
        bool lease_broken;         /* some attempt lost its lease to a writer */
        /* With read_ima_xattr, for STABLE and PROVISIONAL: security.ima as
         * read from the same fd after the hash and before the closing statx,
         * so it belongs to the observation st (setxattr moves ctime: a change
         * meanwhile is a retry like a change of content). ima_xattr_r is 0
         * with ima_xattr malloc'ed (any size up to IVER_IMA_XATTR_MAX), or
         * iver_appraise_read_xattr()'s -errno (-ENODATA: none) with
         * ima_xattr NULL. Free with iver_measurement_done(). */
        uint8_t *ima_xattr;
        size_t ima_xattr_size;
        int ima_xattr_r;
} IverMeasurement;

/* Free what a measurement owns (ima_xattr); m stays valid and empty of it. */
void iver_measurement_done(IverMeasurement *m);

/* Measure (dirfd, path): open O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|O_NOATIME
 * (retrying without O_NOATIME on EPERM), refuse non-regular files, take a read
 * lease, statx, hash, statx, check the lease. Returns 0 with ret filled (status
 * tells the outcome) or -errno when the file could not be opened or read
 * (ENOENT: vanished; EACCES: unreadable). Thread-safe; touches no shared state.
 * Lease break notifications are signals: the caller must ignore SIGIO
 * (iver_measure_prepare_signals); if SIGIO is at its default disposition no
 * lease is taken and results are provisional. */
int iver_measure(int dirfd, const char *path, const IverMeasureOptions *opt, IverMeasurement *ret);
/* iver_measure() after the caller's own statx of (dirfd, path): st as
 * iver_stat(opt->statx, …, opt->source == STATX_VERSION, …) returned it, taken
 * at st_at (iver_now_ns() just before). It serves as the first attempt's
 * "before" observation; a non-regular st is never opened. For a caller that
 * decides something on the size (a worker pool keeping big files apart). */
int iver_measure_stat(int dirfd, const char *path, const IverStat *st, int64_t st_at, const IverMeasureOptions *opt,
                      IverMeasurement *ret);
/* iver_measure() with no statx of the caller's: open (dirfd, path) and take
 * the observation from the open file (O_NONBLOCK: a FIFO swapped in for a
 * file found by name opens without blocking and is not hashed). For a caller
 * that found the file by name (a directory read) and needs no look before. */
int iver_measure_open(int dirfd, const char *path, const IverMeasureOptions *opt, IverMeasurement *ret);
/* The two halves of those, for a caller that opens several files before it
 * hashes them (to start their reads: readahead): iver_measure_open_fd()
 * opens (dirfd, path) as they do (-errno; -ELOOP: a symlink, not to be
 * measured), and iver_measure_opened() measures that fd as iver_measure_stat()
 * (st, st_at: the caller's statx, taken before the open; st must be a regular
 * file's) or, st NULL, as iver_measure_open(). The caller closes fd after it,
 * which ends the lease. */
int iver_measure_open_fd(int dirfd, const char *path);
int iver_measure_opened(int fd, const IverStat *st, int64_t st_at, const IverMeasureOptions *opt,
                        IverMeasurement *ret);
/* Whether a filesystem (statfs f_type) is one where a held read lease proves
 * the content unchanged (IverMeasureOptions.lease_proves): ext2/3/4, xfs,
 * btrfs, tmpfs. Not overlayfs (its layers change underneath), nor network or
 * FUSE filesystems (changes that never open the file here). */
bool iver_lease_proves_fs(uint64_t magic);
/* Measure the symlink (dirfd, path) itself (lib/measure-link.c): its digest is
 * that of the target string (readlinkat, no terminating NUL), taken between two
 * statx (AT_SYMLINK_NOFOLLOW) that must agree, so ret->st is the link's
 * observation and its cookie works as a file's. NOT_REGULAR when path is not a
 * symlink; -errno when it cannot be read. */
int iver_measure_link(int dirfd, const char *path, const IverMeasureOptions *opt, IverMeasurement *ret);
/* The same on an already-open fd (fanotify); fd must be open for reading. */
int iver_measure_fd(int fd, const IverMeasureOptions *opt, IverMeasurement *ret);

/* Hash the whole of fd from offset 0 into ret (no lease, no cookie): for
 * tests and tools. Returns bytes hashed or -errno. */
int64_t iver_hash_fd(int fd, IverHashAlgo algo, IverDigest *ret);

/* Set SIGIO to SIG_IGN so lease breaks cannot kill the process. */
int iver_measure_prepare_signals(void);
