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

int iver_imalog_replay(const IverImaLog *l, size_t n, uint32_t pcr, IverHashAlgo bank, IverDigest *ret) {
        IverDigest v, d;
        int r;

        r = zero_value(bank, &v);
        if (r < 0)
                return r;
        if (n > iver_imalog_size(l))
                n = iver_imalog_size(l);
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *e = iver_imalog_get(l, i);
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

static bool all_match(const IverDigest *cur, const IverDigest *values, size_t n) {
        for (size_t b = 0; b < n; b++)
                if (cur[b].len != values[b].len || memcmp(cur[b].bytes, values[b].bytes, cur[b].len) != 0)
                        return false;
        return true;
}

int iver_imalog_match_prefix(const IverImaLog *l, uint32_t pcr, const IverDigest *values, size_t n_values,
                             size_t *ret_prefix) {
        _cleanup_free_ IverDigest *cur = NULL;
        size_t n = iver_imalog_size(l), best = SIZE_MAX;
        IverDigest d;
        int r;

        if (n_values == 0 || !values)
                return -EINVAL;
        cur = calloc(n_values, sizeof(IverDigest));
        if (!cur)
                return -ENOMEM;
        for (size_t b = 0; b < n_values; b++) {
                r = zero_value(values[b].algo, &cur[b]);
                if (r < 0)
                        return r;
        }
        if (all_match(cur, values, n_values))
                best = 0;
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *e = iver_imalog_get(l, i);
                if (e->pcr == pcr)
                        for (size_t b = 0; b < n_values; b++) {
                                r = iver_imalog_entry_bank_digest(e, values[b].algo, &d);
                                if (r < 0)
                                        return r;
                                r = extend(&cur[b], &d);
                                if (r < 0)
                                        return r;
                        }
                /* Entries of other PCRs leave the value alone: the longest
                 * prefix takes them in. */
                if (all_match(cur, values, n_values))
                        best = i + 1;
        }
        if (best == SIZE_MAX)
                return -ENOENT;
        *ret_prefix = best;
        return 0;
}
