/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The TPM worker thread.
 *
 * Why a thread and not ESAPI's _Async calls with Tss2_Tcti_GetPollHandles as
 * sd-event sources: a TPM command is a blocking request/response with one
 * command in flight per connection, so a thread loses no concurrency; the
 * _Async path needs every ESAPI call we make (Startup, GetCapability,
 * FlushContext, CreatePrimary, PCR_Extend/Read, Quote and the TR_* helpers)
 * split into Async/Finish state machines, and not every TCTI gives poll
 * handles (tctildr and device TCTIs behind some resource managers return
 * NOT_IMPLEMENTED; swtpm's reconnect-per-command does not fit a long-lived
 * poll fd). And reconnecting, Tss2_TctiLdr_Initialize and Esys_Initialize
 * block anyway. A thread keeps lib/tpm.c one plain blocking module and makes
 * every one of those calls loop-safe at once; a TPM that hangs for minutes
 * hangs this thread only.
 *
 * Shape: the loop appends durable entries (after their fdatasync) and quote
 * requests under a mutex; the thread takes work in this order: (re)connect
 * and resync, quotes (so a quote never waits behind thousands of extends),
 * the broken-evidence value, extends in list order, the 1 s PCR health check.
 * The mutex is never held across a TPM call, so the loop's reads of the state
 * (status, settle) never wait for the TPM. The thread writes an eventfd when
 * the loop should look; it never calls into the loop and never logs (the
 * loop logs state changes), so daemon code stays single-threaded. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "macro.h"
#include "tpm-thread.h"

#define HEALTH_USEC (1000000ULL)
#define RECONNECT_USEC (2000000ULL)
#define QUOTES_MAX 16
#define NOTIFY_EVERY 256

typedef struct QuoteJob {
        struct QuoteJob *next;
        uint64_t tag;
        unsigned bank_mask;
        uint8_t nonce[64];
        size_t nonce_len;
        bool cancelled;
        IverTpmQuote *quote;
        int error;
        char message[320];
} QuoteJob;

struct TpmThread {
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int efd;
        unsigned want_banks;

        /* under lock */
        const IverImaEntry **ents;
        size_t n_ents, cap;
        uint32_t pcr_mask;              /* PCRs the list uses, and ours */
        bool stop, poison_wanted;
        QuoteJob *todo, *done;
        size_t n_todo;
        TpmThreadState st;

        /* the thread's own */
        IverTpm *tpm;
        size_t extended;
        bool desynced, poison_done;
        IverHashAlgo health_bank;
        IverDigest expected[IVER_IMA_PCR_MAX]; /* health_bank value each used PCR should hold */
        bool expected_valid;
        uint32_t expected_mask;         /* the PCRs expected[] is kept for */
        IverDigest seen[IVER_IMA_PCR_MAX];      /* desynced: the health_bank values then */
        uint64_t next_health, next_connect;
};

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void notify(TpmThread *t) {
        uint64_t one = 1;
        (void) !write(t->efd, &one, sizeof(one));
}

/* Under lock: copy the thread's view into the shared state. */
static void publish(TpmThread *t) {
        t->st.connected = iver_tpm_is_connected(t->tpm);
        t->st.active_banks = iver_tpm_banks(t->tpm);
        t->st.banks = t->st.active_banks & t->want_banks;
        t->st.extended = t->extended;
        t->st.desynced = t->desynced;
        t->st.poisoned = t->poison_done;
        const char *e = iver_tpm_last_error(t->tpm);
        snprintf(t->st.error, sizeof(t->st.error), "%s", e ? e : "");
}

/* A TPM call is about to start / has ended (busy_usec for status). */
static void set_busy(TpmThread *t, bool busy) {
        pthread_mutex_lock(&t->lock);
        t->st.busy = busy;
        t->st.busy_usec = busy ? now_usec() : 0;
        if (busy)
                t->st.commands++;
        pthread_mutex_unlock(&t->lock);
}

static unsigned extend_banks(const TpmThread *t) {
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

/* A snapshot of the entries handed over (for a resync outside the lock). */
static int snapshot_entries(TpmThread *t, const IverImaEntry ***ret, size_t *ret_n, uint32_t *ret_mask) {
        pthread_mutex_lock(&t->lock);
        size_t n = t->n_ents;
        const IverImaEntry **copy = malloc((n ? n : 1) * sizeof(*copy));
        if (copy)
                memcpy(copy, t->ents, n * sizeof(*copy));
        *ret_mask = t->pcr_mask;
        pthread_mutex_unlock(&t->lock);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        *ret_n = n;
        return 0;
}

/* Read every used PCR in every extended bank, find the one point of the list
 * they hold, and set the extend cursor and the expected values there. */
static int resync(TpmThread *t) {
        _cleanup_free_ const IverImaEntry **ents = NULL;
        IverPcrValue values[_IVER_HASH_MAX * IVER_IMA_PCR_MAX];
        size_t n, nv = 0, prefix = 0;
        uint32_t mask;
        unsigned banks = extend_banks(t);
        int r;

        r = snapshot_entries(t, &ents, &n, &mask);
        if (r < 0)
                return r;
        t->expected_valid = false;
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++) {
                if (!(mask & (1u << p)))
                        continue;
                for (int b = 0; b < _IVER_HASH_MAX; b++) {
                        if (!(banks & IVER_TPM_BANK(b)))
                                continue;
                        set_busy(t, true);
                        r = iver_tpm_pcr_read(t->tpm, p, (IverHashAlgo) b, &values[nv].value);
                        set_busy(t, false);
                        if (r < 0)
                                return r;
                        values[nv++].pcr = p;
                }
        }
        if (nv == 0)
                return -ENOENT; /* none of Banks= is active */
        r = iver_imalog_match_prefix_entries(ents, n, values, nv, &prefix);
        if (r == -ENOMEM)
                return r;
        t->health_bank = (banks & IVER_TPM_BANK(IVER_HASH_SHA256)) ? IVER_HASH_SHA256 : (IverHashAlgo) __builtin_ctz(banks);
        t->desynced = r < 0;
        if (r < 0) {
                /* remembered: when they change (a TPM reset), look again */
                t->expected_mask = mask;
                for (size_t i = 0; i < nv; i++)
                        if (values[i].value.algo == t->health_bank)
                                t->seen[values[i].pcr] = values[i].value;
                return 0;
        }
        t->extended = prefix;
        t->poison_done = false;
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++)
                if ((mask & (1u << p)) &&
                    iver_imalog_replay_entries(ents, prefix, p, t->health_bank, &t->expected[p]) < 0)
                        return 0;
        t->expected_mask = mask;
        t->expected_valid = true;
        return 0;
}

static void lost(TpmThread *t) {
        iver_tpm_disconnect(t->tpm);
        t->next_connect = now_usec() + RECONNECT_USEC;
}

static void try_connect(TpmThread *t) {
        set_busy(t, true);
        int r = iver_tpm_connect(t->tpm);
        set_busy(t, false);
        if (r >= 0 && extend_banks(t) == 0)
                r = -ENOENT;
        if (r >= 0)
                r = resync(t);
        if (r < 0)
                lost(t);
        pthread_mutex_lock(&t->lock);
        publish(t);
        pthread_mutex_unlock(&t->lock);
        notify(t);
}

/* Extend one digest set into pcr (all extended banks) and keep the expected
 * health value in step. */
static int extend_digests(TpmThread *t, unsigned pcr, const IverDigest *d, size_t n) {
        set_busy(t, true);
        int r = iver_tpm_extend(t->tpm, pcr, d, n);
        set_busy(t, false);
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

static int extend_entry(TpmThread *t, const IverImaEntry *ent) {
        IverDigest d[_IVER_HASH_MAX];
        size_t n = 0;
        unsigned banks = extend_banks(t);
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b)) {
                        int r = iver_imalog_entry_bank_digest(ent, (IverHashAlgo) b, &d[n]);
                        if (r < 0)
                                return r;
                        n++;
                }
        return extend_digests(t, ent->pcr, d, n);
}

static int poison(TpmThread *t, uint32_t mask) {
        IverDigest d[_IVER_HASH_MAX];
        size_t n = 0;
        unsigned banks = extend_banks(t);
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b))
                        poison_digest((IverHashAlgo) b, &d[n++]);
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++)
                if (mask & (1u << p)) {
                        int r = extend_digests(t, p, d, n);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Does every used PCR hold what our extends should give? If not (a TPM reset,
 * another extender), find again where the PCRs are and go on from there. */
static int health_check(TpmThread *t, uint32_t mask) {
        if (!t->desynced && !t->expected_valid)
                return 0;
        for (unsigned p = 0; p < IVER_IMA_PCR_MAX; p++) {
                IverDigest now;
                if (!(mask & t->expected_mask & (1u << p)))
                        continue;
                set_busy(t, true);
                int r = iver_tpm_pcr_read(t->tpm, p, t->health_bank, &now);
                set_busy(t, false);
                if (r < 0)
                        return r;
                /* in sync: what our extends gave; desynced: what was there then */
                const IverDigest *want = t->desynced ? &t->seen[p] : &t->expected[p];
                if (now.len != want->len || memcmp(now.bytes, want->bytes, now.len) != 0) {
                        r = resync(t);
                        pthread_mutex_lock(&t->lock);
                        t->st.resyncs++;
                        pthread_mutex_unlock(&t->lock);
                        return r;
                }
        }
        return 0;
}

static void do_quote(TpmThread *t, QuoteJob *q, uint32_t mask) {
        unsigned banks = extend_banks(t);
        int r = health_check(t, mask);
        if (r >= 0 && t->desynced) {
                q->error = -ESTALE;
                snprintf(q->message, sizeof(q->message),
                         "the measurement list and the PCRs are out of sync: a quote would not verify");
                return;
        }
        if (r >= 0 && q->bank_mask && (q->bank_mask & ~banks)) {
                q->error = -EINVAL;
                snprintf(q->message, sizeof(q->message), "bank not extended by iverd (extended banks: mask 0x%x)", banks);
                return;
        }
        if (r >= 0) {
                set_busy(t, true);
                r = iver_tpm_quote(t->tpm, mask, q->bank_mask ? q->bank_mask : banks, q->nonce, q->nonce_len, &q->quote);
                set_busy(t, false);
        }
        if (r < 0) {
                q->error = r;
                snprintf(q->message, sizeof(q->message), "%s%s",
                         r == -ENXIO ? "TPM unavailable: " : "", iver_tpm_last_error(t->tpm) ?: strerror(-r));
                if (r == -ENXIO)
                        lost(t);
        }
}

static void *run(void *userdata) {
        TpmThread *t = userdata;

        pthread_mutex_lock(&t->lock);
        t->next_connect = 0;
        while (!t->stop) {
                uint64_t now = now_usec(), wake;
                uint32_t mask = t->pcr_mask;

                if (!iver_tpm_is_connected(t->tpm)) {
                        /* quotes asked meanwhile: answered at once */
                        while (t->todo) {
                                QuoteJob *q = t->todo;
                                t->todo = q->next;
                                t->n_todo--;
                                q->error = -ENXIO;
                                snprintf(q->message, sizeof(q->message), "TPM unavailable: %s",
                                         t->st.error[0] ? t->st.error : "not connected");
                                q->next = t->done;
                                t->done = q;
                                notify(t);
                        }
                        if (now >= t->next_connect) {
                                pthread_mutex_unlock(&t->lock);
                                try_connect(t);
                                pthread_mutex_lock(&t->lock);
                                continue;
                        }
                        wake = t->next_connect;
                } else if (t->todo) {
                        QuoteJob *q = t->todo;
                        t->todo = q->next;
                        t->n_todo--;
                        pthread_mutex_unlock(&t->lock);
                        do_quote(t, q, mask);
                        pthread_mutex_lock(&t->lock);
                        q->next = t->done;
                        t->done = q;
                        publish(t);
                        notify(t);
                        continue;
                } else if (!t->desynced && t->poison_wanted && !t->poison_done) {
                        pthread_mutex_unlock(&t->lock);
                        int r = poison(t, mask);
                        pthread_mutex_lock(&t->lock);
                        if (r < 0) {
                                t->st.extend_failures++;
                                lost(t);
                        } else
                                t->poison_done = true;
                        publish(t);
                        notify(t);
                        continue;
                } else if (!t->desynced && t->extended < t->n_ents) {
                        const IverImaEntry *ent = t->ents[t->extended];
                        pthread_mutex_unlock(&t->lock);
                        int r = extend_entry(t, ent);
                        pthread_mutex_lock(&t->lock);
                        if (r < 0) {
                                t->st.extend_failures++;
                                lost(t);
                        } else
                                t->extended++;
                        publish(t);
                        if (r < 0 || t->extended == t->n_ents || t->extended % NOTIFY_EVERY == 0)
                                notify(t);
                        continue;
                } else if (now >= t->next_health) {
                        pthread_mutex_unlock(&t->lock);
                        int r = health_check(t, mask);
                        pthread_mutex_lock(&t->lock);
                        if (r < 0)
                                lost(t);
                        t->next_health = now_usec() + HEALTH_USEC;
                        publish(t);
                        if (r < 0 || t->extended < t->n_ents || t->desynced)
                                notify(t);
                        continue;
                } else
                        wake = t->next_health;

                struct timespec ts = { .tv_sec = (time_t) (wake / 1000000ULL), .tv_nsec = (long) (wake % 1000000ULL) * 1000 };
                (void) pthread_cond_timedwait(&t->cond, &t->lock, &ts);
        }
        pthread_mutex_unlock(&t->lock);
        return NULL;
}

int tpm_thread_new(const char *tcti, unsigned banks, unsigned pcr, const IverImaEntry *const *ents, size_t n,
                   TpmThread **ret) {
        TpmThread *t = calloc(1, sizeof(*t));
        pthread_condattr_t ca;
        int r;

        if (!t)
                return -ENOMEM;
        t->efd = -EBADF;
        t->want_banks = banks;
        t->pcr_mask = 1u << pcr;
        pthread_mutex_init(&t->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&t->cond, &ca);
        pthread_condattr_destroy(&ca);
        r = iver_tpm_new(tcti, &t->tpm);
        if (r < 0)
                goto fail;
        t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->efd < 0) {
                r = -errno;
                goto fail;
        }
        /* the list read back from disk, before the thread's first resync looks at it */
        r = tpm_thread_push(t, ents, n);
        if (r < 0)
                goto fail;
        r = -pthread_create(&t->thread, NULL, run, t);
        if (r < 0)
                goto fail;
        t->started = true;
        *ret = t;
        return 0;
fail:
        tpm_thread_free(t);
        return r;
}

static void free_jobs(QuoteJob *q) {
        while (q) {
                QuoteJob *next = q->next;
                iver_tpm_quote_free(q->quote);
                free(q);
                q = next;
        }
}

TpmThread *tpm_thread_free(TpmThread *t) {
        if (!t)
                return NULL;
        if (t->started) {
                pthread_mutex_lock(&t->lock);
                t->stop = true;
                pthread_cond_signal(&t->cond);
                pthread_mutex_unlock(&t->lock);
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 2;
                if (pthread_timedjoin_np(t->thread, NULL, &ts) != 0) {
                        /* stuck in a TPM command that never returns: leave it its memory */
                        pthread_detach(t->thread);
                        return t;
                }
        }
        iver_tpm_free(t->tpm);
        free_jobs(t->todo);
        free_jobs(t->done);
        free(t->ents);
        if (t->efd >= 0)
                close(t->efd);
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return NULL;
}

int tpm_thread_fd(const TpmThread *t) {
        return t->efd;
}

void tpm_thread_ack(TpmThread *t) {
        uint64_t v;
        (void) !read(t->efd, &v, sizeof(v));
}

int tpm_thread_push(TpmThread *t, const IverImaEntry *const *ents, size_t n) {
        pthread_mutex_lock(&t->lock);
        if (t->n_ents + n > t->cap) {
                size_t cap = t->cap ? t->cap : 1024;
                while (cap < t->n_ents + n)
                        cap *= 2;
                const IverImaEntry **a = realloc(t->ents, cap * sizeof(*a));
                if (!a) {
                        pthread_mutex_unlock(&t->lock);
                        return -ENOMEM;
                }
                t->ents = a;
                t->cap = cap;
        }
        for (size_t i = 0; i < n; i++) {
                t->ents[t->n_ents++] = ents[i];
                if (ents[i]->pcr < IVER_IMA_PCR_MAX && !(t->pcr_mask & (1u << ents[i]->pcr))) {
                        /* a new PCR: its expected value starts from zero */
                        t->pcr_mask |= 1u << ents[i]->pcr;
                }
        }
        t->st.queued = t->n_ents;
        pthread_cond_signal(&t->cond);
        pthread_mutex_unlock(&t->lock);
        return 0;
}

void tpm_thread_poison(TpmThread *t) {
        pthread_mutex_lock(&t->lock);
        t->poison_wanted = true;
        pthread_cond_signal(&t->cond);
        pthread_mutex_unlock(&t->lock);
}

void tpm_thread_state(TpmThread *t, TpmThreadState *ret) {
        pthread_mutex_lock(&t->lock);
        *ret = t->st;
        if (ret->busy)
                ret->busy_usec = now_usec() - ret->busy_usec;
        pthread_mutex_unlock(&t->lock);
}

int tpm_thread_quote(TpmThread *t, uint64_t tag, unsigned bank_mask, const uint8_t *nonce, size_t nonce_len) {
        if (nonce_len > sizeof(((QuoteJob *) NULL)->nonce))
                return -EINVAL;
        QuoteJob *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->tag = tag;
        q->bank_mask = bank_mask;
        memcpy(q->nonce, nonce, nonce_len);
        q->nonce_len = nonce_len;
        pthread_mutex_lock(&t->lock);
        if (t->n_todo >= QUOTES_MAX) {
                pthread_mutex_unlock(&t->lock);
                free(q);
                return -EBUSY;
        }
        /* FIFO */
        QuoteJob **p = &t->todo;
        while (*p)
                p = &(*p)->next;
        *p = q;
        t->n_todo++;
        pthread_cond_signal(&t->cond);
        pthread_mutex_unlock(&t->lock);
        return 0;
}

void tpm_thread_cancel_quote(TpmThread *t, uint64_t tag) {
        pthread_mutex_lock(&t->lock);
        for (QuoteJob **p = &t->todo; *p; p = &(*p)->next)
                if ((*p)->tag == tag) {
                        QuoteJob *q = *p;
                        *p = q->next;
                        t->n_todo--;
                        free(q);
                        break;
                }
        for (QuoteJob *q = t->done; q; q = q->next)
                if (q->tag == tag)
                        q->cancelled = true;
        pthread_mutex_unlock(&t->lock);
}

int tpm_thread_take_quote(TpmThread *t, uint64_t *ret_tag, IverTpmQuote **ret_quote, int *ret_error,
                          char *ret_message, size_t message_size) {
        for (;;) {
                pthread_mutex_lock(&t->lock);
                QuoteJob *q = t->done;
                if (q)
                        t->done = q->next;
                pthread_mutex_unlock(&t->lock);
                if (!q)
                        return 0;
                if (q->cancelled) {
                        iver_tpm_quote_free(q->quote);
                        free(q);
                        continue;
                }
                *ret_tag = q->tag;
                *ret_quote = q->quote;
                *ret_error = q->error;
                snprintf(ret_message, message_size, "%s", q->message);
                free(q);
                return 1;
        }
}
