/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iver/imalog.h"
#include "iver/tpm.h"

/* The TPM worker: one thread that owns the IverTpm and makes every TPM call
 * (connect, resync, extends, PCR health checks, AK, quotes). The list's sync
 * thread tells it how far the list on disk is durable, and the thread reads
 * the entries back from the file; the event loop hands it quote requests, and
 * the loop reads its state; the
 * thread never calls back: it writes an eventfd (tpm_thread_fd) when the loop
 * should look (extends caught up, a quote done, connected or lost). See the
 * comment at the top of tpm-thread.c for why a thread. */
typedef struct TpmThread TpmThread;

typedef struct TpmThreadState {
        bool connected;
        bool desynced;          /* no prefix of the list replays to the PCRs: not extending */
        bool busy;              /* a TPM command is outstanding */
        uint64_t busy_usec;     /* for how long (CLOCK_MONOTONIC µs), when busy */
        unsigned active_banks;  /* IVER_TPM_BANK mask the TPM has */
        unsigned banks;         /* the banks extended: Banks= ∩ active */
        size_t extended;        /* entries handed over that are in the PCRs */
        size_t queued;          /* entries handed over */
        uint64_t extend_failures, resyncs, commands;
        bool poisoned;          /* the broken-evidence value is in the PCRs */
        /* a PCR shared with the kernel's IMA (tpm_thread_share): */
        size_t served_entries;  /* the served list: kernel's and iverd's, extend order */
        uint64_t served_bytes;
        size_t kernel_served;   /* the kernel's entries among them */
        bool unplaced;          /* an extend could not be placed: evidence broken */
        unsigned padded_banks;  /* banks of the shared PCR in the kernel's padded SHA-1 form */
        char error[256];        /* the last TPM error, "" if none */
        uint64_t connects;      /* connect attempts (the first, and every reconnect) */
        uint64_t retries;       /* transient errors retried in place */
        uint64_t permanent_errors;
        bool extends_refused;   /* a permanent error stopped the extends until a connect */
        bool reads_refused;     /* the same for PCR reads (resync, health check) */
        char permanent[256];    /* the last command the TPM refused for good: "PCR_Extend: … (0x907)" */
} TpmThreadState;

/* Start the thread for tcti (not "none"). banks: Banks= (IVER_TPM_BANK mask);
 * pcr: the daemon's PCR, always checked and quoted; list_fd: the binary list
 * (duplicated: the thread reads entries back from it), whose first n entries
 * (size bytes, naming the PCRs in pcrs) are durable (see tpm_thread_push).
 * served: NULL, or pcr is shared with the kernel's IMA (its list in
 * kernel_dir): then list_fd is iverd's journal, and served (taken on success)
 * the list the thread writes in extend order, the kernel's entries and
 * iverd's (tpm-share.c); *ret's served list is tpm_thread_served(). */
int tpm_thread_new(const char *tcti, unsigned banks, unsigned pcr, int list_fd, size_t n, uint64_t size,
                   uint32_t pcrs, IverImaFile *served, const char *kernel_dir, TpmThread **ret);
/* The served list (its fds only: reopen it, read it up to the published
 * served_bytes), or NULL when the PCR is not shared. */
const IverImaFile *tpm_thread_served(const TpmThread *t);
/* Stop and join: NULL. It waits up to 2 s for an outstanding TPM command; a
 * thread stuck in a hung TPM is left behind with its memory (the process is
 * ending) and t is returned. */
TpmThread *tpm_thread_free(TpmThread *t);
/* An fd that polls readable when the state changed or a quote finished;
 * tpm_thread_ack() clears it. */
int tpm_thread_fd(const TpmThread *t);
void tpm_thread_ack(TpmThread *t);

/* n more entries are durable in the list, which now ends (durably) at byte
 * end; pcrs: the PCRs they name. The thread reads them back in list order. */
void tpm_thread_push(TpmThread *t, size_t n, uint64_t end, uint32_t pcrs);
/* Extend the broken-evidence value (all-0xFF, no list entry) into every PCR
 * the list uses, now and after every TPM reset, until the daemon restarts. */
void tpm_thread_poison(TpmThread *t);
void tpm_thread_state(TpmThread *t, TpmThreadState *ret);

/* Queue a quote over every PCR the list uses in bank_mask (0: all extended
 * banks). tag identifies it in tpm_thread_take_quote(). -EBUSY when too many
 * quotes wait already. */
int tpm_thread_quote(TpmThread *t, uint64_t tag, unsigned bank_mask, const uint8_t *nonce, size_t nonce_len);
/* Forget a queued quote (its requester gave up); a finished one is dropped. */
void tpm_thread_cancel_quote(TpmThread *t, uint64_t tag);
/* A finished quote: 1 and *ret_quote (owned by the caller) or a negative
 * *ret_error with ret_message; 0 when none is ready. */
int tpm_thread_take_quote(TpmThread *t, uint64_t *ret_tag, IverTpmQuote **ret_quote, int *ret_error,
                          char *ret_message, size_t message_size);
