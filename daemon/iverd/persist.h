/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdint.h>
#include <systemd/sd-event.h>

#include "iver/check.h"

typedef struct Evidence Evidence;
typedef struct Rest Rest;
typedef struct Persist Persist;

/* Boot-scoped snapshots of the cache and the ledger in the state directory,
 * bound to the measurement list of evidence; held digests (rest) are marked
 * stale in them. */
int persist_new(sd_event *event, IverContext *ctx, const char *state_dir, Evidence *evidence, Rest *rest,
                Persist **ret);
/* Waits for a save in flight (bounded: a hung disk's fsync is left behind). */
Persist *persist_free(Persist *p);
/* Restore cache and ledger from the snapshot, if it was written in this boot
 * under this boot's key; otherwise discard it loudly. Makes sure the boot
 * key exists afterwards. Never fails the start. *ret_mtime_sec: the restored
 * snapshot's mtime, -1 if none was restored. */
void persist_load(Persist *p, int64_t *ret_mtime_sec);
/* Write the snapshot atomically and durably now, on this thread (at exit),
 * unless no check ran since the last one (the ledger's check count did not
 * move). Logs a failure. */
int persist_save(Persist *p);
/* Periodic snapshots every interval_usec (crash safety): encoded into a
 * temporary on the loop (page cache), its fsync and rename on a thread of
 * its own, so a slow disk never stalls the loop. */
int persist_start_timer(Persist *p, uint64_t interval_usec);
