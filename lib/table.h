/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Sizes, home slots and deletion of the open-addressing tables with linear
 * probing (the cache's indexes, the list's dedup index, the ledger's paths,
 * the daemon's re-checks). A table holds at most 4/5
 * of its capacity; capacities go in quarter steps, 2^k·(1, 5/4, 3/2, 7/4),
 * so a table spends 1.25 to 1.56 slots a key, where powers of two at a load
 * of 3/4 spent 1.33 to 2.67 (the price: a key is moved about six times over
 * a table's growth instead of twice). A key's home is 32 bits of its hash
 * scaled to the capacity (multiply and shift: Lemire's fastrange), not
 * masked. */
#include <stdbool.h>
#include <stdint.h>

/* Whether used keys exceed what a table of cap slots may hold. */
static inline bool iver_table_over(uint64_t used, uint64_t cap) {
        return used * 5 > cap * 4;
}

/* The least capacity of the sequence, at least min (a power of two), that holds want keys. */
static inline uint64_t iver_table_capacity(uint64_t want, uint64_t min) {
        uint64_t cap = min;
        while (iver_table_over(want, cap))
                cap += ((uint64_t) 1 << (63 - __builtin_clzll(cap))) / 4;
        return cap;
}

/* The home slot of a key whose hash has these 32 bits. */
static inline uint64_t iver_table_home(uint32_t h, uint64_t cap) {
        return (uint64_t) h * cap >> 32;
}

/* The slot after i, the last one wrapping to the first (linear probing). */
static inline uint64_t iver_table_next(uint64_t i, uint64_t cap) {
        return i + 1 == cap ? 0 : i + 1;
}

/* Empty slot hole of a table of cap 32-bit slots (empty: an empty slot's
 * value), moving back each later entry of its run whose home allows:
 * backward-shift deletion keeps linear probing free of tombstones. home_of
 * gives the home slot of the entry a slot holds. */
static inline void iver_table_delete(uint32_t *slots, uint64_t cap, uint64_t hole, uint32_t empty,
                                     uint64_t (*home_of)(const void *ctx, uint32_t slot), const void *ctx) {
        for (uint64_t j = iver_table_next(hole, cap); slots[j] != empty; j = iver_table_next(j, cap)) {
                uint64_t h = home_of(ctx, slots[j]);
                /* j moves into the hole unless its home is in (hole, j] cyclically */
                bool in_between = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
                if (!in_between) {
                        slots[hole] = slots[j];
                        hole = j;
                }
        }
        slots[hole] = empty;
}
