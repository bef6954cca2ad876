/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "iver/cache.h"
#include "iver/ledger.h"

/* The boot-scoped, authenticated snapshot of cache and ledger.
 *
 * Layout (little-endian): "IVERSNP1", u32 format version, u32 entry record
 * size floor, boot id (16 bytes), u64 entry count, u32 counter count, the
 * counters (u64 each), then the entries, then HMAC-SHA256 over everything
 * before it. The HMAC key lives in the kernel keyring for the life of the
 * boot (iver_bootkey_get), so a snapshot from another boot, or one written
 * under another key, never verifies. */

#define IVER_SNAPSHOT_KEY_SIZE 32
#define IVER_SNAPSHOT_KEY_DESC "iverd:snapshot-hmac"

typedef enum IverSnapshotError {
        IVER_SNAPSHOT_OK,
        IVER_SNAPSHOT_TRUNCATED,     /* shorter than its header, entries or MAC */
        IVER_SNAPSHOT_BAD_MAGIC,
        IVER_SNAPSHOT_BAD_VERSION,   /* another format version */
        IVER_SNAPSHOT_BAD_MAC,       /* tampered, or written under another key */
        IVER_SNAPSHOT_OTHER_BOOT,    /* boot id differs */
        IVER_SNAPSHOT_CORRUPT,       /* MAC fine but a record does not decode */
        _IVER_SNAPSHOT_ERROR_MAX,
        _IVER_SNAPSHOT_ERROR_INVALID = -22,
} IverSnapshotError;

const char *iver_snapshot_error_to_string(IverSnapshotError e);

/* The running boot's id (/proc/sys/kernel/random/boot_id). */
int iver_boot_id(uint8_t ret[16]);

/* Find the HMAC key in root's user keyring (@u: survives daemon restarts, not
 * reboots; readable by root only). With create, make a random one when there
 * is none. Returns 1 found, 0 created, -ENOKEY absent (and !create), -errno. */
int iver_bootkey_get(const char *desc, int create, uint8_t ret[IVER_SNAPSHOT_KEY_SIZE]);

/* Encode cache + counters into a malloc'd buffer (with the MAC). */
int iver_snapshot_encode(const IverCache *c, const IverLedgerCounters *counters, const uint8_t boot_id[16],
                         const uint8_t key[IVER_SNAPSHOT_KEY_SIZE], uint8_t **ret, size_t *ret_len);
/* Verify and decode buf into an empty cache and counters. On failure nothing
 * useful is in c; *ret_error says why (-EBADMSG then). */
int iver_snapshot_decode(const uint8_t *buf, size_t len, const uint8_t boot_id[16],
                         const uint8_t key[IVER_SNAPSHOT_KEY_SIZE], IverCache *c, IverLedgerCounters *ret_counters,
                         IverSnapshotError *ret_error);

/* Atomic write: temp file in the same directory, written through a 1 MiB
 * window as it is encoded, fsync, rename, fsync dir. */
int iver_snapshot_write(const char *path, const IverCache *c, const IverLedgerCounters *counters,
                        const uint8_t boot_id[16], const uint8_t key[IVER_SNAPSHOT_KEY_SIZE]);
/* The same in two steps, for a daemon that keeps fsync off its loop: the
 * encoding written to a new temporary next to path (page cache only; the
 * cache is read here, on the caller's thread), then iver_snapshot_commit()
 * on any thread: fsync, rename over path, fsync of the directory. Either
 * step frees w; on failure the temporary is removed. */
typedef struct IverSnapshotWrite IverSnapshotWrite;
int iver_snapshot_write_begin(const char *path, const IverCache *c, const IverLedgerCounters *counters,
                              const uint8_t boot_id[16], const uint8_t key[IVER_SNAPSHOT_KEY_SIZE],
                              IverSnapshotWrite **ret);
int iver_snapshot_commit(IverSnapshotWrite *w);
/* Read + decode through a 1 MiB window, never the whole file: it is read
 * twice, authenticated and then decoded (and authenticated again: bytes that
 * changed between the reads fail as IVER_SNAPSHOT_BAD_MAC). -ENOENT when
 * there is no snapshot; on failure nothing useful is in c. */
int iver_snapshot_read(const char *path, const uint8_t boot_id[16], const uint8_t key[IVER_SNAPSHOT_KEY_SIZE],
                       IverCache *c, IverLedgerCounters *ret_counters, IverSnapshotError *ret_error);
