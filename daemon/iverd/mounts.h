/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

typedef struct Manager Manager;
typedef struct Mounts Mounts;

/* The mount table (/proc/self/mountinfo, which polls with EPOLLPRI on every
 * change): a mount appearing or leaving at or above or below a measured
 * directory (a bind or overlay mount over it hides what was measured) walks
 * the mount point again, re-checks the cached files below it, and lets
 * fstrack forget filesystems that left and mark new ones. */
int mounts_new(Manager *m, Mounts **ret);
Mounts *mounts_free(Mounts *t);
unsigned long long mounts_changes(const Mounts *t);
