/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The watchdog is fed while the workers make progress, not merely while the
 * event loop turns.
 *
 * sd_event_set_watchdog() is not used: it sends WATCHDOG=1 on every loop
 * iteration (and from a timer of its own when idle), so it says "the loop is
 * alive" and nothing more. A worker stuck in a read (a hung network or FUSE
 * filesystem, a permission event nobody answers) leaves the loop turning and
 * every use or check of that file waiting: that watchdog would go on being fed
 * for ever. Here the status timer (1 s) asks the pool (workers_owe_progress)
 * and feeds only when it owes nothing or finished something since.
 *
 * The bound: half the watchdog period, and at least 5 s. A small file is
 * under 64 MiB and one worker is always kept free of big files, so owed work
 * comes back within seconds on any disk that reads more than 13 MB/s; big
 * files alone owe nothing (their hash may take minutes). After the bound the
 * service manager has the other half of the period to see the silence.
 *
 * This module does not own the pool, the timer or the decision what a stall
 * leads to (the service manager's Restart=). */
#include <systemd/sd-daemon.h>

#include "log.h"
#include "worker-health.h"

#define BOUND_MIN_USEC (5ULL * 1000000ULL)

void worker_health_init(WorkerHealth *h, uint64_t now_usec) {
        uint64_t period = 0;
        if (sd_watchdog_enabled(0, &period) <= 0)
                period = 0;
        *h = (WorkerHealth) {
                .period_usec = period,
                .bound_usec = period / 2 > BOUND_MIN_USEC ? period / 2 : BOUND_MIN_USEC,
                .progress_usec = now_usec,
        };
}

bool worker_health_progressing(WorkerHealth *h, bool owe, uint64_t finished, uint64_t now_usec) {
        if (!owe || finished != h->finished) {
                h->finished = finished;
                h->progress_usec = now_usec;
                h->stalled = false;
                return true;
        }
        if (now_usec - h->progress_usec < h->bound_usec)
                return true;
        h->stalled = true;
        return false;
}

bool worker_health_tick(WorkerHealth *h, Workers *w, uint64_t now_usec) {
        if (h->period_usec == 0)
                return false; /* no watchdog: nothing to feed, nothing to decide */
        uint64_t finished;
        bool owe = workers_owe_progress(w, &finished);
        bool was_stalled = h->stalled;
        if (!worker_health_progressing(h, owe, finished, now_usec)) {
                if (!was_stalled) {
                        char held[1024];
                        workers_held(w, held, sizeof(held));
                        log_error("Hashing workers made no progress for %.1f s with files waiting for them "
                                  "(at: %s): no longer feeding the watchdog (%.1f s)",
                                  (double) (now_usec - h->progress_usec) / 1e6, held[0] ? held : "?",
                                  (double) h->period_usec / 1e6);
                }
                return false;
        }
        if (was_stalled)
                log_notice("Hashing workers progress again: feeding the watchdog");
        (void) sd_notify(0, "WATCHDOG=1");
        return true;
}
