/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

typedef struct Manager Manager;
typedef struct Watch Watch;

/* inotify triggers, the fallback of fstrack.c: one watch a measured
 * directory on a filesystem fanotify cannot mark (none where it can), within
 * a budget of half the watches root had free. Events on files queue a
 * check; new or moved-in directories are walked; IN_Q_OVERFLOW means events
 * were lost, so everything is rescanned. When the watch limit is reached the
 * unwatched directories are counted and covered by the periodic rescan. */
int watch_new(Manager *m, Watch **ret);
Watch *watch_free(Watch *w);
/* Watch dir (idempotent). */
void watch_add(Watch *w, const char *dir);
/* The same for a directory open as dirfd (used when dir is longer than PATH_MAX). */
void watch_add_fd(Watch *w, int dirfd, const char *dir);
unsigned watch_count(const Watch *w);
unsigned watch_failed(const Watch *w);     /* directories left unwatched (limit) */
uint64_t watch_overflows(const Watch *w);
uint64_t watch_events(const Watch *w);
long watch_budget(const Watch *w);        /* -1 until the first watch */
