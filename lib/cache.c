/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement cache: dense chunked entry array, two open-addressing
 * (linear probing) indexes of 32-bit entry numbers — by (dev, ino) and by
 * path — and arenas for paths and digests. 96 bytes an entry plus ~17 bytes
 * of index and the digest; no allocation per entry. */
#include <assert.h>
#include <string.h>

#include "arena.h"
#include "iver/cache.h"
#include "macro.h"

#define ENTRY_CHUNK_SHIFT 12
#define ENTRY_CHUNK (1U << ENTRY_CHUNK_SHIFT)
#define SLOT_EMPTY UINT32_MAX
#define MAX_ENTRIES (UINT32_MAX - 1)

typedef struct CacheEntry {
        uint64_t ino, gen, size;
        int64_t atime, mtime, ctime;
        uint64_t version;
        uint64_t shadow_atime, shadow_mtime;
        uint32_t dev;
        uint16_t mode;
        uint16_t algo : 5;
        uint16_t mark : 1;      /* scan mark (iver_cache_*_mark) */
        uint16_t flags : 8;
        uint16_t source : 2;
        uint32_t uid, gid;
        uint32_t path_off;
        uint32_t digest_off;
} CacheEntry;

_Static_assert(sizeof(CacheEntry) == 96, "cache entry grew");
_Static_assert(_IVER_HASH_MAX <= 32, "algo bit-field too narrow");

typedef struct Index {
        uint32_t *slots;
        uint32_t mask;      /* capacity - 1; capacity is a power of two */
} Index;

struct IverCache {
        CacheEntry **chunks;
        uint32_t n_chunks;
        uint32_t n;
        Index by_inode, by_path;
        IverArena paths, digests;
};

static inline CacheEntry *entry(const IverCache *c, uint32_t i) {
        return &c->chunks[i >> ENTRY_CHUNK_SHIFT][i & (ENTRY_CHUNK - 1)];
}

static inline uint64_t mix64(uint64_t x) {
        /* splitmix64 finaliser */
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        x ^= x >> 31;
        return x;
}

static inline uint64_t hash_inode(uint32_t dev, uint64_t ino) {
        return mix64(ino ^ ((uint64_t) dev << 40) ^ ((uint64_t) dev >> 24));
}

static uint64_t hash_bytes(const void *p, size_t len) {
        const uint8_t *s = p;
        uint64_t h = 0x9e3779b97f4a7c15ULL ^ len, w;
        while (len >= 8) {
                memcpy(&w, s, 8);
                h = mix64(h ^ w);
                s += 8;
                len -= 8;
        }
        w = 0;
        memcpy(&w, s, len);
        return mix64(h ^ w ^ 0x5555);
}

/* Paths are stored as u16 length, bytes, NUL. */
static inline const char *entry_path(const IverCache *c, const CacheEntry *e, size_t *ret_len) {
        const uint8_t *p = iver_arena_at(&c->paths, e->path_off);
        uint16_t len;
        memcpy(&len, p, sizeof(len));
        if (ret_len)
                *ret_len = len;
        return (const char *) p + sizeof(len);
}

static inline uint64_t hash_entry_path(const IverCache *c, const CacheEntry *e) {
        size_t len;
        const char *p = entry_path(c, e, &len);
        return hash_bytes(p, len);
}

int iver_cache_new(IverCache **ret) {
        IverCache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
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
        iver_arena_done(&c->paths);
        iver_arena_done(&c->digests);
        free(c);
        return NULL;
}

size_t iver_cache_size(const IverCache *c) {
        return c->n;
}

/* ---- index primitives ---- */

static uint32_t *index_find_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
        const Index *x = &c->by_inode;
        if (!x->slots)
                return NULL;
        for (uint64_t h = hash_inode(dev, ino);; h++) {
                uint32_t *s = &x->slots[h & x->mask];
                if (*s == SLOT_EMPTY)
                        return s;
                const CacheEntry *e = entry(c, *s);
                if (e->ino == ino && e->dev == dev)
                        return s;
        }
}

static uint32_t *index_find_path(const IverCache *c, const char *path, size_t len) {
        const Index *x = &c->by_path;
        if (!x->slots)
                return NULL;
        for (uint64_t h = hash_bytes(path, len);; h++) {
                uint32_t *s = &x->slots[h & x->mask];
                if (*s == SLOT_EMPTY)
                        return s;
                size_t elen;
                const char *ep = entry_path(c, entry(c, *s), &elen);
                if (elen == len && memcmp(ep, path, len) == 0)
                        return s;
        }
}

static uint64_t slot_hash(const IverCache *c, const Index *x, uint32_t i) {
        const CacheEntry *e = entry(c, i);
        return x == &c->by_inode ? hash_inode(e->dev, e->ino) : hash_entry_path(c, e);
}

/* Backward-shift deletion keeps linear probing tombstone-free. */
static void index_delete(IverCache *c, Index *x, uint32_t *slot) {
        uint32_t hole = (uint32_t) (slot - x->slots);
        for (uint32_t j = (hole + 1) & x->mask;; j = (j + 1) & x->mask) {
                if (x->slots[j] == SLOT_EMPTY)
                        break;
                uint32_t home = (uint32_t) (slot_hash(c, x, x->slots[j]) & x->mask);
                /* move j into the hole if its home is not in (hole, j] cyclically */
                bool in_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (!in_between) {
                        x->slots[hole] = x->slots[j];
                        hole = j;
                }
        }
        x->slots[hole] = SLOT_EMPTY;
}

static void index_insert(IverCache *c, Index *x, uint32_t i) {
        for (uint64_t h = slot_hash(c, x, i);; h++) {
                uint32_t *s = &x->slots[h & x->mask];
                if (*s == SLOT_EMPTY) {
                        *s = i;
                        return;
                }
        }
}

static int index_reserve(IverCache *c, Index *x, uint32_t want) {
        uint64_t cap = (uint64_t) x->mask + 1;
        if (x->slots && (uint64_t) want * 4 <= cap * 3)
                return 0;
        uint64_t ncap = x->slots ? cap : 1024;
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
        for (uint32_t i = 0; i < c->n; i++)
                index_insert(c, x, i);
        return 0;
}

/* ---- lookups ---- */

uint32_t iver_cache_find_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
        const uint32_t *s = index_find_inode(c, dev, ino);
        return s ? *s : IVER_CACHE_NONE;
}

uint32_t iver_cache_find_path(const IverCache *c, const char *path, size_t len) {
        const uint32_t *s = index_find_path(c, path, len);
        return s ? *s : IVER_CACHE_NONE;
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
        ret->version = e->version;
        ret->size = e->size;
        ret->atime = e->atime;
        ret->mtime = e->mtime;
        ret->ctime = e->ctime;
        ret->mode = e->mode;
        ret->uid = e->uid;
        ret->gid = e->gid;
        ret->flags = e->flags;
        ret->shadow_atime = e->shadow_atime;
        ret->shadow_mtime = e->shadow_mtime;
        if (e->flags & IVER_ENTRY_MEASURED) {
                ret->digest.algo = (IverHashAlgo) e->algo;
                ret->digest.len = (uint8_t) iver_hash_algo_size(ret->digest.algo);
                memcpy(ret->digest.bytes, iver_arena_at(&c->digests, e->digest_off), ret->digest.len);
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
                .version = e->version,
        };
}

const char *iver_cache_path(const IverCache *c, uint32_t idx, size_t *ret_len) {
        assert(idx < c->n);
        return entry_path(c, entry(c, idx), ret_len);
}

/* ---- mutation ---- */

static int store_path(IverCache *c, const char *path, size_t len, uint32_t *ret_off) {
        if (len > UINT16_MAX)
                return -ENAMETOOLONG;
        uint16_t l = (uint16_t) len;
        uint8_t *p = iver_arena_alloc(&c->paths, sizeof(l) + len + 1, ret_off);
        if (!p)
                return -ENOMEM;
        memcpy(p, &l, sizeof(l));
        memcpy(p + sizeof(l), path, len);
        p[sizeof(l) + len] = 0;
        return 0;
}

static void fill(CacheEntry *e, const IverEntry *src) {
        e->ino = src->id.ino;
        e->gen = src->id.gen;
        e->dev = src->id.dev;
        e->size = src->size;
        e->atime = src->atime;
        e->mtime = src->mtime;
        e->ctime = src->ctime;
        e->version = src->version;
        e->shadow_atime = src->shadow_atime;
        e->shadow_mtime = src->shadow_mtime;
        e->mode = (uint16_t) src->mode;
        e->uid = src->uid;
        e->gid = src->gid;
        e->flags = src->flags & 0xff;
        e->source = (uint8_t) src->source;
}

static int store_digest(IverCache *c, CacheEntry *e, bool had_digest, const IverEntry *src) {
        if (!(src->flags & IVER_ENTRY_MEASURED))
                return 0;
        size_t len = iver_hash_algo_size(src->digest.algo);
        if (len == 0 || len != src->digest.len)
                return -EINVAL;
        if (had_digest && e->algo == (uint8_t) src->digest.algo) {
                /* same length: overwrite in place */
                memcpy(iver_arena_at(&c->digests, e->digest_off), src->digest.bytes, len);
                return 0;
        }
        uint32_t off;
        void *p = iver_arena_alloc(&c->digests, len, &off);
        if (!p)
                return -ENOMEM;
        if (had_digest)
                c->digests.garbage += iver_hash_algo_size((IverHashAlgo) e->algo);
        memcpy(p, src->digest.bytes, len);
        e->digest_off = off;
        e->algo = (uint8_t) src->digest.algo;
        return 0;
}

int iver_cache_put(IverCache *c, const IverEntry *src, const char *path, size_t path_len, uint32_t *ret_idx) {
        int r;

        if (src->source < 0 || src->source >= _IVER_COOKIE_MAX)
                return -EINVAL;

        /* A path belongs to one entry: whoever held it before was replaced (rename-over). */
        uint32_t holder = iver_cache_find_path(c, path, path_len);
        uint32_t idx = iver_cache_find_inode(c, src->id.dev, src->id.ino);
        if (holder != IVER_CACHE_NONE && holder != idx) {
                iver_cache_remove(c, holder);
                idx = iver_cache_find_inode(c, src->id.dev, src->id.ino); /* may have moved */
        }

        if (idx == IVER_CACHE_NONE) {
                if (c->n >= MAX_ENTRIES)
                        return -E2BIG;
                r = index_reserve(c, &c->by_inode, c->n + 1);
                if (r < 0)
                        return r;
                r = index_reserve(c, &c->by_path, c->n + 1);
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
                CacheEntry *e = entry(c, c->n);
                memset(e, 0, sizeof(*e));
                fill(e, src);
                r = store_path(c, path, path_len, &e->path_off);
                if (r < 0)
                        return r;
                r = store_digest(c, e, false, src);
                if (r < 0)
                        return r;
                idx = c->n++;
                index_insert(c, &c->by_inode, idx);
                index_insert(c, &c->by_path, idx);
        } else {
                CacheEntry *e = entry(c, idx);
                bool had_digest = e->flags & IVER_ENTRY_MEASURED;
                size_t olen;
                const char *op = entry_path(c, e, &olen);
                if (olen != path_len || memcmp(op, path, path_len) != 0) {
                        uint32_t off;
                        r = store_path(c, path, path_len, &off);
                        if (r < 0)
                                return r;
                        index_delete(c, &c->by_path, index_find_path(c, op, olen));
                        c->paths.garbage += sizeof(uint16_t) + olen + 1;
                        e->path_off = off;
                        index_insert(c, &c->by_path, idx);
                }
                r = store_digest(c, e, had_digest, src);
                if (r < 0)
                        return r;
                uint32_t keep_off = e->path_off, keep_doff = e->digest_off;
                uint8_t keep_algo = e->algo;
                fill(e, src);
                e->path_off = keep_off;
                e->digest_off = keep_doff;
                e->algo = keep_algo;
        }
        if (ret_idx)
                *ret_idx = idx;
        return 0;
}

void iver_cache_touch(IverCache *c, uint32_t idx, uint64_t shadow_atime, uint64_t shadow_mtime, const IverStat *st) {
        CacheEntry *e = entry(c, idx);
        e->shadow_atime = shadow_atime;
        e->shadow_mtime = shadow_mtime;
        /* the snapshot follows the fields that don't belong to the cookie */
        e->atime = st->atime;
        e->mode = (uint16_t) st->mode;
        e->uid = st->uid;
        e->gid = st->gid;
}

void iver_cache_set_cookie(IverCache *c, uint32_t idx, const IverCookie *cookie) {
        CacheEntry *e = entry(c, idx);
        e->ctime = cookie->ctime;
        e->mtime = cookie->mtime;
        e->size = cookie->size;
        e->version = cookie->version;
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
        size_t plen;
        const char *p = entry_path(c, e, &plen);

        index_delete(c, &c->by_inode, index_find_inode(c, e->dev, e->ino));
        index_delete(c, &c->by_path, index_find_path(c, p, plen));
        c->paths.garbage += sizeof(uint16_t) + plen + 1;
        if (e->flags & IVER_ENTRY_MEASURED)
                c->digests.garbage += iver_hash_algo_size((IverHashAlgo) e->algo);

        uint32_t last = c->n - 1;
        if (idx != last) {
                CacheEntry *l = entry(c, last);
                const char *lp = entry_path(c, l, &plen);
                *index_find_inode(c, l->dev, l->ino) = idx;
                *index_find_path(c, lp, plen) = idx;
                *e = *l;
        }
        c->n--;
}

size_t iver_cache_memory(const IverCache *c) {
        return sizeof(*c) + (size_t) c->n_chunks * (ENTRY_CHUNK * sizeof(CacheEntry) + sizeof(CacheEntry *)) +
               (c->by_inode.slots ? ((size_t) c->by_inode.mask + 1) * sizeof(uint32_t) : 0) +
               (c->by_path.slots ? ((size_t) c->by_path.mask + 1) * sizeof(uint32_t) : 0) +
               iver_arena_memory(&c->paths) + iver_arena_memory(&c->digests);
}

size_t iver_cache_path_bytes(const IverCache *c) {
        return iver_arena_memory(&c->paths);
}
