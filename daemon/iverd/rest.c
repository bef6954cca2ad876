/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names at rest (rest.h): the held digests, one per inode, between the
 * checker's outcome and the list. Kernel IMA lists a file when it is used,
 * under the name it is used by; iverd also measures in the background, so a
 * background digest waits until its name has come to rest: the temporary
 * names of atomic replaces (NAME.dpkg-new, sed -i's, an editor's) never reach
 * the list, the final names do. The loop thread only.
 *
 * Two conditions, both needed: the inode's own quiet interval (a rename, a
 * write or a link restarts it) and its last writer's (a package manager
 * writes every NAME.dpkg-new of a package, syncs them, and only then renames
 * them: its files are at rest when it has stopped changing files in measured
 * trees, not when each was last touched). A writer that never stops is
 * overruled by the bound. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iver/stat.h"
#include "macro.h"
#include "rest.h"

#define TICK_USEC (200ULL * 1000ULL)
#define WRITERS 1024    /* direct-mapped: pid → last change in a measured tree */
#define CHANGES 4096    /* direct-mapped: (dev, ino) → last change, for inodes not held yet */
#define DELAYS 1024     /* the last listings' delays, for status */

/* One held inode. Small (a freshly unpacked tree holds every file for
 * REST_SETTLE_USEC): the digest and the version it was computed from are the
 * cache's record of the inode (cb.recorded), not copied here; of the rule,
 * the template and PCR the listing needs. */
typedef struct RestEntry {
        struct RestEntry *next, *pnext; /* chains by inode and by name */
        IverIdentity id;
        char *path;
        uint8_t *sig;
        uint32_t sig_len;
        int writer;             /* pid of the last change, 0: unknown */
        unsigned names;         /* names it was held under */
        int8_t pcr;             /* the rule's pcr= (IVER_POLICY_PCR_UNSET) */
        int8_t template_;       /* the rule's template= (_IVER_IMA_TEMPLATE_INVALID: ima-ng) */
        uint8_t reason;         /* why the digest it waits with was hashed (IverCheckReason) */
        bool has_d, audit;
        bool written;           /* a write event since the outcome */
        bool overdue;           /* past the bound: listed at its next outcome */
        uint64_t first_usec;    /* the episode's first known change */
        uint64_t change_usec;   /* its last change */
        uint64_t held_usec;     /* when it was first held */
} RestEntry;

typedef struct Writer {
        int pid;
        uint64_t usec;
} Writer;

typedef struct Change {
        uint32_t dev;
        uint64_t ino;
        int pid;
        uint64_t usec;
} Change;

struct Rest {
        sd_event *event;
        sd_event_source *timer;
        RestCallbacks cb;
        void *userdata;
        RestEntry **buckets, **pbuckets; /* by inode, by name: n_buckets each */
        size_t n_buckets, n;
        Writer writers[WRITERS];
        Change changes[CHANGES];
        uint32_t delays_ms[DELAYS];
        uint64_t n_delays;
        uint64_t held, listed_rest, listed_use, listed_bound, listed_now, listed_over_cap, moved, dropped, replaced;
        uint64_t delay_max_usec, bound_delay_max_usec;
        uint64_t settle_usec;   /* REST_SETTLE_USEC (a test may shorten it: rest_new) */
};

static uint64_t now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static size_t bucket_of(const Rest *r, uint32_t dev, uint64_t ino) {
        uint64_t h = (ino ^ ((uint64_t) dev << 40)) * 0x9E3779B97F4A7C15ULL;
        return (size_t) (h >> 20) & (r->n_buckets - 1);
}

static size_t pbucket_of(const Rest *r, const char *path) {
        uint64_t h = 1469598103934665603ULL;
        for (const unsigned char *c = (const unsigned char *) path; *c; c++)
                h = (h ^ *c) * 1099511628211ULL;
        return (size_t) (h ^ (h >> 29)) & (r->n_buckets - 1);
}

static void path_unlink(Rest *r, RestEntry *e) {
        if (!e->path)
                return;
        for (RestEntry **p = &r->pbuckets[pbucket_of(r, e->path)]; *p; p = &(*p)->pnext)
                if (*p == e) {
                        *p = e->pnext;
                        return;
                }
}

static void path_link(Rest *r, RestEntry *e) {
        RestEntry **p = &r->pbuckets[pbucket_of(r, e->path)];
        e->pnext = *p;
        *p = e;
}

/* e is held under path (owned) from now on. */
static void set_path(Rest *r, RestEntry *e, char *path) {
        path_unlink(r, e);
        free(e->path);
        e->path = path;
        e->names++;
        path_link(r, e);
}

static RestEntry **find_slot(Rest *r, uint32_t dev, uint64_t ino) {
        RestEntry **p = &r->buckets[bucket_of(r, dev, ino)];
        while (*p && ((*p)->id.dev != dev || (*p)->id.ino != ino))
                p = &(*p)->next;
        return p;
}

static RestEntry *find(const Rest *r, uint32_t dev, uint64_t ino) {
        return *find_slot((Rest *) r, dev, ino);
}

static void entry_free(RestEntry *e) {
        if (!e)
                return;
        free(e->path);
        free(e->sig);
        free(e);
}

static int grow(Rest *r) {
        size_t n = r->n_buckets ? r->n_buckets * 2 : 64;
        RestEntry **b = calloc(n, sizeof(*b)), **pb = calloc(n, sizeof(*pb));
        if (!b || !pb) {
                free(b);
                free(pb);
                return -ENOMEM;
        }
        RestEntry **old = r->buckets;
        size_t old_n = r->n_buckets;
        free(r->pbuckets);
        r->buckets = b;
        r->pbuckets = pb;
        r->n_buckets = n;
        for (size_t i = 0; i < old_n; i++)
                for (RestEntry *e = old[i], *next; e; e = next) {
                        next = e->next;
                        RestEntry **p = &b[bucket_of(r, e->id.dev, e->id.ino)];
                        e->next = *p;
                        *p = e;
                        if (e->path)
                                path_link(r, e);
                }
        free(old);
        return 0;
}

static void unlink_entry(Rest *r, RestEntry *e) {
        RestEntry **p = find_slot(r, e->id.dev, e->id.ino);
        if (*p == e) {
                *p = e->next;
                r->n--;
        }
        path_unlink(r, e);
}

static void note_delay(Rest *r, uint64_t usec) {
        r->delays_ms[r->n_delays++ % DELAYS] = (uint32_t) MIN(usec / 1000, UINT32_MAX);
        if (usec > r->delay_max_usec)
                r->delay_max_usec = usec;
}

/* List e under its name now, with the digest o (on record for its inode),
 * and forget it. */
static void list_entry(Rest *r, RestEntry *e, const IverCheckOutcome *o, uint64_t *counter, uint64_t now) {
        IverCheckOutcome listed = *o;
        listed.reason = (IverCheckReason) e->reason; /* the record's outcome does not say why it was hashed */
        o = &listed;
        unlink_entry(r, e);
        (*counter)++;
        if (counter == &r->listed_rest) /* the settle delay: from the last change to the entry */
                note_delay(r, now > e->change_usec ? now - e->change_usec : 0);
        if (counter == &r->listed_bound && now - e->first_usec > r->bound_delay_max_usec)
                r->bound_delay_max_usec = now - e->first_usec;
        IverPolicyDecision d = {
                .matched = true,
                .action = IVER_ACTION_MEASURE,
                .pcr = e->pcr,
                .hash = o->digest.algo,
                .template_ = e->template_,
        };
        r->cb.list(r->userdata, e->path, o, e->has_d ? &d : NULL, e->audit, e->sig, e->sig_len,
                   counter == &r->listed_use);
        entry_free(e);
}

static bool writer_quiet(const Rest *r, int pid, uint64_t now) {
        if (pid <= 0)
                return true;
        const Writer *w = &r->writers[(unsigned) pid % WRITERS];
        return w->pid != pid || w->usec + r->settle_usec <= now;
}

static bool at_rest(const Rest *r, const RestEntry *e, uint64_t now) {
        return e->change_usec + r->settle_usec <= now && writer_quiet(r, e->writer, now);
}

static void arm(Rest *r) {
        int enabled = SD_EVENT_OFF;
        (void) sd_event_source_get_enabled(r->timer, &enabled);
        if (enabled != SD_EVENT_OFF)
                return;
        (void) sd_event_source_set_time_relative(r->timer, TICK_USEC);
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
}

/* Whether the name still holds the inode and the version its digest on
 * record (*ret) was computed from: 1 yes, 0 the version moved or nothing is
 * on record (look again), -errno the name is gone. */
static int verify(const Rest *r, const RestEntry *e, IverCheckOutcome *ret) {
        IverStat st;
        int k = r->cb.stat(r->userdata, e->path, &st);
        if (k < 0)
                return k;
        IverIdentity id = iver_stat_identity(&st);
        if (id.dev != e->id.dev || id.ino != e->id.ino || (st.has_btime && id.gen != e->id.gen))
                return -ENOENT; /* another file has the name now */
        if (r->cb.recorded(r->userdata, &e->id, ret) < 0)
                return 0;
        ret->owner = st.uid;
        IverCookie now = iver_cookie_from_stat(ret->cookie.source, &st);
        return !e->written && iver_cookie_equal(&now, &ret->cookie) ? 1 : 0;
}

/* A deadline: list, drop, or ask for another look. */
static void judge(Rest *r, RestEntry *e, uint64_t now) {
        bool bound = now >= e->first_usec + REST_MAX_USEC;
        if (!bound && !at_rest(r, e, now))
                return;
        IverCheckOutcome o;
        int v = verify(r, e, &o);
        if (v < 0) {
                /* the name is gone (the last one unlinked, or a rename whose
                 * new name will bring a new outcome): nothing used it */
                unlink_entry(r, e);
                r->dropped++;
                entry_free(e);
                return;
        }
        if (v > 0) {
                list_entry(r, e, &o, bound && !at_rest(r, e, now) ? &r->listed_bound : &r->listed_rest, now);
                return;
        }
        /* its version moved since the digest: look again; past the bound the
         * next outcome is listed at once, under the name it has then */
        if (e->overdue)
                return; /* asked already: its next outcome lists it */
        r->cb.check(r->userdata, e->path);
        e->written = false;
        if (bound)
                e->overdue = true;
        else
                e->change_usec = now;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Rest *r = userdata;
        r->cb.sync(r->userdata); /* changes seen by now count */
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        size_t before = r->n;
        uint64_t listed = r->listed_rest + r->listed_bound;
        for (size_t i = 0; i < r->n_buckets; i++)
                for (RestEntry *e = r->buckets[i], *next; e; e = next) {
                        next = e->next;
                        judge(r, e, now);
                }
        if (r->n > 0)
                arm(r);
        if (r->n != before || listed != r->listed_rest + r->listed_bound)
                r->cb.changed(r->userdata);
        return 0;
}

int rest_new(sd_event *event, const RestCallbacks *cb, void *userdata, Rest **ret) {
        Rest *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->event = event;
        r->cb = *cb;
        /* IVERD_TEST_REST_SETTLE_MS: tests that are not about names at rest
         * (each settle after a change waits for it) run with a shorter one */
        const char *t = getenv("IVERD_TEST_REST_SETTLE_MS");
        r->settle_usec = t && *t ? strtoull(t, NULL, 10) * 1000ULL : REST_SETTLE_USEC;
        r->userdata = userdata;
        int k = grow(r);
        if (k >= 0)
                k = sd_event_add_time_relative(event, &r->timer, CLOCK_MONOTONIC, TICK_USEC, 50 * 1000, on_tick, r);
        if (k < 0) {
                rest_free(r);
                return k;
        }
        (void) sd_event_source_set_description(r->timer, "rest-tick");
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
        *ret = r;
        return 0;
}

Rest *rest_free(Rest *r) {
        if (!r)
                return NULL;
        sd_event_source_disable_unref(r->timer);
        for (size_t i = 0; i < r->n_buckets; i++)
                for (RestEntry *e = r->buckets[i], *next; e; e = next) {
                        next = e->next;
                        entry_free(e);
                }
        free(r->buckets);
        free(r->pbuckets);
        free(r);
        return NULL;
}

/* When the change recorded in o's cookie happened, on the monotonic clock
 * (ctime is wall-clock time; a clock stepped back counts as now). */
static uint64_t ctime_mono(const IverCheckOutcome *o, uint64_t now) {
        uint64_t real = now_usec(CLOCK_REALTIME);
        uint64_t c = o->cookie.ctime > 0 ? (uint64_t) o->cookie.ctime / 1000 : 0;
        if (c > real)
                return now;
        return real - c < now ? now - (real - c) : 0;
}

static int fill(Rest *r, RestEntry *e, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
                const uint8_t *sig, size_t sig_len) {
        char *p = strcmp(e->path ?: "", path) == 0 ? NULL : strdup(path);
        uint8_t *s = sig_len ? malloc(sig_len) : NULL;
        if ((!p && strcmp(e->path ?: "", path) != 0) || (sig_len && !s)) {
                free(p);
                free(s);
                return -ENOMEM;
        }
        /* a hit is no new measurement: the signature read with the digest
         * stays (the inode's), and so does the rule it was measured under
         * when the name is the one held (a reload meanwhile does not re-judge
         * it); a new name takes the rule decided for it */
        bool measured = !e->path || o->result != IVER_CHECK_HIT, renewed = measured || p;
        if (p)
                set_path(r, e, p);
        if (measured) /* why it was hashed; a rename's or a link's hit: metadata-only, hit */
                e->reason = (uint8_t) o->reason;
        if (sig_len || measured) {
                free(e->sig);
                e->sig = s;
                e->sig_len = (uint32_t) sig_len;
                if (sig_len)
                        memcpy(s, sig, sig_len);
        }
        if (renewed) {
                e->has_d = d != NULL;
                e->pcr = (int8_t) (d ? d->pcr : IVER_POLICY_PCR_UNSET);
                e->template_ = (int8_t) (d ? d->template_ : _IVER_IMA_TEMPLATE_INVALID);
                e->audit = audit;
        }
        e->written = false;
        return 0;
}

int rest_offer(Rest *r, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
               const uint8_t *sig, size_t sig_len) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        uint64_t changed = ctime_mono(o, now);
        RestEntry **slot = find_slot(r, o->id.dev, o->id.ino), *e = *slot;
        int k;

        if (e && e->id.gen != o->id.gen) { /* the inode number was reused */
                unlink_entry(r, e);
                entry_free(e);
                r->replaced++;
                e = NULL;
        }
        if (!e) {
                const Change *c = &r->changes[(o->id.ino ^ o->id.dev) % CHANGES];
                int writer = 0;
                if (c->dev == o->id.dev && c->ino == o->id.ino && c->usec) {
                        writer = c->pid;
                        if (c->usec > changed)
                                changed = c->usec;
                }
                if (r->n >= REST_HELD_MAX) {
                        r->listed_over_cap++; /* memory is bounded: names may be transient */
                        r->cb.list(r->userdata, path, o, d, audit, sig, sig_len, false);
                        return 0;
                }
                if (changed + r->settle_usec <= now && writer_quiet(r, writer, now)) {
                        r->listed_now++; /* at rest already: the common case of a scan */
                        r->cb.list(r->userdata, path, o, d, audit, sig, sig_len, false);
                        return 0;
                }
                if (r->n >= r->n_buckets && (k = grow(r)) < 0)
                        return k;
                e = calloc(1, sizeof(*e));
                if (!e)
                        return -ENOMEM;
                e->id = o->id;
                e->first_usec = e->change_usec = changed;
                e->held_usec = now;
                e->writer = writer;
                slot = find_slot(r, o->id.dev, o->id.ino);
                e->next = *slot;
                *slot = e;
                r->n++;
                r->held++;
        } else if (strcmp(e->path, path) != 0)
                r->moved++;
        k = fill(r, e, path, o, d, audit, sig, sig_len);
        if (k < 0) { /* keeps what it had; the next outcome tries again */
                if (!e->path) {
                        unlink_entry(r, e);
                        entry_free(e);
                }
                return k;
        }
        if (changed > e->change_usec)
                e->change_usec = changed;
        if (e->overdue) {
                list_entry(r, e, o, &r->listed_bound, now);
                r->cb.changed(r->userdata);
                return 0;
        }
        arm(r);
        return 1;
}

int rest_use(Rest *r, const IverIdentity *id) {
        RestEntry *e = find(r, id->dev, id->ino);
        IverCheckOutcome o;
        if (!e || e->id.gen != id->gen || r->cb.recorded(r->userdata, id, &o) < 0)
                return 0;
        list_entry(r, e, &o, &r->listed_use, now_usec(CLOCK_MONOTONIC));
        r->cb.changed(r->userdata);
        return 1;
}

void rest_forget(Rest *r, const IverIdentity *id) {
        RestEntry *e = find(r, id->dev, id->ino);
        if (!e)
                return;
        unlink_entry(r, e);
        r->listed_use++;
        entry_free(e);
        r->cb.changed(r->userdata);
}

void rest_note_change(Rest *r, uint32_t dev, uint64_t ino, int pid, const char *path) {
        if (!r)
                return;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        if (pid > 0 && (path || ino == 0))
                r->writers[(unsigned) pid % WRITERS] = (Writer) { .pid = pid, .usec = now };
        if (ino == 0)
                return;
        RestEntry *e = find(r, dev, ino);
        if (!e) {
                r->changes[(ino ^ dev) % CHANGES] = (Change) { .dev = dev, .ino = ino, .pid = pid, .usec = now };
                return;
        }
        e->change_usec = now;
        if (pid > 0)
                e->writer = pid;
        if (!path) {
                e->written = true;
                return;
        }
        if (strcmp(path, e->path) != 0) {
                char *p = strdup(path);
                if (p) {
                        set_path(r, e, p);
                        r->moved++;
                }
        }
}

void rest_note_gone(Rest *r, const char *path) {
        if (!r)
                return;
        for (RestEntry *e = r->pbuckets[pbucket_of(r, path)], *next; e; e = next) {
                next = e->pnext;
                IverCheckOutcome o;
                if (strcmp(e->path, path) != 0 || verify(r, e, &o) >= 0)
                        continue; /* another link still holds it by that name */
                unlink_entry(r, e);
                r->dropped++;
                entry_free(e);
                r->cb.changed(r->userdata);
        }
}

bool rest_holds(const Rest *r, const IverIdentity *id) {
        const RestEntry *e = r ? find(r, id->dev, id->ino) : NULL;
        return e && e->id.gen == id->gen;
}

void rest_foreach(const Rest *r, void (*fn)(void *userdata, const IverIdentity *id), void *userdata) {
        for (size_t i = 0; r && i < r->n_buckets; i++)
                for (const RestEntry *e = r->buckets[i]; e; e = e->next)
                        fn(userdata, &e->id);
}

size_t rest_pending(const Rest *r) {
        return r ? r->n : 0;
}

json_object *rest_explain(const Rest *r, const IverIdentity *id) {
        const RestEntry *e = r ? find(r, id->dev, id->ino) : NULL;
        if (!e || e->id.gen != id->gen)
                return NULL;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(e->path));
        json_object_object_add(o, "held_for_s", json_object_new_double((double) (now - e->held_usec) / 1e6));
        json_object_object_add(o, "since_first_change_s", json_object_new_double((double) (now - e->first_usec) / 1e6));
        json_object_object_add(o, "quiet_for_s",
                               json_object_new_double(now > e->change_usec ? (double) (now - e->change_usec) / 1e6 : 0));
        json_object_object_add(o, "names", json_object_new_int64(e->names));
        json_object_object_add(o, "writer_pid", json_object_new_int(e->writer));
        json_object_object_add(o, "writer_quiet", json_object_new_boolean(writer_quiet(r, e->writer, now)));
        json_object_object_add(o, "overdue", json_object_new_boolean(e->overdue));
        json_object_object_add(o, "settle_s", json_object_new_double((double) r->settle_usec / 1e6));
        json_object_object_add(o, "bound_s", json_object_new_double((double) REST_MAX_USEC / 1e6));
        return o;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

json_object *rest_status(const Rest *r) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "pending", json_object_new_int64((int64_t) r->n));
        json_object_object_add(o, "held", json_object_new_int64((int64_t) r->held));
        json_object_object_add(o, "listed_at_rest", json_object_new_int64((int64_t) r->listed_rest));
        json_object_object_add(o, "listed_at_use", json_object_new_int64((int64_t) r->listed_use));
        json_object_object_add(o, "listed_at_bound", json_object_new_int64((int64_t) r->listed_bound));
        json_object_object_add(o, "listed_unheld", json_object_new_int64((int64_t) r->listed_now));
        json_object_object_add(o, "listed_over_cap", json_object_new_int64((int64_t) r->listed_over_cap));
        json_object_object_add(o, "renamed", json_object_new_int64((int64_t) r->moved));
        json_object_object_add(o, "dropped", json_object_new_int64((int64_t) r->dropped));
        size_t n = (size_t) MIN(r->n_delays, DELAYS);
        uint32_t sorted[DELAYS];
        memcpy(sorted, r->delays_ms, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), cmp_u32);
        json_object_object_add(o, "delay_median_ms", json_object_new_int64(n ? sorted[n / 2] : 0));
        json_object_object_add(o, "delay_max_ms", json_object_new_int64((int64_t) (r->delay_max_usec / 1000)));
        json_object_object_add(o, "bound_delay_max_ms", json_object_new_int64((int64_t) (r->bound_delay_max_usec / 1000)));
        json_object_object_add(o, "settle_ms", json_object_new_int64((int64_t) (r->settle_usec / 1000)));
        json_object_object_add(o, "bound_ms", json_object_new_int64((int64_t) (REST_MAX_USEC / 1000)));
        return o;
}
