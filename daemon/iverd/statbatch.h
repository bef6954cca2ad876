/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "iver/check.h"

/* A batch of files of one directory for the workers to statx (the walk's
 * look at each file, off the loop): names in, observations out. */
#define STAT_BATCH_MAX 64U
typedef struct StatBatch {
        int dirfd;                 /* owned */
        char *dir;                 /* the directory's path (owned) */
        iver_statx_fn statx;
        bool want_version;
        unsigned n;
        uint32_t name_off[STAT_BATCH_MAX];
        char *names;               /* NUL-terminated, one after another (owned) */
        size_t names_len, names_cap;
        int r[STAT_BATCH_MAX];     /* filled on the statx thread: iver_stat()'s return */
        int64_t at[STAT_BATCH_MAX];/* iver_now_ns() just before each statx */
        IverStat st[STAT_BATCH_MAX];
} StatBatch;

/* The statx of each name, on a statx thread (workers_submit_stat). */
void stat_batch_run(StatBatch *b);
StatBatch *stat_batch_free(StatBatch *b);
