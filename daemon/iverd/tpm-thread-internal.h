/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared by tpm-thread.c (the thread's loop and the loop-side API) and
 * tpm-ops.c (what the thread does with the TPM). Not for other files. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tpm-thread.h"

#define HEALTH_USEC (1000000ULL)
#define RECONNECT_USEC (2000000ULL)
#define QUOTES_MAX 16
#define NOTIFY_EVERY 256
/* A transient error is retried in place: 10, 20, 40, 80, 160, 320 ms (0.63 s
 * in all), then the work waits HOLD_USEC on the same connection. */
#define RETRY_FIRST_USEC (10000ULL)
#define RETRY_TRIES 6
#define HOLD_USEC (2000000ULL)
/* A connect the TPM refused (permanent) is tried again this rarely: a TPM
 * an operator fixes cannot tell us. */
#define REFUSED_RECONNECT_USEC (60ULL * 1000000ULL)

/* What a TPM command was for (tpm_failed): a permanent refusal of an extend
 * or a PCR read stops that work until the next connect. */
enum {
        TPM_OP_EXTEND = 1u << 0,        /* extends, the broken-evidence value */
        TPM_OP_READ = 1u << 1,          /* resync, health check, the shared PCR's reads */
        TPM_OP_QUOTE = 1u << 2,         /* one request: answered with the error, never retried */
        TPM_OP_CONNECT = 1u << 3,
};

/* The kernel's list iverd continues in a shared PCR (tpm-share.c; the
 * thread's own). The served list holds the kernel's entries and iverd's in
 * the order the TPM received them; iverd's list file is then its journal. */
typedef struct TpmShare {
        IverImaFile *served;            /* written by the thread only */
        char *kdir;                     /* the kernel's IMA securityfs directory */
        int kfd;                        /* its binary_runtime_measurements */
        unsigned pcr;
        size_t k_served;                /* the kernel's entries in the served list */
        uint64_t k_off;                 /* where the next one starts in kfd */
        uint64_t next_poll;
        bool unplaced;                  /* an extend could not be placed: evidence broken */
        unsigned padded_banks;          /* banks of pcr holding the kernel's padded SHA-1 form
                                         * (iverd's entries go there alike; tpm_share_forms) */
} TpmShare;

#define SHARE_POLL_USEC (100000ULL)

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
        size_t n_ents;                  /* durable entries handed over */
        uint64_t durable_end;           /* where they end in the list file */
        uint32_t pcr_mask;              /* PCRs the list uses, and ours */
        bool stop, poison_wanted;
        QuoteJob *todo, *done;
        size_t n_todo;
        TpmThreadState st;

        /* the thread's own */
        IverTpm *tpm;
        int list_fd;                    /* the binary list, read back (pread) */
        IverImaReader *reader;          /* at the first entry not extended */
        size_t extended;
        bool desynced, poison_done;
        IverHashAlgo health_bank;
        IverDigest expected[IVER_IMA_PCR_MAX]; /* health_bank value each used PCR should hold */
        bool expected_valid;
        uint32_t expected_mask;         /* the PCRs expected[] is kept for */
        IverDigest seen[IVER_IMA_PCR_MAX];      /* desynced: the health_bank values then */
        uint64_t next_health, next_connect;
        unsigned refused;               /* TPM_OP_* the TPM refused for good (until a connect) */
        uint64_t idle_since;            /* when the last TPM command ended (now_usec) */
        uint64_t reset_count;           /* iver_tpm_reset_count at the last look */
        bool reset_count_known;
        bool resync_wanted;             /* a failure left the cursor unsure: resync on this connection */
        uint64_t hold_until;            /* transient errors outlasted the retries: no work before */
        TpmShare *share;                /* NULL: the PCR is iverd's alone */
};


/* tpm-ops.c: on the thread, never under t->lock unless said */
void tpm_notify(TpmThread *t);
void tpm_publish(TpmThread *t);                 /* under t->lock */
void tpm_set_busy(TpmThread *t, bool busy);     /* takes t->lock */
unsigned tpm_extend_banks(const TpmThread *t);
int tpm_resync(TpmThread *t);
/* Before an extend after a pause: the TPM's reset count read; when it moved
 * (a virtual TPM restarted: its PCRs reset, with no error a per-command TCTI
 * would show), resync. 0 nothing moved, 1 resynced, -errno. */
int tpm_check_reset(TpmThread *t);
void tpm_lost(TpmThread *t);
/* Under lock: a TPM operation (TPM_OP_*) failed with r: act by its class
 * (lost: reconnect; transient past the retries: hold, then resync;
 * permanent: stop that work, report it). */
void tpm_failed(TpmThread *t, int r, unsigned op);
/* iver_tpm_pcr_read with busy marked and transient errors retried in place. */
int tpm_pcr_read(TpmThread *t, unsigned pcr, IverHashAlgo bank, IverDigest *ret);
void tpm_try_connect(TpmThread *t);
/* Read the next entry (ending at or before end) from the list and extend it. */
int tpm_extend_next(TpmThread *t, uint64_t end);
int tpm_poison(TpmThread *t, uint32_t mask);
int tpm_health_check(TpmThread *t, uint32_t mask);
/* The TPM's error (< 0) if the quote failed in the TPM, else 0 (q->error
 * may still be set: desynced, a bank not extended). */
int tpm_do_quote(TpmThread *t, QuoteJob *q, uint32_t mask);
/* Extend digests into pcr (all extended banks), keeping the expected value. */
int tpm_extend_digests(TpmThread *t, unsigned pcr, const IverDigest *d, size_t n);
IverHashAlgo tpm_health_bank(unsigned banks);

/* tpm-share.c (t->share set): */
TpmShare *tpm_share_free(TpmShare *s);
/* Find where the served list, the journal and the kernel's list stand
 * against the PCRs (connect, TPM reset). */
int tpm_share_resync(TpmThread *t);
/* Extend ent (digests d) and serve it at its place among the kernel's. */
int tpm_share_extend(TpmThread *t, const IverImaEntry *ent, const IverDigest *d, size_t n);
/* Serve the kernel's entries the PCR holds now: when its count moved, or
 * always (force: the health check). An extend nothing explains breaks the
 * evidence (the broken-evidence value, desynced). */
int tpm_share_check(TpmThread *t, bool force);
