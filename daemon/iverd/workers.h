/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "iver/appraise.h"
#include "iver/check.h"
#include "iver/policy.h"
#include "dirread.h"
#include "statbatch.h"
#include "generation.h"


/* The hashing worker pool. Jobs carry everything a worker needs; workers
 * touch no shared state but the job lists, and wake the event loop
 * through an eventfd when results are ready. */
typedef struct Job {
        struct Job *next;
        StatBatch *stat;           /* non-NULL: not a hash but a statx batch (nothing else is set) */
        DirRead *dir;              /* non-NULL: not a hash but a directory of the walk to read (dirread.h) */
        const char *path;          /* borrowed from the queue until finished */
        IverPending pending;       /* pending.st: the loop's statx, taken at stat_at (iver_now_ns) */
        int64_t stat_at;
        IverMeasureOptions opt;
        int r;                     /* iver_measure()'s return */
        IverMeasurement m;
        /* the policy's say, made once at dispatch under gen (a reference,
         * dropped by job_free on the loop thread; workers read gen->keyring) */
        Generation *gen;
        IverDecision dec;          /* dec.appraise: appraise against gen->keyring (on the worker) */
        /* appraisal (appraise rules): filled on the worker */
        int appraise_r;            /* 0, or -errno when no verdict could be made */
        IverAppraisal appraisal;
        uint8_t *sig;              /* security.ima when it is a signature (for ima-sig entries) */
        size_t sig_len;
        bool big;                  /* a big file (workers.c): by the loop's statx, or found so by the worker's */
        bool grew;                 /* found big by the worker's: pending.st.size says nothing of its size */
        bool shared;               /* a big file the worker kept for small files took (workers.c) */
        bool light;                /* counted in workers_light() (loop thread only) */
        /* on-access (onaccess.c): hash this open file (the one being executed), not path */
        bool by_fd;
        int fd;
        uint64_t waiter;           /* the permission event waiting for this job (0: none) */
        /* hard links (loop thread only): a job of an inode with nlink > 1,
         * or of a file found by name (pending.unseen: its links unknown), is
         * indexed while in the workers' hands; another name of it observed at
         * the same cookie (or found by name too) meanwhile follows it instead
         * of being hashed, and comes back with it (workers_take_done) to be
         * checked again: then a hit on the digest just recorded */
        struct Job *followers;
        struct Job *hashing_next;  /* the index's chain */
        bool hashing;              /* in the index */
} Job;

void job_free(Job *j); /* loop thread: drops the generation */

typedef struct Workers Workers;

/* What a worker does after a job's hash when the job read security.ima
 * (opt.read_ima_xattr), on the worker: the manager hands in appraisal_run
 * (appraisal.h). */
typedef void (*workers_after_hash_fn)(Job *j);

int workers_new(unsigned n, workers_after_hash_fn after_hash, Workers **ret);
Workers *workers_free(Workers *w);   /* joins the threads; pending jobs are dropped */
int workers_eventfd(const Workers *w);
/* Stage a job (pending.st.size tells a big file); staged jobs reach the
 * workers at workers_flush() (or when many are staged). */
void workers_submit(Workers *w, Job *job);
void workers_flush(Workers *w);
/* Small-file jobs submitted and not yet taken back: the loop's in-flight
 * window. Big files do not count (they occupy at most n-1 workers). */
size_t workers_light(const Workers *w);
/* The same, ahead of every queued job of its size class: a permission event
 * waits for it (hashed from its open fd). */
void workers_submit_first(Workers *w, Job *job);
/* Stage j (as workers_submit), or, when a job of the same inode (nlink > 1,
 * or found by name) at the same observation (generation, cookie, algorithm;
 * any, when either was found by name) is in the workers'
 * hands, make j its follower: j comes back in its followers list, unhashed.
 * Returns true when j follows. */
bool workers_submit_or_follow(Workers *w, Job *j);
/* The loop has recorded j's result (taken back by workers_take_done): from
 * now on another name of its inode is a cache hit, not a follower; j's
 * followers leave the in-flight window. */
void workers_finished(Workers *w, Job *j);
/* Hand over a statx batch (job->stat) or a directory to read (job->dir) to
 * the statx threads: the walk waits for them, not for the hashes. */
void workers_submit_stat(Workers *w, Job *job);
/* The loop's side of the eventfd (readable: jobs are done). The loop acks
 * it, then takes finished jobs (oldest first) until workers_take_done()
 * returns NULL: only that re-arms the workers' wake-up. A loop that stops
 * taking before (to let other events in) calls workers_rewake(), so the
 * eventfd brings it back for the rest. */
void workers_ack(Workers *w);
Job *workers_take_done(Workers *w);
void workers_rewake(Workers *w);
unsigned workers_count(const Workers *w);
/* Worker health (the watchdog's question, loop thread): whether the pool owes
 * progress now: a statx batch or small files (< 64 MiB) waiting or in a
 * worker's hands, which the worker kept free of big files finishes within
 * seconds; big files alone owe none (a hash may take minutes). *ret_finished:
 * hand-offs (batches, big files) the workers finished so far. */
bool workers_owe_progress(Workers *w, uint64_t *ret_finished);
/* The paths the workers (and the statx threads: a directory each) are at now,
 * ", "-separated into buf (cut at size; empty: none), for a stall's log
 * line. Loop thread only. */
void workers_held(Workers *w, char *buf, size_t size);
