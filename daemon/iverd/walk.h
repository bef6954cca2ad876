/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "iver/check.h"
#include "report.h"
#include "workers.h"

typedef struct Walk Walk;

/* An incremental directory walker run from the event loop, skipping
 * subtrees the policy can never measure. Its directories are opened and
 * read, and their files' statx made, on the statx threads (dirread.h, a
 * buffer at a time, READS_MAX directories out); each step looks at a
 * bounded number of the entries read, adds watches on directories (before
 * they are read, unless a filesystem mark covers them) and hands each file
 * on to its check (walk_dir_done, walk_stat_done): a miss is handed to a
 * worker on that statx. It waits while the hashing window is full or enough
 * batches are out. */
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
/* A directory the walk handed to the statx threads came back (the loop
 * thread; the walk takes d): looked at from the next step on. */
void walk_dir_done(Walk *w, DirRead *d);
uint64_t walk_files_seen(const Walk *w);
/* Directories read so far (all scans) and still to read. */
void walk_dirs(const Walk *w, uint64_t *ret_done, uint64_t *ret_todo);
