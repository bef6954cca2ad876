/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "report.h"

/* The storm brake of a change-event queue (the fanotify tracker's, the
 * inotify watches'). A
 * writer writing a byte at a time to a tracked file made the loop read each
 * write's event as it came: the queue never held two to merge, so one event
 * a write and a core of CPU (bench/storm.sh: 95-99 % of a core; with the
 * brake 5-16 %, under 9 % once such a file's modifications stopped queueing
 * checks while its re-checks run: report_written). A read within BRAKE_USEC of the last one
 * pauses the queue's io source for BRAKE_USEC, and the kernel merges what
 * comes meanwhile (one event a file and kind). Whoever needs the queue read
 * before it acts reads it directly (the tracker's syncs before checks, uses
 * and listings at rest; the on-access thread's FIONREAD) and is not held up;
 * settle waits while the brake is on (its end reports settled: the queue may
 * hold nothing). The inotify watches' queue is read by no one else: on the
 * filesystems they track every cookie move re-hashes, so a use decides on its
 * statx alone, and what their events start (checks, a closed writer's
 * invalidation) comes at most BRAKE_USEC later than unbraked, and only in a
 * storm. */
typedef struct Brake {
        sd_event_source *io, *timer;
        const Reports *reports;
        uint64_t last_usec, pauses;
        bool paused;
} Brake;

/* io: the queue's source; reports must outlive b. */
void brake_init(Brake *b, sd_event_source *io, const Reports *reports);
void brake_done(Brake *b);
/* Call at the start of each io callback: true when it reads too soon after
 * the last, and the source is to pause after this read (brake_after). */
bool brake_before(Brake *b);
void brake_after(Brake *b, bool pause);
static inline bool brake_paused(const Brake *b) {
        return b->paused;
}
