/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Worker threads hash files; results return to the loop via an eventfd. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "appraisal.h"
#include "workers.h"

struct Workers {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        Job *todo_head, *todo_tail;
        Job *done_head, *done_tail;
        bool stopping;
        int efd;
        unsigned n;
        pthread_t threads[];
};

static void append(Job **head, Job **tail, Job *j) {
        j->next = NULL;
        if (*tail)
                (*tail)->next = j;
        else
                *head = j;
        *tail = j;
}

/* Measure path without following a symlink in any component: the parent
 * directory is pinned with openat2(RESOLVE_NO_SYMLINKS) and the file is
 * looked up (AT_SYMLINK_NOFOLLOW, O_NOFOLLOW) from there. Otherwise a
 * measured directory swapped for a symlink between the event and the hash
 * would have a file outside the policy measured (and listed) under the
 * name of one inside it. A path through a symlink is treated as gone. */
int workers_measure_path(const char *path, const IverMeasureOptions *opt, IverMeasurement *ret) {
        const char *slash = strrchr(path, '/');
        if (!slash || slash[1] == 0)
                return iver_measure(AT_FDCWD, path, opt, ret);
        size_t dlen = slash == path ? 1 : (size_t) (slash - path);
        char *dir = strndup(path, dlen);
        if (!dir)
                return -ENOMEM;
        struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS };
        int dfd = (int) syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
        int e = errno;
        free(dir);
        if (dfd < 0) {
                if (e == ENOSYS || e == EPERM) /* no openat2 (old kernel, seccomp) */
                        return iver_measure(AT_FDCWD, path, opt, ret);
                return e == ELOOP ? -ENOTDIR : -e;
        }
        int r = iver_measure(dfd, slash + 1, opt, ret);
        close(dfd);
        return r;
}

static void *worker_main(void *arg) {
        Workers *w = arg;
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->todo_head && !w->stopping)
                        pthread_cond_wait(&w->cond, &w->lock);
                if (w->stopping)
                        break;
                Job *j = w->todo_head;
                w->todo_head = j->next;
                if (!w->todo_head)
                        w->todo_tail = NULL;
                pthread_mutex_unlock(&w->lock);

                j->opt.read_ima_xattr = true; /* appraisal and ima-sig entries: read with the hash */
                j->r = workers_measure_path(j->path, &j->opt, &j->m);
                if (j->r >= 0)
                        appraisal_run(j);

                pthread_mutex_lock(&w->lock);
                append(&w->done_head, &w->done_tail, j);
                uint64_t one = 1;
                (void) !write(w->efd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int workers_new(unsigned n, Workers **ret) {
        if (n == 0)
                n = 1;
        Workers *w = calloc(1, sizeof(*w) + n * sizeof(pthread_t));
        if (!w)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                int r = -errno;
                free(w);
                return r;
        }
        /* workers never take signals: the loop owns them (signalfd) */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        for (unsigned i = 0; i < n; i++) {
                if (pthread_create(&w->threads[i], NULL, worker_main, w) != 0)
                        break;
                w->n++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (w->n == 0) {
                workers_free(w);
                return -EAGAIN;
        }
        *ret = w;
        return 0;
}

void job_free(Job *j) {
        if (!j)
                return;
        free(j->sig);
        free(j);
}

Workers *workers_free(Workers *w) {
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        w->stopping = true;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        for (unsigned i = 0; i < w->n; i++)
                pthread_join(w->threads[i], NULL);
        for (Job *j = w->todo_head, *next; j; j = next) {
                next = j->next;
                job_free(j);
        }
        for (Job *j = w->done_head, *next; j; j = next) {
                next = j->next;
                job_free(j);
        }
        if (w->efd >= 0)
                close(w->efd);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

int workers_eventfd(const Workers *w) {
        return w->efd;
}

unsigned workers_count(const Workers *w) {
        return w->n;
}

void workers_submit(Workers *w, Job *j) {
        pthread_mutex_lock(&w->lock);
        append(&w->todo_head, &w->todo_tail, j);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

Job *workers_take_done(Workers *w) {
        uint64_t v;
        (void) !read(w->efd, &v, sizeof(v));
        pthread_mutex_lock(&w->lock);
        Job *j = w->done_head;
        w->done_head = w->done_tail = NULL;
        pthread_mutex_unlock(&w->lock);
        return j;
}
