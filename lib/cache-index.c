/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement cache's indexes: open addressing with linear probing over
 * 32-bit slots (entries by (dev, ino), entries by path, directories by
 * path), tombstone-free deletion. */
#include "cache-internal.h"

static uint64_t slot_hash(const IverCache *c, const Index *x, uint32_t i) {
        if (x == &c->by_dir)
                return c->dirs[i].hash;
        const CacheEntry *e = entry(c, i);
        return x == &c->by_inode ? hash_inode(e->dev, e->ino) : hash_entry_path(c, e);
}

uint32_t *cache_index_find_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
        const Index *x = &c->by_inode;
        if (!x->slots)
                return NULL;
        uint64_t hash = hash_inode(dev, ino);
        for (uint64_t h = hash;; h++) {
                uint32_t *s = &x->slots[h & x->mask];
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
        for (uint64_t h = hash;; h++) {
                uint32_t *s = &x->slots[h & x->mask];
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
        uint64_t hash = hash_path(c->dirs[d].hash, base, blen);
        for (uint64_t h = hash;; h++) {
                uint32_t *s = &x->slots[h & x->mask];
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
        for (uint64_t h = slot_hash(c, x, i);; h++) {
                uint32_t *s = &x->slots[h & x->mask];
                assert(*s != SLOT_EMPTY);
                if (slot_num(*s) == i)
                        return s;
        }
}

/* Backward-shift deletion keeps linear probing tombstone-free. */
void cache_index_delete(IverCache *c, Index *x, uint32_t *slot) {
        uint32_t hole = (uint32_t) (slot - x->slots);
        for (uint32_t j = (hole + 1) & x->mask;; j = (j + 1) & x->mask) {
                if (x->slots[j] == SLOT_EMPTY)
                        break;
                uint32_t home = (uint32_t) (slot_hash(c, x, slot_num(x->slots[j])) & x->mask);
                /* move j into the hole if its home is not in (hole, j] cyclically */
                bool in_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (!in_between) {
                        x->slots[hole] = x->slots[j];
                        hole = j;
                }
        }
        x->slots[hole] = SLOT_EMPTY;
}

void cache_index_insert(IverCache *c, Index *x, uint32_t i) {
        uint64_t hash = slot_hash(c, x, i);
        for (uint64_t h = hash;; h++) {
                uint32_t *s = &x->slots[h & x->mask];
                if (*s == SLOT_EMPTY) {
                        *s = slot_make(hash, i);
                        return;
                }
        }
}

int cache_index_reserve(IverCache *c, Index *x, uint32_t want) {
        uint64_t cap = (uint64_t) x->mask + 1;
        if (x->slots && (uint64_t) want * 4 <= cap * 3)
                return 0;
        uint64_t ncap = x->slots ? cap : 256;
        while ((uint64_t) want * 4 > ncap * 3)
                ncap *= 2;
        if (ncap > (1ULL << 32))
                return -E2BIG;
        uint32_t *s = malloc(ncap * sizeof(uint32_t));
        if (!s)
                return -ENOMEM;
        memset(s, 0xff, ncap * sizeof(uint32_t));
        free(x->slots);
        x->slots = s;
        x->mask = (uint32_t) (ncap - 1);
        if (x == &c->by_dir) {
                for (uint32_t d = 0; d < c->n_dirs; d++)
                        if (c->dirs[d].refs > 0)
                                cache_index_insert(c, x, d);
        } else
                for (uint32_t i = 0; i < c->n; i++)
                        cache_index_insert(c, x, i);
        return 0;
}

