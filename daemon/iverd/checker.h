/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <systemd/sd-event.h>

typedef struct Manager Manager;

/* Defer source: take queued paths while workers have room; hits and files
 * the policy does not measure finish here, misses go to the pool. */
int checker_dispatch(sd_event_source *s, void *userdata);
/* The walker's fast path for a file a scan found (name in the open directory
 * dirfd, full path path): a statx relative to dirfd and the cache lookup,
 * without a queue node. Returns true when done (the usual unchanged file);
 * false when the file must go through the queue (it needs hashing, or the
 * statx failed and the queued check will say why). */
bool checker_scan_file(Manager *m, int dirfd, const char *name, const char *path);
/* Worker eventfd: finish the jobs the pool has done. */
int checker_workers_done(sd_event_source *s, int fd, uint32_t revents, void *userdata);
