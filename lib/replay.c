/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replay of a measurement list into the PCR values it should produce, and the
 * search for the prefix a PCR holds (the PCR may lag the write-ahead list). */
#include <errno.h>
#include <stdlib.h>
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

struct IverImaPrefixMatch {
        size_t n_values;
        uint32_t quoted;        /* the PCRs among values */
        IverPcrValue *values;
        IverDigest *cur;        /* the replay so far, one a value */
};

IverImaPrefixMatch *iver_imalog_prefix_match_free(IverImaPrefixMatch *m) {
        if (m) {
                free(m->values);
                free(m->cur);
                free(m);
        }
        return NULL;
}

int iver_imalog_prefix_match_new(const IverPcrValue *values, size_t n_values, IverImaPrefixMatch **ret) {
        _cleanup_(iver_imalog_prefix_match_freep) IverImaPrefixMatch *m = NULL;
        int r;

        if (n_values == 0 || !values || !ret)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->values = calloc(n_values, sizeof(IverPcrValue));
        m->cur = calloc(n_values, sizeof(IverDigest));
        if (!m->values || !m->cur)
                return -ENOMEM;
        memcpy(m->values, values, n_values * sizeof(IverPcrValue));
        m->n_values = n_values;
        for (size_t b = 0; b < n_values; b++) {
                if (values[b].pcr >= IVER_IMA_PCR_MAX)
                        return -EINVAL;
                r = zero_value(values[b].value.algo, &m->cur[b]);
                if (r < 0)
                        return r;
                m->quoted |= 1u << values[b].pcr;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

bool iver_imalog_prefix_match_now(const IverImaPrefixMatch *m) {
        for (size_t b = 0; b < m->n_values; b++)
                if (m->cur[b].len != m->values[b].value.len ||
                    memcmp(m->cur[b].bytes, m->values[b].value.bytes, m->cur[b].len) != 0)
                        return false;
        return true;
}

int iver_imalog_prefix_match_feed(IverImaPrefixMatch *m, const IverImaEntry *e) {
        IverDigest d;
        int r;

        /* An entry of a PCR not given moves no value: it is never the last
         * entry of a matching prefix (nothing says it was extended), but a
         * later match takes it in. */
        if (e->pcr >= IVER_IMA_PCR_MAX || !(m->quoted & (1u << e->pcr)))
                return 0;
        for (size_t b = 0; b < m->n_values; b++) {
                if (m->values[b].pcr != e->pcr)
                        continue;
                r = iver_imalog_entry_bank_digest(e, m->values[b].value.algo, &d);
                if (r < 0)
                        return r;
                r = extend(&m->cur[b], &d);
                if (r < 0)
                        return r;
        }
        return iver_imalog_prefix_match_now(m);
}

int iver_imalog_match_prefix_entries(const IverImaEntry *const *ents, size_t n, const IverPcrValue *values,
                                     size_t n_values, size_t *ret_prefix) {
        _cleanup_(iver_imalog_prefix_match_freep) IverImaPrefixMatch *m = NULL;
        size_t best = SIZE_MAX;
        int r;

        if (!ents && n > 0)
                return -EINVAL;
        r = iver_imalog_prefix_match_new(values, n_values, &m);
        if (r < 0)
                return r;
        if (iver_imalog_prefix_match_now(m))
                best = 0;
        for (size_t i = 0; i < n; i++) {
                r = iver_imalog_prefix_match_feed(m, ents[i]);
                if (r < 0)
                        return r;
                if (r > 0)
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
