/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "iver/conf.h"

typedef struct Manager Manager;
typedef struct OnAccess OnAccess;

/* On-access triggers through fanotify (OnAccess=exec|open): filesystem marks
 * on every filesystem holding a measured directory; an exec (or open) of a
 * file queues its check, as kernel IMA measures files when they are used, and
 * close-after-write catches mmap stores that do not move ctime yet.
 * Notification class: iverd measures, it does not block the caller (no
 * permission events, so the daemon's own opens can never deadlock it). */
int onaccess_new(Manager *m, IverOnAccess mode, OnAccess **ret);
OnAccess *onaccess_free(OnAccess *o);
/* Mark the filesystem holding dir (once per filesystem). */
void onaccess_add(OnAccess *o, const char *dir);
unsigned onaccess_marks(const OnAccess *o);
unsigned long long onaccess_events(const OnAccess *o);
