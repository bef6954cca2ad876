/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Backoff re-checks of provisional measurements. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "recheck.h"
#include "table.h"
#include "thread.h"

#define DELAY_MIN_USEC 20000ULL
#define TRIES 8                   /* 20 ms … 2.56 s */
#define SOON_USEC 1000000ULL
#define RETRY_DELAY_USEC 100000ULL
#define RETRY_TRIES 10

typedef struct Item {
        char *path;
        uint64_t hash;          /* of path (the index) */
        uint64_t due, delay;
        unsigned tries, max_tries;
        bool retry;             /* a transient failure, not a provisional result */
        bool final;             /* its last try is queued: a provisional result now is listed */
        bool unstable_listed;   /* a last try found it unstable, and that was listed */
} Item;

#define SPENT UINT64_MAX        /* a retry out of tries: stays (so its next failure is not retried) until the file is measured or gone */

/* Every check of a file asks whether it is re-checked (recheck_is_final,
 * recheck_remove), and a local user can hold many measured files open for
 * write: lookups go through a hash index, the count of short backoffs is
 * kept, and the timer is moved only forward on an add (a removal leaves it:
 * it fires early at worst); only its firing looks at every item. */
struct Recheck {
        const Reports *reports;
        Item *items;
        size_t n, cap;
        uint32_t *index;        /* open addressing (table.h): item number + 1; 0: empty */
        size_t index_cap;
        size_t soon;            /* items whose backoff is short (recheck_pending_soon) */
        uint64_t armed;         /* when the timer fires (UINT64_MAX: off) */
        sd_event_source *timer;
};

static uint64_t hash_path(const char *s) {
        uint64_t h = 1469598103934665603ULL;
        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * 1099511628211ULL;
        return h ^ (h >> 29);
}

static uint64_t home(const Recheck *r, uint64_t hash) {
        return iver_table_home((uint32_t) hash, r->index_cap);
}

static void index_put(Recheck *r, size_t i) {
        uint64_t s = home(r, r->items[i].hash);
        while (r->index[s])
                s = iver_table_next(s, r->index_cap);
        r->index[s] = (uint32_t) i + 1;
}

static int index_reserve(Recheck *r, size_t n) {
        if (r->index_cap > 0 && !iver_table_over(n, r->index_cap))
                return 0;
        size_t cap = iver_table_capacity(n, 64);
        uint32_t *ix = calloc(cap, sizeof(*ix));
        if (!ix)
                return -ENOMEM;
        free(r->index);
        r->index = ix;
        r->index_cap = cap;
        for (size_t i = 0; i < r->n; i++)
                index_put(r, i);
        return 0;
}

/* The index slot of item i (in the index). */
static uint64_t index_slot(const Recheck *r, size_t i) {
        uint64_t s = home(r, r->items[i].hash);
        while (r->index[s] != i + 1)
                s = iver_table_next(s, r->index_cap);
        return s;
}

static uint64_t home_of(const void *ctx, uint32_t slot) {
        const Recheck *r = ctx;
        return home(r, r->items[slot - 1].hash);
}

static ssize_t find(const Recheck *r, const char *path) {
        if (r->n == 0)
                return -1;
        uint64_t h = hash_path(path);
        for (uint64_t s = home(r, h); r->index[s]; s = iver_table_next(s, r->index_cap)) {
                const Item *it = &r->items[r->index[s] - 1];
                if (it->hash == h && strcmp(it->path, path) == 0)
                        return (ssize_t) r->index[s] - 1;
        }
        return -1;
}

static void set_delay(Recheck *r, Item *it, uint64_t delay) {
        r->soon -= it->delay < SOON_USEC;
        r->soon += delay < SOON_USEC;
        it->delay = delay;
}

/* The timer fires by due at the latest. */
static void arm_by(Recheck *r, uint64_t due) {
        if (due >= r->armed || due == SPENT)
                return;
        r->armed = due;
        (void) sd_event_source_set_time(r->timer, due);
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
}

/* Item i leaves the set (the last takes its place). */
static void drop(Recheck *r, size_t i) {
        set_delay(r, &r->items[i], SPENT);
        iver_table_delete(r->index, r->index_cap, index_slot(r, i), 0, home_of, r);
        free(r->items[i].path);
        size_t last = --r->n;
        if (i != last) {
                r->index[index_slot(r, last)] = (uint32_t) i + 1;
                r->items[i] = r->items[last];
        }
        if (r->n == 0 && r->armed != UINT64_MAX) {
                r->armed = UINT64_MAX;
                (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Recheck *r = userdata;
        uint64_t now = now_usec(), next = UINT64_MAX;
        r->armed = UINT64_MAX;
        for (size_t i = 0; i < r->n; i++) {
                Item *it = &r->items[i];
                if (it->due > now) {
                        if (it->due < next)
                                next = it->due;
                        continue;
                }
                report_check(r->reports, it->path);
                if (++it->tries >= it->max_tries) {
                        /* a retry out of tries stays, so that its next failure
                         * is not retried; a file held open for writing all
                         * along: this check's result is listed even if
                         * provisional (recheck_take_final) */
                        it->final = !it->retry;
                        it->due = SPENT;
                        set_delay(r, it, SPENT);
                        continue;
                }
                /* stays in the set until measured stably; next try later */
                set_delay(r, it, it->delay * 2);
                it->due = now + it->delay;
                if (it->due < next)
                        next = it->due;
        }
        arm_by(r, next);
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
        r->armed = UINT64_MAX;
        *ret = r;
        return 0;
}

Recheck *recheck_free(Recheck *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++)
                free(r->items[i].path);
        free(r->items);
        free(r->index);
        sd_event_source_disable_unref(r->timer);
        free(r);
        return NULL;
}

/* A new episode of it in place: its tries start over, due after delay. */
static void restart(Recheck *r, Item *it, uint64_t delay, unsigned max_tries, bool unstable_listed) {
        set_delay(r, it, delay);
        *it = (Item) { .path = it->path, .hash = it->hash, .delay = delay, .due = now_usec() + delay,
                       .max_tries = max_tries, .unstable_listed = unstable_listed };
        arm_by(r, it->due);
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
                        restart(r, it, delay, max_tries, false);
                        return true; /* given up on before: a new episode */
                }
                return false; /* keeps its backoff */
        }
        if (GROW(r->items, r->cap, r->n + 1, 16) < 0 || index_reserve(r, r->n + 1) < 0)
                return true;
        char *p = strdup(path);
        if (!p)
                return true;
        Item *it = &r->items[r->n];
        *it = (Item) { .path = p, .hash = hash_path(p), .delay = SPENT, .due = now_usec() + delay,
                       .max_tries = max_tries, .retry = retry };
        set_delay(r, it, delay);
        index_put(r, r->n++);
        arm_by(r, it->due);
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

bool recheck_scheduled(const Recheck *r, const char *path) {
        ssize_t i = find(r, path);
        return i >= 0 && r->items[i].due != SPENT;
}

bool recheck_take_final(Recheck *r, const char *path) {
        ssize_t i = find(r, path);
        if (i < 0 || !r->items[i].final)
                return false;
        drop(r, (size_t) i);
        return true;
}

bool recheck_unstable_final(Recheck *r, const char *path) {
        ssize_t i = find(r, path);
        if (i < 0 || !r->items[i].final)
                return false;
        bool first = !r->items[i].unstable_listed;
        restart(r, &r->items[i], DELAY_MIN_USEC, TRIES, true);
        return first;
}

void recheck_remove(Recheck *r, const char *path) {
        ssize_t i = find(r, path);
        if (i >= 0)
                drop(r, (size_t) i);
}

size_t recheck_count(const Recheck *r) {
        return r->n;
}

bool recheck_pending_soon(const Recheck *r) {
        return r->soon > 0;
}
