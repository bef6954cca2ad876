/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <systemd/sd-event.h>

#include "fstrack.h"
#include "report.h"

typedef struct Mounts Mounts;

/* The mount table (/proc/self/mountinfo, which polls with EPOLLPRI on every
 * change): a mount appearing or leaving at or above or below a measured
 * directory (a bind or overlay mount over it hides what was measured) is
 * reported (reports->changed_below: the manager walks the mount point again
 * and re-checks the cached files below it), and fstrack is told, to forget
 * filesystems that left and mark new ones. reports must outlive the Mounts. */
int mounts_new(sd_event *event, FsTrack *fstrack, const Reports *reports, Mounts **ret);
Mounts *mounts_free(Mounts *t);
unsigned long long mounts_changes(const Mounts *t);
