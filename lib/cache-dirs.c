/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement cache's directory table (a path is stored once per
 * directory, reference-counted by the entries named in it) and the
 * compaction of its names arena. */
#include "cache-internal.h"
#include "grow.h"

/* The directory numbered for these bytes, made (with no reference) if new. */
int cache_dir_get(IverCache *c, const char *dir, size_t len, uint32_t *ret) {
        uint64_t h = hash_bytes(c, dir, len);
        uint32_t *s = cache_index_find_dir(c, h, dir, len);
        if (s && *s != SLOT_EMPTY) {
                *ret = slot_num(*s);
                return 0;
        }
        int r = cache_index_reserve(c, &c->by_dir, c->n_dirs_used + 1);
        if (r < 0)
                return r;
        uint32_t d;
        if (c->dir_free != SLOT_EMPTY) {
                d = c->dir_free;
                c->dir_free = c->dirs[d].off;
        } else {
                if (GROW(c->dirs, c->n_dirs_alloc, (size_t) c->n_dirs + 1, 64) < 0)
                        return -ENOMEM;
                d = c->n_dirs++;
        }
        uint32_t off;
        uint8_t *p = iver_arena_alloc(&c->names, DIR_HDR + len, &off);
        if (!p) {
                c->dirs[d] = (Dir) { .off = c->dir_free };
                c->dir_free = d;
                return -ENOMEM;
        }
        uint16_t l = (uint16_t) len;
        memcpy(p, &l, sizeof(l));
        memcpy(p + DIR_HDR, dir, len);
        c->dirs[d] = (Dir) { .hash = h, .off = off, .refs = 0 };
        c->n_dirs_used++;
        cache_index_insert(c, &c->by_dir, d);
        *ret = d;
        return 0;
}

/* Drop a reference; the last one frees the directory. */
void cache_dir_unref(IverCache *c, uint32_t d) {
        assert(c->dirs[d].refs > 0);
        if (--c->dirs[d].refs > 0)
                return;
        c->dirs[d].refs = 1; /* still findable while its slot goes */
        cache_index_delete(c, &c->by_dir, cache_index_slot_of(c, &c->by_dir, d));
        size_t len;
        (void) dir_bytes(c, d, &len);
        iver_arena_free(&c->names, c->dirs[d].off, DIR_HDR + len);
        c->dirs[d] = (Dir) { .off = c->dir_free };
        c->dir_free = d;
        c->n_dirs_used--;
}

/* A directory made by cache_dir_get() that ended up unused. */
void cache_dir_unref_if_unused(IverCache *c, uint32_t d) {
        if (c->dirs[d].refs == 0) {
                c->dirs[d].refs = 1;
                cache_dir_unref(c, d);
        }
}

/* ---- compaction ---- */

/* Copy every live record (directories', entries') into a new arena and
 * swap; the copy's chunks are reserved first, so a compaction either happens
 * whole or not at all (then the cache keeps its garbage until the next try). */
static void compact_names(IverCache *c) {
        IverArena a = {};
        uint32_t off;
        size_t max_record = NAME_HDR_MAX + UINT16_MAX + IVER_DIGEST_MAX + sizeof(uint64_t);
        if (iver_arena_reserve(&a, c->names.live, max_record) < 0) {
                iver_arena_done(&a);
                return;
        }
        for (uint32_t d = 0; d < c->n_dirs; d++)
                if (c->dirs[d].refs > 0) {
                        size_t len;
                        (void) dir_bytes(c, d, &len);
                        int r = iver_arena_move(&a, &c->names, c->dirs[d].off, DIR_HDR + len, &off);
                        assert(r >= 0); /* reserved */
                        (void) r;
                        c->dirs[d].off = off; /* the old arena stays intact until the swap */
                }
        for (uint32_t i = 0; i < c->n; i++) {
                CacheEntry *e = entry(c, i);
                int r = iver_arena_move(&a, &c->names, e->name_off, name_record_len(c, e), &off);
                assert(r >= 0);
                (void) r;
                e->name_off = off;
        }
        iver_arena_trim(&a);
        iver_arena_done(&c->names);
        c->names = a;
}

void cache_maybe_compact(IverCache *c) {
        if (iver_arena_wants_compaction(&c->names))
                compact_names(c);
}

