/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "iver/stat.h"

#include <systemd/sd-event.h>

#include "iver/check.h"
#include "overlay.h"
#include "report.h"
#include "rest.h"

typedef struct FsTrack FsTrack;

/* Whole-filesystem change tracking (fstrack.c): one fanotify group
 * (FAN_CLASS_NOTIF, directory handles + names and object handles) with a
 * filesystem mark on every filesystem that holds a measured directory.
 * Writes through any path, link or mount of the filesystem reach the cache
 * entry of the inode (IVER_ENTRY_WRITTEN); namespace and attribute events
 * below measured directories queue checks. Each filesystem has a mode:
 *   fanotify-fid  marked; writes attested (metadata-only changes skip the hash)
 *   inotify       no fanotify (no CAP_SYS_ADMIN, old kernel, no handles, a
 *                 network filesystem): directory watches (watch.c), every
 *                 cookie move re-hashes
 *   rescan-only   inotify ran out of its budget on this filesystem
 * and a coverage start: the time since which its event stream has been
 * continuous (mark added, last overflow, daemon start). */
typedef enum FsTrackMode {
        FSTRACK_FANOTIFY,
        FSTRACK_INOTIFY,
        FSTRACK_RESCAN_ONLY,
        _FSTRACK_MODE_MAX,
} FsTrackMode;

/* Events are reported (reports: check, new_dir, forget_below, rescan,
 * dir_wanted) and told to rest (writers: not at rest); the attest hook of ctx's hit rule is set (and cleared by
 * fstrack_free). reports must outlive the FsTrack. */
int fstrack_new(sd_event *event, IverContext *ctx, Rest *rest, const Reports *reports, FsTrack **ret);
FsTrack *fstrack_free(FsTrack *t);

/* A measured directory is being walked: track its filesystem. Returns true
 * when fanotify covers it (no inotify watch needed). */
bool fstrack_add_dir(FsTrack *t, const char *dir);
/* The filesystem of dir could not be watched by inotify (budget). */
void fstrack_note_unwatched(FsTrack *t, const char *dir);
/* Events were lost (fanotify or inotify overflow) for filesystems in mode:
 * coverage restarts now, every entry there counts as written. */
void fstrack_coverage_break(FsTrack *t, FsTrackMode mode);
/* The policy changed: drop the ignore marks (they re-grow lazily). */
void fstrack_policy_changed(FsTrack *t);
/* The mount table changed: forget filesystems no longer mounted where
 * they were (the walk of the mount change adds new ones). */
void fstrack_mounts_changed(FsTrack *t);

/* The overlay mounts of the mount table (taken over: v and each entry; v
 * may be NULL when n is 0). An overlay that holds or is below a measured
 * directory has its layers' filesystems marked, and an event on a path below
 * a layer (a write made to the upper or a lower directory, not through the
 * overlay) is checked at the merged path (mount point + the path relative to
 * the layer). */
void fstrack_overlays_set(FsTrack *t, IverOverlay **v, size_t n);

/* Apply the events queued so far (before a batch of checks): a write or
 * close that happened before a check's statx then flags the old entry, which
 * the measurement replaces, instead of the new one (one needless re-hash). */
void fstrack_sync(FsTrack *t);
/* The same before a use is answered from the cache: the writes and closes
 * queued before the use (in the other group: the two queues are not ordered)
 * flag the entry first (stores through a shared mapping after close move no
 * timestamp on tmpfs; the close is the only sign). Drains further. */
void fstrack_sync_use(FsTrack *t);

/* Reading is paused for a moment (a storm of events: the kernel merges
 * them meanwhile); settle waits for it. */
bool fstrack_paused(const FsTrack *t);

/* The attest hook of lib/check.c (iver_attest_fn). */
int fstrack_attest(void *userdata, const IverStat *st);

/* status: the "tracking" array; explain: what attests a file now. */
json_object *fstrack_status(FsTrack *t);
json_object *fstrack_explain(FsTrack *t, const IverStat *st, uint32_t dev, uint64_t ino);
uint64_t fstrack_events(const FsTrack *t);
uint64_t fstrack_overflows(const FsTrack *t);
/* How often reading paused for a storm of events (fstrack_paused). */
uint64_t fstrack_pauses(const FsTrack *t);
/* Whether writes to files on dev are seen by the fanotify group (every
 * event, no gap so far). */
bool fstrack_tracks(FsTrack *t, uint32_t dev);
/* The fanotify group's fd (what is queued there is not read yet), or -1. */
int fstrack_fd(const FsTrack *t);
