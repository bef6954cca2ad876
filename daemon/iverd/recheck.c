/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Backoff re-checks of provisional measurements. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "recheck.h"
#include "thread.h"

#define DELAY_MIN_USEC 20000ULL
#define TRIES 8                   /* 20 ms … 2.56 s */
#define SOON_USEC 1000000ULL
#define RETRY_DELAY_USEC 100000ULL
#define RETRY_TRIES 10

typedef struct Item {
        char *path;
        uint64_t due, delay;
        unsigned tries, max_tries;
        bool retry;             /* a transient failure, not a provisional result */
        bool final;             /* its last try is queued: a provisional result now is listed */
} Item;

#define SPENT UINT64_MAX        /* a retry out of tries: stays (so its next failure is not retried) until the file is measured or gone */

struct Recheck {
        const Reports *reports;
        Item *items;
        size_t n, cap;
        sd_event_source *timer;
};

static void arm(Recheck *r) {
        if (r->n == 0) {
                (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
                return;
        }
        uint64_t due = UINT64_MAX;
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].due < due)
                        due = r->items[i].due;
        if (due == SPENT) {
                (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(r->timer, due);
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Recheck *r = userdata;
        uint64_t now = now_usec();
        for (size_t i = 0; i < r->n;) {
                Item *it = &r->items[i];
                if (it->due > now) {
                        i++;
                        continue;
                }
                report_check(r->reports, it->path);
                if (++it->tries >= it->max_tries && it->retry) {
                        it->due = it->delay = SPENT;
                        i++;
                        continue;
                }
                if (it->tries >= it->max_tries) {
                        /* held open for writing all along: this check's result is
                         * listed even if provisional (recheck_take_final) */
                        it->final = true;
                        it->due = it->delay = SPENT;
                        i++;
                        continue;
                }
                /* stays in the set until measured stably; next try later */
                it->delay *= 2;
                it->due = now + it->delay;
                i++;
        }
        arm(r);
        return 0;
}

int recheck_new(sd_event *event, const Reports *reports, Recheck **ret) {
        Recheck *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->reports = reports;
        /* accuracy 1 ms: the backoff starts at 20 ms, sd-event's default slack is 250 ms */
        int k = sd_event_add_time(event, &r->timer, CLOCK_MONOTONIC, UINT64_MAX, 1000, on_timer, r);
        if (k < 0) {
                free(r);
                return k;
        }
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(r->timer, "recheck");
        *ret = r;
        return 0;
}

Recheck *recheck_free(Recheck *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++)
                free(r->items[i].path);
        free(r->items);
        sd_event_source_disable_unref(r->timer);
        free(r);
        return NULL;
}

static ssize_t find(const Recheck *r, const char *path) {
        for (size_t i = 0; i < r->n; i++)
                if (strcmp(r->items[i].path, path) == 0)
                        return (ssize_t) i;
        return -1;
}

static bool add(Recheck *r, const char *path, uint64_t delay, unsigned max_tries, bool retry) {
        ssize_t i = find(r, path);
        if (i >= 0) {
                Item *it = &r->items[i];
                if (it->final)
                        /* its last try is on its way, and is listed whatever it
                         * finds: a check begun before it (still deferring to the
                         * writer) must not start the episode over. Under a
                         * writer that never stops, each new episode would
                         * again be overtaken, and no violation ever listed */
                        return false;
                if (it->due == SPENT && !retry) { /* measured provisionally after all: re-check that */
                        *it = (Item) { .path = it->path, .delay = delay, .due = now_usec() + delay,
                                       .max_tries = max_tries };
                        arm(r);
                        return true; /* given up on before: a new episode */
                }
                return false; /* keeps its backoff */
        }
        if (GROW(r->items, r->cap, r->n + 1, 16) < 0)
                return true;
        char *p = strdup(path);
        if (!p)
                return true;
        r->items[r->n++] = (Item) { .path = p, .delay = delay, .due = now_usec() + delay, .max_tries = max_tries,
                                    .retry = retry };
        arm(r);
        return true;
}

bool recheck_add(Recheck *r, const char *path) {
        return add(r, path, DELAY_MIN_USEC, TRIES, false);
}

bool recheck_retry(Recheck *r, const char *path, int error) {
        switch (error) {
        case -EMFILE: case -ENFILE: case -ENOMEM: case -EINTR: case -EAGAIN:
                /* out of fds or memory for now (a flood of connections, a
                 * burst of files): 100 ms doubling, 10 tries (~100 s) */
                add(r, path, RETRY_DELAY_USEC, RETRY_TRIES, true);
                return true;
        case -EIO:
                add(r, path, RETRY_DELAY_USEC, 1, true); /* once: a bad sector stays bad */
                return true;
        default:
                return false;
        }
}

bool recheck_is_final(const Recheck *r, const char *path) {
        ssize_t i = find(r, path);
        return i >= 0 && r->items[i].final;
}

bool recheck_take_final(Recheck *r, const char *path) {
        ssize_t i = find(r, path);
        if (i < 0 || !r->items[i].final)
                return false;
        free(r->items[i].path);
        r->items[i] = r->items[--r->n];
        arm(r);
        return true;
}

void recheck_remove(Recheck *r, const char *path) {
        ssize_t i = find(r, path);
        if (i < 0)
                return;
        free(r->items[i].path);
        r->items[i] = r->items[--r->n];
        arm(r);
}

size_t recheck_count(const Recheck *r) {
        return r->n;
}

bool recheck_pending_soon(const Recheck *r) {
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].delay < SOON_USEC)
                        return true;
        return false;
}
