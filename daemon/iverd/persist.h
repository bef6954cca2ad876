/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdint.h>

typedef struct Manager Manager;

/* Restore cache and ledger from the state directory's snapshot, if it was
 * written in this boot under this boot's key; otherwise discard it loudly.
 * Makes sure the boot key exists afterwards. Never fails the start.
 * *ret_mtime_sec: the restored snapshot's mtime, -1 if none was restored. */
void persist_load(Manager *m, int64_t *ret_mtime_sec);
/* Write the snapshot atomically, unless no check ran since the last one
 * (the ledger's check count did not move). Logs a failure. */
int persist_save(Manager *m);
/* Periodic snapshots every interval_usec (crash safety). */
int persist_start_timer(Manager *m, unsigned long long interval_usec);
