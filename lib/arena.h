/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Byte arena in 1 MiB chunks, addressed by 32-bit offsets (chunk << 20 |
 * position), so 4 GiB at most. An item never spans chunks; items are 4-byte
 * granules (a free item holds the next one's offset; records are read with
 * memcpy, never as aligned words). Freed items of up to IVER_ARENA_SMALL
 * bytes go on a free list per size and are reused by the next allocation of that size; larger ones, and
 * chunk tails, are garbage until the owner compacts: when
 * iver_arena_wants_compaction() says so it copies every live item into a new
 * arena (iver_arena_reserve() first) with iver_arena_move(), updates its offsets and swaps the arenas. */
#define IVER_ARENA_CHUNK_SHIFT 20
#define IVER_ARENA_CHUNK_SIZE (1U << IVER_ARENA_CHUNK_SHIFT)
#define IVER_ARENA_MAX_CHUNKS 4096U
#define IVER_ARENA_SMALL 512U
#define IVER_ARENA_GRANULE 4U
#define IVER_ARENA_NONE UINT32_MAX

typedef struct IverArena {
        uint8_t **chunks;
        uint32_t n_chunks;
        uint32_t n_spare;     /* chunks reserved after the last one (iver_arena_reserve) */
        uint32_t used;        /* bytes used in the last chunk */
        size_t live, garbage; /* bytes in live items; bytes freed (free lists included) or lost to tails */
        /* per granule count; IVER_ARENA_NONE when empty */
        uint32_t free_head[IVER_ARENA_SMALL / IVER_ARENA_GRANULE + 1];
        bool free_init;
} IverArena;

/* Reserve len bytes (≤ one chunk); returns a pointer and sets *ret_off. */
void *iver_arena_alloc(IverArena *a, size_t len, uint32_t *ret_off);
/* Give back the item at off that was allocated with len. */
void iver_arena_free(IverArena *a, uint32_t off, size_t len);
static inline void *iver_arena_at(const IverArena *a, uint32_t off) {
        return a->chunks[off >> IVER_ARENA_CHUNK_SHIFT] + (off & (IVER_ARENA_CHUNK_SIZE - 1));
}
/* Garbage is more than a chunk and more than half the live bytes. */
bool iver_arena_wants_compaction(const IverArena *a);
/* Make sure items of bytes in all, none larger than max_item, fit without
 * another allocation (so a compaction cannot fail half-way). */
int iver_arena_reserve(IverArena *a, size_t bytes, size_t max_item);
/* Free the chunks reserved and not used. */
void iver_arena_trim(IverArena *a);
/* Copy the item at off (len bytes) of src into dst. */
int iver_arena_move(IverArena *dst, const IverArena *src, uint32_t off, size_t len, uint32_t *ret_off);
void iver_arena_done(IverArena *a);
size_t iver_arena_memory(const IverArena *a);
