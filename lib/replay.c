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
        IverDigest *pad;        /* the same in the kernel's padded form (not for sha1: the same) */
        bool forms;             /* the padded form is tried too */
};

static bool padded_form(const IverImaPrefixMatch *m, size_t b) {
        return m->forms && m->values[b].value.algo != IVER_HASH_SHA1;
}

void iver_imalog_prefix_match_allow_padded(IverImaPrefixMatch *m) {
        m->forms = true;
}

IverImaPrefixMatch *iver_imalog_prefix_match_free(IverImaPrefixMatch *m) {
        if (m) {
                free(m->values);
                free(m->cur);
                free(m->pad);
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
        m->pad = calloc(n_values, sizeof(IverDigest));
        if (!m->values || !m->cur || !m->pad)
                return -ENOMEM;
        memcpy(m->values, values, n_values * sizeof(IverPcrValue));
        m->n_values = n_values;
        for (size_t b = 0; b < n_values; b++) {
                if (values[b].pcr >= IVER_IMA_PCR_MAX)
                        return -EINVAL;
                r = zero_value(values[b].value.algo, &m->cur[b]);
                if (r < 0)
                        return r;
                m->pad[b] = m->cur[b];
                m->quoted |= 1u << values[b].pcr;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

static bool same_value(const IverDigest *a, const IverDigest *b) {
        return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

bool iver_imalog_prefix_match_now(const IverImaPrefixMatch *m) {
        for (size_t b = 0; b < m->n_values; b++)
                if (!same_value(&m->cur[b], &m->values[b].value) &&
                    !(padded_form(m, b) && same_value(&m->pad[b], &m->values[b].value)))
                        return false;
        return true;
}

uint64_t iver_imalog_prefix_match_padded(const IverImaPrefixMatch *m) {
        uint64_t mask = 0;
        for (size_t b = 0; b < m->n_values && b < 64; b++)
                if (!same_value(&m->cur[b], &m->values[b].value) && padded_form(m, b) &&
                    same_value(&m->pad[b], &m->values[b].value))
                        mask |= UINT64_C(1) << b;
        return mask;
}

/* v = H(v || e's digest in v's bank, in the real or the padded form). */
static int extend_form(IverDigest *v, const IverImaEntry *e, bool padded) {
        IverDigest d;
        int r = iver_imalog_entry_form_digest(e, v->algo, padded, &d);
        return r < 0 ? r : extend(v, &d);
}

int iver_imalog_prefix_match_feed(IverImaPrefixMatch *m, const IverImaEntry *e) {
        int r;

        /* An entry of a PCR not given moves no value: it is never the last
         * entry of a matching prefix (nothing says it was extended), but a
         * later match takes it in. */
        if (e->pcr >= IVER_IMA_PCR_MAX || !(m->quoted & (1u << e->pcr)))
                return 0;
        for (size_t b = 0; b < m->n_values; b++) {
                if (m->values[b].pcr != e->pcr)
                        continue;
                r = extend_form(&m->cur[b], e, false);
                if (r >= 0 && padded_form(m, b))
                        r = extend_form(&m->pad[b], e, true);
                if (r < 0)
                        return r;
        }
        return iver_imalog_prefix_match_now(m);
}

int iver_imalog_match_prefix_entries(const IverImaEntry *const *ents, size_t n, const IverPcrValue *values,
                                     size_t n_values, size_t *ret_prefix) {
        return iver_imalog_match_prefix_any_form(ents, n, values, n_values, ret_prefix, NULL);
}

int iver_imalog_match_prefix_any_form(const IverImaEntry *const *ents, size_t n, const IverPcrValue *values,
                                      size_t n_values, size_t *ret_prefix, uint64_t *ret_padded) {
        _cleanup_(iver_imalog_prefix_match_freep) IverImaPrefixMatch *m = NULL;
        size_t best = SIZE_MAX;
        uint64_t padded = 0;
        int r;

        if (!ents && n > 0)
                return -EINVAL;
        r = iver_imalog_prefix_match_new(values, n_values, &m);
        if (r < 0)
                return r;
        if (ret_padded)
                iver_imalog_prefix_match_allow_padded(m);
        if (iver_imalog_prefix_match_now(m)) {
                best = 0;
                padded = iver_imalog_prefix_match_padded(m);
        }
        for (size_t i = 0; i < n; i++) {
                r = iver_imalog_prefix_match_feed(m, ents[i]);
                if (r < 0)
                        return r;
                if (r > 0) {
                        best = i + 1;
                        padded = iver_imalog_prefix_match_padded(m);
                }
        }
        if (best == SIZE_MAX)
                return -ENOENT;
        *ret_prefix = best;
        if (ret_padded)
                *ret_padded = padded;
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
