/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement cache: a dense chunked entry array, open-addressing
 * indexes (cache-index.c: entries by (dev, ino), entries by path,
 * directories by path), a directory table (cache-dirs.c) and an arena of
 * records; the layout is in cache-internal.h. A path is stored once per
 * directory: the directory's bytes (with the trailing '/') in the
 * directory table, each entry's record holding the directory number, the
 * basename, the digest and (rarely) a version. 56 bytes an entry, 8 to 12
 * bytes of index (lib/table.h) and the record; no allocation per entry.
 * Freed records are reused (arena free lists) or compacted away. This file:
 * the API (lookups and changes). */
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cache-internal.h"

int iver_cache_new(IverCache **ret) {
        IverCache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->dir_free = SLOT_EMPTY;
        if (getrandom(&c->key, sizeof(c->key), GRND_NONBLOCK) != sizeof(c->key))
                /* early boot without entropy: still not the same in every run */
                c->key = mix64((uint64_t) (uintptr_t) c ^ (uint64_t) getpid() << 32 ^ (uint64_t) time(NULL));
        *ret = c;
        return 0;
}

IverCache *iver_cache_free(IverCache *c) {
        if (!c)
                return NULL;
        for (uint32_t i = 0; i < c->n_chunks; i++)
                free(c->chunks[i]);
        free(c->chunks);
        free(c->by_inode.slots);
        free(c->by_path.slots);
        free(c->by_dir.slots);
        free(c->dirs);
        iver_arena_done(&c->names);
        free(c);
        return NULL;
}

size_t iver_cache_size(const IverCache *c) {
        return c->n;
}

/* ---- lookups ---- */

static uint64_t entry_version(const IverCache *c, const CacheEntry *e) {
        uint64_t v = 0;
        if (e->source == IVER_COOKIE_STATX_VERSION)
                memcpy(&v, rec_payload(c, e) + rec_digest_len(e->flags & IVER_ENTRY_MEASURED, e->algo), sizeof(v));
        return v;
}

uint32_t iver_cache_find_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
        const uint32_t *s = cache_index_find_inode(c, dev, ino);
        return s && *s != SLOT_EMPTY ? slot_num(*s) : IVER_CACHE_NONE;
}

uint32_t iver_cache_find_path(const IverCache *c, const char *path, size_t len) {
        size_t dl = split(path, len);
        const uint32_t *s = cache_index_find_dir(c, hash_bytes(c, path, dl), path, dl);
        if (!s || *s == SLOT_EMPTY)
                return IVER_CACHE_NONE;
        s = cache_index_find_name(c, slot_num(*s), path + dl, len - dl);
        return s && *s != SLOT_EMPTY ? slot_num(*s) : IVER_CACHE_NONE;
}

bool iver_cache_has_dir(const IverCache *c, const char *dir, size_t len) {
        char key[4096]; /* the directory's record: its bytes and the '/' */
        if (len + 1 > sizeof(key))
                return true;
        memcpy(key, dir, len);
        if (!(len == 1 && dir[0] == '/'))
                key[len++] = '/';
        const uint32_t *s = cache_index_find_dir(c, hash_bytes(c, key, len), key, len);
        return s && *s != SLOT_EMPTY;
}

void iver_cache_get(const IverCache *c, uint32_t idx, IverEntry *ret) {
        assert(idx < c->n);
        const CacheEntry *e = entry(c, idx);
        /* field by field: this is on the hit path, and zeroing the whole
         * struct (64-byte digest buffer included) costs more than the lookup */
        ret->id.dev = e->dev;
        ret->id.ino = e->ino;
        ret->id.gen = e->gen;
        ret->source = (IverCookieSource) e->source;
        ret->version = entry_version(c, e);
        ret->size = e->size;
        ret->mtime = e->mtime;
        ret->ctime = e->ctime;
        ret->mode = e->mode;
        ret->flags = e->flags;
        ret->shadow_atime = e->shadow_atime;
        ret->shadow_mtime = e->shadow_mtime;
        if (e->flags & IVER_ENTRY_MEASURED) {
                ret->digest.algo = (IverHashAlgo) e->algo;
                ret->digest.len = (uint8_t) iver_hash_algo_size(ret->digest.algo);
                memcpy(ret->digest.bytes, rec_payload(c, e), ret->digest.len);
        } else {
                ret->digest.algo = _IVER_HASH_INVALID;
                ret->digest.len = 0;
        }
}

IverCookie iver_cache_cookie(const IverCache *c, uint32_t idx) {
        const CacheEntry *e = entry(c, idx);
        return (IverCookie) {
                .source = (IverCookieSource) e->source,
                .ctime = e->ctime,
                .mtime = e->mtime,
                .size = e->size,
                .version = entry_version(c, e),
        };
}

size_t iver_cache_path(const IverCache *c, uint32_t idx, char *buf, size_t size) {
        assert(idx < c->n);
        uint32_t d;
        size_t dlen, blen;
        const uint8_t *b = name_bytes(c, entry(c, idx), &d, &blen);
        const uint8_t *dp = dir_bytes(c, d, &dlen);
        if (size > 0) {
                size_t o = dlen < size - 1 ? dlen : size - 1;
                memcpy(buf, dp, o);
                size_t m = blen < size - 1 - o ? blen : size - 1 - o;
                memcpy(buf + o, b, m);
                buf[o + m] = 0;
        }
        return dlen + blen;
}

/* ---- mutation ---- */

/* The payload's length for src (its digest, its version), or -EINVAL. */
static ssize_t payload_len(const IverEntry *src) {
        bool measured = src->flags & IVER_ENTRY_MEASURED;
        if (measured) {
                size_t dlen = iver_hash_algo_size(src->digest.algo);
                if (dlen == 0 || dlen != src->digest.len)
                        return -EINVAL;
        }
        return (ssize_t) rec_len_of(measured, measured ? (unsigned) src->digest.algo : 0, (unsigned) src->source);
}

/* src's payload written at p; the entry's algo, MEASURED flag and source
 * made src's (the rest is fill()'s). */
static void put_payload(CacheEntry *e, uint8_t *p, const IverEntry *src) {
        bool measured = src->flags & IVER_ENTRY_MEASURED;
        size_t dlen = measured ? src->digest.len : 0;
        memcpy(p, src->digest.bytes, dlen);
        if (src->source == IVER_COOKIE_STATX_VERSION)
                memcpy(p + dlen, &src->version, sizeof(src->version));
        e->algo = measured ? (uint8_t) src->digest.algo : 0;
        e->flags = (e->flags & ~IVER_ENTRY_MEASURED) | (measured ? IVER_ENTRY_MEASURED : 0);
        e->source = (uint8_t) src->source;
}

/* A record for base in directory d with room for plen bytes of payload
 * (*ret_payload); takes a reference on d. */
static int store_record(IverCache *c, uint32_t d, const char *base, size_t blen, size_t plen,
                        uint8_t **ret_payload, uint32_t *ret_off) {
        size_t hdr = name_hdr(blen);
        uint8_t *p = iver_arena_alloc(&c->names, hdr + blen + plen, ret_off);
        if (!p)
                return -ENOMEM;
        memcpy(p, &d, sizeof(d));
        if (blen < NAME_LEN_LONG)
                p[4] = (uint8_t) blen;
        else {
                uint16_t l = (uint16_t) blen;
                p[4] = NAME_LEN_LONG;
                memcpy(p + 5, &l, sizeof(l));
        }
        memcpy(p + hdr, base, blen);
        c->dirs[d].refs++;
        *ret_payload = p + hdr + blen;
        return 0;
}

/* Give back an entry's record and its directory reference. */
static void drop_record(IverCache *c, CacheEntry *e) {
        uint32_t d;
        size_t blen;
        (void) name_bytes(c, e, &d, &blen);
        iver_arena_free(&c->names, e->name_off, name_record_len(c, e));
        cache_dir_unref(c, d);
}

/* Everything but the record. */
static void fill(CacheEntry *e, const IverEntry *src) {
        e->ino = src->id.ino;
        e->gen = (uint32_t) src->id.gen;
        e->dev = src->id.dev;
        e->size = src->size;
        e->mtime = src->mtime;
        e->ctime = src->ctime;
        e->shadow_atime = src->shadow_atime;
        e->shadow_mtime = src->shadow_mtime;
        e->mode = (uint16_t) src->mode;
        e->flags = src->flags & 0xff;
        e->source = (uint8_t) src->source;
}

int iver_cache_put(IverCache *c, const IverEntry *src, const char *path, size_t path_len, uint32_t *ret_idx) {
        if (path_len > UINT16_MAX)
                return -ENAMETOOLONG;
        return iver_cache_put_found(c, src, path, path_len, iver_cache_find_path(c, path, path_len),
                                    iver_cache_find_inode(c, src->id.dev, src->id.ino), ret_idx);
}

/* Room for one more entry: both indexes and, at a chunk boundary, a new chunk. */
static int reserve_entry(IverCache *c) {
        int r;

        if (c->n >= MAX_ENTRIES)
                return -E2BIG;
        r = cache_index_reserve(c, &c->by_inode, c->n + 1);
        if (r < 0)
                return r;
        r = cache_index_reserve(c, &c->by_path, c->n + 1);
        if (r < 0)
                return r;
        if ((c->n >> ENTRY_CHUNK_SHIFT) >= c->n_chunks) {
                CacheEntry **ch = realloc(c->chunks, (c->n_chunks + 1) * sizeof(*ch));
                if (!ch)
                        return -ENOMEM;
                c->chunks = ch;
                ch[c->n_chunks] = malloc(ENTRY_CHUNK * sizeof(CacheEntry));
                if (!ch[c->n_chunks])
                        return -ENOMEM;
                c->n_chunks++;
        }
        return 0;
}

/* A new entry for src, named base in directory d (whose reference it takes). */
static int insert_entry(IverCache *c, const IverEntry *src, uint32_t d, const char *base, size_t blen,
                        uint32_t *ret_idx) {
        ssize_t plen = payload_len(src);
        uint8_t *p;
        int r;

        r = plen < 0 ? (int) plen : reserve_entry(c);
        if (r < 0) {
                cache_dir_unref_if_unused(c, d);
                return r;
        }
        CacheEntry *e = entry(c, c->n);
        memset(e, 0, sizeof(*e));
        fill(e, src);
        r = store_record(c, d, base, blen, (size_t) plen, &p, &e->name_off);
        if (r < 0) {
                cache_dir_unref_if_unused(c, d);
                return r;
        }
        put_payload(e, p, src);
        uint32_t idx = c->n++;
        cache_index_insert(c, &c->by_inode, idx);
        cache_index_insert(c, &c->by_path, idx);
        *ret_idx = idx;
        return 0;
}

/* Entry idx updated from src, renamed to base in directory d if its name
 * differs: the record is rewritten in place unless the name or the
 * payload's length changes. */
static int update_entry(IverCache *c, const IverEntry *src, uint32_t idx, uint32_t d, const char *base,
                        size_t blen) {
        CacheEntry *e = entry(c, idx);
        ssize_t plen = payload_len(src);
        uint32_t od;
        size_t olen;
        uint8_t *p;
        int r;

        if (plen < 0) {
                cache_dir_unref_if_unused(c, d);
                return (int) plen;
        }
        const uint8_t *ob = name_bytes(c, e, &od, &olen);
        bool renamed = od != d || olen != blen || memcmp(ob, base, blen) != 0;
        if (!renamed && (size_t) plen == rec_len(e))
                put_payload(e, (uint8_t *) ob + olen, src);
        else {
                uint32_t off;
                r = store_record(c, d, base, blen, (size_t) plen, &p, &off);
                if (r < 0) {
                        cache_dir_unref_if_unused(c, d);
                        return r;
                }
                if (renamed)
                        cache_index_delete(c, &c->by_path, cache_index_slot_of(c, &c->by_path, idx));
                drop_record(c, e);
                e->name_off = off;
                put_payload(e, p, src);
                if (renamed)
                        cache_index_insert(c, &c->by_path, idx);
        }
        fill(e, src);
        cache_maybe_compact(c);
        return 0;
}

int iver_cache_put_found(IverCache *c, const IverEntry *src, const char *path, size_t path_len, uint32_t holder,
                         uint32_t idx, uint32_t *ret_idx) {
        int r;

        if (src->source < 0 || src->source >= _IVER_COOKIE_MAX)
                return -EINVAL;
        if (path_len > UINT16_MAX)
                return -ENAMETOOLONG;
        size_t dl = split(path, path_len);
        const char *base = path + dl;
        size_t blen = path_len - dl;

        /* A path belongs to one entry: whoever held it before was replaced (rename-over). */
        if (holder != IVER_CACHE_NONE && holder != idx) {
                iver_cache_remove(c, holder);
                idx = iver_cache_find_inode(c, src->id.dev, src->id.ino); /* may have moved */
        }

        uint32_t d;
        r = cache_dir_get(c, path, dl, &d);
        if (r < 0)
                return r;

        if (idx == IVER_CACHE_NONE)
                r = insert_entry(c, src, d, base, blen, &idx);
        else
                r = update_entry(c, src, idx, d, base, blen);
        if (r < 0)
                return r;
        if (ret_idx)
                *ret_idx = idx;
        return 0;
}

void iver_cache_touch(IverCache *c, uint32_t idx, uint32_t shadow_atime, uint32_t shadow_mtime, const IverStat *st) {
        CacheEntry *e = entry(c, idx);
        e->shadow_atime = shadow_atime;
        e->shadow_mtime = shadow_mtime;
        e->mode = (uint16_t) st->mode; /* not part of the cookie */
}

void iver_cache_set_cookie(IverCache *c, uint32_t idx, const IverCookie *cookie) {
        CacheEntry *e = entry(c, idx);
        e->ctime = cookie->ctime;
        e->mtime = cookie->mtime;
        e->size = cookie->size;
        /* the entry's source stays (as before): a version only where it has one */
        if (e->source == IVER_COOKIE_STATX_VERSION)
                memcpy(rec_payload(c, e) + rec_digest_len(e->flags & IVER_ENTRY_MEASURED, e->algo), &cookie->version,
                       sizeof(cookie->version));
}

void iver_cache_set_mark(IverCache *c, uint32_t idx) {
        entry(c, idx)->mark = 1;
}

bool iver_cache_has_mark(const IverCache *c, uint32_t idx) {
        return entry(c, idx)->mark;
}

void iver_cache_clear_marks(IverCache *c) {
        for (uint32_t i = 0; i < c->n; i++)
                entry(c, i)->mark = 0;
}

void iver_cache_update_flags(IverCache *c, uint32_t idx, uint32_t set, uint32_t clear) {
        CacheEntry *e = entry(c, idx);
        e->flags = (e->flags & ~clear & 0xff) | (set & 0xff);
}

void iver_cache_remove(IverCache *c, uint32_t idx) {
        assert(idx < c->n);
        CacheEntry *e = entry(c, idx);

        cache_index_delete(c, &c->by_inode, cache_index_slot_of(c, &c->by_inode, idx));
        cache_index_delete(c, &c->by_path, cache_index_slot_of(c, &c->by_path, idx));
        drop_record(c, e);

        uint32_t last = c->n - 1;
        if (idx != last) {
                uint32_t *si = cache_index_slot_of(c, &c->by_inode, last), *sp = cache_index_slot_of(c, &c->by_path, last);
                *si = (*si & ~IDX_MASK) | idx; /* the key, and so its tag, moves along */
                *sp = (*sp & ~IDX_MASK) | idx;
                *e = *entry(c, last);
        }
        c->n--;
        cache_maybe_compact(c);
}

size_t iver_cache_memory(const IverCache *c) {
        size_t m = sizeof(*c) + (size_t) c->n_chunks * (ENTRY_CHUNK * sizeof(CacheEntry) + sizeof(CacheEntry *)) +
                   (size_t) c->n_dirs_alloc * sizeof(Dir);
        const Index *x[] = { &c->by_inode, &c->by_path, &c->by_dir };
        for (size_t i = 0; i < ELEMENTSOF(x); i++)
                m += x[i]->slots ? (size_t) x[i]->cap * sizeof(uint32_t) : 0;
        return m + iver_arena_memory(&c->names);
}

size_t iver_cache_path_bytes(const IverCache *c) {
        size_t payload = 0;
        for (uint32_t i = 0; i < c->n; i++)
                payload += rec_len(entry(c, i));
        return c->names.live - payload;
}
