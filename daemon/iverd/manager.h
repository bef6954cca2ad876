/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "iver/appraise.h"
#include "iver/check.h"
#include "iver/conf.h"
#include "iver/policy.h"
#include "exit-status.h"
#include "generation.h"
#include "queue.h"
#include "report.h"
#include "settings.h"
#include "workers.h"

typedef struct Walk Walk;
typedef struct Watch Watch;
typedef struct FsTrack FsTrack;
typedef struct Mounts Mounts;
typedef struct Control Control;
typedef struct Evidence Evidence;
typedef struct OnAccess OnAccess;
typedef struct Recheck Recheck;
typedef struct Rest Rest;
typedef struct Persist Persist;

typedef struct Manager {
        sd_event *event;
        Reports reports;                /* what the components report, to the manager (report.h) */
        Overrides overrides;
        IverConf conf;                  /* conf.hash: as at start; the one in force is gen->hash */
        Generation *gen;                /* policy, appraisal keys, hash algorithm in force (never NULL
                                         * once manager_new() returned); jobs in flight hold theirs */
        IverContext *ctx;
        Queue *queue;
        Workers *workers;
        unsigned max_inflight;
        Walk *walk;
        Watch *watch;
        FsTrack *fstrack;               /* whole-filesystem change tracking (fanotify; watch is the fallback) */
        Mounts *mounts;                 /* mount table changes → rescans */
        Control *control;
        Evidence *evidence;             /* measurement list + TPM; never NULL once manager_new() returned
                                         * (no TPM is the "none" TPM, not a missing Evidence) */
        OnAccess *onaccess;             /* fanotify triggers (NULL: OnAccess=none) */
        Recheck *recheck;               /* provisional files to look at again */
        Rest *rest;                     /* digests held until their names come to rest */
        sd_event_source *worker_source, *rescan_timer, *status_timer, *dispatch_source;

        /* progress and counters for status */
        bool initial_scan_done;
        uint64_t scan_files, scan_estimate, scans;
        uint64_t errors, not_regular, violations, measurements, rescans_overflow;
        uint64_t unmeasurable;          /* directories/files that could not be opened at all */
        uint64_t peak_queued;
        /* the scan in progress (initial or rescan), for progress and its summary */
        bool scan_active;
        uint64_t scan_start_usec, scan_end_usec, scan_base_seen, scan_base_dirs, scan_base_measurements, scan_base_bytes,
                scan_base_errors, scan_base_violations;
        uint64_t appraisals[_IVER_APPRAISAL_MAX];
        uint64_t gid_stats;             /* group allowed to read (UINT64_MAX: none) */
        bool ready_sent;
        bool sweep_pending;             /* a full scan runs: sweep unseen entries when it settles */
        Persist *persist;               /* snapshots of cache and ledger (persist.h) */

} Manager;

/* Load settings and set up every component. On failure the reason is
 * logged (once) and *ret_exit (if given) says which kind of failure it was. */
int manager_new(const Overrides *o, Manager **ret, IverdExit *ret_exit);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        if (*m)
                *m = manager_free(*m);
}
/* Queue the initial scan, start the timers, tell the service manager we are
 * ready. Failures are logged. */
int manager_start(Manager *m);
/* The event loop until SIGTERM/SIGINT; then a last snapshot. */
int manager_run(Manager *m);

/* Queue a path for checking (from walker, watcher, control). */
void manager_queue(Manager *m, const char *path);
/* A directory left (moved away): drop the cache entries of the paths below it. */
void manager_forget_below(Manager *m, const char *dir);
/* Full rescan of everything the policy can measure. */
int manager_rescan(Manager *m);
/* Reload config + policy atomically; on error the running ones stay and
 * *ret_error (if given) gets the message. */
int manager_reload(Manager *m, char **ret_error);
/* Whether nothing is queued, hashing, walking or waiting for the TPM. */
bool manager_settled(const Manager *m);
/* Called when something may have settled (wakes iverctl settle waiters). */
void manager_maybe_settled(Manager *m);

/* Progress of the scan in progress (or of the last one when none runs). */
typedef struct ScanProgress {
        bool active, initial;
        uint64_t seen;          /* regular files the walk found */
        uint64_t done;          /* of them, checked (seen less queued and hashing) */
        uint64_t estimate;      /* estimated total files (0: unknown) */
        uint64_t measured;      /* new measurements during the scan */
        uint64_t bytes;         /* bytes hashed during the scan */
        uint64_t errors, violations;
        double seconds;         /* since the scan started */
        double rate;            /* files checked per second */
        double eta;             /* seconds left (-1: unknown) */
} ScanProgress;
void manager_scan_progress(const Manager *m, ScanProgress *ret);
/* path cannot be measured (error: -errno): counted for status, journaled once. */
void manager_unmeasurable(Manager *m, const char *path, int error);

/* Policy question for walker and watcher: may anything below dir be measured? */
bool manager_dir_wanted(const Manager *m, const char *dir);
