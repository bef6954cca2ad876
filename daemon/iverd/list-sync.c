/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement list's fdatasync thread (list-sync.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "list-sync.h"
#include "thread.h"

#define JOIN_USEC (5 * 1000000ULL)

struct ListSync {
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int fd, efd;
        TpmThread *tpm;
        /* under lock: written, not yet taken by the thread */
        size_t n_todo;
        uint64_t end;
        uint32_t pcrs;
        size_t in_flight;       /* taken by the thread, not yet durable */
        size_t syncs;
        int error;
        bool stop;
};

static void *run(void *userdata) {
        ListSync *ls = userdata;

        pthread_mutex_lock(&ls->lock);
        for (;;) {
                while (ls->n_todo == 0 && !ls->stop)
                        pthread_cond_wait(&ls->cond, &ls->lock);
                if (ls->n_todo == 0)
                        break;  /* stopping, everything synced */
                /* take every group written so far: one fdatasync for all */
                size_t n = ls->n_todo;
                uint64_t end = ls->end;
                uint32_t pcrs = ls->pcrs;
                ls->n_todo = 0;
                ls->pcrs = 0;
                ls->in_flight = n;
                bool failed = ls->error != 0;
                pthread_mutex_unlock(&ls->lock);

                int r = 0;
                if (!failed && fdatasync(ls->fd) < 0)
                        r = -errno;
                /* durable: now the PCR may hold them (never after a failure) */
                if (!failed && r == 0 && ls->tpm)
                        tpm_thread_push(ls->tpm, n, end, pcrs);

                pthread_mutex_lock(&ls->lock);
                ls->in_flight = 0;
                if (!failed) {
                        ls->syncs++;
                        if (r < 0)
                                ls->error = r;
                }
                notify_send(ls->efd);
        }
        pthread_mutex_unlock(&ls->lock);
        return NULL;
}

int list_sync_new(int fd, TpmThread *tpm, ListSync **ret) {
        ListSync *ls = calloc(1, sizeof(*ls));
        int r;

        if (!ls)
                return -ENOMEM;
        ls->fd = ls->efd = -EBADF;
        ls->tpm = tpm;
        pthread_mutex_init(&ls->lock, NULL);
        pthread_cond_init(&ls->cond, NULL);
        ls->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (ls->fd < 0) {
                r = -errno;
                goto fail;
        }
        ls->efd = r = notify_new();
        if (r < 0)
                goto fail;
        r = thread_start(&ls->thread, run, ls);
        if (r < 0)
                goto fail;
        ls->started = true;
        *ret = ls;
        return 0;
fail:
        list_sync_free(ls);
        return r;
}

ListSync *list_sync_free(ListSync *ls) {
        if (!ls)
                return NULL;
        if (ls->started) {
                thread_request_stop(&ls->lock, &ls->cond, &ls->stop);
                if (thread_join(ls->thread, JOIN_USEC) < 0)
                        return ls;      /* stuck in fdatasync on a hung disk */
        }
        if (ls->fd >= 0)
                close(ls->fd);
        if (ls->efd >= 0)
                close(ls->efd);
        pthread_cond_destroy(&ls->cond);
        pthread_mutex_destroy(&ls->lock);
        free(ls);
        return NULL;
}

void list_sync_submit(ListSync *ls, size_t n, uint64_t end, uint32_t pcrs) {
        pthread_mutex_lock(&ls->lock);
        ls->n_todo += n;
        ls->end = end;
        ls->pcrs |= pcrs;
        pthread_cond_signal(&ls->cond);
        pthread_mutex_unlock(&ls->lock);
}

size_t list_sync_pending(ListSync *ls) {
        pthread_mutex_lock(&ls->lock);
        size_t n = ls->n_todo + ls->in_flight;
        pthread_mutex_unlock(&ls->lock);
        return n;
}

void list_sync_stats(ListSync *ls, size_t *ret_syncs, int *ret_error) {
        pthread_mutex_lock(&ls->lock);
        *ret_syncs = ls->syncs;
        *ret_error = ls->error;
        pthread_mutex_unlock(&ls->lock);
}

int list_sync_fd(const ListSync *ls) {
        return ls->efd;
}

void list_sync_ack(ListSync *ls) {
        notify_ack(ls->efd);
}
