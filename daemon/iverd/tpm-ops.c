/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the TPM thread does with the TPM: connect and resync (the one point of
 * the list every used PCR holds), extends in list order with the expected
 * health values kept in step, the broken-evidence value, the PCR health
 * check, quotes. Runs on the TPM thread only (tpm-thread.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "macro.h"
#include "thread.h"
#include "tpm-thread-internal.h"

void tpm_notify(TpmThread *t) {
        notify_send(t->efd);
}

/* Under lock: copy the thread's view into the shared state. */
void tpm_publish(TpmThread *t) {
        t->st.connected = iver_tpm_is_connected(t->tpm);
        t->st.active_banks = iver_tpm_banks(t->tpm);
        t->st.banks = t->st.active_banks & t->want_banks;
        t->st.extended = t->extended;
        t->st.desynced = t->desynced;
        t->st.poisoned = t->poison_done;
        if (t->share) {
                t->st.served_entries = iver_imalog_file_count(t->share->served);
                t->st.served_bytes = iver_imalog_file_size(t->share->served);
                t->st.kernel_served = t->share->k_served;
                t->st.unplaced = t->share->unplaced;
                t->st.padded_banks = t->share->padded_banks;
        }
        t->st.extends_refused = t->refused & TPM_OP_EXTEND;
        t->st.reads_refused = t->refused & TPM_OP_READ;
        const char *e = iver_tpm_last_error(t->tpm);
        snprintf(t->st.error, sizeof(t->st.error), "%s", e ? e : "");
}

/* A TPM call is about to start / has ended (busy_usec for status). */
void tpm_set_busy(TpmThread *t, bool busy) {
        pthread_mutex_lock(&t->lock);
        t->st.busy = busy;
        t->st.busy_usec = busy ? now_usec() : 0;
        if (!busy)
                t->idle_since = now_usec();
        if (busy)
                t->st.commands++;
        pthread_mutex_unlock(&t->lock);
}

/* After a failed TPM call: a transient error (the TPM asked to retry) is
 * waited out here, RETRY_FIRST_USEC doubling, RETRY_TRIES times, on the
 * thread's condition (a stop ends the wait): true to send the same command
 * again. ESAPI resubmits RETRY/YIELDED/TESTING a few times at once itself;
 * this is the pause it does not make. */
static bool retry_wait(TpmThread *t, int r, unsigned attempt) {
        if (iver_tpm_errno_class(r) != IVER_TPM_TRANSIENT || attempt >= RETRY_TRIES)
                return false;
        uint64_t until = now_usec() + (RETRY_FIRST_USEC << attempt);
        pthread_mutex_lock(&t->lock);
        t->st.retries++;
        while (!t->stop && now_usec() < until) {
                thread_cond_wait_until(&t->cond, &t->lock, until);
        }
        bool again = !t->stop;
        pthread_mutex_unlock(&t->lock);
        return again;
}

int tpm_pcr_read(TpmThread *t, unsigned pcr, IverHashAlgo bank, IverDigest *ret) {
        int r;
        for (unsigned i = 0;; i++) {
                tpm_set_busy(t, true);
                r = iver_tpm_pcr_read(t->tpm, pcr, bank, ret);
                tpm_set_busy(t, false);
                if (!retry_wait(t, r, i))
                        return r;
        }
}

/* iver_tpm_reset_count with busy marked and transient errors retried in place. */
static int tpm_reset_count(TpmThread *t, uint64_t *ret) {
        int r;
        for (unsigned i = 0;; i++) {
                tpm_set_busy(t, true);
                r = iver_tpm_reset_count(t->tpm, ret);
                tpm_set_busy(t, false);
                if (!retry_wait(t, r, i))
                        return r;
        }
}

unsigned tpm_extend_banks(const TpmThread *t) {
        return iver_tpm_banks(t->tpm) & t->want_banks;
}

static void digest_extend(IverDigest *v, const IverDigest *d) {
        uint8_t buf[2 * IVER_DIGEST_MAX];
        unsigned len = 0;
        const EVP_MD *md = v->algo == IVER_HASH_SHA1     ? EVP_sha1()
                           : v->algo == IVER_HASH_SHA256 ? EVP_sha256()
                           : v->algo == IVER_HASH_SHA384 ? EVP_sha384()
                                                         : EVP_sha512();
        memcpy(buf, v->bytes, v->len);
        memcpy(buf + v->len, d->bytes, d->len);
        if (EVP_Digest(buf, v->len + d->len, v->bytes, &len, md, NULL) != 1)
                v->len = 0;     /* never matches: the next health check resyncs */
}

static void poison_digest(IverHashAlgo bank, IverDigest *ret) {
        *ret = (IverDigest) { .algo = bank, .len = iver_hash_algo_size(bank) };
        memset(ret->bytes, 0xff, ret->len);
}

/* The longest prefix of the durable list (n entries ending at end) that
 * replays to every value: *ret_prefix entries, ending at *ret_offset;
 * -ENOENT if none. The list is read back from the file. */
static int match_list(TpmThread *t, const IverPcrValue *values, size_t nv, uint64_t end, size_t *ret_prefix,
                      uint64_t *ret_offset) {
        _cleanup_(iver_imalog_prefix_match_freep) IverImaPrefixMatch *m = NULL;
        size_t i = 0, best = SIZE_MAX;
        uint64_t best_off = 0;
        int r;

        r = iver_imalog_prefix_match_new(values, nv, &m);
        if (r < 0)
                return r;
        if (iver_imalog_prefix_match_now(m))
                best = 0;
        iver_imalog_reader_seek(t->reader, 0);
        for (;;) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
                r = iver_imalog_reader_next(t->reader, end, &e);
                if (r <= 0)
                        break;
                i++;
                r = iver_imalog_prefix_match_feed(m, e);
                if (r < 0)
                        break;
                if (r > 0) {
                        best = i;
                        best_off = iver_imalog_reader_offset(t->reader);
                }
        }
        if (r < 0)
                return r == -ENOMEM ? r : -EIO; /* the list cannot be read back: try again later */
        if (best == SIZE_MAX)
                return -ENOENT;
        iver_imalog_reader_seek(t->reader, best_off);
        *ret_prefix = best;
        *ret_offset = best_off;
        return 0;
}

/* Read every used PCR in every extended bank, find the one point of the list
 * they hold, and set the extend cursor and the expected values there. */
IverHashAlgo tpm_health_bank(unsigned banks) {
        return (banks & IVER_TPM_BANK(IVER_HASH_SHA256)) ? IVER_HASH_SHA256 : (IverHashAlgo) __builtin_ctz(banks);
}

int tpm_resync(TpmThread *t) {
        IverPcrValue values[_IVER_HASH_MAX * IVER_IMA_PCR_MAX];
        size_t nv = 0, prefix = 0;
        uint64_t end, offset = 0;
        uint32_t mask;
        unsigned banks = tpm_extend_banks(t);
        int r;

        /* the reset count these PCR values go with (check_reset compares
         * the next one with it, whoever made this resync) */
        uint64_t c = 0;
        r = tpm_reset_count(t, &c);
        t->reset_count_known = r >= 0;
        t->reset_count = c;
        if (t->share)
                return tpm_share_resync(t);
        pthread_mutex_lock(&t->lock);
        end = t->durable_end;
        mask = t->pcr_mask;
        pthread_mutex_unlock(&t->lock);
        t->expected_valid = false;
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++) {
                if (!(mask & (1u << p)))
                        continue;
                for (int b = 0; b < _IVER_HASH_MAX; b++) {
                        if (!(banks & IVER_TPM_BANK(b)))
                                continue;
                        r = tpm_pcr_read(t, p, (IverHashAlgo) b, &values[nv].value);
                        if (r < 0)
                                return r;
                        values[nv++].pcr = p;
                }
        }
        if (nv == 0)
                return -ENOENT; /* none of Banks= is active */
        r = match_list(t, values, nv, end, &prefix, &offset);
        if (r < 0 && r != -ENOENT)
                return r;
        t->health_bank = tpm_health_bank(banks);
        t->desynced = r < 0;
        t->expected_mask = mask;
        for (size_t i = 0; i < nv; i++)
                if (values[i].value.algo == t->health_bank)
                        /* desynced: remembered, when they change (a TPM reset)
                         * look again; in sync: the prefix replays to them */
                        (t->desynced ? t->seen : t->expected)[values[i].pcr] = values[i].value;
        if (t->desynced)
                return 0;
        t->extended = prefix;
        t->poison_done = false;
        t->expected_valid = true;
        return 0;
}

void tpm_lost(TpmThread *t) {
        iver_tpm_disconnect(t->tpm);
        t->next_connect = now_usec() + RECONNECT_USEC;
}

void tpm_failed(TpmThread *t, int r, unsigned op) {
        IverTpmErrorClass c = iver_tpm_errno_class(r);

        if (c == IVER_TPM_PERMANENT) {
                const char *e = iver_tpm_last_error(t->tpm);
                t->st.permanent_errors++;
                snprintf(t->st.permanent, sizeof(t->st.permanent), "%s", e ? e : strerror(-r));
        }
        if (c == IVER_TPM_LOST || op == TPM_OP_CONNECT) {
                tpm_lost(t);
                if (c == IVER_TPM_PERMANENT)
                        t->next_connect = now_usec() + REFUSED_RECONNECT_USEC;
                return;
        }
        if (op == TPM_OP_QUOTE)
                return;         /* the request is answered with it; the rest goes on */
        if (c == IVER_TPM_PERMANENT)
                t->refused |= op;
        else
                t->hold_until = now_usec() + HOLD_USEC;
        /* an extend may have read its entry, or half a shared extend run:
         * where the PCRs stand is read again before any more work */
        t->resync_wanted = true;
}

void tpm_try_connect(TpmThread *t) {
        pthread_mutex_lock(&t->lock);
        t->st.connects++;
        pthread_mutex_unlock(&t->lock);
        tpm_set_busy(t, true);
        int r = iver_tpm_connect(t->tpm);
        tpm_set_busy(t, false);
        if (r >= 0 && tpm_extend_banks(t) == 0)
                r = -ENOENT;
        if (r >= 0) {
                /* a fresh connection: what was refused is tried again, once */
                t->refused = 0;
                t->resync_wanted = false;
                t->reset_count_known = false; /* read at the first extend */
                t->hold_until = 0;
                r = tpm_resync(t);
        }
        pthread_mutex_lock(&t->lock);
        if (r < 0)
                tpm_failed(t, r, TPM_OP_CONNECT);
        else
                t->st.permanent[0] = 0;
        tpm_publish(t);
        pthread_mutex_unlock(&t->lock);
        tpm_notify(t);
}

/* Extend one digest set into pcr (all extended banks) and keep the expected
 * health value in step. */
int tpm_extend_digests(TpmThread *t, unsigned pcr, const IverDigest *d, size_t n) {
        int r;
        for (unsigned i = 0;; i++) {
                tpm_set_busy(t, true);
                r = iver_tpm_extend(t->tpm, pcr, d, n);
                tpm_set_busy(t, false);
                if (!retry_wait(t, r, i))
                        break;
        }
        if (r < 0)
                return r;
        if (t->expected_valid && !(t->expected_mask & (1u << pcr))) {
                /* the first entry of a PCR the list did not use yet */
                t->expected[pcr] = (IverDigest) { .algo = t->health_bank, .len = iver_hash_algo_size(t->health_bank) };
                t->expected_mask |= 1u << pcr;
        }
        for (size_t i = 0; i < n; i++)
                if (t->expected_valid && d[i].algo == t->health_bank)
                        digest_extend(&t->expected[pcr], &d[i]);
        return 0;
}

/* A virtual TPM restarted (swtpm killed and started again) resets its PCRs,
 * and a TCTI that connects per command shows no error for it: an extend on
 * top of the reset would leave PCRs no prefix of the list replays to. So
 * after any pause (a restart takes far longer than RESET_GAP_USEC) the reset
 * count is read first; when it moved, where the PCRs stand is found again
 * (after a reset: at the start of the list). 1 when that resync ran. */
#define RESET_GAP_USEC (5ULL * 1000ULL)
int tpm_check_reset(TpmThread *t) {
        if (t->reset_count_known && now_usec() - t->idle_since < RESET_GAP_USEC)
                return 0;
        uint64_t c;
        int r = tpm_reset_count(t, &c);
        if (r < 0)
                return r;
        bool moved = t->reset_count_known && c != t->reset_count;
        t->reset_count = c;
        t->reset_count_known = true;
        if (!moved)
                return 0; /* (a first look: the connect's resync could not read it) */
        r = tpm_resync(t); /* the loop logs the resync (status' resyncs) */
        pthread_mutex_lock(&t->lock);
        t->st.resyncs++;
        pthread_mutex_unlock(&t->lock);
        return r < 0 ? r : 1;
}

int tpm_extend_next(TpmThread *t, uint64_t end) {
        _cleanup_(iver_imalog_entry_freep) IverImaEntry *ent = NULL;
        IverDigest d[_IVER_HASH_MAX];
        size_t n = 0;
        unsigned banks = tpm_extend_banks(t);
        int r = iver_imalog_reader_next(t->reader, end, &ent);
        if (r <= 0)
                return r < 0 ? r : -EIO;        /* shorter than the sync thread said */
        /* in a PCR shared with the kernel, a bank it pads gets iverd's
         * entries padded alike: one form a bank, every bank replays */
        unsigned padded = t->share && ent->pcr == t->share->pcr ? t->share->padded_banks : 0;
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b)) {
                        r = iver_imalog_entry_form_digest(ent, (IverHashAlgo) b, padded & IVER_TPM_BANK(b), &d[n]);
                        if (r < 0)
                                return r;
                        n++;
                }
        if (t->share)
                return tpm_share_extend(t, ent, d, n);
        return tpm_extend_digests(t, ent->pcr, d, n);
}

int tpm_poison(TpmThread *t, uint32_t mask) {
        IverDigest d[_IVER_HASH_MAX];
        size_t n = 0;
        unsigned banks = tpm_extend_banks(t);
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b))
                        poison_digest((IverHashAlgo) b, &d[n++]);
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++)
                if (mask & (1u << p)) {
                        int r = tpm_extend_digests(t, p, d, n);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Does every used PCR hold what our extends should give? If not (a TPM reset,
 * another extender), find again where the PCRs are and go on from there. */
int tpm_health_check(TpmThread *t, uint32_t mask) {
        if (!t->desynced && !t->expected_valid)
                return 0;
        if (t->share && t->share->unplaced)
                /* broken for good: the shared PCR is not looked at again */
                mask &= ~(1u << t->share->pcr);
        else if (t->share && !t->desynced) {
                /* the kernel extends the shared PCR too: serve what it added */
                int r = tpm_share_check(t, true);
                if (r < 0 || t->desynced)
                        return r;
                mask &= ~(1u << t->share->pcr);
        }
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++) {
                IverDigest now;
                if (!(mask & t->expected_mask & (1u << p)))
                        continue;
                int r = tpm_pcr_read(t, p, t->health_bank, &now);
                if (r < 0)
                        return r;
                /* in sync: what our extends gave; desynced: what was there then */
                const IverDigest *want = t->desynced ? &t->seen[p] : &t->expected[p];
                if (now.len != want->len || memcmp(now.bytes, want->bytes, now.len) != 0) {
                        r = tpm_resync(t);
                        pthread_mutex_lock(&t->lock);
                        t->st.resyncs++;
                        pthread_mutex_unlock(&t->lock);
                        return r;
                }
        }
        return 0;
}

int tpm_do_quote(TpmThread *t, QuoteJob *q, uint32_t mask) {
        unsigned banks = tpm_extend_banks(t);
        int r = tpm_health_check(t, mask);
        if (r >= 0 && t->desynced) {
                q->error = -ESTALE;
                snprintf(q->message, sizeof(q->message),
                         "the measurement list and the PCRs are out of sync: a quote would not verify");
                return 0;
        }
        if (r >= 0 && q->bank_mask && (q->bank_mask & ~banks)) {
                q->error = -EINVAL;
                snprintf(q->message, sizeof(q->message), "bank not extended by iverd (extended banks: mask 0x%x)", banks);
                return 0;
        }
        for (unsigned i = 0; r >= 0; i++) {
                tpm_set_busy(t, true);
                r = iver_tpm_quote(t->tpm, mask, q->bank_mask ? q->bank_mask : banks, q->nonce, q->nonce_len, &q->quote);
                tpm_set_busy(t, false);
                if (!retry_wait(t, r, i))
                        break;
                r = 0;
        }
        /* the kernel may have extended before the quote: the list the
         * client reads after it must hold that */
        if (r >= 0 && t->share)
                (void) tpm_share_check(t, false);
        if (r < 0) {
                q->error = r;
                snprintf(q->message, sizeof(q->message), "%s%s",
                         r == -ENXIO ? "TPM unavailable: " : "", iver_tpm_last_error(t->tpm) ?: strerror(-r));
        }
        /* the TPM's own errors, for the thread to act on; a failure of ours
         * (memory, arguments) ends this request only */
        return r == -ENXIO || r == -EREMOTEIO || r == -EAGAIN ? r : 0;
}
