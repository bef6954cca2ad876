/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The measurement cache's layout, shared by its parts: cache.c (the API:
 * lookups and changes), cache-index.c (the open-addressing indexes) and
 * cache-dirs.c (the directory table and compaction of the records). Internal
 * to libiver. */
#include <assert.h>
#include <string.h>
#include <sys/types.h>

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

/* 56 bytes. What most entries do not need lives in the entry's record in
 * the names arena, after its name (see rec_len()): the digest of a measured
 * file, and the version of a STATX_VERSION cookie (rare: only where a probe
 * proved the seed ABI). */
typedef struct CacheEntry {
        uint64_t ino, size;
        int64_t mtime, ctime;
        uint32_t gen;           /* IverIdentity's: 32 bits */
        uint32_t shadow_atime, shadow_mtime;
        uint32_t dev;
        uint32_t name_off;      /* names arena: the entry's record (name, then digest and version) */
        uint16_t mode;
        uint16_t algo : 5;
        uint16_t mark : 1;      /* scan mark (iver_cache_*_mark) */
        uint16_t flags : 8;
        uint16_t source : 2;
} CacheEntry;

_Static_assert(sizeof(CacheEntry) == 56, "cache entry grew");
_Static_assert(_IVER_HASH_MAX <= 32, "algo bit-field too narrow");

/* names arena records: an entry's is u32 directory, the name's length (u8,
 * or 255 and a u16 for a name of 255 bytes or more: never a file's basename
 * on Linux), the name's bytes, then the entry's payload (rec_len(): digest,
 * version); a directory's is u16 length, bytes (ending in '/' unless empty). */
#define NAME_LEN_LONG 255
static inline size_t name_hdr(size_t blen) {
        return blen < NAME_LEN_LONG ? 5 : 7;
}
#define NAME_HDR_MAX 7
#define DIR_HDR 2

typedef struct Dir {
        uint64_t hash;  /* hash_bytes of the directory's bytes */
        uint32_t off;   /* names arena; for a free slot, the next free slot */
        uint32_t refs;  /* entries named in it; 0 = free slot */
} Dir;

typedef struct Index {
        uint32_t *slots;
        uint32_t cap;       /* slots (table.h) */
} Index;

struct IverCache {
        CacheEntry **chunks;
        uint32_t n_chunks;
        uint32_t n;
        Index by_inode, by_path, by_dir;
        Dir *dirs;
        uint32_t n_dirs, n_dirs_alloc, n_dirs_used, dir_free;
        IverArena names;
        uint64_t key;   /* of the hashes: random */
};

static inline CacheEntry *entry(const IverCache *c, uint32_t i) {
        return &c->chunks[i >> ENTRY_CHUNK_SHIFT][i & (ENTRY_CHUNK - 1)];
}

/* The payload of the entry's record, after its name: the digest (measured),
 * then the cookie's version (STATX_VERSION); 0 bytes when it has neither.
 * MEASURED and the source change only by iver_cache_put*, which re-sizes
 * the record. */
static inline size_t rec_digest_len(bool measured, unsigned algo) {
        return measured ? iver_hash_algo_size((IverHashAlgo) algo) : 0;
}

static inline size_t rec_len_of(bool measured, unsigned algo, unsigned source) {
        return rec_digest_len(measured, algo) + (source == IVER_COOKIE_STATX_VERSION ? sizeof(uint64_t) : 0);
}

static inline size_t rec_len(const CacheEntry *e) {
        return rec_len_of(e->flags & IVER_ENTRY_MEASURED, e->algo, e->source);
}

/* The hashes are keyed (IverCache.key, random per cache): names and inode
 * numbers are a local user's to choose, who must not be able to pile them
 * into one probe chain of an index (a name made to collide under a known
 * function is one equation away: mix64 is a bijection). */
static inline uint64_t hash_inode(const IverCache *c, uint32_t dev, uint64_t ino) {
        return mix64(ino ^ c->key ^ ((uint64_t) dev << 40) ^ ((uint64_t) dev >> 24));
}

static inline uint64_t hash_bytes(const IverCache *c, const void *p, size_t len) {
        const uint8_t *s = p;
        uint64_t h = c->key ^ len, w;
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

static inline uint64_t hash_path(const IverCache *c, uint64_t dir_hash, const char *base, size_t blen) {
        return mix64(dir_hash + 0x632be59bd9b4e019ULL) ^ hash_bytes(c, base, blen);
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
        memcpy(&d, p, sizeof(d));
        *ret_dir = d;
        size_t len = p[4];
        if (len == NAME_LEN_LONG) {
                uint16_t l;
                memcpy(&l, p + 5, sizeof(l));
                len = l;
        }
        *ret_len = len;
        return p + name_hdr(len);
}

static inline size_t name_record_len(const IverCache *c, const CacheEntry *e) {
        uint32_t d;
        size_t len;
        (void) name_bytes(c, e, &d, &len);
        return name_hdr(len) + len + rec_len(e);
}

/* The entry's payload: its digest, then its version. */
static inline uint8_t *rec_payload(const IverCache *c, const CacheEntry *e) {
        uint32_t d;
        size_t len;
        return (uint8_t *) name_bytes(c, e, &d, &len) + len;
}

static inline uint64_t hash_entry_path(const IverCache *c, const CacheEntry *e) {
        uint32_t d;
        size_t len;
        const uint8_t *b = name_bytes(c, e, &d, &len);
        return hash_path(c, c->dirs[d].hash, (const char *) b, len);
}

/* "/usr/bin/ls" → "/usr/bin/" + "ls"; "ls" → "" + "ls" */
static inline size_t split(const char *path, size_t len) {
        const char *s = memrchr(path, '/', len);
        return s ? (size_t) (s - path) + 1 : 0;
}

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

/* ---- cache-index.c: open addressing (linear probing) over entry and
 * directory numbers ---- */

/* The slot holding (dev, ino), the empty slot ending its probe, or NULL
 * while the index has no table. */
uint32_t *cache_index_find_inode(const IverCache *c, uint32_t dev, uint64_t ino);
/* The same for a directory's bytes (hash: hash_bytes of them). */
uint32_t *cache_index_find_dir(const IverCache *c, uint64_t hash, const char *dir, size_t len);
/* The same for the entry named base in directory d. */
uint32_t *cache_index_find_name(const IverCache *c, uint32_t d, const char *base, size_t blen);
/* The slot holding number i in x (it must be there). */
uint32_t *cache_index_slot_of(const IverCache *c, const Index *x, uint32_t i);
void cache_index_delete(IverCache *c, Index *x, uint32_t *slot);
void cache_index_insert(IverCache *c, Index *x, uint32_t i);
/* Room for want numbers (lib/table.h; rebuilt when it grows). */
int cache_index_reserve(IverCache *c, Index *x, uint32_t want);

/* ---- cache-dirs.c: directories and compaction ---- */

/* The directory numbered for these bytes, made (with no reference) if new. */
int cache_dir_get(IverCache *c, const char *dir, size_t len, uint32_t *ret);
/* Drop a reference; the last one frees the directory. */
void cache_dir_unref(IverCache *c, uint32_t d);
/* A directory made by cache_dir_get() that ended up unused. */
void cache_dir_unref_if_unused(IverCache *c, uint32_t d);
/* Compact the names arena when garbage dominates it. */
void cache_maybe_compact(IverCache *c);
