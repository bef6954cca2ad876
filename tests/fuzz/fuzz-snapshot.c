/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the snapshot reader (iver_snapshot_decode), with a fixed
 * key and boot id.
 *
 * The first input byte picks a mode, the rest is the snapshot:
 *   bit 0 clear  the bytes as they are: exercises everything up to and
 *                including the MAC check (what an attacker without the key
 *                can reach);
 *   bit 0 set    the bytes are the snapshot without its MAC; the target
 *                appends HMAC-SHA256 under the fixed key, so the record
 *                parser behind the MAC is exercised too (what a bug in our
 *                own writer, or a key holder, could feed it);
 *   bit 1 set    (with bit 0) also write the magic, format version and
 *                boot id over the header, so mutations go to the records.
 *
 * Invariant: a snapshot that decodes re-encodes to one that decodes to the
 * same number of entries and the same counters. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "iver/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the same fixed values as gen-seeds.c */
static const uint8_t key[IVER_SNAPSHOT_KEY_SIZE] = "iverd-fuzz-snapshot-key-0123456";
static const uint8_t boot_id[16] = { 0x6b, 0x1f, 0x0e, 0x7a, 0x52, 0x33, 0x4c, 0x1d,
                                     0x9a, 0x8e, 0x27, 0x41, 0xc0, 0xde, 0xf0, 0x0d };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        uint8_t mode = data[0];
        data++, size--;

        size_t len = size + ((mode & 1) ? 32 : 0);
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        if (mode & 1) {
                if ((mode & 2) && size >= 8 + 4 + 4 + 16) {
                        memcpy(buf, "IVERSNP1", 8);
                        buf[8] = 1, buf[9] = buf[10] = buf[11] = 0; /* format version 1, LE */
                        memcpy(buf + 16, boot_id, 16);
                }
                unsigned n = 0;
                if (!HMAC(EVP_sha256(), key, sizeof(key), buf, size, buf + size, &n) || n != 32)
                        abort();
        }

        IverCache *c = NULL;
        if (iver_cache_new(&c) < 0) {
                free(buf);
                return 0;
        }
        IverLedgerCounters counters;
        IverSnapshotError err = _IVER_SNAPSHOT_ERROR_INVALID;
        int r = iver_snapshot_decode(buf, len, boot_id, key, c, &counters, &err);
        if (r == 0) {
                if (err != IVER_SNAPSHOT_OK)
                        abort();
                uint8_t *out = NULL;
                size_t out_len = 0;
                if (iver_snapshot_encode(c, &counters, boot_id, key, &out, &out_len) == 0) {
                        IverCache *c2 = NULL;
                        IverLedgerCounters counters2;
                        if (iver_cache_new(&c2) == 0) {
                                if (iver_snapshot_decode(out, out_len, boot_id, key, c2, &counters2, NULL) < 0)
                                        abort(); /* our own snapshot does not read back */
                                if (iver_cache_size(c2) != iver_cache_size(c) ||
                                    memcmp(&counters, &counters2, sizeof(counters)) != 0)
                                        abort();
                                iver_cache_free(c2);
                        }
                        free(out);
                }
        } else if (r == -EBADMSG) {
                if (err <= IVER_SNAPSHOT_OK || err >= _IVER_SNAPSHOT_ERROR_MAX)
                        abort();
                (void) iver_snapshot_error_to_string(err);
        }
        iver_cache_free(c);
        free(buf);
        return 0;
}
