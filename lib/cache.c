/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement cache: dense chunked entry array, open-addressing (linear
 * probing) indexes of 32-bit slots (a number and 5 bits of the key's hash)
 * — entries by (dev, ino), entries by
 * path, directories by path — a directory table, and arenas for names and
 * digests. A path is stored once per directory: the directory's bytes (with
 * the trailing '/') in the directory table, each entry's name record holding
 * the directory number and the basename. 96 bytes an entry, ~17 bytes of
 * index, the digest and the name record; no allocation per entry. Freed
 * names and digests are reused (arena free lists) or compacted away. */
#include <assert.h>
#include <string.h>

#include "arena.h"
#include "iver/cache.h"
#include "macro.h"

#define ENTRY_CHUNK_SHIFT 12
#define ENTRY_CHUNK (1U << ENTRY_CHUNK_SHIFT)
#define SLOT_EMPTY UINT32_MAX
/* A slot holds a number (entry or directory) in its low IDX_BITS and the top
 * bits of the key's hash above them: a probe that meets another key mostly
 * moves on without touching that key's entry (a miss, the usual lookup of a
 * new file, costs about one cache line instead of one per probe). */
#define IDX_BITS 27
#define IDX_MASK ((1U << IDX_BITS) - 1)
#define MAX_ENTRIES (IDX_MASK - 1)  /* so no slot is ever SLOT_EMPTY */

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
        uint32_t name_off;      /* names arena: NameRecord */
        uint32_t digest_off;
} CacheEntry;

_Static_assert(sizeof(CacheEntry) == 96, "cache entry grew");
_Static_assert(_IVER_HASH_MAX <= 32, "algo bit-field too narrow");

/* names arena records: a name is u32 directory, u16 length, bytes; a
 * directory is u16 length, bytes (ending in '/' unless empty). */
#define NAME_HDR 6
#define DIR_HDR 2

typedef struct Dir {
        uint64_t hash;  /* hash_bytes of the directory's bytes */
        uint32_t off;   /* names arena; for a free slot, the next free slot */
        uint32_t refs;  /* entries named in it; 0 = free slot */
} Dir;

typedef struct Index {
        uint32_t *slots;
        uint32_t mask;      /* capacity - 1; capacity is a power of two */
} Index;

struct IverCache {
        CacheEntry **chunks;
        uint32_t n_chunks;
        uint32_t n;
        Index by_inode, by_path, by_dir;
        Dir *dirs;
        uint32_t n_dirs, n_dirs_alloc, n_dirs_used, dir_free;
        IverArena names, digests;
};

static inline CacheEntry *entry(const IverCache *c, uint32_t i) {
        return &c->chunks[i >> ENTRY_CHUNK_SHIFT][i & (ENTRY_CHUNK - 1)];
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

static inline uint64_t hash_path(uint64_t dir_hash, const char *base, size_t blen) {
        return mix64(dir_hash + 0x632be59bd9b4e019ULL) ^ hash_bytes(base, blen);
}

/* ---- records ---- */

static inline const uint8_t *dir_bytes(const IverCache *c, uint32_t d, size_t *ret_len) {
        const uint8_t *p = iver_arena_at(&c->names, c->dirs[d].off);
        uint16_t len;
        memcpy(&len, p, sizeof(len));
        *ret_len = len;
        return p + DIR_HDR;
}

static inline const uint8_t *name_bytes(const IverCache *c, const CacheEntry *e, uint32_t *ret_dir, size_t *ret_len) {
        const uint8_t *p = iver_arena_at(&c->names, e->name_off);
        uint32_t d;
        uint16_t len;
        memcpy(&d, p, sizeof(d));
        memcpy(&len, p + 4, sizeof(len));
        *ret_dir = d;
        *ret_len = len;
        return p + NAME_HDR;
}

static inline size_t name_record_len(const IverCache *c, const CacheEntry *e) {
        uint32_t d;
        size_t len;
        (void) name_bytes(c, e, &d, &len);
        return NAME_HDR + len;
}

static uint64_t hash_entry_path(const IverCache *c, const CacheEntry *e) {
        uint32_t d;
        size_t len;
        const uint8_t *b = name_bytes(c, e, &d, &len);
        return hash_path(c->dirs[d].hash, (const char *) b, len);
}

/* "/usr/bin/ls" → "/usr/bin/" + "ls"; "ls" → "" + "ls" */
static inline size_t split(const char *path, size_t len) {
        const char *s = memrchr(path, '/', len);
        return s ? (size_t) (s - path) + 1 : 0;
}

int iver_cache_new(IverCache **ret) {
        IverCache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->dir_free = SLOT_EMPTY;
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
        iver_arena_done(&c->digests);
        free(c);
        return NULL;
}

size_t iver_cache_size(const IverCache *c) {
        return c->n;
}

/* ---- index primitives ---- */

static inline uint32_t slot_tag(uint64_t hash) {
        return (uint32_t) (hash >> (64 - (32 - IDX_BITS)));
}

static inline uint32_t slot_make(uint64_t hash, uint32_t i) {
        return slot_tag(hash) << IDX_BITS | i;
}

static inline uint32_t slot_num(uint32_t s) {
        return s & IDX_MASK;
}

static inline bool slot_may_be(uint32_t s, uint64_t hash) {
        return s >> IDX_BITS == slot_tag(hash);
}

static uint64_t slot_hash(const IverCache *c, const Index *x, uint32_t i) {
        if (x == &c->by_dir)
                return c->dirs[i].hash;
        const CacheEntry *e = entry(c, i);
        return x == &c->by_inode ? hash_inode(e->dev, e->ino) : hash_entry_path(c, e);
}

static uint32_t *index_find_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
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

static uint32_t *index_find_dir(const IverCache *c, uint64_t hash, const char *dir, size_t len) {
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
static uint32_t *index_find_name(const IverCache *c, uint32_t d, const char *base, size_t blen) {
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
static uint32_t *index_slot_of(const IverCache *c, const Index *x, uint32_t i) {
        for (uint64_t h = slot_hash(c, x, i);; h++) {
                uint32_t *s = &x->slots[h & x->mask];
                assert(*s != SLOT_EMPTY);
                if (slot_num(*s) == i)
                        return s;
        }
}

/* Backward-shift deletion keeps linear probing tombstone-free. */
static void index_delete(IverCache *c, Index *x, uint32_t *slot) {
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

static void index_insert(IverCache *c, Index *x, uint32_t i) {
        uint64_t hash = slot_hash(c, x, i);
        for (uint64_t h = hash;; h++) {
                uint32_t *s = &x->slots[h & x->mask];
                if (*s == SLOT_EMPTY) {
                        *s = slot_make(hash, i);
                        return;
                }
        }
}

static int index_reserve(IverCache *c, Index *x, uint32_t want) {
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
                                index_insert(c, x, d);
        } else
                for (uint32_t i = 0; i < c->n; i++)
                        index_insert(c, x, i);
        return 0;
}

/* ---- directories ---- */

/* The directory numbered for these bytes, made (with no reference) if new. */
static int dir_get(IverCache *c, const char *dir, size_t len, uint32_t *ret) {
        uint64_t h = hash_bytes(dir, len);
        uint32_t *s = index_find_dir(c, h, dir, len);
        if (s && *s != SLOT_EMPTY) {
                *ret = slot_num(*s);
                return 0;
        }
        int r = index_reserve(c, &c->by_dir, c->n_dirs_used + 1);
        if (r < 0)
                return r;
        uint32_t d;
        if (c->dir_free != SLOT_EMPTY) {
                d = c->dir_free;
                c->dir_free = c->dirs[d].off;
        } else {
                if (c->n_dirs == c->n_dirs_alloc) {
                        uint32_t na = c->n_dirs_alloc ? c->n_dirs_alloc * 2 : 64;
                        Dir *nd = realloc(c->dirs, (size_t) na * sizeof(Dir));
                        if (!nd)
                                return -ENOMEM;
                        c->dirs = nd;
                        c->n_dirs_alloc = na;
                }
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
        index_insert(c, &c->by_dir, d);
        *ret = d;
        return 0;
}

/* Drop a reference; the last one frees the directory. */
static void dir_unref(IverCache *c, uint32_t d) {
        assert(c->dirs[d].refs > 0);
        if (--c->dirs[d].refs > 0)
                return;
        c->dirs[d].refs = 1; /* still findable while its slot goes */
        index_delete(c, &c->by_dir, index_slot_of(c, &c->by_dir, d));
        size_t len;
        (void) dir_bytes(c, d, &len);
        iver_arena_free(&c->names, c->dirs[d].off, DIR_HDR + len);
        c->dirs[d] = (Dir) { .off = c->dir_free };
        c->dir_free = d;
        c->n_dirs_used--;
}

/* A directory made by dir_get() that ended up unused. */
static void dir_unref_if_unused(IverCache *c, uint32_t d) {
        if (c->dirs[d].refs == 0) {
                c->dirs[d].refs = 1;
                dir_unref(c, d);
        }
}

/* ---- compaction ---- */

/* Copy every live record into a new arena and swap; the copy's chunks are
 * reserved first, so a compaction either happens whole or not at all (then
 * the cache keeps its garbage until the next try). */
static void compact_names(IverCache *c) {
        IverArena a = {};
        uint32_t off;
        if (iver_arena_reserve(&a, c->names.live, NAME_HDR + UINT16_MAX) < 0) {
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

static void compact_digests(IverCache *c) {
        IverArena a = {};
        if (iver_arena_reserve(&a, c->digests.live, IVER_DIGEST_MAX) < 0) {
                iver_arena_done(&a);
                return;
        }
        for (uint32_t i = 0; i < c->n; i++) {
                CacheEntry *e = entry(c, i);
                if (!(e->flags & IVER_ENTRY_MEASURED))
                        continue;
                uint32_t off;
                int r = iver_arena_move(&a, &c->digests, e->digest_off, iver_hash_algo_size((IverHashAlgo) e->algo), &off);
                assert(r >= 0);
                (void) r;
                e->digest_off = off;
        }
        iver_arena_trim(&a);
        iver_arena_done(&c->digests);
        c->digests = a;
}

static void maybe_compact(IverCache *c) {
        if (iver_arena_wants_compaction(&c->names))
                compact_names(c);
        if (iver_arena_wants_compaction(&c->digests))
                compact_digests(c);
}

/* ---- lookups ---- */

uint32_t iver_cache_find_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
        const uint32_t *s = index_find_inode(c, dev, ino);
        return s && *s != SLOT_EMPTY ? slot_num(*s) : IVER_CACHE_NONE;
}

uint32_t iver_cache_find_path(const IverCache *c, const char *path, size_t len) {
        size_t dl = split(path, len);
        const uint32_t *s = index_find_dir(c, hash_bytes(path, dl), path, dl);
        if (!s || *s == SLOT_EMPTY)
                return IVER_CACHE_NONE;
        s = index_find_name(c, slot_num(*s), path + dl, len - dl);
        return s && *s != SLOT_EMPTY ? slot_num(*s) : IVER_CACHE_NONE;
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

/* A name record for base in directory d; takes a reference on d. */
static int store_name(IverCache *c, uint32_t d, const char *base, size_t blen, uint32_t *ret_off) {
        uint8_t *p = iver_arena_alloc(&c->names, NAME_HDR + blen, ret_off);
        if (!p)
                return -ENOMEM;
        uint16_t l = (uint16_t) blen;
        memcpy(p, &d, sizeof(d));
        memcpy(p + 4, &l, sizeof(l));
        memcpy(p + NAME_HDR, base, blen);
        c->dirs[d].refs++;
        return 0;
}

/* Give back an entry's name record and its directory reference. */
static void drop_name(IverCache *c, CacheEntry *e) {
        uint32_t d;
        size_t blen;
        (void) name_bytes(c, e, &d, &blen);
        iver_arena_free(&c->names, e->name_off, NAME_HDR + blen);
        dir_unref(c, d);
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
        if (!(src->flags & IVER_ENTRY_MEASURED)) {
                if (had_digest) {
                        iver_arena_free(&c->digests, e->digest_off, iver_hash_algo_size((IverHashAlgo) e->algo));
                        e->algo = 0;
                }
                return 0;
        }
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
                iver_arena_free(&c->digests, e->digest_off, iver_hash_algo_size((IverHashAlgo) e->algo));
        memcpy(p, src->digest.bytes, len);
        e->digest_off = off;
        e->algo = (uint8_t) src->digest.algo;
        return 0;
}

int iver_cache_put(IverCache *c, const IverEntry *src, const char *path, size_t path_len, uint32_t *ret_idx) {
        if (path_len > UINT16_MAX)
                return -ENAMETOOLONG;
        return iver_cache_put_found(c, src, path, path_len, iver_cache_find_path(c, path, path_len),
                                    iver_cache_find_inode(c, src->id.dev, src->id.ino), ret_idx);
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
        r = dir_get(c, path, dl, &d);
        if (r < 0)
                return r;

        if (idx == IVER_CACHE_NONE) {
                if (c->n >= MAX_ENTRIES)
                        r = -E2BIG;
                if (r >= 0)
                        r = index_reserve(c, &c->by_inode, c->n + 1);
                if (r >= 0)
                        r = index_reserve(c, &c->by_path, c->n + 1);
                if (r >= 0 && (c->n >> ENTRY_CHUNK_SHIFT) >= c->n_chunks) {
                        CacheEntry **ch = realloc(c->chunks, (c->n_chunks + 1) * sizeof(*ch));
                        if (!ch)
                                r = -ENOMEM;
                        else {
                                c->chunks = ch;
                                ch[c->n_chunks] = malloc(ENTRY_CHUNK * sizeof(CacheEntry));
                                if (!ch[c->n_chunks])
                                        r = -ENOMEM;
                                else
                                        c->n_chunks++;
                        }
                }
                if (r < 0) {
                        dir_unref_if_unused(c, d);
                        return r;
                }
                CacheEntry *e = entry(c, c->n);
                memset(e, 0, sizeof(*e));
                fill(e, src);
                r = store_name(c, d, base, blen, &e->name_off);
                if (r < 0) {
                        dir_unref_if_unused(c, d);
                        return r;
                }
                r = store_digest(c, e, false, src);
                if (r < 0) {
                        drop_name(c, e);
                        return r;
                }
                idx = c->n++;
                index_insert(c, &c->by_inode, idx);
                index_insert(c, &c->by_path, idx);
        } else {
                CacheEntry *e = entry(c, idx);
                bool had_digest = e->flags & IVER_ENTRY_MEASURED;
                uint32_t od;
                size_t olen;
                const uint8_t *ob = name_bytes(c, e, &od, &olen);
                if (od != d || olen != blen || memcmp(ob, base, blen) != 0) {
                        uint32_t off;
                        r = store_name(c, d, base, blen, &off);
                        if (r < 0) {
                                dir_unref_if_unused(c, d);
                                return r;
                        }
                        index_delete(c, &c->by_path, index_slot_of(c, &c->by_path, idx));
                        drop_name(c, e);
                        e->name_off = off;
                        index_insert(c, &c->by_path, idx);
                }
                r = store_digest(c, e, had_digest, src);
                if (r < 0)
                        return r;
                uint32_t keep_off = e->name_off, keep_doff = e->digest_off;
                uint8_t keep_algo = e->algo;
                fill(e, src);
                e->name_off = keep_off;
                e->digest_off = keep_doff;
                e->algo = keep_algo;
                maybe_compact(c);
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

        index_delete(c, &c->by_inode, index_slot_of(c, &c->by_inode, idx));
        index_delete(c, &c->by_path, index_slot_of(c, &c->by_path, idx));
        drop_name(c, e);
        if (e->flags & IVER_ENTRY_MEASURED)
                iver_arena_free(&c->digests, e->digest_off, iver_hash_algo_size((IverHashAlgo) e->algo));

        uint32_t last = c->n - 1;
        if (idx != last) {
                uint32_t *si = index_slot_of(c, &c->by_inode, last), *sp = index_slot_of(c, &c->by_path, last);
                *si = (*si & ~IDX_MASK) | idx; /* the key, and so its tag, moves along */
                *sp = (*sp & ~IDX_MASK) | idx;
                *e = *entry(c, last);
        }
        c->n--;
        maybe_compact(c);
}

size_t iver_cache_memory(const IverCache *c) {
        size_t m = sizeof(*c) + (size_t) c->n_chunks * (ENTRY_CHUNK * sizeof(CacheEntry) + sizeof(CacheEntry *)) +
                   (size_t) c->n_dirs_alloc * sizeof(Dir);
        const Index *x[] = { &c->by_inode, &c->by_path, &c->by_dir };
        for (size_t i = 0; i < ELEMENTSOF(x); i++)
                m += x[i]->slots ? ((size_t) x[i]->mask + 1) * sizeof(uint32_t) : 0;
        return m + iver_arena_memory(&c->names) + iver_arena_memory(&c->digests);
}

size_t iver_cache_path_bytes(const IverCache *c) {
        return c->names.live;
}
