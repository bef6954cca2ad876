/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "iver/check.h"
#include "fstrack.h"
#include "report.h"

typedef struct Watch Watch;

/* inotify triggers, the fallback of fstrack.c: one watch a measured
 * directory on a filesystem fanotify cannot mark (none where it can), within
 * a budget of half the watches root had free. Events on files queue a
 * check; new or moved-in directories are reported (to be walked); IN_Q_OVERFLOW means events
 * were lost, so everything is rescanned. When the watch limit is reached the
 * unwatched directories are counted and covered by the periodic rescan. */
/* Events are reported (reports: check, new_dir, forget_below, rescan);
 * fstrack is asked first whether a filesystem mark covers a directory. */
int watch_new(sd_event *event, IverContext *ctx, FsTrack *fstrack, const Reports *reports, Watch **ret);
Watch *watch_free(Watch *w);
/* Watch dir (idempotent). */
void watch_add(Watch *w, const char *dir);
/* The same for the directory open as dirfd, named dir: the watch goes on
 * that directory (through /proc/self/fd), whatever holds the name now and
 * however long it is. True when a filesystem mark covers it (no watch of its
 * own: a change anywhere on that filesystem is seen). */
bool watch_add_fd(Watch *w, int dirfd, const char *dir);
unsigned watch_count(const Watch *w);
unsigned watch_failed(const Watch *w);     /* directories left unwatched (limit) */
uint64_t watch_overflows(const Watch *w);
uint64_t watch_events(const Watch *w);
uint64_t watch_pauses(const Watch *w);    /* the storm brake's (brake.h) */
bool watch_paused(const Watch *w);
long watch_budget(const Watch *w);        /* -1 until the first watch */
