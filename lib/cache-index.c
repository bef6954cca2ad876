/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement cache's indexes: open addressing with linear probing over
 * 32-bit slots (entries by (dev, ino), entries by path, directories by
 * path), tombstone-free deletion; sizes and homes as table.h says. */
#include "cache-internal.h"
#include "table.h"

static inline uint32_t home(const Index *x, uint64_t hash) {
        return (uint32_t) iver_table_home((uint32_t) hash, x->cap);
}

static inline uint32_t next(const Index *x, uint32_t i) {
        return (uint32_t) iver_table_next(i, x->cap);
}

static uint64_t slot_hash(const IverCache *c, const Index *x, uint32_t i) {
        if (x == &c->by_dir)
                return c->dirs[i].hash;
        const CacheEntry *e = entry(c, i);
        return x == &c->by_inode ? hash_inode(c, e->dev, e->ino) : hash_entry_path(c, e);
}

uint32_t *cache_index_find_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
        const Index *x = &c->by_inode;
        if (!x->slots)
                return NULL;
        uint64_t hash = hash_inode(c, dev, ino);
        for (uint32_t i = home(x, hash);; i = next(x, i)) {
                uint32_t *s = &x->slots[i];
                if (*s == SLOT_EMPTY)
                        return s;
                if (!slot_may_be(*s, hash))
                        continue;
                const CacheEntry *e = entry(c, slot_num(*s));
                if (e->ino == ino && e->dev == dev)
                        return s;
        }
}

uint32_t *cache_index_find_dir(const IverCache *c, uint64_t hash, const char *dir, size_t len) {
        const Index *x = &c->by_dir;
        if (!x->slots)
                return NULL;
        for (uint32_t i = home(x, hash);; i = next(x, i)) {
                uint32_t *s = &x->slots[i];
                if (*s == SLOT_EMPTY)
                        return s;
                if (!slot_may_be(*s, hash))
                        continue;
                uint32_t d = slot_num(*s);
                size_t dlen;
                const uint8_t *b = dir_bytes(c, d, &dlen);
                if (c->dirs[d].hash == hash && dlen == len && memcmp(b, dir, len) == 0)
                        return s;
        }
}

/* The slot of the entry named base in directory d (or the empty slot ending the probe). */
uint32_t *cache_index_find_name(const IverCache *c, uint32_t d, const char *base, size_t blen) {
        const Index *x = &c->by_path;
        if (!x->slots)
                return NULL;
        uint64_t hash = hash_path(c, c->dirs[d].hash, base, blen);
        for (uint32_t i = home(x, hash);; i = next(x, i)) {
                uint32_t *s = &x->slots[i];
                if (*s == SLOT_EMPTY)
                        return s;
                if (!slot_may_be(*s, hash))
                        continue;
                uint32_t ed;
                size_t elen;
                const uint8_t *eb = name_bytes(c, entry(c, slot_num(*s)), &ed, &elen);
                if (ed == d && elen == blen && memcmp(eb, base, blen) == 0)
                        return s;
        }
}

/* The slot holding number i in x (it must be there). */
uint32_t *cache_index_slot_of(const IverCache *c, const Index *x, uint32_t i) {
        for (uint32_t j = home(x, slot_hash(c, x, i));; j = next(x, j)) {
                uint32_t *s = &x->slots[j];
                assert(*s != SLOT_EMPTY);
                if (slot_num(*s) == i)
                        return s;
        }
}

typedef struct IndexOf {
        const IverCache *c;
        const Index *x;
} IndexOf;

static uint64_t home_of(const void *ctx, uint32_t slot) {
        const IndexOf *o = ctx;
        return home(o->x, slot_hash(o->c, o->x, slot_num(slot)));
}

void cache_index_delete(IverCache *c, Index *x, uint32_t *slot) {
        IndexOf o = { c, x };
        iver_table_delete(x->slots, x->cap, (uint64_t) (slot - x->slots), SLOT_EMPTY, home_of, &o);
}

static void insert_hashed(Index *x, uint64_t hash, uint32_t i) {
        for (uint32_t j = home(x, hash);; j = next(x, j)) {
                uint32_t *s = &x->slots[j];
                if (*s == SLOT_EMPTY) {
                        *s = slot_make(hash, i);
                        return;
                }
        }
}

void cache_index_insert(IverCache *c, Index *x, uint32_t i) {
        insert_hashed(x, slot_hash(c, x, i), i);
}

/* Every entry into the rebuilt x, in entry order: the hashes are made a few
 * entries ahead and their home slots fetched meanwhile, so the random
 * writes into the new table do not stall one after another. */
#define REBUILD_AHEAD 8U
static void rebuild_entries(IverCache *c, Index *x) {
        uint64_t ring[REBUILD_AHEAD];
        uint32_t n = c->n;
        for (uint32_t i = 0; i < n + REBUILD_AHEAD; i++) {
                if (i >= REBUILD_AHEAD)
                        insert_hashed(x, ring[i % REBUILD_AHEAD], i - REBUILD_AHEAD);
                if (i < n) {
                        uint64_t h = slot_hash(c, x, i);
                        __builtin_prefetch(&x->slots[home(x, h)], 1);
                        ring[i % REBUILD_AHEAD] = h;
                }
        }
}

int cache_index_reserve(IverCache *c, Index *x, uint32_t want) {
        if (x->slots && !iver_table_over(want, x->cap))
                return 0;
        uint64_t ncap = iver_table_capacity(want, 256);
        if (ncap > UINT32_MAX)
                return -E2BIG;
        /* the slots are rebuilt from the entries, not copied: realloc, so
         * that a table in a mapping of its own (any of 128 KiB or more)
         * grows by mremap, its pages moved, and the old and the new one are
         * never both resident (the daemon's peak would hold them: +1 MiB
         * at 200,000 files); the old one stays on failure */
        uint32_t *s = realloc(x->slots, ncap * sizeof(uint32_t));
        if (!s)
                return -ENOMEM;
        memset(s, 0xff, ncap * sizeof(uint32_t));
        x->slots = s;
        x->cap = (uint32_t) ncap;
        if (x == &c->by_dir) {
                for (uint32_t d = 0; d < c->n_dirs; d++)
                        if (c->dirs[d].refs > 0)
                                cache_index_insert(c, x, d);
        } else
                rebuild_entries(c, x);
        return 0;
}

