/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Append-only byte arena in 1 MiB chunks, addressed by 32-bit offsets
 * (chunk << 20 | position), so 4 GiB at most. An item never spans chunks. */
#define IVER_ARENA_CHUNK_SHIFT 20
#define IVER_ARENA_CHUNK_SIZE (1U << IVER_ARENA_CHUNK_SHIFT)
#define IVER_ARENA_MAX_CHUNKS 4096U

typedef struct IverArena {
        uint8_t **chunks;
        uint32_t n_chunks;
        uint32_t used;        /* bytes used in the last chunk */
        size_t live, garbage; /* bookkeeping for compaction */
} IverArena;

/* Reserve len bytes (≤ one chunk); returns a pointer and sets *ret_off. */
void *iver_arena_alloc(IverArena *a, size_t len, uint32_t *ret_off);
static inline void *iver_arena_at(const IverArena *a, uint32_t off) {
        return a->chunks[off >> IVER_ARENA_CHUNK_SHIFT] + (off & (IVER_ARENA_CHUNK_SIZE - 1));
}
void iver_arena_done(IverArena *a);
size_t iver_arena_memory(const IverArena *a);
