/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Uses held until their measurement is listed: the waiters, the timer thread
 * that answers at deadlines (and reads the group when the loop does not), and
 * the loop's side of the hand-over (see onaccess.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "onaccess-internal.h"
#include "thread.h"

static ssize_t find(const OnAccess *o, uint64_t id) {
        for (size_t i = 0; i < o->n; i++)
                if (o->w[i].id == id)
                        return (ssize_t) i;
        return -1;
}

/* Under the lock; the waiter must be answered (or a note). */
static void drop(OnAccess *o, size_t i) {
        if (o->w[i].fd >= 0)
                close(o->w[i].fd);
        free(o->w[i].path);
        o->w[i] = o->w[--o->n];
}

/* Under the lock. Returns the new waiter or NULL (full, no memory). */
Waiter *oa_push(OnAccess *o, int fd, WaiterState state, bool exec) {
        if (o->n >= MAX_WAITERS)
                return NULL;
        if (o->n == o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 16;
                Waiter *w = realloc(o->w, cap * sizeof(Waiter));
                if (!w)
                        return NULL;
                o->w = w;
                o->cap = cap;
        }
        Waiter *w = &o->w[o->n++];
        *w = (Waiter) { .id = __atomic_add_fetch(&o->next_id, 1, __ATOMIC_RELAXED), .fd = fd, .state = state, .exec = exec,
                        .deadline = now_usec() + o->timeout_usec };
        return w;
}

/* The reading thread: reads the group (answering cached uses itself, handing
 * the rest to the loop as waiters) and answers waiters at their deadlines.
 * Touches only the waiters, the fast table and the group's fd. */
void *oa_thread_main(void *arg) {
        OnAccess *o = arg;
        /* cancelled only in its wait in read() (oa_read_events) */
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        for (;;) {
                uint64_t now = now_usec(), next = UINT64_MAX;
                bool fired = false;
                pthread_mutex_lock(&o->lock);
                if (o->stopping) {
                        pthread_mutex_unlock(&o->lock);
                        break;
                }
                for (size_t i = 0; i < o->n; i++) {
                        Waiter *w = &o->w[i];
                        if (w->answered)
                                continue;
                        if (w->deadline <= now) {
                                oa_respond(o, w->fd);
                                w->answered = w->timed_out = true;
                                fired = true;
                                INC(o->timeouts);
                        } else if (w->deadline < next)
                                next = w->deadline;
                }
                pthread_mutex_unlock(&o->lock);
                if (fired)
                        notify_send(o->loop_efd);
                if (next == UINT64_MAX) { /* nothing to answer at a deadline: wait in read() */
                        oa_read_events(o, true);
                        continue;
                }
                struct pollfd p[2] = { { .fd = o->thread_efd, .events = POLLIN }, { .fd = o->fd, .events = POLLIN } };
                int ms = next == UINT64_MAX ? -1 : next <= now ? 0 : (int) ((next - now + 999) / 1000);
                if (poll(p, 2, ms) < 0)
                        continue;
                if (p[0].revents & POLLIN)
                        notify_ack(o->thread_efd);
                if (p[1].revents & POLLIN)
                        oa_read_events(o, false);
        }
        return NULL;
}

/* On the loop: a violation entry for each use allowed without a check
 * (named by what the thread knew of it), and one for a queue overflow. */
static void list_unchecked(OnAccess *o) {
        Unchecked u[64];
        size_t n;
        uint64_t lost;
        bool overflowed;
        do {
                pthread_mutex_lock(&o->lock);
                n = MIN(o->n_unchecked, ELEMENTSOF(u));
                o->n_unchecked -= n;
                memcpy(u, o->unchecked_uses + o->n_unchecked, n * sizeof(Unchecked));
                lost = o->unchecked_lost;
                o->unchecked_lost = 0;
                overflowed = o->overflowed;
                o->overflowed = false;
                pthread_mutex_unlock(&o->lock);
                for (size_t i = 0; i < n; i++) {
                        o->ops.unchecked_use(o->ops.userdata, u[i].path, u[i].dev, u[i].ino, u[i].exec,
                                              "unmeasured: used before measured (too many waiting)");
                        free(u[i].path);
                }
                if (lost > 0)
                        o->ops.unchecked_use(o->ops.userdata, NULL, 0, 0, true, "unmeasured: uses allowed unchecked (too many waiting)");
                if (overflowed)
                        o->ops.unchecked_use(o->ops.userdata, NULL, 0, 0, true, "unmeasured: uses allowed by the kernel (on-access queue overflow)");
        } while (n == ELEMENTSOF(u));
}

/* On the loop: what the thread handed over (uses, timeouts, unchecked). */
int oa_on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        OnAccess *o = userdata;
        notify_ack(fd);
        list_unchecked(o);
        pthread_mutex_lock(&o->lock);
        for (size_t i = 0; i < o->n;) {
                Waiter *w = &o->w[i];
                char path[PATH_MAX + 1];
                if (w->state == W_NEW) {
                        uint64_t id = w->id;
                        int efd = w->fd;
                        bool exec = w->exec;
                        int pid = w->pid;
                        CheckerUse u;
                        w->state = W_BUSY;
                        pthread_mutex_unlock(&o->lock);
                        /* on record: answered with no name (no readlink) */
                        int r = o->ops.use(o->ops.userdata, efd, NULL, exec, pid, id, &u);
                        if (r == -EAGAIN)
                                r = oa_fd_path(efd, path, sizeof(path)) < 0 ? 0
                                                                            : o->ops.use(o->ops.userdata, efd, path, exec, pid, id, &u);
                        char *p = r == 1 ? strdup(path) : NULL;
                        pthread_mutex_lock(&o->lock);
                        ssize_t k = find(o, id);
                        if (k < 0) { /* cannot happen: only the loop drops */
                                free(p);
                                i = 0;
                                continue;
                        }
                        w = &o->w[k];
                        if (r == 1 && p) {
                                w->state = W_HASHING;
                                w->use = u;
                                w->path = p;
                        } else {
                                if (!w->answered)
                                        oa_respond(o, w->fd);
                                w->answered = true;
                                drop(o, (size_t) k);
                                INC(o->cached);
                        }
                        i = 0;
                        continue;
                }
                if (w->state == W_HASHING && w->timed_out) {
                        /* allowed at the deadline, before its measurement was listed */
                        CheckerUse u = w->use;
                        bool exec = w->exec;
                        snprintf(path, sizeof(path), "%s", w->path);
                        drop(o, i);
                        pthread_mutex_unlock(&o->lock);
                        o->ops.violation(o->ops.userdata, path, u.measure ? &u.d : NULL, u.algo,
                                          exec ? "unmeasured: executed before measured (on-access timeout)"
                                               : "unmeasured: opened before measured (on-access timeout)");
                        pthread_mutex_lock(&o->lock);
                        i = 0;
                        continue;
                }
                i++;
        }
        pthread_mutex_unlock(&o->lock);
        return 0;
}

void onaccess_job_done(OnAccess *o, uint64_t waiter) {
        if (!o || waiter == 0)
                return;
        pthread_mutex_lock(&o->lock);
        ssize_t i = find(o, waiter);
        if (i >= 0)
                o->w[i].done = true;
        pthread_mutex_unlock(&o->lock);
}

void onaccess_flushed(OnAccess *o) {
        if (!o)
                return;
        pthread_mutex_lock(&o->lock);
        for (size_t i = 0; i < o->n;) {
                Waiter *w = &o->w[i];
                if (w->state != W_HASHING || !w->done || w->timed_out) {
                        i++; /* a timed-out one waits for oa_on_wake to list its violation */
                        continue;
                }
                if (!w->answered)
                        oa_respond(o, w->fd);
                w->answered = true;
                INC(o->measured);
                drop(o, i);
        }
        pthread_mutex_unlock(&o->lock);
}

/* Exit (SIGTERM, or the loop ending for any reason): allow everything, stop
 * the thread, close the group (the kernel allows whatever is still queued). */
void oa_stop(OnAccess *o) {
        if (o->fd < 0)
                return;
        pthread_mutex_lock(&o->lock);
        o->stopping = true;
        for (size_t i = 0; i < o->n; i++)
                if (!o->w[i].answered) {
                        oa_respond(o, o->w[i].fd);
                        o->w[i].answered = true;
                }
        pthread_mutex_unlock(&o->lock);
        if (o->thread_running) {
                notify_send(o->thread_efd); /* in poll() */
                pthread_cancel(o->thread);  /* in its wait in read() */
                (void) thread_join(o->thread, UINT64_MAX); /* it ends at once */
                o->thread_running = false;
        }
        while (o->n > 0)
                drop(o, o->n - 1);
        while (o->n_unchecked > 0)
                free(o->unchecked_uses[--o->n_unchecked].path);
        close(o->fd);
        o->fd = -1;
}

unsigned onaccess_waiting(const OnAccess *o) {
        if (!o)
                return 0;
        unsigned k = 0;
        pthread_mutex_lock((pthread_mutex_t *) &o->lock);
        for (size_t i = 0; i < o->n; i++)
                k += !o->w[i].answered;
        pthread_mutex_unlock((pthread_mutex_t *) &o->lock);
        return k;
}
