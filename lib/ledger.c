/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The avoided-remeasurement ledger: judging each observation three ways and
 * counting, from observed snapshots only, what each rule would have done. */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "iver/ledger.h"
#include "macro.h"
#include "table.h"

static inline uint64_t mix(uint64_t h, uint64_t v) {
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h ^= h >> 31;
        h *= 0xd6e8feb86659fd93ULL;
        h ^= h >> 32;
        return h;
}

/* The low 32 bits of the mix: a snapshot written when the shadows had 64
 * bits compares equal after the upgrade. */
uint32_t iver_shadow_atime(const IverStat *st) {
        uint64_t h = 0x243f6a8885a308d3ULL;
        h = mix(h, (uint64_t) st->atime);
        h = mix(h, (uint64_t) st->mtime);
        h = mix(h, (uint64_t) st->ctime);
        h = mix(h, st->size);
        return (uint32_t) h;
}

uint32_t iver_shadow_mtime(const IverStat *st) {
        uint64_t h = 0x13198a2e03707344ULL;
        h = mix(h, (uint64_t) st->mtime);
        h = mix(h, st->size);
        return (uint32_t) h;
}

IverVerdict iver_ledger_judge(bool have_prev, uint32_t prev_shadow_atime, uint32_t prev_shadow_mtime,
                              bool iverd_rehash, const IverStat *st,
                              uint32_t *ret_shadow_atime, uint32_t *ret_shadow_mtime) {
        uint32_t sa = iver_shadow_atime(st), sm = iver_shadow_mtime(st);
        IverVerdict v = { .first = !have_prev, .iverd = iverd_rehash || !have_prev };

        v.atime = !have_prev || sa != prev_shadow_atime;
        v.mtime = !have_prev || sm != prev_shadow_mtime;
        /* each shadow advances only when its own rule re-hashes */
        *ret_shadow_atime = v.atime ? sa : prev_shadow_atime;
        *ret_shadow_mtime = v.mtime ? sm : prev_shadow_mtime;
        return v;
}

/* ---- per-path accounting for top-N ---- */

typedef struct PathStat {
        char *path;
        uint64_t hash;
        uint64_t remeasured, avoided_vs_atime, bytes_hashed;
        uint64_t seen;        /* when last accounted (the ledger's sequence) */
        uint32_t at;          /* its place in the victims' heap */
} PathStat;

/* Bounded: the daemon lives as long as the host, and every re-hashed path
 * (package upgrades name new versioned directories) would otherwise stay. A
 * path new to a full table takes the place of the one that cost least (its
 * counts start over; of those that cost as little, the longest unseen);
 * one that costs much stays. A heap keeps the next to give its place at its
 * root: accounting only raises a followed path's cost and its last sighting,
 * so it only moves down; a new path moves up from where it was put once its
 * first account is made. Either is O(log n). */
#define PATHS_MAX 1024U
#define SLOTS 2048U /* the index (table.h): at most half full */

struct IverLedger {
        IverLedgerCounters c;
        unsigned top_n;
        PathStat *paths;      /* n_paths of PATHS_MAX, allocated at the first */
        uint32_t *slots;      /* SLOTS: path number + 1; 0: empty */
        uint32_t *heap;       /* n_paths path numbers, victim_before's order */
        unsigned n_paths;
        uint64_t seq;
        uint64_t dropped;     /* paths that gave their place to another */
};

static uint64_t hash_str(const char *s) {
        uint64_t h = 1469598103934665603ULL;
        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * 1099511628211ULL;
        return h ^ (h >> 32);
}

int iver_ledger_new(unsigned top_n, IverLedger **ret) {
        IverLedger *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->top_n = top_n ?: 10;
        *ret = l;
        return 0;
}

IverLedger *iver_ledger_free(IverLedger *l) {
        if (!l)
                return NULL;
        for (unsigned i = 0; i < l->n_paths; i++)
                free(l->paths[i].path);
        free(l->paths);
        free(l->slots);
        free(l->heap);
        free(l);
        return NULL;
}

static bool top_before(const PathStat *a, const PathStat *b) {
        if (a->bytes_hashed != b->bytes_hashed)
                return a->bytes_hashed > b->bytes_hashed;
        if (a->remeasured != b->remeasured)
                return a->remeasured > b->remeasured;
        return a->avoided_vs_atime > b->avoided_vs_atime;
}

/* Whether a gives its place before b: it cost less, or as little and was
 * seen longer ago. */
static bool victim_before(const PathStat *a, const PathStat *b) {
        if (top_before(a, b) || top_before(b, a))
                return top_before(b, a);
        return a->seen < b->seen;
}

static bool heap_before(const IverLedger *l, uint32_t a, uint32_t b) {
        return victim_before(&l->paths[l->heap[a]], &l->paths[l->heap[b]]);
}

static void heap_swap(IverLedger *l, uint32_t a, uint32_t b) {
        uint32_t t = l->heap[a];
        l->heap[a] = l->heap[b];
        l->heap[b] = t;
        l->paths[l->heap[a]].at = a;
        l->paths[l->heap[b]].at = b;
}

/* Restores the heap's order about place at after its path changed. */
static void heap_fix(IverLedger *l, uint32_t at) {
        while (at > 0 && heap_before(l, at, (at - 1) / 2)) {
                heap_swap(l, at, (at - 1) / 2);
                at = (at - 1) / 2;
        }
        for (;;) {
                uint32_t least = at, c = 2 * at + 1;
                if (c < l->n_paths && heap_before(l, c, least))
                        least = c;
                if (c + 1 < l->n_paths && heap_before(l, c + 1, least))
                        least = c + 1;
                if (least == at)
                        return;
                heap_swap(l, at, least);
                at = least;
        }
}

static uint64_t home(uint64_t hash) {
        return iver_table_home((uint32_t) hash, SLOTS);
}

/* The index slot of path number i. */
static uint64_t slot_of(const IverLedger *l, unsigned i) {
        uint64_t s = home(l->paths[i].hash);
        while (l->slots[s] != i + 1)
                s = iver_table_next(s, SLOTS);
        return s;
}

static uint64_t home_of(const void *ctx, uint32_t slot) {
        const IverLedger *l = ctx;
        return home(l->paths[slot - 1].hash);
}

static PathStat *path_stat(IverLedger *l, const char *path) {
        if (!path)
                return NULL;
        if (!l->paths) {
                l->paths = calloc(PATHS_MAX, sizeof(PathStat));
                l->slots = calloc(SLOTS, sizeof(uint32_t));
                l->heap = calloc(PATHS_MAX, sizeof(uint32_t));
                if (!l->paths || !l->slots || !l->heap) {
                        free(l->paths);
                        free(l->slots);
                        free(l->heap);
                        l->paths = NULL;
                        l->slots = NULL;
                        l->heap = NULL;
                        return NULL;
                }
        }
        uint64_t h = hash_str(path), s = home(h);
        for (; l->slots[s]; s = iver_table_next(s, SLOTS)) {
                PathStat *p = &l->paths[l->slots[s] - 1];
                if (p->hash == h && strcmp(p->path, path) == 0)
                        return p;
        }
        char *copy = strdup(path);
        if (!copy)
                return NULL;
        unsigned i = l->n_paths, at = i;
        if (i == PATHS_MAX) { /* full: the one that cost least gives its place */
                i = l->heap[0];
                at = 0;
                iver_table_delete(l->slots, SLOTS, slot_of(l, i), 0, home_of, l);
                free(l->paths[i].path);
                l->dropped++;
                /* the probe above may have passed the freed slot */
                for (s = home(h); l->slots[s]; s = iver_table_next(s, SLOTS))
                        ;
        } else {
                l->n_paths++;
                l->heap[at] = i;
        }
        /* the caller accounts it and puts it in its place (heap_fix) */
        l->paths[i] = (PathStat) { .path = copy, .hash = h, .at = at };
        l->slots[s] = i + 1;
        return &l->paths[i];
}

uint64_t iver_ledger_paths_dropped(const IverLedger *l) {
        return l->dropped;
}

void iver_ledger_account(IverLedger *l, const IverVerdict *v, uint64_t size, int digest_changed,
                         uint64_t bytes_hashed, uint64_t cpu_ns, const char *path) {
        IverLedgerCounters *c = &l->c;

        c->checks++;
        c->bytes_hashed += bytes_hashed;
        c->hash_cpu_ns += cpu_ns;
        if (v->first) {
                c->first_seen++;
                return;
        }
        if (v->atime)
                c->atime_rehashes++;
        if (v->mtime)
                c->mtime_rehashes++;
        if (v->iverd) {
                c->remeasured++;
                if (digest_changed == 0)
                        c->unchanged_content++;
                if (!v->mtime) {
                        c->extra_vs_mtime++;
                        if (digest_changed > 0)
                                c->missed_by_mtime++;
                }
        } else {
                c->metadata_only += v->metadata_only;
                if (v->atime) {
                        c->avoided_vs_atime++;
                        c->bytes_avoided_vs_atime += size;
                }
                if (v->mtime) {
                        c->avoided_vs_mtime++;
                        c->bytes_avoided_vs_mtime += size;
                }
        }
        /* Only interesting paths are tracked: hits that avoided nothing cost nothing. */
        if (v->iverd || v->atime) {
                PathStat *p = path_stat(l, path);
                if (p) {
                        p->seen = ++l->seq;
                        p->remeasured += v->iverd;
                        p->avoided_vs_atime += !v->iverd && v->atime;
                        p->bytes_hashed += bytes_hashed;
                        heap_fix(l, p->at);
                }
        }
}

void iver_ledger_count_unstable(IverLedger *l) {
        l->c.unstable++;
}

void iver_ledger_count_provisional(IverLedger *l) {
        l->c.provisional++;
}

const IverLedgerCounters *iver_ledger_counters(const IverLedger *l) {
        return &l->c;
}

void iver_ledger_set_counters(IverLedger *l, const IverLedgerCounters *c) {
        l->c = *c;
}

unsigned iver_ledger_top(const IverLedger *l, IverLedgerTop *rows, unsigned n) {
        const PathStat *best[64];
        unsigned k = 0;

        if (n > ELEMENTSOF(best))
                n = ELEMENTSOF(best);
        if (n > l->top_n)
                n = l->top_n;
        if (!l->paths || n == 0)
                return 0;
        /* insertion into a small sorted array: n is tiny */
        for (unsigned i = 0; i < l->n_paths; i++) {
                const PathStat *p = &l->paths[i];
                unsigned j = k < n ? k++ : n;
                if (j == n && !top_before(p, best[n - 1]))
                        continue;
                if (j == n)
                        j = n - 1;
                while (j > 0 && top_before(p, best[j - 1])) {
                        best[j] = best[j - 1];
                        j--;
                }
                best[j] = p;
        }
        for (unsigned i = 0; i < k; i++)
                rows[i] = (IverLedgerTop) {
                        .path = best[i]->path,
                        .remeasured = best[i]->remeasured,
                        .avoided_vs_atime = best[i]->avoided_vs_atime,
                        .bytes_hashed = best[i]->bytes_hashed,
                };
        return k;
}

#define FIELD(n, h, u) { #n, h, u, offsetof(IverLedgerCounters, n) }
static const IverLedgerField fields[] = {
        FIELD(checks, "checks made", ""),
        FIELD(first_seen, "files measured for the first time", ""),
        FIELD(remeasured, "re-hashes by iverd (content may have been written)", ""),
        FIELD(metadata_only, "cookie moves proven unwritten (chmod, chown, xattr, link, touch): not re-hashed", ""),
        FIELD(avoided_vs_atime, "re-hashes avoided vs the atime heuristic", ""),
        FIELD(avoided_vs_mtime, "re-hashes avoided vs the mtime heuristic (mtime moved without a write)", ""),
        FIELD(extra_vs_mtime, "re-hashes the mtime heuristic would skip", ""),
        FIELD(missed_by_mtime, "changes the mtime heuristic would have missed", ""),
        FIELD(unchanged_content, "re-hashes that found the same content", ""),
        FIELD(atime_rehashes, "re-hashes the atime heuristic would make", ""),
        FIELD(mtime_rehashes, "re-hashes the mtime heuristic would make", ""),
        FIELD(bytes_hashed, "bytes hashed by iverd", "bytes"),
        FIELD(bytes_avoided_vs_atime, "bytes the atime heuristic would hash in addition", "bytes"),
        FIELD(bytes_avoided_vs_mtime, "bytes the mtime heuristic would hash in addition", "bytes"),
        FIELD(hash_cpu_ns, "CPU time spent hashing", "ns"),
        FIELD(unstable, "files that kept changing while hashed", ""),
        FIELD(provisional, "measurements without a lease (open writers)", ""),
};
#undef FIELD

const IverLedgerField *iver_ledger_fields(size_t *ret_n) {
        *ret_n = ELEMENTSOF(fields);
        return fields;
}

void iver_ledger_print(const IverLedgerCounters *c, FILE *f) {
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                fprintf(f, "%-24s %" PRIu64 "\n", fields[i].name, iver_ledger_field_value(c, &fields[i]));
}

void iver_ledger_print_json(const IverLedgerCounters *c, FILE *f) {
        fputc('{', f);
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", fields[i].name, iver_ledger_field_value(c, &fields[i]));
        fputc('}', f);
}
