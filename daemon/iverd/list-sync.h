/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "iver/imalog.h"
#include "tpm-thread.h"

/* The measurement list's fdatasync, off the event loop: the loop writes each
 * group of entries (write(2) only) and submits it here; one thread makes the
 * binary list durable (one fdatasync covers every group written since the
 * last one: group commit) and only then tells the TPM thread how far the list
 * is durable. A slow disk delays extends, never the loop. The thread never calls
 * into daemon code: it writes an eventfd when the loop should look. */
typedef struct ListSync ListSync;

/* fd: the binary list (dup'ed); tpm: where durable entries go (NULL: none). */
int list_sync_new(int fd, TpmThread *tpm, ListSync **ret);
/* Sync what was submitted, stop, join (up to 5 s; a thread stuck in a hung
 * disk is left behind and ls is returned). */
ListSync *list_sync_free(ListSync *ls);
/* n more entries were written to the list, which now ends at byte end;
 * pcrs: the PCRs they name. */
void list_sync_submit(ListSync *ls, size_t n, uint64_t end, uint32_t pcrs);
/* Entries submitted and not yet durable. */
size_t list_sync_pending(ListSync *ls);
/* fdatasyncs done; -errno of the first failure (0 if none): the entries of a
 * failed sync and all later ones are never handed to the TPM. */
void list_sync_stats(ListSync *ls, size_t *ret_syncs, int *ret_error);
int list_sync_fd(const ListSync *ls);
void list_sync_ack(ListSync *ls);
