/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the quote bundle verifier (iver_quote_verify), which
 * reads files that come from other machines: quote.msg (TPMS_ATTEST),
 * quote.sig (TPMT_SIGNATURE), pcrs.out, ak.pub.pem, measurements.bin and the
 * nonce.
 *
 * Input: up to six fields, each a u32 little-endian length and that many
 * bytes, in the order msg, sig, pcrs, nonce, list, ak_pem; a missing field
 * is NULL (a missing file). tests/fuzz/pack-quote-seed.py packs a quote
 * directory written by `iverctl quote` this way.
 *
 * Invariants: the call returns 0 (or -ENOMEM) and never reads past a field
 * (each is an exact-size copy); a report that says verified names no failure
 * bit and a prefix no longer than the list; a failure has a message. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iver/tpm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { F_MSG, F_SIG, F_PCRS, F_NONCE, F_LIST, F_AK, _F_MAX };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *f[_F_MAX] = {};
        size_t len[_F_MAX] = {};
        size_t off = 0;

        for (int i = 0; i < _F_MAX && off + 4 <= size; i++) {
                uint32_t n = (uint32_t) data[off] | (uint32_t) data[off + 1] << 8 | (uint32_t) data[off + 2] << 16 |
                             (uint32_t) data[off + 3] << 24;
                off += 4;
                if (n > size - off)
                        n = (uint32_t) (size - off);
                f[i] = malloc(n ? n : 1);       /* exact size: ASan sees any overread */
                if (!f[i])
                        goto out;
                memcpy(f[i], data + off, n);
                len[i] = n;
                off += n;
        }

        IverQuoteReport rep;
        uint8_t nonce0 = 0;
        int r = iver_quote_verify((const char *) f[F_AK], len[F_AK], f[F_MSG], len[F_MSG], f[F_SIG], len[F_SIG],
                                  f[F_PCRS], len[F_PCRS], f[F_NONCE] ? f[F_NONCE] : &nonce0, len[F_NONCE],
                                  f[F_LIST], len[F_LIST], &rep);
        if (r < 0 && r != -ENOMEM)
                abort();
        if (r == 0) {
                if (rep.failed == 0 && rep.matched_prefix > rep.list_entries)
                        abort();
                if (rep.failed != 0 && rep.message[0] == 0)
                        abort();
                if (!memchr(rep.message, 0, sizeof(rep.message)))
                        abort();
        }
out:
        for (int i = 0; i < _F_MAX; i++)
                free(f[i]);
        return 0;
}
