/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

typedef struct Manager Manager;

/* Restore cache and ledger from the state directory's snapshot, if it was
 * written in this boot under this boot's key; otherwise discard it loudly.
 * Makes sure the boot key exists afterwards. Never fails the start. */
void persist_load(Manager *m);
/* Write the snapshot atomically (if anything changed since the last one). */
int persist_save(Manager *m);
/* Periodic snapshots every interval_usec (crash safety). */
int persist_start_timer(Manager *m, unsigned long long interval_usec);
