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
 * Shape: the list's sync thread (list-sync.c) moves the durable end of the
 * list on once its fdatasync is done (the thread reads the entries back from
 * the file: no copy of the list in memory), the loop appends quote requests,
 * both under a mutex;
 * the thread takes work in this order: (re)connect and resync, quotes (so a
 * quote never waits behind thousands of extends), a resync a failure asked
 * for, the broken-evidence value, extends in list order, the 1 s PCR health
 * check.
 * A failed TPM command is handled by its class (lib/tpm.c): transient errors
 * are retried in place with a short backoff (tpm-ops.c), and if they outlast
 * it the work waits a while on the same connection; a lost TPM is
 * disconnected and connected again; a permanent refusal stops that kind of
 * work (extends, or PCR reads) until the next connect and is reported in
 * status, never retried in a loop: the entries stay pending, as with a TPM
 * that is away, so the PCRs hold a prefix of the list and a quote says so.
 * The mutex is never held across a TPM call, so the loop's reads of the state
 * (status, settle) never wait for the TPM. The thread writes an eventfd when
 * the loop should look; it never calls into the loop and never logs (the
 * loop logs state changes), so daemon code stays single-threaded. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel-ima.h"
#include "macro.h"
#include "thread.h"
#include "tpm-thread-internal.h"

#define JOIN_USEC (2 * 1000000ULL)

/* Under lock, not connected: quotes asked meanwhile are answered at once. */
static void answer_unavailable(TpmThread *t) {
        while (t->todo) {
                QuoteJob *q = t->todo;
                t->todo = q->next;
                t->n_todo--;
                q->error = -ENXIO;
                snprintf(q->message, sizeof(q->message), "TPM unavailable: %s",
                         t->st.error[0] ? t->st.error : "not connected");
                q->next = t->done;
                t->done = q;
                tpm_notify(t);
        }
}

/* Each step below runs under lock and drops it around its TPM calls. */
static void step_quote(TpmThread *t, uint32_t mask) {
        QuoteJob *q = t->todo;
        t->todo = q->next;
        t->n_todo--;
        pthread_mutex_unlock(&t->lock);
        int r = tpm_do_quote(t, q, mask);
        pthread_mutex_lock(&t->lock);
        if (r < 0)
                tpm_failed(t, r, TPM_OP_QUOTE);
        q->next = t->done;
        t->done = q;
        tpm_publish(t);
        tpm_notify(t);
}

static void step_resync(TpmThread *t) {
        pthread_mutex_unlock(&t->lock);
        int r = tpm_resync(t);
        pthread_mutex_lock(&t->lock);
        if (r < 0)
                tpm_failed(t, r, TPM_OP_READ);
        else
                t->resync_wanted = false;
        tpm_publish(t);
        tpm_notify(t);
}

static void step_poison(TpmThread *t, uint32_t mask) {
        pthread_mutex_unlock(&t->lock);
        int r = tpm_poison(t, mask);
        pthread_mutex_lock(&t->lock);
        if (r < 0) {
                t->st.extend_failures++;
                tpm_failed(t, r, TPM_OP_EXTEND);
        } else
                t->poison_done = true;
        tpm_publish(t);
        tpm_notify(t);
}

static void step_extend(TpmThread *t) {
        uint64_t end = t->durable_end;
        pthread_mutex_unlock(&t->lock);
        int r = tpm_check_reset(t); /* 1: the TPM was reset, the cursor found again */
        if (r == 0)
                r = tpm_extend_next(t, end);
        pthread_mutex_lock(&t->lock);
        if (r < 0) {
                t->st.extend_failures++;
                tpm_failed(t, r, TPM_OP_EXTEND);
        } else if (r == 0)
                t->extended++;
        tpm_publish(t);
        if (r < 0 || t->extended == t->n_ents || t->extended % NOTIFY_EVERY == 0)
                tpm_notify(t);
}

static void step_share_poll(TpmThread *t) {
        size_t before = t->share->k_served;
        pthread_mutex_unlock(&t->lock);
        int r = tpm_share_check(t, false);
        pthread_mutex_lock(&t->lock);
        if (r < 0)
                tpm_failed(t, r, TPM_OP_READ);
        t->share->next_poll = now_usec() + SHARE_POLL_USEC;
        tpm_publish(t);
        if (r < 0 || t->share->k_served != before || t->desynced)
                tpm_notify(t);
}

static void step_health(TpmThread *t, uint32_t mask) {
        pthread_mutex_unlock(&t->lock);
        int r = tpm_health_check(t, mask);
        pthread_mutex_lock(&t->lock);
        if (r < 0)
                tpm_failed(t, r, TPM_OP_READ);
        t->next_health = now_usec() + HEALTH_USEC;
        tpm_publish(t);
        if (r < 0 || t->extended < t->n_ents || t->desynced)
                tpm_notify(t);
}

/* May work of kind op run now: not refused for good, not held after
 * transient errors outlasted their retries. */
static bool may(const TpmThread *t, unsigned op, uint64_t now) {
        return !(t->refused & op) && now >= t->hold_until;
}

/* Connected and nothing to do: when to look again (pushes and quotes signal). */
static uint64_t next_wake(const TpmThread *t, uint64_t now) {
        if (now < t->hold_until)
                return t->hold_until;
        if (t->refused & TPM_OP_READ)
                return now + REFUSED_RECONNECT_USEC;    /* nothing timed left */
        if (t->share && !t->desynced && t->share->next_poll < t->next_health)
                return t->share->next_poll;
        return t->next_health;
}

static void *run(void *userdata) {
        TpmThread *t = userdata;

        pthread_mutex_lock(&t->lock);
        t->next_connect = 0;
        while (!t->stop) {
                uint64_t now = now_usec(), wake = 0;  /* 0: a step ran, look again */
                uint32_t mask = t->pcr_mask;
                bool work = !t->resync_wanted;

                if (!iver_tpm_is_connected(t->tpm)) {
                        answer_unavailable(t);
                        if (now >= t->next_connect) {
                                pthread_mutex_unlock(&t->lock);
                                tpm_try_connect(t);
                                pthread_mutex_lock(&t->lock);
                                continue;
                        }
                        wake = t->next_connect;
                } else if (t->todo)
                        step_quote(t, mask);
                else if (t->resync_wanted && may(t, TPM_OP_READ, now))
                        step_resync(t);
                else if (work && !t->desynced && t->poison_wanted && !t->poison_done && may(t, TPM_OP_EXTEND, now))
                        step_poison(t, mask);
                else if (work && !t->desynced && t->extended < t->n_ents && may(t, TPM_OP_EXTEND, now))
                        step_extend(t);
                else if (work && t->share && !t->desynced && now >= t->share->next_poll && may(t, TPM_OP_READ, now))
                        step_share_poll(t);
                else if (work && now >= t->next_health && may(t, TPM_OP_READ, now))
                        step_health(t, mask);
                else
                        wake = next_wake(t, now);
                if (wake == 0)
                        continue;

                thread_cond_wait_until(&t->cond, &t->lock, wake);
        }
        pthread_mutex_unlock(&t->lock);
        return NULL;
}

static int share_new(IverImaFile *served, const char *kernel_dir, unsigned pcr, TpmShare **ret) {
        TpmShare *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->pcr = pcr;
        s->kdir = strdup(kernel_dir);
        s->kfd = kernel_ima_open(kernel_dir);
        if (!s->kdir || s->kfd < 0) {
                int r = s->kdir ? s->kfd : -ENOMEM;
                tpm_share_free(s);
                return r;
        }
        s->served = served;
        *ret = s;
        return 0;
}

const IverImaFile *tpm_thread_served(const TpmThread *t) {
        return t && t->share ? t->share->served : NULL;
}

int tpm_thread_new(const char *tcti, unsigned banks, unsigned pcr, int list_fd, size_t n, uint64_t size,
                   uint32_t pcrs, IverImaFile *served, const char *kernel_dir, TpmThread **ret) {
        TpmThread *t = calloc(1, sizeof(*t));
        int r;

        if (!t)
                return -ENOMEM;
        t->efd = t->list_fd = -EBADF;
        t->want_banks = banks;
        t->pcr_mask = 1u << pcr;
        pthread_mutex_init(&t->lock, NULL);
        thread_cond_init(&t->cond);
        r = iver_tpm_new(tcti, &t->tpm);
        if (r < 0)
                goto fail;
        t->efd = r = notify_new();
        if (r < 0)
                goto fail;
        t->list_fd = fcntl(list_fd, F_DUPFD_CLOEXEC, 3);
        if (t->list_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = iver_imalog_reader_new(t->list_fd, 0, &t->reader);
        if (r < 0)
                goto fail;
        if (served) {
                r = share_new(served, kernel_dir, pcr, &t->share);
                if (r < 0)
                        goto fail;
        }
        /* the list read back from disk, before the thread's first resync looks at it */
        tpm_thread_push(t, n, size, pcrs);
        r = thread_start(&t->thread, run, t);
        if (r < 0)
                goto fail;
        t->started = true;
        *ret = t;
        return 0;
fail:
        if (t->share)
                t->share->served = NULL;        /* the caller's until success */
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
                thread_request_stop(&t->lock, &t->cond, &t->stop);
                if (thread_join(t->thread, JOIN_USEC) < 0)
                        return t;       /* stuck in a TPM command that never returns: leave it its memory */
        }
        iver_tpm_free(t->tpm);
        free_jobs(t->todo);
        free_jobs(t->done);
        iver_imalog_reader_free(t->reader);
        tpm_share_free(t->share);
        if (t->list_fd >= 0)
                close(t->list_fd);
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
        notify_ack(t->efd);
}

void tpm_thread_push(TpmThread *t, size_t n, uint64_t end, uint32_t pcrs) {
        pthread_mutex_lock(&t->lock);
        t->n_ents += n;
        if (end > t->durable_end)
                t->durable_end = end;
        /* a new PCR: its expected value starts from zero */
        t->pcr_mask |= pcrs & ((1u << IVER_IMA_PCR_MAX) - 1);
        t->st.queued = t->n_ents;
        pthread_cond_signal(&t->cond);
        pthread_mutex_unlock(&t->lock);
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
