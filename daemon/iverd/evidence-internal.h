/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared by evidence.c (the list, group commit, churn limit) and
 * evidence-tpm.c (the loop side of the TPM thread). Not for other files. */
#include <systemd/sd-event.h>

#include "budget.h"
#include "churn.h"
#include "evidence.h"
#include "tpm-thread.h"

#define GROUP_MAX 256                   /* entries staged for one write (~150 KiB of entries and text) */
#define STAGED_SET 512                  /* power of two ≥ 2 × GROUP_MAX */

typedef struct QuoteWait {
        struct QuoteWait *next;
        Evidence *e;
        uint64_t tag;
        sd_event_source *timer;
        EvidenceQuoteDone done;
        void *userdata;
} QuoteWait;

struct Evidence {
        sd_event *event;
        const Reports *reports;         /* to the manager (report.h) */
        bool scan_done;                 /* the initial measurement is done: churn limits apply */
        unsigned pcr;
        bool tpm_none;
        bool shared;                    /* PCR shared with the kernel's IMA, served by the TPM thread */
        size_t kernel_entries;          /* no TPM: the kernel's entries copied into the list */
        const char *kernel_dir;         /* the kernel's IMA securityfs directory */
        IverImaFile *file;             /* the list, on disk (with its dedup index) */
        TpmThread *tpm;
        TpmThreadState last;            /* what the loop saw last: log the changes */
        bool list_failing, broken;
        uint64_t list_failures, duplicates, commits, rate_limited;
        int last_list_error;
        sd_event_source *commit, *relist, *tpm_io, *churn_timer, *sync_io;
        struct ListSync *sync;          /* fdatasync off the loop (list-sync.h) */
        size_t syncs;
        IverImaEntry **staged;          /* GROUP_MAX, written with one fdatasync */
        size_t n_staged;
        uint16_t staged_set[STAGED_SET]; /* their (PCR, template digest) pairs (evidence.c) */
        Churn *churn;
        Budget *budget;                 /* entries per file owner (budget.h) */
        bool continued;                 /* the list existed in this boot before this run (evidence-gap.c) */
        int64_t list_mtime_sec;         /* its mtime then */
        int64_t gap_start_sec, gap_end_sec; /* the gap listed at start (start -1: unknown) */
        QuoteWait *quotes;
        uint64_t next_tag;
        char *list_dir;                 /* where iverd's own list is (evidence-reserve.c) */
        uint64_t reserve_target;        /* bytes kept reserved ahead of each list file */
        int reserve_error;              /* how extending the reservation went last */
        uint64_t reserve_warned_usec;
        bool reserve_logged;            /* this shortage was logged */
};

/* The TPM thread's eventfd is readable. */
int evidence_on_tpm(sd_event_source *s, int fd, uint32_t revents, void *userdata);
/* status: gap_at_start_sec (0: a fresh list; null: unknown length) and its start. */
void evidence_gap_status(const Evidence *e, json_object *o);
/* Reserve space ahead of the list file f in dir (e->file: the journal hears
 * how it went; the served list: only a failure); -ENOMEM only. */
int evidence_reserve_open(Evidence *e, IverImaFile *f, const char *dir);
/* After a commit: log a change of the reservation's state, once. */
void evidence_reserve_check(Evidence *e);
/* status: list_reserve_target_bytes, list_reserved_bytes, list_reserve_short,
 * list_reserve_supported. */
void evidence_reserve_status(const Evidence *e, json_object *o);
/* Answer and forget a waiting quote (q or error). */
void evidence_answer_quote(Evidence *e, QuoteWait *w, const IverTpmQuote *q, const char *error);
