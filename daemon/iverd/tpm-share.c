/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A PCR shared with the kernel's IMA, on the TPM thread (DESIGN.md §11).
 *
 * The kernel adds an entry to its list, then extends PCR 10, under its own
 * lock: at most one of its entries is listed and not yet extended, and every
 * entry extended before a moment was listed before it. iverd extends its
 * entries from its journal (the write-ahead list file) and serves them, with
 * the kernel's, in the order the TPM received them, in the served list (the
 * runtime directory's list files, written here only, after the extends):
 *   - before an extend, when the kernel's count moved, the kernel's entries
 *     the PCR holds are served (the prefix whose replay gives the value);
 *   - after it, when the count is still the one served, nothing of the
 *     kernel's came in between: the entry follows; else the PCR is read and
 *     the entry placed among the kernel's new ones by trying the few orders
 *     (lib/imalog-merge.c).
 * An extend nothing explains (another extender, a kernel entry whose extend
 * does not match it) breaks the evidence as a list write failure does: the
 * broken-evidence value goes into the PCR and no quote verifies again.
 * The served list is not synced: it lives in /run with the PCR, and a crash
 * between an extend and its serving is repaired from the journal at the next
 * start (tpm_share_resync). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel-ima.h"
#include "macro.h"
#include "tpm-thread-internal.h"

TpmShare *tpm_share_free(TpmShare *s) {
        if (!s)
                return NULL;
        iver_imalog_file_free(s->served);
        if (s->kfd >= 0)
                close(s->kfd);
        free(s->kdir);
        free(s);
        return NULL;
}

static int read_pcr(TpmThread *t, IverDigest *ret) {
        return tpm_pcr_read(t, t->share->pcr, t->health_bank, ret);
}

static bool same_digest(const IverDigest *a, const IverDigest *b) {
        return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

/* The kernel's entries not yet served, from the list as it is now. */
static int pending(TpmShare *s, IverImaLog **ret) {
        _cleanup_(iver_imalog_freep) IverImaLog *l = NULL;
        int r = iver_imalog_new(&l);
        if (r < 0)
                return r;
        r = kernel_ima_read_fd(s->kfd, s->k_off, l);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

/* The broken-evidence value, once: no quote verifies again. */
static void unplaced(TpmThread *t) {
        TpmShare *s = t->share;
        if (s->unplaced)
                return;
        s->unplaced = true;
        (void) tpm_poison(t, 1u << s->pcr);
        t->poison_done = true;
        t->desynced = true;
        (void) read_pcr(t, &t->seen[s->pcr]);
}

/* Append n entries to the served list; the first kernel_n of k (in order)
 * among them advance the kernel's cursor. */
static int serve(TpmThread *t, const IverImaEntry *const *ents, size_t n, const IverImaEntry *const *k, size_t kernel_n) {
        TpmShare *s = t->share;
        if (n == 0)
                return 0;
        int r = iver_imalog_file_write_many(s->served, ents, n);
        if (r < 0) {
                unplaced(t);
                return 0;
        }
        for (size_t i = 0; i < kernel_n; i++)
                s->k_off += iver_imalog_entry_binary_size(k[i]);
        s->k_served += kernel_n;
        pthread_mutex_lock(&t->lock);
        tpm_publish(t);
        pthread_mutex_unlock(&t->lock);
        return 0;
}

/* The kernel's entries whose extends the PCR value v holds (read before them). */
static int serve_prefix(TpmThread *t, const IverDigest *v) {
        TpmShare *s = t->share;
        _cleanup_(iver_imalog_freep) IverImaLog *k = NULL;
        size_t n = 0;
        int r = pending(s, &k);
        if (r < 0) {
                unplaced(t);
                return 0;
        }
        const IverImaEntry *const *ke = iver_imalog_entries(k);
        r = iver_imalog_place_prefix(&t->expected[s->pcr], ke, iver_imalog_size(k), s->pcr, v, &n);
        if (r < 0) {
                unplaced(t);
                return 0;
        }
        t->expected[s->pcr] = *v;
        return serve(t, ke, n, ke, n);
}

int tpm_share_check(TpmThread *t, bool force) {
        TpmShare *s = t->share;
        IverDigest v;
        size_t count = 0;

        if (s->unplaced || t->desynced || !t->expected_valid)
                return 0;
        if (!force && kernel_ima_count(s->kdir, &count) >= 0 && count <= s->k_served)
                return 0;
        int r = read_pcr(t, &v);
        if (r < 0)
                return r;
        if (same_digest(&v, &t->expected[s->pcr]))
                return 0;
        return serve_prefix(t, &v);
}

int tpm_share_extend(TpmThread *t, const IverImaEntry *ent, const IverDigest *d, size_t n) {
        TpmShare *s = t->share;
        _cleanup_(iver_imalog_freep) IverImaLog *k = NULL;
        size_t count = SIZE_MAX, before = 0, through = 0;
        IverDigest v;
        int r;

        if (ent->pcr != s->pcr || s->unplaced) {
                r = tpm_extend_digests(t, ent->pcr, d, n);
                if (r >= 0 && !s->unplaced)
                        r = serve(t, &ent, 1, NULL, 0);
                return r;
        }
        r = tpm_share_check(t, false);
        if (r < 0 || s->unplaced)
                return r;
        IverDigest start = t->expected[s->pcr];
        r = tpm_extend_digests(t, s->pcr, d, n);
        if (r < 0)
                return r;
        /* nothing listed by the kernel since: nothing extended in between */
        if (kernel_ima_count(s->kdir, &count) >= 0 && count == s->k_served)
                return serve(t, &ent, 1, NULL, 0);
        r = read_pcr(t, &v);
        if (r < 0)
                return r;
        r = pending(s, &k);
        if (r >= 0)
                r = iver_imalog_place_entry(&start, ent, iver_imalog_entries(k), iver_imalog_size(k), s->pcr, &v, &before,
                                            &through);
        if (r < 0) {
                unplaced(t);
                return 0;
        }
        size_t m = through + 1;
        _cleanup_free_ const IverImaEntry **ents = calloc(m, sizeof(*ents));
        if (!ents) {
                unplaced(t);
                return 0;
        }
        const IverImaEntry *const *ke = iver_imalog_entries(k);
        for (size_t i = 0; i < before; i++)
                ents[i] = ke[i];
        ents[before] = ent;
        for (size_t i = before; i < through; i++)
                ents[i + 1] = ke[i];
        t->expected[s->pcr] = v;
        return serve(t, ents, m, ke, through);
}

/* Walk the served list against the journal and the kernel's list (greedy:
 * an entry that is the journal's next is iverd's, else the kernel's next):
 * the expected values replayed, *ret_j journal entries served, the kernel's
 * cursor set, the journal reader left after them and *ret_next (owned by the
 * caller) the journal's next entry, if durable. -EBADMSG: the served list
 * holds an entry neither list explains. */
static int walk_served(TpmThread *t, const IverImaLog *kall, size_t *ret_j, IverImaEntry **ret_next) {
        TpmShare *s = t->share;
        _cleanup_(iver_imalog_reader_freep) IverImaReader *rd = NULL;
        _cleanup_(iver_imalog_entry_freep) IverImaEntry *jn = NULL;
        size_t j = 0, k = 0, nk = iver_imalog_size(kall);
        uint64_t joff = 0, end;
        int r;

        pthread_mutex_lock(&t->lock);
        end = t->durable_end;
        pthread_mutex_unlock(&t->lock);
        s->k_off = 0;
        r = iver_imalog_reader_new(iver_imalog_file_fd(s->served), 0, &rd);
        if (r < 0)
                return r;
        iver_imalog_reader_seek(t->reader, 0);
        for (;;) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *sv = NULL;
                r = iver_imalog_reader_next(rd, iver_imalog_file_size(s->served), &sv);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = iver_imalog_extend_value(&t->expected[sv->pcr], sv, sv->pcr);
                if (r < 0)
                        return r;
                if (!jn && iver_imalog_reader_next(t->reader, end, &jn) < 0)
                        jn = NULL;
                if (jn && kernel_ima_same(sv, jn)) {
                        j++;
                        joff = iver_imalog_reader_offset(t->reader);
                        jn = iver_imalog_entry_free(jn);
                } else if (k < nk && kernel_ima_same(sv, iver_imalog_get(kall, k))) {
                        s->k_off += iver_imalog_entry_binary_size(sv);
                        k++;
                } else
                        return -EBADMSG;
        }
        if (!jn && iver_imalog_reader_next(t->reader, end, &jn) < 0)
                jn = NULL;
        iver_imalog_reader_seek(t->reader, joff);
        s->k_served = k;
        *ret_j = j;
        *ret_next = TAKE_PTR(jn);
        return 0;
}

/* The shared PCR in the banks whose form is in question: every extended
 * bank but sha1 (both forms are one) and the health bank (the kernel always
 * has sha256: the real form, which the placement of entries relies on). */
static int read_form_values(TpmThread *t, IverPcrValue *values, size_t *ret_n) {
        unsigned banks = tpm_extend_banks(t);
        size_t n = 0;
        for (int b = 0; b < _IVER_HASH_MAX; b++) {
                if (!(banks & IVER_TPM_BANK(b)) || b == IVER_HASH_SHA1 || b == (int) t->health_bank)
                        continue;
                int r = tpm_pcr_read(t, t->share->pcr, (IverHashAlgo) b, &values[n].value);
                if (r < 0)
                        return r;
                values[n++].pcr = t->share->pcr;
        }
        *ret_n = n;
        return 0;
}

typedef struct Forms {
        IverImaPrefixMatch *m;
        bool matched;
        uint64_t padded;        /* values (bit i: values[i]) in the padded form */
} Forms;

static int forms_feed(Forms *f, const IverImaEntry *e) {
        int r = e ? iver_imalog_prefix_match_feed(f->m, e) : iver_imalog_prefix_match_now(f->m);
        if (r > 0) {
                f->matched = true;
                f->padded = iver_imalog_prefix_match_padded(f->m);
        }
        return r < 0 ? r : 0;
}

/* Which of those banks hold the kernel's padded SHA-1 form (a bank it had
 * no hash for when its IMA started): the form each value replays in over
 * the served list (as the resync left it) and then the kernel's entries
 * k[from..] not served (read after the values). Where no prefix replays the
 * forms are kept as they were. */
static int find_forms(TpmThread *t, const IverPcrValue *values, size_t nv, const IverImaLog *k, size_t from) {
        TpmShare *s = t->share;
        _cleanup_(iver_imalog_prefix_match_freep) IverImaPrefixMatch *m = NULL;
        _cleanup_(iver_imalog_reader_freep) IverImaReader *rd = NULL;
        int r;

        if (nv == 0)
                return 0;
        r = iver_imalog_prefix_match_new(values, nv, &m);
        if (r >= 0)
                r = iver_imalog_reader_new(iver_imalog_file_fd(s->served), 0, &rd);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        iver_imalog_prefix_match_allow_padded(m);
        Forms f = { .m = m };
        r = forms_feed(&f, NULL);
        for (;;) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
                if (r >= 0)
                        r = iver_imalog_reader_next(rd, iver_imalog_file_size(s->served), &e);
                if (r <= 0)
                        break;
                r = forms_feed(&f, e);
        }
        for (size_t i = from; r >= 0 && i < iver_imalog_size(k); i++)
                r = forms_feed(&f, iver_imalog_get(k, i));
        if (r < 0 || !f.matched)
                return r == -ENOMEM ? r : 0;    /* unknown: kept */
        s->padded_banks = 0;
        for (size_t i = 0; i < nv && i < 64; i++)
                if (f.padded & (UINT64_C(1) << i))
                        s->padded_banks |= IVER_TPM_BANK(values[i].value.algo);
        return 0;
}

int tpm_share_resync(TpmThread *t) {
        TpmShare *s = t->share;
        _cleanup_(iver_imalog_freep) IverImaLog *kall = NULL, *k = NULL;
        _cleanup_(iver_imalog_entry_freep) IverImaEntry *jn = NULL;
        uint32_t mask;
        size_t j = 0, before = 0, through = 0, n = 0;
        IverDigest v;
        int r;

        pthread_mutex_lock(&t->lock);
        mask = t->pcr_mask | (1u << s->pcr);
        pthread_mutex_unlock(&t->lock);
        t->health_bank = tpm_health_bank(tpm_extend_banks(t));
        t->expected_valid = false;
        t->expected_mask = mask;
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++)
                t->expected[p] = (IverDigest) { .algo = t->health_bank, .len = iver_hash_algo_size(t->health_bank) };
        r = iver_imalog_new(&kall);
        if (r >= 0)
                r = kernel_ima_read_fd(s->kfd, 0, kall);
        if (r >= 0)
                r = walk_served(t, kall, &j, &jn);
        if (r == -ENOMEM)
                return r;
        /* PCRs of iverd's alone: the served list's replay, or desynced (the
         * values are kept either way: the health check resyncs when they move) */
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++) {
                if (!(mask & (1u << p)))
                        continue;
                int q = tpm_pcr_read(t, p, t->health_bank, &t->seen[p]);
                if (q < 0)
                        return q;
                if (r >= 0 && p != s->pcr && !same_digest(&t->seen[p], &t->expected[p]))
                        r = -ESTALE;
        }
        v = t->seen[s->pcr];
        t->desynced = true;
        IverPcrValue fv[_IVER_HASH_MAX];
        size_t nfv = 0;
        int q = read_form_values(t, fv, &nfv);
        if (q < 0)
                return q;
        if (r >= 0 && !s->unplaced)
                r = pending(s, &k);
        if (r < 0 || s->unplaced)
                return 0;
        const IverImaEntry *const *ke = iver_imalog_entries(k);
        size_t nk = iver_imalog_size(k);
        if (iver_imalog_place_prefix(&t->expected[s->pcr], ke, nk, s->pcr, &v, &n) >= 0) {
                t->desynced = false;
                t->extended = j;
                t->expected_valid = true;
                t->poison_done = false;
                t->expected[s->pcr] = v;
                r = serve(t, ke, n, ke, n);
                return r < 0 ? r : find_forms(t, fv, nfv, k, n);
        }
        /* the journal's next entry extended and not served (a crash in between) */
        if (!jn || iver_imalog_place_entry(&t->expected[s->pcr], jn, ke, nk, s->pcr, &v, &before, &through) < 0)
                return 0;
        _cleanup_free_ const IverImaEntry **ents = calloc(through + 1, sizeof(*ents));
        if (!ents)
                return -ENOMEM;
        for (size_t i = 0; i < before; i++)
                ents[i] = ke[i];
        ents[before] = jn;
        for (size_t i = before; i < through; i++)
                ents[i + 1] = ke[i];
        _cleanup_(iver_imalog_entry_freep) IverImaEntry *again = NULL;
        if (iver_imalog_reader_next(t->reader, UINT64_MAX, &again) <= 0)
                return -EIO;    /* read a moment ago */
        t->desynced = false;
        t->extended = j + 1;
        t->expected_valid = true;
        t->poison_done = false;
        t->expected[s->pcr] = v;
        r = serve(t, ents, through + 1, ke, through);
        return r < 0 ? r : find_forms(t, fv, nfv, k, through);
}
