/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-file version rate limit for the measurement list (churn.h). A small
 * chained hash table keyed by path; entries live while a path is active. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define BUCKETS 4096

typedef struct ChurnEntry {
        struct ChurnEntry *next;
        uint64_t window_start;
        uint64_t until;         /* limited until (0: not limited) */
        uint64_t backoff;
        uint32_t count;         /* versions listed in this window */
        bool suppressed;        /* versions dropped since limited */
        uint32_t dev;           /* the key: the inode, whatever its names */
        uint64_t ino;
        char path[];            /* its latest name: what the re-check looks at */
} ChurnEntry;

struct Churn {
        ChurnEntry *buckets[BUCKETS];
        size_t n;
        size_t n_suppressed;    /* entries with versions waiting for their re-check */
};

static size_t hash(uint32_t dev, uint64_t ino) {
        uint64_t h = (ino ^ ((uint64_t) dev << 40)) * 0x9e3779b97f4a7c15ULL;
        return (size_t) ((h >> 32) % BUCKETS);
}

int churn_new(Churn **ret) {
        Churn *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

Churn *churn_free(Churn *c) {
        if (!c)
                return NULL;
        for (size_t b = 0; b < BUCKETS; b++)
                for (ChurnEntry *e = c->buckets[b], *next; e; e = next) {
                        next = e->next;
                        free(e);
                }
        free(c);
        return NULL;
}

ChurnVerdict churn_note(Churn *c, uint32_t dev, uint64_t ino, const char *path, uint64_t now) {
        size_t b = hash(dev, ino);
        ChurnEntry *e, **link;

        for (link = &c->buckets[b]; (e = *link); link = &e->next)
                if (e->dev == dev && e->ino == ino)
                        break;
        if (e && strcmp(e->path, path) != 0) {
                /* renamed: its count goes on, the re-check takes the new name */
                size_t len = strlen(path);
                ChurnEntry *n = realloc(e, sizeof(*e) + len + 1);
                if (n) {
                        memcpy(n->path, path, len + 1);
                        *link = e = n;
                }
        }
        if (!e) {
                if (c->n >= CHURN_TRACKED_MAX)
                        return CHURN_LIST;      /* full: not tracked (churn_due prunes) */
                size_t len = strlen(path);
                e = calloc(1, sizeof(*e) + len + 1);
                if (!e)
                        return CHURN_LIST;
                memcpy(e->path, path, len + 1);
                e->dev = dev;
                e->ino = ino;
                e->window_start = now;
                e->backoff = CHURN_BACKOFF_USEC;
                e->next = c->buckets[b];
                c->buckets[b] = e;
                c->n++;
        }
        if (e->until > now) {
                c->n_suppressed += !e->suppressed;
                e->suppressed = true;
                return CHURN_SUPPRESS;
        }
        if (now - e->window_start > CHURN_WINDOW_USEC) {
                e->window_start = now;
                e->count = 0;
        }
        if (++e->count <= CHURN_MAX_VERSIONS)
                return CHURN_LIST;
        /* over the limit: the violation once per episode (until == 0), a
         * longer backoff each time it starts again right after one ended */
        ChurnVerdict v = e->until == 0 ? CHURN_LIMIT : CHURN_SUPPRESS;
        if (e->until != 0 && e->backoff < CHURN_BACKOFF_MAX_USEC)
                e->backoff = e->backoff * 2 > CHURN_BACKOFF_MAX_USEC ? CHURN_BACKOFF_MAX_USEC : e->backoff * 2;
        e->until = now + e->backoff;
        c->n_suppressed += !e->suppressed;
        e->suppressed = true;
        return v;
}

size_t churn_due(Churn *c, uint64_t now, void (*fn)(const char *path, void *userdata), void *userdata) {
        size_t n = 0;
        for (size_t b = 0; b < BUCKETS; b++)
                for (ChurnEntry **p = &c->buckets[b]; *p;) {
                        ChurnEntry *e = *p;
                        if (e->until != 0 && e->until <= now && e->suppressed) {
                                /* backoff over: look at it again; one more version
                                 * is listed, the next one limits again */
                                e->suppressed = false;
                                c->n_suppressed--;
                                e->window_start = now;
                                e->count = CHURN_MAX_VERSIONS - 1;
                                fn(e->path, userdata);
                                n++;
                        }
                        bool quiet = now - e->window_start > CHURN_WINDOW_USEC &&
                                     (e->until == 0 || now > e->until + CHURN_WINDOW_USEC) && !e->suppressed;
                        if (quiet) {
                                *p = e->next;
                                free(e);
                                c->n--;
                        } else
                                p = &e->next;
                }
        return n;
}

size_t churn_limited(const Churn *c, uint64_t now) {
        size_t n = 0;
        for (size_t b = 0; b < BUCKETS; b++)
                for (const ChurnEntry *e = c->buckets[b]; e; e = e->next)
                        if (e->until > now)
                                n++;
        return n;
}

bool churn_pending(const Churn *c) {
        return c->n_suppressed > 0;
}
