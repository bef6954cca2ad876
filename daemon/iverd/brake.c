/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The storm brake of a change-event queue (brake.h). */
#include <stdlib.h>
#include <time.h>

#include "brake.h"
#include "thread.h"

#define BRAKE_USEC 2000ULL

void brake_init(Brake *b, sd_event_source *io, const Reports *reports) {
        /* a bench knob: the same storm without the brake (bench/storm.sh) */
        *b = (Brake) { .io = getenv("IVERD_TEST_NO_BRAKE") ? NULL : io, .reports = reports };
}

void brake_done(Brake *b) {
        b->timer = sd_event_source_disable_unref(b->timer);
        b->paused = false;
}

static int on_resume(sd_event_source *s, uint64_t usec, void *userdata) {
        Brake *b = userdata;
        b->paused = false;
        (void) sd_event_source_set_enabled(b->io, SD_EVENT_ON);
        report_settled(b->reports);
        return 0;
}

bool brake_before(Brake *b) {
        uint64_t now = now_usec();
        bool soon = now - b->last_usec < BRAKE_USEC;
        b->last_usec = now;
        return soon;
}

void brake_after(Brake *b, bool pause) {
        int r;
        if (!pause || !b->io)
                return;
        if (b->timer)
                r = sd_event_source_set_time_relative(b->timer, BRAKE_USEC) ?:
                    sd_event_source_set_enabled(b->timer, SD_EVENT_ONESHOT);
        else
                r = sd_event_add_time_relative(sd_event_source_get_event(b->io), &b->timer, CLOCK_MONOTONIC,
                                               BRAKE_USEC, 1, on_resume, b);
        if (r < 0 || sd_event_source_set_enabled(b->io, SD_EVENT_OFF) < 0)
                return; /* no brake: reads go on as they come */
        b->paused = true;
        b->pauses++;
}
