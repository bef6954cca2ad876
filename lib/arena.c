/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Chunked append-only arena for the cache's paths and digests. */
#include <stdlib.h>

#include "arena.h"

void *iver_arena_alloc(IverArena *a, size_t len, uint32_t *ret_off) {
        if (len > IVER_ARENA_CHUNK_SIZE)
                return NULL;
        /* keep items 8-byte aligned for cheap word-wise reads */
        size_t need = (len + 7) & ~(size_t) 7;
        if (a->n_chunks == 0 || a->used + need > IVER_ARENA_CHUNK_SIZE) {
                if (a->n_chunks >= IVER_ARENA_MAX_CHUNKS)
                        return NULL;
                uint8_t **c = realloc(a->chunks, (a->n_chunks + 1) * sizeof(*c));
                if (!c)
                        return NULL;
                a->chunks = c;
                c[a->n_chunks] = malloc(IVER_ARENA_CHUNK_SIZE);
                if (!c[a->n_chunks])
                        return NULL;
                a->n_chunks++;
                if (a->used > 0 && a->n_chunks > 1)
                        a->garbage += IVER_ARENA_CHUNK_SIZE - a->used; /* tail left unused */
                a->used = 0;
        }
        uint32_t off = ((a->n_chunks - 1) << IVER_ARENA_CHUNK_SHIFT) | a->used;
        a->used += need;
        a->live += need;
        *ret_off = off;
        return iver_arena_at(a, off);
}

void iver_arena_done(IverArena *a) {
        for (uint32_t i = 0; i < a->n_chunks; i++)
                free(a->chunks[i]);
        free(a->chunks);
        *a = (IverArena) {};
}

size_t iver_arena_memory(const IverArena *a) {
        return (size_t) a->n_chunks * IVER_ARENA_CHUNK_SIZE + a->n_chunks * sizeof(uint8_t *);
}
