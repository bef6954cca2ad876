/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include <systemd/sd-event.h>

#include "report.h"

typedef struct Recheck Recheck;

/* Files measured provisionally (a writer held them open, so no read lease)
 * or found unstable are checked again, with a per-file backoff (20 ms
 * doubling, 8 tries). The close-write event alone is not enough: it is queued
 * before the closing writer gives up its write access (fsnotify_close()
 * precedes put_file_access() in __fput()), and on xfs ->release() takes a
 * while (it trims speculative preallocation), so the check that the close
 * triggers often still cannot take the read lease, and no further event
 * comes. The result of a file's last try (~5 s after the first) is marked
 * final (recheck_take_final): a file still open for writing then has its
 * provisional digest listed, and a new episode of tries begins; one that
 * kept changing through it (unstable) has a violation listed, once for as
 * long as it stays so (recheck_unstable_final). */
/* A re-check that is due is reported (reports->check); reports must outlive r. */
int recheck_new(sd_event *event, const Reports *reports, Recheck **ret);
Recheck *recheck_free(Recheck *r);
/* True when path was not being re-checked: a new episode of instability.
 * A path whose last try is under way keeps it (false): a check begun before
 * it, still deferring to a writer, does not start the episode over (under a
 * writer that never stops, each episode would be overtaken so, and the
 * writer never listed). */
bool recheck_add(Recheck *r, const char *path);
/* A measurement failed with error (-errno): when the cause is transient
 * (EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN; EIO once) the path is checked again
 * with backoff and true is returned. */
bool recheck_retry(Recheck *r, const char *path, int error);
/* Whether path's last re-check try came back (still provisional, or
 * unstable): then it leaves the set (true), and a provisional result is
 * listed. */
bool recheck_take_final(Recheck *r, const char *path);
/* Path's last try came back unstable (it kept changing while hashed): a
 * new episode of tries begins at once. True the first time since path came
 * into the set: its violation is listed once for as long as it stays
 * unstable, not once an episode. False when no last try was under way. */
bool recheck_unstable_final(Recheck *r, const char *path);
/* Whether path's last try is under way (recheck_take_final would say so):
 * its check hashes even a file still open for write. */
bool recheck_is_final(const Recheck *r, const char *path);
/* Whether a try of path is scheduled (not a last try under way, not a
 * retry out of tries): a check will come without being asked. */
bool recheck_scheduled(const Recheck *r, const char *path);
/* The file measured stably (or vanished): stop re-checking it. */
void recheck_remove(Recheck *r, const char *path);
size_t recheck_count(const Recheck *r);
/* Re-checks due soon (backoff still short): count as pending work for settle. */
bool recheck_pending_soon(const Recheck *r);
