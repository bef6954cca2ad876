/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdint.h>

#include "workers.h"

/* iver_measure(AT_FDCWD, path, …) that follows no symlink in any component of
 * path, of any length (PATH_MAX does not apply) */
int workers_measure_path(const char *path, const IverMeasureOptions *opt, IverMeasurement *ret);
/* The same for a symlink: the digest of its target (iver_measure_link). */
int workers_measure_link(const char *path, const IverMeasureOptions *opt, IverMeasurement *ret);

/* The parent directory of a worker's last job, kept for the next one: jobs
 * come mostly as siblings (one openat2 for all). Kept for DIR_CACHE_NS at
 * most, and never while the worker waits for work (an idle daemon pins no
 * directory: an unmount is not refused), so a directory swapped for a symlink
 * meanwhile costs at most a few milliseconds' files measured at their old
 * place. */
#define DIR_CACHE_NS (50 * 1000 * 1000LL)
typedef struct DirCache {
        char *dir;
        size_t len;
        int fd;
        int64_t opened_at;     /* iver_now_ns() */
} DirCache;

/* The parent directory of path (an absolute file name), from the cache or
 * opened with no symlink in any component (and cached); *ret_name: its last
 * component. -EINVAL: not an absolute file name; -ENOTDIR: through a symlink. */
int dir_of(DirCache *c, const char *path, const char **ret_name);
void dir_cache_expire(DirCache *c);  /* closed when older than DIR_CACHE_NS */
void dir_cache_done(DirCache *c);    /* closed: pins no directory */

/* How much of a file read_ahead() asks the kernel to read. */
#define READ_AHEAD_BYTES (256U << 10)
/* Open up to max jobs from first on (a batch of small files on a device:
 * opt.read_ahead) and start their reads (readahead(2)), so the disk has the
 * batch's reads in flight while the worker hashes the first. ret_fd[i]: the
 * i-th job's fd, for iver_measure_opened(), or -1 (not read ahead: the
 * measurement opens it itself and says why it cannot). *held: the worker's
 * slot for a stall's log line (workers_held), set while an open may hang.
 * Returns how many of ret_fd were set. */
unsigned read_ahead(const char **held, DirCache *c, const Job *first, unsigned max, int *ret_fd);
