/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "iver/appraise.h"
#include "iver/check.h"
#include "conf.h"
#include "iver/policy.h"
#include "exit-status.h"
#include "generation.h"
#include "house.h"
#include "queue.h"
#include "report.h"
#include "settings.h"
#include "worker-health.h"
#include "workers.h"

typedef struct Mounts Mounts;
typedef struct Persist Persist;

typedef struct Manager {
        House h;                        /* first: what the rooms below see (house.h) */
        sd_event *event;
        Reports reports;                /* what the components report, to the manager (report.h) */
        Overrides overrides;
        Mounts *mounts;                 /* mount table changes → rescans */
        sd_event_source *worker_source, *rescan_timer, *status_timer;

        /* progress for status */
        uint64_t scan_files, scan_estimate, rescans_overflow;
        /* the scan in progress (initial or rescan), for progress and its summary */
        bool scan_active;
        uint64_t scan_start_usec, scan_end_usec, scan_base_seen, scan_base_dirs, scan_base_measurements, scan_base_bytes,
                scan_base_errors, scan_base_violations;
        uint64_t gid_stats;             /* group allowed to read (UINT64_MAX: none) */
        bool ready_sent;
        bool sweep_pending;             /* a full scan runs: sweep unseen entries when it settles */
        uint64_t trim_usec, trim_measurements; /* the last malloc_trim: when, at how many measurements */
        Persist *persist;               /* snapshots of cache and ledger (persist.h) */
        WorkerHealth health;            /* the watchdog, fed while the workers progress */
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

void manager_scan_progress(const Manager *m, ScanProgress *ret);
/* path cannot be measured (error: -errno): counted for status, journaled once. */
void manager_unmeasurable(Manager *m, const char *path, int error);

/* Policy question for walker and watcher: may anything below dir be measured? */
bool manager_dir_wanted(const Manager *m, const char *dir);
