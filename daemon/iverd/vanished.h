/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "iver/check.h"

/* Names a check found gone (ENOENT): the cache entry each held is forgotten
 * once the checks queued with it have run, not at once. A rename queues its
 * old name first and its new name after: the new name's check finds the
 * inode's entry and takes it (lib/check.c follow_rename), so the later
 * forget of the old name leaves it and nothing is hashed again (dpkg's
 * NAME.dpkg-new → NAME). What was moved out of every measured tree, or
 * deleted, is forgotten as before, a little later. The entry is remembered
 * by identity (device, inode, generation): a new file measured under the old
 * name meanwhile keeps its entry, also one that reuses the inode number. At most VANISHED_MAX names wait: one more forgets them all now. */
typedef struct Vanished Vanished;

#define VANISHED_MAX 1024

int vanished_new(Vanished **ret);
Vanished *vanished_free(Vanished *v);
/* path was found gone: its entry (if any) is to be forgotten. */
void vanished_add(Vanished *v, IverContext *ctx, const char *path);
/* Forget the entries of the names found gone that still hold them. */
void vanished_flush(Vanished *v, IverContext *ctx);
