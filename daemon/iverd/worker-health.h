/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "workers.h"

/* The service manager's watchdog, fed only while the hashing workers make
 * progress (fapolicyd's worker-health idea). */
typedef struct WorkerHealth {
        uint64_t period_usec;   /* WATCHDOG_USEC (0: no watchdog: nothing to feed) */
        uint64_t bound_usec;    /* how long owed progress may fail to come */
        uint64_t finished;      /* workers_owe_progress()'s count at the last progress */
        uint64_t progress_usec; /* when the pool last progressed, or owed nothing */
        bool stalled;           /* the error line is logged: not fed until progress */
} WorkerHealth;

/* Read the watchdog period the service manager set (sd_watchdog_enabled). */
void worker_health_init(WorkerHealth *h, uint64_t now_usec);
/* Called about every second from the loop: WATCHDOG=1 when the pool owes
 * nothing or finished something since the last call, or the owed progress
 * is late by less than bound_usec; else not, with one error line naming the
 * stall (the service manager then restarts iverd). Returns whether it fed. */
bool worker_health_tick(WorkerHealth *h, Workers *w, uint64_t now_usec);
/* The decision alone (worker_health_tick without the pool, the log lines and
 * the notify): owe and finished as workers_owe_progress() returned them. */
bool worker_health_progressing(WorkerHealth *h, bool owe, uint64_t finished, uint64_t now_usec);
