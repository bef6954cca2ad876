/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The manager's scans: progress and summary, mark and sweep, the status line,
 * the periodic rescan, and settle (nothing queued, hashed, walked or held:
 * the staged group is written, waiters are told). */
#include <malloc.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "checker.h"
#include "control.h"
#include "evidence.h"
#include "log.h"
#include "manager-internal.h" /* manager.h: this is the manager's own file */
#include "recheck.h"
#include "rest.h"
#include "thread.h"
#include "walk.h"
#include "watch.h"

static uint64_t bytes_hashed(const Manager *m) {
        return iver_ledger_counters(iver_context_ledger(m->h.ctx))->bytes_hashed;
}

/* A scan starts: counters for its progress and summary. A rescan asked for
 * while one runs joins it. */
static void scan_begin(Manager *m) {
        if (m->scan_active)
                return;
        uint64_t done, todo;
        walk_dirs(m->h.walk, &done, &todo);
        m->scan_active = true;
        m->scan_start_usec = (uint64_t) iver_monotonic_ns() / 1000;
        m->scan_base_seen = walk_files_seen(m->h.walk);
        m->scan_base_dirs = done;
        m->scan_base_measurements = m->h.measurements;
        m->scan_base_bytes = bytes_hashed(m);
        m->scan_base_errors = m->h.errors;
        m->scan_base_violations = m->h.violations;
}

void manager_scan_progress(const Manager *m, ScanProgress *ret) {
        uint64_t done, todo;
        walk_dirs(m->h.walk, &done, &todo);
        uint64_t seen = walk_files_seen(m->h.walk) - m->scan_base_seen, dirs = done - m->scan_base_dirs;
        uint64_t pending = queue_queued(m->h.queue) + queue_inflight(m->h.queue);
        *ret = (ScanProgress) {
                .active = m->scan_active,
                .initial = !m->h.initial_scan_done,
                .seen = seen,
                .done = seen > pending ? seen - pending : 0,
                .measured = m->h.measurements - m->scan_base_measurements,
                .bytes = bytes_hashed(m) - m->scan_base_bytes,
                .errors = m->h.errors - m->scan_base_errors,
                .violations = m->h.violations - m->scan_base_violations,
                .eta = -1,
        };
        uint64_t now = m->scan_active ? (uint64_t) iver_monotonic_ns() / 1000 : m->scan_end_usec;
        ret->seconds = (double) (now - m->scan_start_usec) / 1e6;
        if (!m->scan_active) {
                /* the last scan, as it ended */
                ret->done = ret->estimate = seen;
                ret->rate = ret->seconds > 0 ? (double) seen / ret->seconds : 0;
                ret->eta = 0;
                return;
        }
        /* the walk is depth first: directories still to read hold on average
         * as many files as the ones read so far (an underestimate early on,
         * where whole subtrees wait); a restored snapshot knows better */
        uint64_t est = seen;
        if (todo > 0 && dirs > 0)
                est += (uint64_t) ((double) seen / (double) dirs * (double) todo);
        if (m->scan_estimate > est)
                est = m->scan_estimate;
        ret->estimate = est;
        if (ret->seconds > 0.2 && ret->done > 0) {
                ret->rate = (double) ret->done / ret->seconds;
                ret->eta = (double) (est > ret->done ? est - ret->done : 0) / ret->rate;
        }
}

/* Free heap pages go back to the system when the daemon settles after
 * measuring something: a scan's transient heap (walk batches, jobs, the
 * workers' buffers), and between scans the pages that a churn of events
 * (paths, jobs, outcomes in flight) touched and freed again, which would
 * otherwise stay resident. The settled daemon is the cache and the list's
 * index. A scan's end trims at once; the churn at most every
 * TRIM_EVERY_USEC (a few ms a trim). */
#define TRIM_EVERY_USEC 10000000ULL
static void trim(Manager *m, bool now) {
        uint64_t t = now_usec();
        if (m->h.measurements == m->trim_measurements || (!now && t - m->trim_usec < TRIM_EVERY_USEC))
                return;
        m->trim_usec = t;
        m->trim_measurements = m->h.measurements;
        (void) malloc_trim(0);
}

/* The scan settled: one line for it (always for the first, for a rescan
 * only when it found something). */
static void scan_end(Manager *m) {
        ScanProgress p;
        if (!m->scan_active)
                return;
        manager_scan_progress(m, &p);
        m->scan_active = false;
        m->scan_end_usec = (uint64_t) iver_monotonic_ns() / 1000;
        if (p.initial || p.measured > 0)
                trim(m, true);
        if (p.initial || p.measured > 0 || p.errors > 0 || p.violations > 0)
                log_scan_summary(p.initial ? "Initial measurement" : "Rescan", (unsigned long long) p.seen,
                                 (unsigned long long) p.measured, (unsigned long long) p.bytes, p.seconds,
                                 (unsigned long long) p.errors, (unsigned long long) p.violations);
}

int manager_rescan(Manager *m) {
        m->h.scans++;
        scan_begin(m);
        /* mark and sweep: what this scan does not see again was deleted while
         * no event told us (rescan-only directories, lost events) */
        iver_cache_clear_marks(iver_context_cache(m->h.ctx));
        m->sweep_pending = true;
        return walk_add(m->h.walk, "/");
}

/* After a full scan settled: check every cached path the scan did not see;
 * a deleted file's check fails with ENOENT and drops it. */
static void sweep(Manager *m) {
        IverCache *c = iver_context_cache(m->h.ctx);
        size_t n = 0;
        char p[IVER_CACHE_PATH_MAX];
        m->sweep_pending = false;
        for (uint32_t i = 0; i < iver_cache_size(c); i++)
                if (!iver_cache_has_mark(c, i)) {
                        (void) iver_cache_path(c, i, p, sizeof(p));
                        manager_queue(m, p);
                        n++;
                }
        if (n > 0)
                log_debug("Scan did not see %zu cached files: checking them", n);
}

/* Nothing queued, hashed, walked or held at rest: no outcome is coming. */
static bool work_settled(const Manager *m) {
        return queue_queued(m->h.queue) == 0 && queue_inflight(m->h.queue) == 0 && checker_use_jobs() == 0 && !walk_busy(m->h.walk) &&
               !recheck_pending_soon(m->h.recheck) && rest_pending(m->h.rest) == 0 && !fstrack_paused(m->h.fstrack) &&
               !watch_paused(m->h.watch);
}

bool manager_settled(const Manager *m) {
        return work_settled(m) && !(m->h.evidence && evidence_pending(m->h.evidence));
}

void manager_send_status(Manager *m) {
        if (!m->h.initial_scan_done) {
                ScanProgress p;
                manager_scan_progress(m, &p);
                char eta[32] = "ETA unknown";
                if (p.eta >= 0)
                        snprintf(eta, sizeof(eta), "ETA %.0f s", p.eta);
                sd_notifyf(0,
                           "STATUS=Initial scan: %llu / ~%llu files (%.0f%%), %llu seen, %.1f MB hashed, %.0f files/s, %s",
                           (unsigned long long) p.done, (unsigned long long) p.estimate,
                           p.estimate ? 100.0 * (double) p.done / (double) p.estimate : 0.0, (unsigned long long) p.seen,
                           (double) p.bytes / 1e6, p.rate, eta);
        } else
                sd_notifyf(0, "STATUS=Watching %u directories, %zu files cached, %llu measurements",
                           watch_count(m->h.watch), iver_cache_size(iver_context_cache(m->h.ctx)),
                           (unsigned long long) m->h.measurements);
}

void manager_maybe_settled(Manager *m) {
        if (!work_settled(m))
                return;
        /* no entry is coming to join the staged group: it need not wait for
         * its timer (the end of a scan, a lone change) */
        if (m->h.evidence) {
                (void) evidence_commit(m->h.evidence);
                if (evidence_pending(m->h.evidence))
                        return;
        }
        if (m->sweep_pending) {
                sweep(m);
                if (!manager_settled(m))
                        return;
        }
        scan_end(m);
        trim(m, false);
        if (!m->h.initial_scan_done) {
                m->h.initial_scan_done = true;
                evidence_scan_done(m->h.evidence);
                m->scan_estimate = walk_files_seen(m->h.walk);
                manager_send_status(m);
        }
        control_settled(m->h.control);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        manager_send_status(m);
        (void) worker_health_tick(&m->health, m->h.workers, now_usec()); /* WATCHDOG=1 while they progress */
        (void) sd_event_source_set_time_relative(s, 1000000);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        (void) manager_rescan(m);
        (void) sd_event_source_set_time_relative(s, m->h.conf.rescan_interval_usec);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

int manager_scan_timers(Manager *m) {
        int r = sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC, 1000000, 0, on_status_timer, m);
        if (r < 0)
                return log_error_errno(r, "Cannot start the status timer: %m");
        (void) sd_event_source_set_description(m->status_timer, "status");
        if (m->h.conf.rescan_interval_usec > 0) {
                r = sd_event_add_time_relative(m->event, &m->rescan_timer, CLOCK_MONOTONIC,
                                               m->h.conf.rescan_interval_usec, 0, on_rescan_timer, m);
                if (r < 0)
                        return log_error_errno(r, "Cannot start the rescan timer: %m");
                (void) sd_event_source_set_description(m->rescan_timer, "rescan");
        }
        return 0;
}
