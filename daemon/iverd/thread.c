/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Thread start, stop, timed join and the eventfd hand-over (thread.h). */
#include <errno.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "iver/stat.h"
#include "thread.h"

uint64_t now_usec(void) {
        return (uint64_t) iver_monotonic_ns() / 1000;
}

uint64_t wall_usec(void) {
        return (uint64_t) iver_now_ns() / 1000;
}

int thread_start(pthread_t *ret, void *(*fn)(void *), void *arg) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int r = -pthread_create(ret, NULL, fn, arg);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}

void thread_request_stop(pthread_mutex_t *lock, pthread_cond_t *cond, bool *stop) {
        pthread_mutex_lock(lock);
        __atomic_store_n(stop, true, __ATOMIC_RELAXED);
        if (cond)
                pthread_cond_broadcast(cond);
        pthread_mutex_unlock(lock);
}

int thread_join(pthread_t t, uint64_t timeout_usec) {
        if (timeout_usec == UINT64_MAX)
                return -pthread_join(t, NULL);
        /* pthread_timedjoin_np takes an absolute CLOCK_REALTIME time */
        uint64_t until = wall_usec() + timeout_usec;
        struct timespec ts = { .tv_sec = (time_t) (until / 1000000ULL), .tv_nsec = (long) (until % 1000000ULL) * 1000 };
        if (pthread_timedjoin_np(t, NULL, &ts) == 0)
                return 0;
        pthread_detach(t);
        return -ETIMEDOUT;
}

int notify_new(void) {
        int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

void notify_send(int fd) {
        uint64_t one = 1;
        (void) !write(fd, &one, sizeof(one));
}

void notify_ack(int fd) {
        uint64_t v;
        (void) !read(fd, &v, sizeof(v));
}

void thread_cond_init(pthread_cond_t *cond) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(cond, &ca);
        pthread_condattr_destroy(&ca);
}

void thread_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t until_usec) {
        struct timespec ts = { .tv_sec = (time_t) (until_usec / 1000000ULL),
                               .tv_nsec = (long) (until_usec % 1000000ULL) * 1000 };
        (void) pthread_cond_timedwait(cond, lock, &ts);
}
