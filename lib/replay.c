/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replay of a measurement list into the PCR values it should produce, and the
 * search for the prefix a PCR holds (the PCR may lag the write-ahead list). */
#include <errno.h>
#include <string.h>
#include <openssl/evp.h>

#include "digest-internal.h"
#include "iver/imalog.h"
#include "macro.h"

/* v = H(v || d), in place. */
static int extend(IverDigest *v, const IverDigest *d) {
        const EVP_MD *md = iver_hash_algo_md(v->algo);
        uint8_t buf[2 * IVER_DIGEST_MAX];

        if (!md)
                return -EOPNOTSUPP;
        memcpy(buf, v->bytes, v->len);
        memcpy(buf + v->len, d->bytes, d->len);
        if (EVP_Digest(buf, v->len + d->len, v->bytes, NULL, md, NULL) != 1)
                return -EIO;
        return 0;
}

static int zero_value(IverHashAlgo bank, IverDigest *ret) {
        size_t n = iver_hash_algo_size(bank);
        if (n == 0)
                return -EINVAL;
        *ret = (IverDigest) { .algo = bank, .len = n };
        return 0;
}

int iver_imalog_replay_entries(const IverImaEntry *const *ents, size_t n, uint32_t pcr, IverHashAlgo bank,
                               IverDigest *ret) {
        IverDigest v, d;
        int r;

        if (!ents && n > 0)
                return -EINVAL;
        r = zero_value(bank, &v);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *e = ents[i];
                if (e->pcr != pcr)
                        continue;
                r = iver_imalog_entry_bank_digest(e, bank, &d);
                if (r < 0)
                        return r;
                r = extend(&v, &d);
                if (r < 0)
                        return r;
        }
        *ret = v;
        return 0;
}

int iver_imalog_replay(const IverImaLog *l, size_t n, uint32_t pcr, IverHashAlgo bank, IverDigest *ret) {
        if (n > iver_imalog_size(l))
                n = iver_imalog_size(l);
        return iver_imalog_replay_entries(iver_imalog_entries(l), n, pcr, bank, ret);
}

static bool all_match(const IverDigest *cur, const IverPcrValue *values, size_t n) {
        for (size_t b = 0; b < n; b++)
                if (cur[b].len != values[b].value.len || memcmp(cur[b].bytes, values[b].value.bytes, cur[b].len) != 0)
                        return false;
        return true;
}

int iver_imalog_match_prefix_entries(const IverImaEntry *const *ents, size_t n, const IverPcrValue *values,
                                     size_t n_values, size_t *ret_prefix) {
        _cleanup_free_ IverDigest *cur = NULL;
        size_t best = SIZE_MAX;
        uint32_t quoted = 0;
        IverDigest d;
        int r;

        if (n_values == 0 || !values || (!ents && n > 0))
                return -EINVAL;
        cur = calloc(n_values, sizeof(IverDigest));
        if (!cur)
                return -ENOMEM;
        for (size_t b = 0; b < n_values; b++) {
                if (values[b].pcr >= IVER_IMA_PCR_MAX)
                        return -EINVAL;
                r = zero_value(values[b].value.algo, &cur[b]);
                if (r < 0)
                        return r;
                quoted |= 1u << values[b].pcr;
        }
        if (all_match(cur, values, n_values))
                best = 0;
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *e = ents[i];
                /* An entry of a PCR not given moves no value: it is never the
                 * last entry of a matching prefix (nothing says it was
                 * extended), but a later match takes it in. */
                if (e->pcr >= IVER_IMA_PCR_MAX || !(quoted & (1u << e->pcr)))
                        continue;
                for (size_t b = 0; b < n_values; b++) {
                        if (values[b].pcr != e->pcr)
                                continue;
                        r = iver_imalog_entry_bank_digest(e, values[b].value.algo, &d);
                        if (r < 0)
                                return r;
                        r = extend(&cur[b], &d);
                        if (r < 0)
                                return r;
                }
                if (all_match(cur, values, n_values))
                        best = i + 1;
        }
        if (best == SIZE_MAX)
                return -ENOENT;
        *ret_prefix = best;
        return 0;
}

int iver_imalog_match_prefix(const IverImaLog *l, uint32_t pcr, const IverDigest *values, size_t n_values,
                             size_t *ret_prefix) {
        IverPcrValue v[_IVER_HASH_MAX];
        if (n_values == 0 || n_values > _IVER_HASH_MAX || !values)
                return -EINVAL;
        for (size_t b = 0; b < n_values; b++)
                v[b] = (IverPcrValue) { .pcr = pcr, .value = values[b] };
        return iver_imalog_match_prefix_entries(iver_imalog_entries(l), iver_imalog_size(l), v, n_values, ret_prefix);
}
