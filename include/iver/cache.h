/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iver/cookie.h"
#include "iver/digest.h"
#include "iver/stat.h"

/* The measurement cache: one entry per file identity (dev, ino) holding the
 * generation, the cookie of the last measurement, the file's type and mode,
 * its digest, the ledger's heuristic shadows, flags and the path for reports.
 * Two open-addressing indexes (by identity, by path) over a dense chunked
 * entry array; a path is kept as a directory (stored once in a directory
 * table) and a basename; names and digests live in arenas whose freed space
 * is reused or compacted away. No per-entry allocation. Entries are
 * addressed by a stable-until-removal index. */
typedef struct IverCache IverCache;

enum {
        IVER_ENTRY_MEASURED    = 1 << 0, /* a digest is present */
        IVER_ENTRY_PROVISIONAL = 1 << 1, /* hashed without a lease: re-hash on next check */
        IVER_ENTRY_RACY        = 1 << 2, /* racy guard: cookie cannot prove no change */
        IVER_ENTRY_UNSTABLE    = 1 << 3, /* kept changing while hashed; no trusted digest */
        IVER_ENTRY_VIOLATION   = 1 << 4, /* appraisal or other violation recorded */
        IVER_ENTRY_STALE       = 1 << 5, /* a writer closed the file: re-hash whatever the cookie says */
        IVER_ENTRY_WRITTEN     = 1 << 6, /* a write to this inode was seen (or could not be ruled out) since
                                          * the measurement: a cookie move re-hashes (never metadata-only) */
};

/* A copy of one entry, as the cache hands it out and takes it in. */
typedef struct IverEntry {
        IverIdentity id;
        IverCookieSource source;
        uint64_t version;        /* cookie version for STATX_VERSION */
        uint64_t size;
        int64_t mtime, ctime;
        uint32_t mode;           /* the file's type and permission bits (16 bits kept) */
        uint32_t flags;
        uint32_t shadow_atime;   /* ledger: fingerprint of (atime, mtime, ctime, size) at the atime heuristic's last re-hash */
        uint32_t shadow_mtime;   /* ledger: fingerprint of (mtime, size) at the mtime heuristic's last re-hash */
        IverDigest digest;
} IverEntry;

#define IVER_CACHE_NONE UINT32_MAX

int iver_cache_new(IverCache **ret);
IverCache *iver_cache_free(IverCache *c);

size_t iver_cache_size(const IverCache *c);

/* Index of the entry with this (dev, ino), whatever its generation, or IVER_CACHE_NONE. */
uint32_t iver_cache_find_inode(const IverCache *c, uint32_t dev, uint64_t ino);
/* Index of the entry last recorded for this path, or IVER_CACHE_NONE. */
uint32_t iver_cache_find_path(const IverCache *c, const char *path, size_t len);

/* Whether an entry is recorded under a name directly in directory dir (len
 * bytes, absolute, no trailing slash but "/"). Conservative: true for a
 * name too long to look up. */
bool iver_cache_has_dir(const IverCache *c, const char *dir, size_t len);

/* Copy out entry idx. */
void iver_cache_get(const IverCache *c, uint32_t idx, IverEntry *ret);
/* The entry's cookie (source from the entry). */
IverCookie iver_cache_cookie(const IverCache *c, uint32_t idx);
/* Longest path the cache keeps, with its NUL: a buffer of this size always
 * holds a path. */
#define IVER_CACHE_PATH_MAX (UINT16_MAX + 1)
/* Write the path of entry idx (any byte but NUL) into buf, NUL-terminated
 * and cut to size - 1 bytes; returns its whole length (like snprintf). Paths
 * are not stored contiguously (one copy of each directory), so there is no
 * pointer to hand out. */
size_t iver_cache_path(const IverCache *c, uint32_t idx, char *buf, size_t size);

/* Insert or replace the entry for e->id's (dev, ino): an entry for another
 * path or generation is replaced whole. Any other entry that held this path
 * loses it from the path index (a rename-over). Returns 0 and the index, or
 * -ENOMEM / -E2BIG (arena limits; 2^27 - 2 entries at most). */
int iver_cache_put(IverCache *c, const IverEntry *e, const char *path, size_t path_len, uint32_t *ret_idx);
/* The same, for a caller that has just looked up path (by_path) and e->id's
 * (dev, ino) (by_inode) with no change to c since: the lookups are not made
 * twice. */
int iver_cache_put_found(IverCache *c, const IverEntry *e, const char *path, size_t path_len, uint32_t by_path,
                         uint32_t by_inode, uint32_t *ret_idx);
/* Update only the ledger shadows and the mode of a cache hit (no path, no
 * digest change); cheap. */
void iver_cache_touch(IverCache *c, uint32_t idx, uint32_t shadow_atime, uint32_t shadow_mtime, const IverStat *st);
/* A mark bit per entry for mark-and-sweep scans: clear all, mark what a scan
 * saw, then look at what is left unmarked (deleted while nobody watched). New
 * entries start unmarked; the mark moves with its entry. */
void iver_cache_clear_marks(IverCache *c);
void iver_cache_set_mark(IverCache *c, uint32_t idx);
bool iver_cache_has_mark(const IverCache *c, uint32_t idx);

/* Record a new cookie (ctime, mtime, size, version) for entry idx without
 * touching its digest: a metadata-only change (lib/check.c). */
void iver_cache_set_cookie(IverCache *c, uint32_t idx, const IverCookie *cookie);
/* Set and clear entry flags. */
void iver_cache_update_flags(IverCache *c, uint32_t idx, uint32_t set, uint32_t clear);
/* Remove entry idx (file deleted); other indexes may move. */
void iver_cache_remove(IverCache *c, uint32_t idx);

/* Bytes allocated by the cache, arenas and indexes included. */
size_t iver_cache_memory(const IverCache *c);
/* Bytes of live directory and name records (subtract to get the per-entry fixed cost). */
size_t iver_cache_path_bytes(const IverCache *c);

/* Iterate: for (i = 0; i < iver_cache_size(c); i++) — indexes are dense. */
