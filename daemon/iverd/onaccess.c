/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fanotify permission events: measured before use (see onaccess.h).
 *
 * Who reads the group: in exec mode the event loop (a cache hit is answered
 * in the same wake-up); in open mode a thread, because the daemon's own
 * threads open files on marked filesystems (state files, configuration,
 * hashing by path) and must never wait for an answer from themselves. In exec
 * mode the thread takes over reading when the loop drained nothing for
 * STALL_USEC while events were pending. Uses the loop has not answered yet
 * are waiters; the thread answers them at their deadline. Only ever FAN_ALLOW:
 * iverd records, it does not enforce. */
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

#include "checker.h"
#include "log.h"
#include "manager.h"
#include "onaccess.h"

#define MAX_FS 64
#define MAX_WAITERS 4096
#define STALL_USEC 250000ULL
#define INC(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

typedef enum WaiterState {
        W_NEW,       /* read by the thread; the loop has not looked yet */
        W_BUSY,      /* the loop is looking (checker_use) */
        W_HASHING,   /* its measurement is submitted */
        W_NOTE,      /* a close-write read by the thread: no answer due */
} WaiterState;

typedef struct Waiter {
        uint64_t id;
        int fd;              /* the event's fd: the kernel's key for the answer */
        WaiterState state;
        bool exec;
        bool answered;       /* the kernel has its answer */
        bool timed_out;      /* answered by the thread at the deadline: a violation to list */
        bool done;           /* measured and recorded: answered after the flush */
        uint64_t deadline;
        CheckerUse use;
        char *path;
} Waiter;

struct OnAccess {
        Manager *m;
        IverOnAccess mode;
        int fd;
        uint64_t mask, timeout_usec;
        sd_event_source *source, *wake_source, *exit_source;
        uint32_t devs[MAX_FS];       /* packed as IverStat.dev */
        unsigned n_devs;
        pid_t self;

        pthread_mutex_t lock; /* the waiters, stopping, overflowed */
        Waiter *w;
        size_t n, cap;
        uint64_t next_id, drained;    /* relaxed atomics */
        bool stopping, overflowed;
        int loop_efd, thread_efd;
        pthread_t thread;
        bool thread_running;

        /* counters (relaxed atomics: both threads count) */
        uint64_t events, self_allowed, cached, measured, timeouts, unchecked, stalled_reads;
};

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void wake(int efd) {
        uint64_t one = 1;
        (void) !write(efd, &one, sizeof(one));
}

static void respond(OnAccess *o, int fd) {
        struct fanotify_response r = { .fd = fd, .response = FAN_ALLOW };
        (void) !write(o->fd, &r, sizeof(r));
}

static int fd_path(int fd, char *buf, size_t n) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t k = readlink(link, buf, n - 1);
        if (k <= 0 || buf[0] != '/')
                return -ENOENT;
        buf[k] = 0;
        return 0;
}

static ssize_t find(const OnAccess *o, uint64_t id) {
        for (size_t i = 0; i < o->n; i++)
                if (o->w[i].id == id)
                        return (ssize_t) i;
        return -1;
}

/* Under the lock; the waiter must be answered (or a note). */
static void drop(OnAccess *o, size_t i) {
        close(o->w[i].fd);
        free(o->w[i].path);
        o->w[i] = o->w[--o->n];
}

/* Under the lock. Returns the new waiter or NULL (full, no memory). */
static Waiter *push(OnAccess *o, int fd, WaiterState state, bool exec) {
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
        *w = (Waiter) { .id = __atomic_add_fetch(&o->next_id, 1, __ATOMIC_RELAXED), .fd = fd, .state = state, .exec = exec, .answered = state == W_NOTE,
                        .deadline = now_usec() + o->timeout_usec };
        return w;
}

/* A writer closed path: its cached digest is not to be trusted without a
 * look (stores through a shared mapping move no timestamp on tmpfs). */
static void note_closed(OnAccess *o, const char *path) {
        iver_check_invalidate(o->m->ctx, path);
        manager_queue(o->m, path);
}

/* On the loop: a use read by the loop itself (exec mode). */
static void use_inline(OnAccess *o, int fd, bool exec) {
        char path[PATH_MAX + 1];
        CheckerUse u;
        uint64_t id = __atomic_add_fetch(&o->next_id, 1, __ATOMIC_RELAXED);
        int r = checker_use(o->m, fd, NULL, exec, id, &u);
        if (r == -EAGAIN)
                r = fd_path(fd, path, sizeof(path)) < 0 ? 0 : checker_use(o->m, fd, path, exec, id, &u);
        if (r != 1) {
                respond(o, fd);
                close(fd);
                INC(o->cached);
                return;
        }
        pthread_mutex_lock(&o->lock);
        Waiter *w = push(o, fd, W_HASHING, exec);
        char *p = w ? strdup(path) : NULL;
        if (w && p) {
                w->id = id;
                w->use = u;
                w->path = p;
        } else if (w)
                o->n--;
        pthread_mutex_unlock(&o->lock);
        if (w && p) {
                wake(o->thread_efd); /* a new deadline */
                return;
        }
        /* cannot wait for it: allow now, and say so in the list */
        respond(o, fd);
        close(fd);
        INC(o->unchecked);
        checker_violation(o->m, path, u.measure ? &u.d : NULL, u.algo, "unmeasured: used before measured (too many waiting)");
}

/* Read what the group has. On the thread, uses become waiters for the loop. */
static void read_events(OnAccess *o, bool on_thread) {
        char buf[16384] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
        for (int rounds = 0; rounds < 16; rounds++) {
                ssize_t n = read(o->fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                /* a short read emptied the queue: no second read() for EAGAIN
                 * (what comes meanwhile wakes the loop again) */
                bool drained = (size_t) n < sizeof(buf) / 2;
                for (struct fanotify_event_metadata *ev = (void *) buf; FAN_EVENT_OK(ev, n); ev = FAN_EVENT_NEXT(ev, n)) {
                        bool perm = ev->mask & (FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM);
                        if (ev->fd < 0) {
                                if (ev->mask & FAN_Q_OVERFLOW) {
                                        pthread_mutex_lock(&o->lock);
                                        o->overflowed = true;
                                        pthread_mutex_unlock(&o->lock);
                                        wake(o->loop_efd);
                                }
                                continue;
                        }
                        INC(o->events);
                        if (perm && (ev->pid == o->self || ev->vers != FANOTIFY_METADATA_VERSION)) {
                                /* our own opens (hashing, state files): never wait for ourselves */
                                respond(o, ev->fd);
                                close(ev->fd);
                                INC(o->self_allowed);
                                continue;
                        }
                        bool exec = ev->mask & FAN_OPEN_EXEC_PERM;
                        if (on_thread) {
                                pthread_mutex_lock(&o->lock);
                                Waiter *w = push(o, ev->fd, perm ? W_NEW : W_NOTE, exec);
                                pthread_mutex_unlock(&o->lock);
                                if (!w) {
                                        if (perm)
                                                respond(o, ev->fd);
                                        close(ev->fd);
                                        INC(o->unchecked);
                                }
                                continue;
                        }
                        if (perm)
                                use_inline(o, ev->fd, exec);
                        else {
                                char path[PATH_MAX + 1];
                                if (ev->pid != o->self && fd_path(ev->fd, path, sizeof(path)) >= 0)
                                        note_closed(o, path);
                                close(ev->fd);
                        }
                }
                if (drained)
                        break;
        }
        if (on_thread)
                wake(o->loop_efd);
}

static int on_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        OnAccess *o = userdata;
        INC(o->drained);
        read_events(o, false);
        return 0;
}

/* The timer thread: answers at deadlines, reads the group in open mode (or
 * when the loop stalls). Touches only the waiters and the group's fd. */
static void *thread_main(void *arg) {
        OnAccess *o = arg;
        bool reader = o->mode == IVER_ON_ACCESS_OPEN;
        uint64_t stall_seen = 0, stall_since = 0;
        bool stall_watch = false;
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
                                respond(o, w->fd);
                                w->answered = w->timed_out = true;
                                fired = true;
                                INC(o->timeouts);
                        } else if (w->deadline < next)
                                next = w->deadline;
                }
                pthread_mutex_unlock(&o->lock);
                uint64_t drained = GET(o->drained);
                if (fired)
                        wake(o->loop_efd);

                struct pollfd p[2] = { { .fd = o->thread_efd, .events = POLLIN }, { .fd = o->fd, .events = POLLIN } };
                nfds_t nfds = reader || !stall_watch ? 2 : 1;
                uint64_t until = next;
                if (stall_watch && stall_since + STALL_USEC < until)
                        until = stall_since + STALL_USEC;
                int ms = until == UINT64_MAX ? -1 : until <= now ? 0 : (int) ((until - now + 999) / 1000);
                if (poll(p, nfds, ms) < 0)
                        continue;
                if (p[0].revents & POLLIN) {
                        uint64_t v;
                        (void) !read(o->thread_efd, &v, sizeof(v));
                }
                bool pending = nfds == 2 && (p[1].revents & POLLIN);
                if (reader) {
                        if (pending)
                                read_events(o, true);
                        continue;
                }
                /* exec mode: events pending while the loop reads nothing for
                 * STALL_USEC: read them here so their deadlines run */
                if (pending) {
                        stall_watch = true;
                        stall_seen = drained;
                        stall_since = now_usec();
                } else if (stall_watch && now_usec() >= stall_since + STALL_USEC) {
                        bool stuck = GET(o->drained) == stall_seen;
                        if (stuck) {
                                INC(o->stalled_reads);
                                read_events(o, true);
                        }
                        stall_watch = false;
                }
        }
        return NULL;
}

/* On the loop: what the thread handed over (uses, timeouts, notes). */
static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        OnAccess *o = userdata;
        uint64_t v;
        (void) !read(fd, &v, sizeof(v));
        pthread_mutex_lock(&o->lock);
        if (o->overflowed) {
                o->overflowed = false;
                pthread_mutex_unlock(&o->lock);
                log_warning("fanotify queue overflowed: rescanning");
                (void) manager_rescan(o->m);
                pthread_mutex_lock(&o->lock);
        }
        for (size_t i = 0; i < o->n;) {
                Waiter *w = &o->w[i];
                char path[PATH_MAX + 1];
                if (w->state == W_NOTE) {
                        bool ok = fd_path(w->fd, path, sizeof(path)) >= 0;
                        drop(o, i);
                        pthread_mutex_unlock(&o->lock);
                        if (ok)
                                note_closed(o, path);
                        pthread_mutex_lock(&o->lock);
                        i = 0;
                        continue;
                }
                if (w->state == W_NEW) {
                        uint64_t id = w->id;
                        int efd = w->fd;
                        bool exec = w->exec;
                        CheckerUse u;
                        w->state = W_BUSY;
                        pthread_mutex_unlock(&o->lock);
                        int r = fd_path(efd, path, sizeof(path)) < 0 ? 0 : checker_use(o->m, efd, path, exec, id, &u);
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
                                        respond(o, w->fd);
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
                        checker_violation(o->m, path, u.measure ? &u.d : NULL, u.algo,
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
                        i++; /* a timed-out one waits for on_wake to list its violation */
                        continue;
                }
                if (!w->answered)
                        respond(o, w->fd);
                w->answered = true;
                INC(o->measured);
                drop(o, i);
        }
        pthread_mutex_unlock(&o->lock);
}

/* Exit (SIGTERM, or the loop ending for any reason): allow everything, stop
 * the thread, close the group (the kernel allows whatever is still queued). */
static void stop(OnAccess *o) {
        if (o->fd < 0)
                return;
        o->source = sd_event_source_disable_unref(o->source);
        pthread_mutex_lock(&o->lock);
        o->stopping = true;
        for (size_t i = 0; i < o->n; i++)
                if (!o->w[i].answered) {
                        respond(o, o->w[i].fd);
                        o->w[i].answered = true;
                }
        pthread_mutex_unlock(&o->lock);
        if (o->thread_running) {
                wake(o->thread_efd);
                pthread_join(o->thread, NULL);
                o->thread_running = false;
        }
        while (o->n > 0)
                drop(o, o->n - 1);
        close(o->fd);
        o->fd = -1;
}

static int on_exit_event(sd_event_source *s, void *userdata) {
        stop(userdata);
        return 0;
}

OnAccess *onaccess_free(OnAccess *o) {
        if (!o)
                return NULL;
        stop(o);
        sd_event_source_disable_unref(o->wake_source);
        sd_event_source_disable_unref(o->exit_source);
        if (o->loop_efd >= 0)
                close(o->loop_efd);
        if (o->thread_efd >= 0)
                close(o->thread_efd);
        free(o->w);
        pthread_mutex_destroy(&o->lock);
        free(o);
        return NULL;
}

int onaccess_new(Manager *m, IverOnAccess mode, uint64_t timeout_usec, OnAccess **ret) {
        OnAccess *o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->m = m;
        o->mode = mode;
        o->self = getpid();
        o->timeout_usec = timeout_usec ?: IVER_CONF_DEFAULT_ON_ACCESS_TIMEOUT_USEC;
        o->mask = FAN_OPEN_EXEC_PERM | FAN_CLOSE_WRITE | (mode == IVER_ON_ACCESS_OPEN ? FAN_OPEN_PERM : 0);
        o->loop_efd = o->thread_efd = -1;
        pthread_mutex_init(&o->lock, NULL);
        o->fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
        int r = o->fd < 0 ? -errno : 0;
        /* an inode mark on "/" tells whether this kernel knows the events (FAN_OPEN_EXEC_PERM: 5.0) */
        if (r == 0 && fanotify_mark(o->fd, FAN_MARK_ADD, o->mask, AT_FDCWD, "/") < 0)
                r = -errno;
        if (r == 0)
                (void) fanotify_mark(o->fd, FAN_MARK_REMOVE, o->mask, AT_FDCWD, "/");
        if (r == 0 && ((o->loop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
                       (o->thread_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0))
                r = -errno;
        if (r == 0 && (r = sd_event_add_io(m->event, &o->source, o->fd, EPOLLIN, on_event, o)) >= 0 &&
            (r = sd_event_add_io(m->event, &o->wake_source, o->loop_efd, EPOLLIN, on_wake, o)) >= 0)
                r = sd_event_add_exit(m->event, &o->exit_source, on_exit_event, o);
        r = r < 0 ? r : 0;
        /* in open mode the thread reads; the loop must not compete with it */
        if (r == 0 && mode == IVER_ON_ACCESS_OPEN)
                (void) sd_event_source_set_enabled(o->source, SD_EVENT_OFF);
        if (r == 0) {
                r = -pthread_create(&o->thread, NULL, thread_main, o);
                o->thread_running = r == 0;
        }
        if (r < 0) {
                onaccess_free(o);
                return r;
        }
        *ret = o;
        return 0;
}

static bool marked(const OnAccess *o, uint32_t dev) {
        for (unsigned i = 0; i < o->n_devs; i++)
                if (o->devs[i] == dev)
                        return true;
        return false;
}

/* Mark the filesystem (dev) that path is on. */
static void mark(OnAccess *o, uint32_t dev, const char *path) {
        if (o->n_devs == MAX_FS)
                return;
        if (fanotify_mark(o->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, o->mask, AT_FDCWD, path) < 0) {
                log_warning_errno(errno, "Cannot add a fanotify filesystem mark for %s: %m (uses there are not held for measurement)",
                                  path);
                return;
        }
        log_debug("On-access %s checks on the filesystem of %s", iver_on_access_to_string(o->mode), path);
        o->devs[o->n_devs++] = dev;
}

void onaccess_add(OnAccess *o, const char *dir) {
        struct stat st;
        if (!o || o->fd < 0 || stat(dir, &st) < 0)
                return;
        uint32_t dev = (major(st.st_dev) << 20) | (minor(st.st_dev) & 0xfffffU);
        /* only filesystems that hold measured files: never "/" for a tree
         * below it on another filesystem (every exec there would wait on us) */
        if (!marked(o, dev) && checker_dir_measured(o->m, dir))
                mark(o, dev, dir);
}

void onaccess_add_file(OnAccess *o, uint32_t dev, const char *path) {
        if (o && o->fd >= 0 && !marked(o, dev))
                mark(o, dev, path);
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

unsigned onaccess_marks(const OnAccess *o) {
        return o ? o->n_devs : 0;
}

unsigned long long onaccess_events(const OnAccess *o) {
        return o ? GET(o->events) : 0;
}

void onaccess_status(const OnAccess *o, json_object *obj) {
        if (!o)
                return;
        json_object_object_add(obj, "on_access_timeout_usec", json_object_new_uint64(o->timeout_usec));
        json_object_object_add(obj, "on_access_waiting", json_object_new_uint64(onaccess_waiting(o)));
        json_object_object_add(obj, "on_access_allowed_on_record", json_object_new_uint64(GET(o->cached)));
        json_object_object_add(obj, "on_access_allowed_measured", json_object_new_uint64(GET(o->measured)));
        json_object_object_add(obj, "on_access_timeouts", json_object_new_uint64(GET(o->timeouts)));
        json_object_object_add(obj, "on_access_unchecked", json_object_new_uint64(GET(o->unchecked)));
        json_object_object_add(obj, "on_access_own_opens", json_object_new_uint64(GET(o->self_allowed)));
        json_object_object_add(obj, "on_access_stalled_reads", json_object_new_uint64(GET(o->stalled_reads)));
}
