/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Chunked arena with size-class free lists for the cache's records (names, digests). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

static inline size_t granules(size_t len) {
        return (len + IVER_ARENA_GRANULE - 1) / IVER_ARENA_GRANULE;
}

static void free_init(IverArena *a) {
        if (a->free_init)
                return;
        for (size_t i = 0; i < sizeof(a->free_head) / sizeof(a->free_head[0]); i++)
                a->free_head[i] = IVER_ARENA_NONE;
        a->free_init = true;
}

/* One more spare chunk. */
static int add_chunk(IverArena *a) {
        uint32_t total = a->n_chunks + a->n_spare;
        if (total >= IVER_ARENA_MAX_CHUNKS)
                return -E2BIG;
        uint8_t **c = realloc(a->chunks, (total + 1) * sizeof(*c));
        if (!c)
                return -ENOMEM;
        a->chunks = c;
        c[total] = malloc(IVER_ARENA_CHUNK_SIZE);
        if (!c[total])
                return -ENOMEM;
        a->n_spare++;
        return 0;
}

int iver_arena_reserve(IverArena *a, size_t bytes, size_t max_item) {
        /* every chunk loses less than one item (and alignment) at its tail */
        size_t per = IVER_ARENA_CHUNK_SIZE - granules(max_item) * IVER_ARENA_GRANULE;
        size_t want = (bytes + per - 1) / per + 1;
        while (a->n_spare < want) {
                int r = add_chunk(a);
                if (r < 0)
                        return r;
        }
        return 0;
}

void iver_arena_trim(IverArena *a) {
        for (; a->n_spare > 0; a->n_spare--) {
                free(a->chunks[a->n_chunks + a->n_spare - 1]);
                a->chunks[a->n_chunks + a->n_spare - 1] = NULL;
        }
}

void *iver_arena_alloc(IverArena *a, size_t len, uint32_t *ret_off) {
        if (len > IVER_ARENA_CHUNK_SIZE)
                return NULL;
        free_init(a);
        size_t g = granules(len ?: 1), need = g * IVER_ARENA_GRANULE;
        if (need <= IVER_ARENA_SMALL && a->free_head[g] != IVER_ARENA_NONE) {
                uint32_t off = a->free_head[g];
                void *p = iver_arena_at(a, off);
                memcpy(&a->free_head[g], p, sizeof(uint32_t));
                a->garbage -= need;
                a->live += need;
                *ret_off = off;
                return p;
        }
        if (a->n_chunks == 0 || a->used + need > IVER_ARENA_CHUNK_SIZE) {
                if (a->n_spare == 0 && add_chunk(a) < 0)
                        return NULL;
                a->n_spare--;
                a->n_chunks++;
                if (a->n_chunks > 1)
                        a->garbage += IVER_ARENA_CHUNK_SIZE - a->used; /* tail left unused */
                a->used = 0;
        }
        uint32_t off = ((a->n_chunks - 1) << IVER_ARENA_CHUNK_SHIFT) | a->used;
        a->used += (uint32_t) need;
        a->live += need;
        *ret_off = off;
        return iver_arena_at(a, off);
}

void iver_arena_free(IverArena *a, uint32_t off, size_t len) {
        free_init(a);
        size_t g = granules(len ?: 1), need = g * IVER_ARENA_GRANULE;
        a->live -= need;
        a->garbage += need;
        if (need <= IVER_ARENA_SMALL) {
                memcpy(iver_arena_at(a, off), &a->free_head[g], sizeof(uint32_t));
                a->free_head[g] = off;
        }
}

bool iver_arena_wants_compaction(const IverArena *a) {
        return a->garbage > IVER_ARENA_CHUNK_SIZE && a->garbage > a->live / 2;
}

int iver_arena_move(IverArena *dst, const IverArena *src, uint32_t off, size_t len, uint32_t *ret_off) {
        void *p = iver_arena_alloc(dst, len, ret_off);
        if (!p)
                return -ENOMEM;
        memcpy(p, iver_arena_at(src, off), len);
        return 0;
}

void iver_arena_done(IverArena *a) {
        for (uint32_t i = 0; i < a->n_chunks + a->n_spare; i++)
                free(a->chunks[i]);
        free(a->chunks);
        *a = (IverArena) {};
}

size_t iver_arena_memory(const IverArena *a) {
        size_t n = (size_t) a->n_chunks + a->n_spare;
        return n * IVER_ARENA_CHUNK_SIZE + n * sizeof(uint8_t *);
}
