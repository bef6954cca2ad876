/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stddef.h>

#include "iver/imalog.h"
#include "tpm-thread.h"

/* The measurement list's fdatasync, off the event loop: the loop writes each
 * group of entries (write(2) only) and submits it here; one thread makes the
 * binary list durable (one fdatasync covers every group written since the
 * last one: group commit) and only then hands the entries to the TPM thread,
 * in order. A slow disk delays extends, never the loop. The thread never calls
 * into daemon code: it writes an eventfd when the loop should look. */
typedef struct ListSync ListSync;

/* fd: the binary list (dup'ed); tpm: where durable entries go (NULL: none). */
int list_sync_new(int fd, TpmThread *tpm, ListSync **ret);
/* Sync what was submitted, stop, join (up to 5 s; a thread stuck in a hung
 * disk is left behind: then the entries must stay valid and t is returned). */
ListSync *list_sync_free(ListSync *ls);
/* Entries written to the list, in list order; pointers stay valid until free. */
int list_sync_submit(ListSync *ls, const IverImaEntry *const *ents, size_t n);
/* Entries submitted and not yet durable. */
size_t list_sync_pending(ListSync *ls);
/* fdatasyncs done; -errno of the first failure (0 if none): the entries of a
 * failed sync and all later ones are never handed to the TPM. */
void list_sync_stats(ListSync *ls, size_t *ret_syncs, int *ret_error);
int list_sync_fd(const ListSync *ls);
void list_sync_ack(ListSync *ls);
