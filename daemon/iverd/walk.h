/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "iver/check.h"
#include "report.h"
#include "workers.h"

typedef struct Walk Walk;

/* An incremental directory walker run from the event loop: each step reads
 * a bounded number of entries and adds watches on directories, skipping
 * subtrees the policy can never measure. The files it finds go to the
 * workers in batches for their statx, and from there (walk_stat_done) to
 * their check: a miss is handed to a worker on that statx. It waits while
 * the hashing window is full or enough batches are out. */
/* What it finds is reported (reports: file_found, check, dir_entered,
 * dir_wanted, has_room, settled, unmeasurable); statx batches go to workers.
 * reports must outlive the Walk. */
int walk_new(sd_event *event, IverContext *ctx, Workers *workers, const Reports *reports, Walk **ret);
Walk *walk_free(Walk *w);
/* Add a root to walk (deduplicated while walking). */
int walk_add(Walk *w, const char *dir);
bool walk_busy(const Walk *w);
/* The walk waits while the hashing window is full (it hands misses to the
 * workers itself); call when jobs came back. */
void walk_resume(Walk *w);
/* A statx batch of the walk's came back from the workers (the loop thread):
 * each file goes on to its check. */
typedef struct StatBatch StatBatch;
void walk_stat_done(Walk *w, StatBatch *b);
uint64_t walk_files_seen(const Walk *w);
/* Directories read so far (all scans) and still to read. */
void walk_dirs(const Walk *w, uint64_t *ret_done, uint64_t *ret_todo);
