/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Two writers of one PCR: where iverd's extends went among the kernel's
 * (iverd continues the kernel's IMA list in PCR 10). The TPM gives no order,
 * only values: the order is the one whose replay gives the value read. */
#include <errno.h>
#include <string.h>
#include <openssl/evp.h>

#include "digest-internal.h"
#include "iver/imalog.h"

int iver_imalog_extend_value(IverDigest *v, const IverImaEntry *e, uint32_t pcr) {
        const EVP_MD *md = iver_hash_algo_md(v->algo);
        uint8_t buf[2 * IVER_DIGEST_MAX];
        IverDigest d;
        int r;

        if (e->pcr != pcr)
                return 0;
        if (!md || v->len != iver_hash_algo_size(v->algo))
                return -EINVAL;
        r = iver_imalog_entry_bank_digest(e, v->algo, &d);
        if (r < 0)
                return r;
        memcpy(buf, v->bytes, v->len);
        memcpy(buf + v->len, d.bytes, d.len);
        return iver_hash_buf(v->algo, buf, v->len + d.len, v->bytes);
}

static bool same(const IverDigest *a, const IverDigest *b) {
        return a->algo == b->algo && a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

int iver_imalog_place_prefix(const IverDigest *start, const IverImaEntry *const *k, size_t n, uint32_t pcr,
                             const IverDigest *value, size_t *ret_n) {
        IverDigest v = *start;
        size_t best = SIZE_MAX;
        int r;

        if (same(&v, value))
                best = 0;
        for (size_t i = 0; i < n; i++) {
                r = iver_imalog_extend_value(&v, k[i], pcr);
                if (r < 0)
                        return r;
                /* an entry of another PCR moves nothing: the later count wins */
                if (same(&v, value))
                        best = i + 1;
        }
        if (best == SIZE_MAX)
                return -ENOENT;
        *ret_n = best;
        return 0;
}

int iver_imalog_place_entry(const IverDigest *start, const IverImaEntry *e, const IverImaEntry *const *k, size_t n,
                            uint32_t pcr, const IverDigest *value, size_t *ret_before, size_t *ret_through) {
        IverDigest before = *start;
        int r;

        for (size_t j = 0; j <= n; j++) {
                if (j > 0) {
                        r = iver_imalog_extend_value(&before, k[j - 1], pcr);
                        if (r < 0)
                                return r;
                }
                IverDigest v = before;
                r = iver_imalog_extend_value(&v, e, pcr);
                if (r < 0)
                        return r;
                /* the kernel's entries after e: as many as the value holds
                 * (the last may still be on its way to the TPM) */
                size_t after = 0;
                r = iver_imalog_place_prefix(&v, k + j, n - j, pcr, value, &after);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                *ret_before = j;
                *ret_through = j + after;
                return 0;
        }
        return -ENOENT;
}
