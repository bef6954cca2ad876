/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Worker threads hash files; results return to the loop via an eventfd.
 *
 * The hand-off is batched: the loop stages jobs without the lock and hands
 * them over in one locked append (workers_flush), a worker takes several small
 * jobs per lock, and returns its finished batch in one append, writing the
 * eventfd only when the done list was empty (the loop drains it whole).
 *
 * The walk's directory reads (DirRead) and statx batches (StatBatch) have
 * threads of their own (STAT_THREADS): a cold tree's reads wait for the
 * disk, not for a hash in a worker's hands nor on the loop, so the walk
 * goes on finding files while the workers hash the ones it found (on a
 * cold /usr the walk reads 68,000 inodes for 3,000 files to hash). A cold
 * read is a wait on the disk's latency, not work: several threads keep
 * several directories' reads in flight (one thread walked a cold /usr/lib,
 * 11,391 directories, in 2.2-2.9 s here; 2 in 1.3-1.4 s, 4 in 1.1-1.2 s).
 *
 * Big files (at least BIG_FILE_BYTES by the loop's statx) wait in their own
 * list and occupy at most n-1 workers, so one worker is always free for the
 * small ones, which are always taken first: a tamper is never stuck behind
 * two 100 GiB files. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "thread.h"
#include "workers-io.h"
#include "workers.h"

#define BIG_FILE_BYTES (64ULL << 20)
/* A big file this small may take the worker kept for small files too, while
 * none waits: a small one that comes meanwhile waits for no more than its
 * hash (~0.2 s at OpenSSL's speed), and a tree of many big files (a /usr)
 * is not hashed one file at a time. */
#define SHARED_BIG_BYTES (256ULL << 20)
#define BATCH_MAX 16U                  /* small jobs taken per lock */
#define BATCH_FILE_BYTES (256U << 10)  /* only files this small are taken in batches */
#define STAGE_MAX 64U                  /* staged jobs are flushed at this many anyway */
#define HASHING_BUCKETS 1024U          /* index of hard-linked inodes being hashed */
#define STAT_THREADS 4U                /* directories read at a time, cold: the walk's READS_MAX share them */

typedef struct List {
        Job *head, *tail;
        size_t n;
} List;

struct Workers {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_cond_t stat_cond;       /* the statx threads wait on it */
        List stat, small, big, done;    /* under lock */
        unsigned big_running;           /* under lock */
        /* worker health (under lock): statx and small batches in a worker's
         * hands, and hand-offs finished so far (workers_owe_progress) */
        unsigned quick_running;
        uint64_t finished;
        unsigned big_max;
        bool stopping;
        int efd;
        bool armed;                     /* under lock: the loop sleeps on efd for the next done job */
        /* loop thread only */
        List stage;
        size_t light;                   /* small jobs handed over and not yet taken back */
        Job *hashing[HASHING_BUCKETS];  /* indexed jobs in the workers' hands (hashing_indexed) */
        workers_after_hash_fn after_hash;
        /* the path each worker (then each statx thread: a directory) is at
         * (atomic; NULL: none), for a stall's log line: a job's path lives
         * until the loop takes the job back, and only the loop reads these */
        const char **held;
        unsigned started, stat_started; /* atomic: hands each worker, each statx thread its slot */
        unsigned n, n_stat;
        pthread_t stat_threads[STAT_THREADS];
        pthread_t threads[];
};

static void append(List *l, Job *j) {
        j->next = NULL;
        if (l->tail)
                l->tail->next = j;
        else
                l->head = j;
        l->tail = j;
        l->n++;
}

static void list_splice(List *to, List *from) {
        if (!from->head)
                return;
        if (to->tail)
                to->tail->next = from->head;
        else
                to->head = from->head;
        to->tail = from->tail;
        to->n += from->n;
        *from = (List) {};
}

static Job *take(List *l) {
        Job *j = l->head;
        if (!j)
                return NULL;
        l->head = j->next;
        if (!l->head)
                l->tail = NULL;
        l->n--;
        j->next = NULL;
        return j;
}

/* The path worker self is at (workers_held), or NULL. */
static void hold(Workers *w, unsigned self, const char *path) {
        __atomic_store_n(&w->held[self], path, __ATOMIC_RELEASE);
}

/* Measure one job (fd: read_ahead's open of it, closed here, or -1). Returns false,
 * measuring nothing, when the file turned out bigger than this worker takes
 * (it grew since the loop's statx): the caller hands it to the big list. */
static bool run(Workers *w, Job *j, DirCache *c, int fd) {
        IverStat st;
        const char *name;
        j->opt.sigio_ignored = true;  /* manager_new() prepared them before the pool started */
        j->opt.cancel = &w->stopping; /* a stop does not wait for a 100 GiB file */
        /* What this worker may take: a small job, a file under 64 MiB; the
         * worker kept for small files, one of up to 256 MiB. A file grown past
         * that since the loop looked (`truncate -s 100G` creates, then
         * extends) ends with -EFBIG before anything is hashed, and goes to
         * the big list; a hash reads no further than the size its own statx
         * saw. */
        IverMeasureOptions o = j->opt;
        o.max_size = !j->big ? BIG_FILE_BYTES - 1 : j->shared ? SHARED_BIG_BYTES : 0;
        int dfd = j->by_fd || fd >= 0 ? -EBADF : dir_of(c, j->path, &name);
        if (j->by_fd) /* on-access: the very file being used, whatever its path names by now */
                j->r = iver_measure_fd(j->fd, &o, &j->m);
        else if (fd >= 0) {
                j->r = iver_measure_opened(fd, j->pending.unseen ? NULL : &j->pending.st, j->stat_at, &o, &j->m);
                close(fd); /* and the lease, before the appraisal */
        }
        else if (dfd == -EINVAL)
                j->r = workers_measure_path(j->path, &o, &j->m);
        else if (dfd < 0)
                j->r = dfd;
        else if (!j->big && j->pending.unseen) /* found by name: the open file's statx is the observation */
                j->r = iver_measure_open(dfd, name, &o, &j->m);
        else if (!j->big) /* the loop's statx (walk or dispatch) is the first attempt's "before" */
                j->r = iver_measure_stat(dfd, name, &j->pending.st, j->stat_at, &o, &j->m);
        else {
                int64_t at = iver_now_ns();
                j->r = iver_stat(o.statx, dfd, name, o.source == IVER_COOKIE_STATX_VERSION, &st);
                if (j->r >= 0)
                        j->r = iver_measure_stat(dfd, name, &st, at, &o, &j->m);
        }
        if (j->r == -EFBIG && o.max_size > 0) {
                j->big = j->grew = true;
                j->shared = false;
                return false;
        }
        if (j->opt.read_ima_xattr && j->r >= 0)
                w->after_hash(j); /* appraisal, and the ima-sig signature */
        return true;
}

/* Run a batch; jobs that turned out big move to *ret_big. A batch of small
 * files costs one pair of CPU clock reads, shared out by bytes hashed (the
 * ledger's hash_cpu_ns stays a sum of what was spent). */

static void run_batch(Workers *w, unsigned self, DirCache *c, List *batch, List *ret_big) {
        bool timed = batch->n > 1;
        int64_t cpu0 = timed ? iver_thread_cpu_ns() : 0;
        uint64_t bytes = 0;
        List done = {};
        int fds[BATCH_MAX];
        unsigned ahead = UINT_MAX, n_ahead = 0; /* the index read_ahead() started at, how many */
        for (unsigned i = 0; batch->head; i++) {
                /* after the uses at the head: a use waits for no open ahead */
                if (ahead == UINT_MAX && !batch->head->by_fd) {
                        if (batch->n > 1)
                                n_ahead = read_ahead(&w->held[self], c, batch->head, BATCH_MAX, fds);
                        ahead = i;
                }
                Job *j = take(batch);
                int fd = ahead != UINT_MAX && i - ahead < n_ahead ? fds[i - ahead] : -1;
                j->opt.no_cpu_time = timed;
                hold(w, self, j->path);
                bool ran = run(w, j, c, fd);
                hold(w, self, NULL);
                if (!ran) {
                        append(ret_big, j);
                        continue;
                }
                append(&done, j);
                if (j->r >= 0)
                        bytes += j->m.bytes_hashed + 1;
        }
        *batch = done;
        if (!timed || bytes == 0)
                return;
        int64_t spent = iver_thread_cpu_ns() - cpu0;
        for (Job *j = batch->head; j; j = j->next)
                if (j->r >= 0)
                        j->m.cpu_ns = (int64_t) ((double) spent * (double) (j->m.bytes_hashed + 1) / (double) bytes);
}

/* Under lock: whether a worker may start the next big file. */
static bool big_may_start(const Workers *w) {
        if (!w->big.head)
                return false;
        if (w->big_running < w->big_max)
                return true;
        return w->big_running < w->n && !w->small.head && !w->big.head->grew &&
               w->big.head->pending.st.size <= SHARED_BIG_BYTES;
}

static bool has_work(const Workers *w) {
        return w->small.head || big_may_start(w);
}

/* Under lock, after a job joined w->done: wake the loop, unless it has not
 * come back for the last ones yet (workers_take_done() returns them with
 * these, and arms the wake-up only once it finds none). One eventfd write
 * and one loop iteration per batch of results, not per result. */
static void done_wake(Workers *w) {
        if (!w->armed)
                return;
        w->armed = false;
        notify_send(w->efd);
}

/* A statx thread: the walk's directories and statx batches, one at a time. */
static void *stat_main(void *arg) {
        Workers *w = arg;
        /* its slot in held[] after the hashing workers' (w->n is final before it starts) */
        unsigned self = w->n + __atomic_fetch_add(&w->stat_started, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->stat.head && !w->stopping)
                        pthread_cond_wait(&w->stat_cond, &w->lock);
                if (w->stopping)
                        break;
                Job *j = take(&w->stat);
                w->quick_running++;
                pthread_mutex_unlock(&w->lock);
                hold(w, self, j->dir ? j->dir->path : j->stat->dir);
                if (j->dir)
                        dir_read_run(j->dir);
                else
                        stat_batch_run(j->stat);
                hold(w, self, NULL);
                pthread_mutex_lock(&w->lock);
                w->quick_running--;
                w->finished++;
                append(&w->done, j);
                done_wake(w);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* A worker hashing for a scan yields to the loop: the loop feeds the
 * workers, answers permission events and records what they found, and with
 * more threads than cores a woken worker took the loop's core from it while
 * the other worker ran out of work (200,000 small files on tmpfs, CPU-bound:
 * the loop used half a core and was preempted 0.5 s in a 3.6 s scan, mostly
 * right after it woke a worker; the workers waited 20 % of the time for
 * work). SCHED_BATCH: the share of the CPU any thread of its nice has, but
 * a woken worker waits for the running thread's slice instead of preempting
 * it (that scan: 3.08 s against 3.22 s, mean of 6 interleaved runs, faster
 * in 5; `xargs -P2 openssl` 2.53 s). A hash a use waits for (an on-access
 * job) runs as SCHED_OTHER. An unprivileged thread may switch both ways; a
 * nice +5 was faster still (2.98 s) but cannot be taken back without
 * CAP_SYS_NICE, and a use would then wait on a hash at the lower priority.
 * The policy is the thread's own (Linux), changed only when it must:
 * *now is SCHED_OTHER or SCHED_BATCH, or -1 (another: not to be changed). */
static void policy_for(int *now, const List *batch) {
        bool use = false;
        for (const Job *j = batch->head; j && !use; j = j->next)
                use = j->by_fd;
        int want = use ? SCHED_OTHER : SCHED_BATCH;
        struct sched_param sp = { .sched_priority = 0 };
        if (*now >= 0 && want != *now && pthread_setschedparam(pthread_self(), want, &sp) == 0)
                *now = want;
}

static void *worker_main(void *arg) {
        Workers *w = arg;
        unsigned self = __atomic_fetch_add(&w->started, 1, __ATOMIC_RELAXED);
        int policy;
        struct sched_param sp;
        int pol = pthread_getschedparam(pthread_self(), &policy, &sp) == 0 &&
                  (policy == SCHED_OTHER || policy == SCHED_BATCH) ? policy : -1;
        DirCache c = { .fd = -EBADF };
        pthread_mutex_lock(&w->lock);
        for (;;) {
                if (!has_work(w) && c.fd >= 0) {
                        pthread_mutex_unlock(&w->lock);
                        dir_cache_done(&c); /* nothing to do: pin no directory */
                        pthread_mutex_lock(&w->lock);
                }
                while (!has_work(w) && !w->stopping)
                        pthread_cond_wait(&w->cond, &w->lock);
                if (w->stopping)
                        break;
                List batch = {};
                bool big = false;
                if (w->small.head) {
                        /* a fair share of the small ones, several per lock */
                        size_t want = w->small.n / w->n;
                        want = want < 1 ? 1 : want > BATCH_MAX ? BATCH_MAX : want;
                        do
                                append(&batch, take(&w->small));
                        while (batch.n < want && w->small.head &&
                               w->small.head->pending.st.size <= BATCH_FILE_BYTES &&
                               batch.head->pending.st.size <= BATCH_FILE_BYTES);
                        w->quick_running++;
                } else {
                        append(&batch, take(&w->big));
                        batch.head->shared = w->big_running >= w->big_max; /* big_may_start()'s second case */
                        w->big_running++;
                        big = true;
                }
                pthread_mutex_unlock(&w->lock);

                List grew = {};
                policy_for(&pol, &batch);
                dir_cache_expire(&c);
                run_batch(w, self, &c, &batch, &grew);

                pthread_mutex_lock(&w->lock);
                list_splice(&w->big, &grew);
                if (big)
                        w->big_running--;
                else
                        w->quick_running--;
                w->finished++;
                if (big_may_start(w))
                        pthread_cond_signal(&w->cond); /* a big one may start now */
                list_splice(&w->done, &batch);
                done_wake(w);
        }
        pthread_mutex_unlock(&w->lock);
        dir_cache_done(&c);
        return NULL;
}

int workers_new(unsigned n, workers_after_hash_fn after_hash, Workers **ret) {
        if (n == 0)
                n = 1;
        Workers *w = calloc(1, sizeof(*w) + n * sizeof(pthread_t));
        if (!w)
                return -ENOMEM;
        w->after_hash = after_hash;
        w->held = calloc(n + STAT_THREADS, sizeof(*w->held));
        if (!w->held) {
                free(w);
                return -ENOMEM;
        }
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        pthread_cond_init(&w->stat_cond, NULL);
        w->armed = true;
        w->efd = notify_new();
        if (w->efd < 0) {
                int r = w->efd;
                free(w->held);
                free(w);
                return r;
        }
        for (unsigned i = 0; i < n; i++) {
                if (thread_start(&w->threads[i], worker_main, w) < 0)
                        break;
                w->n++;
        }
        for (unsigned i = 0; w->n > 0 && i < STAT_THREADS; i++) {
                if (thread_start(&w->stat_threads[i], stat_main, w) < 0)
                        break;
                w->n_stat++;
        }
        if (w->n == 0 || w->n_stat == 0) {
                workers_free(w);
                return -EAGAIN;
        }
        w->big_max = w->n > 1 ? w->n - 1 : 1;
        *ret = w;
        return 0;
}

void job_free(Job *j) {
        if (!j)
                return;
        for (Job *f; (f = j->followers);) {
                j->followers = f->next;
                job_free(f);
        }
        stat_batch_free(j->stat);
        dir_read_free(j->dir);
        free(j->sig);
        generation_unref(j->gen);
        free(j);
}

static void free_list(List *l) {
        for (Job *j; (j = take(l));)
                job_free(j);
}

Workers *workers_free(Workers *w) {
        if (!w)
                return NULL;
        /* stopping is also read by hashing workers (opt.cancel): a stop
         * does not wait for a 100 GiB file, so the join has no time limit */
        thread_request_stop(&w->lock, &w->cond, &w->stopping);
        pthread_mutex_lock(&w->lock);
        pthread_cond_broadcast(&w->stat_cond);
        pthread_mutex_unlock(&w->lock);
        for (unsigned i = 0; i < w->n; i++)
                (void) thread_join(w->threads[i], UINT64_MAX);
        for (unsigned i = 0; i < w->n_stat; i++)
                (void) thread_join(w->stat_threads[i], UINT64_MAX);
        free_list(&w->stage);
        free_list(&w->stat);
        free_list(&w->small);
        free_list(&w->big);
        free_list(&w->done);
        if (w->efd >= 0)
                close(w->efd);
        pthread_cond_destroy(&w->cond);
        pthread_cond_destroy(&w->stat_cond);
        pthread_mutex_destroy(&w->lock);
        free(w->held);
        free(w);
        return NULL;
}

int workers_eventfd(const Workers *w) {
        return w->efd;
}

unsigned workers_count(const Workers *w) {
        return w->n;
}

static Job **hashing_bucket(Workers *w, uint32_t dev, uint64_t ino) {
        return &w->hashing[mix64(ino ^ ((uint64_t) dev << 40)) & (HASHING_BUCKETS - 1)];
}

/* Jobs of inodes with more than one name, and of files found by name (the
 * inode's names unknown: another name may come next in the walk). */
static bool hashing_indexed(const Job *j) {
        return !j->by_fd && (j->pending.st.nlink > 1 || j->pending.unseen);
}

static void hashing_add(Workers *w, Job *j) {
        if (!hashing_indexed(j))
                return;
        Job **b = hashing_bucket(w, j->pending.st.dev, j->pending.st.ino);
        j->hashing_next = *b;
        *b = j;
        j->hashing = true;
}

static void hashing_remove(Workers *w, Job *j) {
        if (!j->hashing)
                return;
        for (Job **p = hashing_bucket(w, j->pending.st.dev, j->pending.st.ino); *p; p = &(*p)->hashing_next)
                if (*p == j) {
                        *p = j->hashing_next;
                        break;
                }
        j->hashing = false;
        j->hashing_next = NULL;
}

/* Whether b may follow a: the same inode, algorithm, and observation. A job
 * found by name has none (its observation is the worker's statx): of the
 * same inode is enough either way, as the follower is checked again on its
 * own observation when the leader is done (follower_done). Else the two
 * would be hashed both, and the one recorded last would take the inode's
 * entry, with its one name, from the other. */
static bool may_follow(const IverPending *a, const IverPending *b) {
        if (a->st.dev != b->st.dev || a->st.ino != b->st.ino || a->algo != b->algo)
                return false;
        if (a->unseen || b->unseen)
                return true;
        IverCookie ca = iver_cookie_from_stat(a->source, &a->st), cb = iver_cookie_from_stat(b->source, &b->st);
        return a->st.gen == b->st.gen && iver_cookie_equal(&ca, &cb);
}

void workers_finished(Workers *w, Job *j) {
        hashing_remove(w, j);
        for (Job *f = j->followers; f; f = f->next)
                if (f->light) {
                        f->light = false;
                        w->light--;
                }
}

void workers_submit(Workers *w, Job *j) {
        j->big = j->pending.st.size >= BIG_FILE_BYTES;
        j->light = !j->big;
        if (j->light)
                w->light++;
        hashing_add(w, j);
        append(&w->stage, j);
        if (w->stage.n >= STAGE_MAX)
                workers_flush(w);
}

bool workers_submit_or_follow(Workers *w, Job *j) {
        if (hashing_indexed(j))
                for (Job *l = *hashing_bucket(w, j->pending.st.dev, j->pending.st.ino); l; l = l->hashing_next)
                        /* and asks what j asks: the same signature read, and
                         * the same answer to a writer (a re-check's last try
                         * hashes under one; a leader that defers would not) */
                        if (may_follow(&l->pending, &j->pending) &&
                            l->opt.read_ima_xattr == j->opt.read_ima_xattr &&
                            l->opt.defer_writers == j->opt.defer_writers) {
                                /* counted in the window like a job: a walk of many
                                 * names of one inode does not run ahead unbounded */
                                j->light = true;
                                w->light++;
                                j->next = l->followers;
                                l->followers = j;
                                return true;
                        }
        workers_submit(w, j);
        return false;
}

void workers_flush(Workers *w) {
        if (!w->stage.head)
                return;
        List small = {}, big = {};
        for (Job *j; (j = take(&w->stage));)
                append(j->big ? &big : &small, j);
        size_t n = small.n + big.n;
        pthread_mutex_lock(&w->lock);
        list_splice(&w->small, &small);
        list_splice(&w->big, &big);
        if (n >= w->n)
                pthread_cond_broadcast(&w->cond);
        else
                for (size_t i = 0; i < n; i++)
                        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

bool workers_owe_progress(Workers *w, uint64_t *ret_finished) {
        pthread_mutex_lock(&w->lock);
        /* small files queued while every worker hashes a big one (one worker:
         * big_max is 1) wait for it: no progress owed until one is free */
        bool owe = w->quick_running > 0 || w->stat.head || (w->small.head && w->big_running < w->n);
        *ret_finished = w->finished;
        pthread_mutex_unlock(&w->lock);
        return owe;
}

void workers_held(Workers *w, char *buf, size_t size) {
        size_t len = 0;
        if (size == 0)
                return;
        buf[0] = 0;
        for (unsigned i = 0; i < w->n + w->n_stat && len + 1 < size; i++) {
                const char *p = __atomic_load_n(&w->held[i], __ATOMIC_ACQUIRE);
                if (!p)
                        continue;
                int k = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", p);
                if (k < 0)
                        break;
                len = len + (size_t) k < size ? len + (size_t) k : size - 1;
        }
}

size_t workers_light(const Workers *w) {
        return w->light;
}

void workers_submit_first(Workers *w, Job *j) {
        j->big = j->pending.st.size >= BIG_FILE_BYTES;
        j->light = !j->big;
        if (j->light)
                w->light++;
        pthread_mutex_lock(&w->lock);
        List *l = j->big ? &w->big : &w->small;
        j->next = l->head;
        l->head = j;
        if (!l->tail)
                l->tail = j;
        l->n++;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

void workers_submit_stat(Workers *w, Job *j) {
        pthread_mutex_lock(&w->lock);
        append(&w->stat, j);
        pthread_cond_signal(&w->stat_cond);
        pthread_mutex_unlock(&w->lock);
}

void workers_ack(Workers *w) {
        notify_ack(w->efd);
}

void workers_rewake(Workers *w) {
        notify_send(w->efd);
}

Job *workers_take_done(Workers *w) {
        pthread_mutex_lock(&w->lock);
        Job *j = w->done.head;
        w->done = (List) {};
        w->armed = !j;
        pthread_mutex_unlock(&w->lock);
        for (Job *k = j; k; k = k->next)
                if (k->light)
                        w->light--;
        return j;
}
