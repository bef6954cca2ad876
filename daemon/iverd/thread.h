/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The daemon's threads (the hashing workers, the TPM thread, the list's sync
 * thread, the on-access timer thread) are started, stopped and joined here,
 * and hand results to the loop through one eventfd each. A thread never calls
 * into loop code: it notifies, the loop acknowledges and looks. */

/* The daemon's clock for deadlines, intervals and busy times: CLOCK_MONOTONIC,
 * in µs. A clock step never moves a deadline. */
uint64_t now_usec(void);
/* CLOCK_REALTIME in µs: only for times a person reads (status' coverage_since,
 * explain's recent writes), never for a deadline. */
uint64_t wall_usec(void);

/* Start fn(arg) with every signal blocked: the loop takes them (signalfd). */
int thread_start(pthread_t *ret, void *(*fn)(void *), void *arg);
/* Ask a thread to stop: *stop = true under lock (stored atomically, for
 * threads that read it without the lock), and cond (if any) broadcast. A
 * thread waiting in poll() is woken by its owner with notify_send(); the
 * on-access reading thread, which waits in read() on its group, is cancelled
 * there, the only point where it lets itself be (onaccess.c). */
void thread_request_stop(pthread_mutex_t *lock, pthread_cond_t *cond, bool *stop);
/* Join t within timeout_usec (UINT64_MAX: wait as long as it takes). A thread
 * that does not end by then (stuck in fdatasync on a hung disk, in a TPM
 * command that never returns) is detached: returns -ETIMEDOUT, and the
 * caller must leave it its memory. */
int thread_join(pthread_t t, uint64_t timeout_usec);

/* A condition variable whose timed waits run on now_usec()'s clock. */
void thread_cond_init(pthread_cond_t *cond);
/* Wait on cond (lock held) until signalled or now_usec() reaches until_usec. */
void thread_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t until_usec);

/* An eventfd (O_CLOEXEC, nonblocking) for one thread to wake the loop (or the
 * loop the thread): returns the fd or -errno. */
int notify_new(void);
void notify_send(int fd);
/* Clear the eventfd (the loop is about to look at everything). */
void notify_ack(int fd);
