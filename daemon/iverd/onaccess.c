/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fanotify permission events: measured before use (see onaccess.h).
 *
 * Who reads the group: a thread, in both modes. The daemon's own threads
 * open files on marked filesystems (state files, configuration, hashing by
 * path) and must never wait for an answer from themselves; and a cached use
 * is answered by the thread itself, at a bare listener's cost
 * (onaccess-fast.c), with no wake-up of the loop. Uses it cannot answer are
 * waiters for the loop; the thread answers them at their deadline. Only ever
 * FAN_ALLOW:
 * iverd records, it does not enforce. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "onaccess-internal.h"
#include "thread.h"

void oa_respond(OnAccess *o, int fd) {
        struct fanotify_response r = { .fd = fd, .response = FAN_ALLOW };
        (void) !write(o->fd, &r, sizeof(r));
}

int oa_fd_path(int fd, char *buf, size_t n) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t k = readlink(link, buf, n - 1);
        if (k <= 0 || buf[0] != '/')
                return -ENOENT;
        buf[k] = 0;
        return 0;
}

void oa_allow_unchecked(OnAccess *o, int fd, bool exec) {
        char path[PATH_MAX + 1];
        struct stat st;
        Unchecked u = { .exec = exec };
        if (fstat(fd, &st) == 0) {
                u.dev = (major(st.st_dev) << 20) | (minor(st.st_dev) & 0xfffffU);
                u.ino = (uint64_t) st.st_ino;
        }
        if (oa_fd_path(fd, path, sizeof(path)) >= 0)
                u.path = strdup(path);
        oa_respond(o, fd);
        close(fd);
        INC(o->unchecked);
        pthread_mutex_lock(&o->lock);
        if (o->n_unchecked < MAX_UNCHECKED)
                o->unchecked_uses[o->n_unchecked++] = u;
        else {
                free(u.path);
                o->unchecked_lost++;
        }
        pthread_mutex_unlock(&o->lock);
        notify_send(o->loop_efd);
}

/* On the thread: read what the group has; uses not answered from the fast
 * table become waiters for the loop. The group's fd blocks: with nothing to
 * time (wait), the first read() is the thread's only wait, so a use costs
 * one syscall fewer than poll() and read(); oa_stop cancels it there, and
 * only there. Every later read() is made only for what FIONREAD shows. */
void oa_read_events(OnAccess *o, bool wait) {
        char buf[16384] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
        bool handed = false; /* the loop has something to look at (a wake-up voids what it published) */
        for (int rounds = 0; rounds < 16; rounds++) {
                int queued = 0;
                if (rounds > 0 && (ioctl(o->fd, FIONREAD, &queued) < 0 || queued <= 0))
                        break;
                if (wait && rounds == 0)
                        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
                ssize_t n = read(o->fd, buf, sizeof(buf));
                if (wait && rounds == 0)
                        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
                if (n <= 0)
                        break;
                /* a short read emptied the queue: no FIONREAD for nothing
                 * (what comes meanwhile is read next time round) */
                bool drained = (size_t) n < sizeof(buf) / 2;
                for (struct fanotify_event_metadata *ev = (void *) buf; FAN_EVENT_OK(ev, n); ev = FAN_EVENT_NEXT(ev, n)) {
                        bool perm = ev->mask & (FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM);
                        if (ev->fd < 0) {
                                /* the kernel allowed uses it could not queue
                                 * (a bounded queue only): the loop lists it */
                                if (ev->mask & FAN_Q_OVERFLOW) {
                                        INC(o->overflows);
                                        pthread_mutex_lock(&o->lock);
                                        o->overflowed = true;
                                        pthread_mutex_unlock(&o->lock);
                                        notify_send(o->loop_efd);
                                }
                                continue;
                        }
                        INC(o->events);
                        if (!perm) { /* the group asks for nothing else; be safe */
                                close(ev->fd);
                                continue;
                        }
                        if (ev->pid == o->self || ev->vers != FANOTIFY_METADATA_VERSION) {
                                /* our own opens (hashing, state files): never wait for ourselves */
                                oa_respond(o, ev->fd);
                                close(ev->fd);
                                INC(o->self_allowed);
                                continue;
                        }
                        bool exec = ev->mask & FAN_OPEN_EXEC_PERM;
                        if (oa_fast_use(o, ev->fd, exec)) {
                                oa_respond(o, ev->fd);
                                close(ev->fd);
                                INC(o->cached);
                                INC(o->by_reader);
                                continue;
                        }
                        pthread_mutex_lock(&o->lock);
                        Waiter *w = oa_push(o, ev->fd, W_NEW, exec);
                        if (w)
                                w->pid = ev->pid;
                        pthread_mutex_unlock(&o->lock);
                        if (!w)
                                oa_allow_unchecked(o, ev->fd, exec);
                        handed = true;
                }
                if (drained)
                        break;
        }
        if (handed)
                notify_send(o->loop_efd);
}

static int on_exit_event(sd_event_source *s, void *userdata) {
        oa_stop(userdata);
        return 0;
}

OnAccess *onaccess_free(OnAccess *o) {
        if (!o)
                return NULL;
        oa_stop(o);
        sd_event_source_disable_unref(o->wake_source);
        sd_event_source_disable_unref(o->exit_source);
        if (o->loop_efd >= 0)
                close(o->loop_efd);
        if (o->thread_efd >= 0)
                close(o->thread_efd);
        free(o->w);
        pthread_mutex_destroy(&o->lock);
        pthread_mutex_destroy(&o->fast_lock);
        free(o);
        return NULL;
}

int onaccess_new(sd_event *event, const OnAccessOps *ops, IverOnAccess mode, bool rule_opens, uint64_t timeout_usec,
                 OnAccess **ret) {
        OnAccess *o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->event = event;
        o->ops = *ops;
        o->mode = mode;
        o->self = getpid();
        o->timeout_usec = timeout_usec ?: IVER_CONF_DEFAULT_ON_ACCESS_TIMEOUT_USEC;
        /* uses only: writes are the change tracker's (fstrack.c), so a write
         * storm never queues ahead of, or takes the waiter slots of, a use */
        /* opens too in open mode, or where a rule asks for them (func=open;
         * the policy at start: a reload that adds one takes a restart) */
        bool opens = mode == IVER_ON_ACCESS_OPEN || rule_opens;
        o->mask = FAN_OPEN_EXEC_PERM | (opens ? FAN_OPEN_PERM : 0);
        o->loop_efd = o->thread_efd = o->track_fd = -1;
        o->epoch = 1; /* awake */
        pthread_mutex_init(&o->lock, NULL);
        pthread_mutex_init(&o->fast_lock, NULL);
        /* The kernel allows a permission event it cannot queue, with no
         * event: an unlimited queue (its memory is charged to the daemon)
         * makes every use wait for an answer. Without CAP_SYS_ADMIN the
         * queue is fs.fanotify.max_queued_events long, and an overflow is
         * listed as a violation entry. */
        unsigned flags = FAN_CLASS_CONTENT | FAN_CLOEXEC; /* blocking: see oa_read_events */
        bool bounded = getenv("IVERD_TEST_BOUNDED_QUEUE"); /* test knob: as without CAP_SYS_ADMIN */
        o->fd = bounded ? -1 : fanotify_init(flags | FAN_UNLIMITED_QUEUE, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
        o->unlimited = o->fd >= 0;
        if (o->fd < 0 && (bounded || errno == EPERM)) {
                o->fd = fanotify_init(flags, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
                if (o->fd >= 0)
                        log_notice("On-access queue bounded (no CAP_SYS_ADMIN for FAN_UNLIMITED_QUEUE): "
                                   "uses the kernel cannot queue are listed as one violation entry per overflow");
        }
        int r = o->fd < 0 ? -errno : 0;
        /* an inode mark on "/" tells whether this kernel knows the events (FAN_OPEN_EXEC_PERM: 5.0) */
        if (r == 0 && fanotify_mark(o->fd, FAN_MARK_ADD, o->mask, AT_FDCWD, "/") < 0)
                r = -errno;
        if (r == 0)
                (void) fanotify_mark(o->fd, FAN_MARK_REMOVE, o->mask, AT_FDCWD, "/");
        if (r == 0 && (o->loop_efd = notify_new()) < 0)
                r = o->loop_efd;
        if (r == 0 && (o->thread_efd = notify_new()) < 0)
                r = o->thread_efd;
        if (r == 0 && (r = sd_event_add_io(event, &o->wake_source, o->loop_efd, EPOLLIN, oa_on_wake, o)) >= 0)
                r = sd_event_add_exit(event, &o->exit_source, on_exit_event, o);
        /* uses before anything else the loop has to do (change events of a
         * write storm, scan work): a held use waits for the loop */
        if (r >= 0)
                r = sd_event_source_set_priority(o->wake_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r >= 0) {
                (void) sd_event_source_set_description(o->wake_source, "onaccess-wake");
                (void) sd_event_source_set_description(o->exit_source, "onaccess-exit");
        }
        r = r < 0 ? r : 0;
        if (r == 0) {
                r = thread_start(&o->thread, oa_thread_main, o);
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
        if (!marked(o, dev) && o->ops.dir_measured(o->ops.userdata, dir))
                mark(o, dev, dir);
}

void onaccess_add_file(OnAccess *o, uint32_t dev, const char *path) {
        if (o && o->fd >= 0 && !marked(o, dev))
                mark(o, dev, path);
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
        json_object_object_add(obj, "on_access_allowed_at_once", json_object_new_uint64(GET(o->cached)));
        json_object_object_add(obj, "on_access_allowed_by_reader", json_object_new_uint64(GET(o->by_reader)));
        json_object_object_add(obj, "on_access_allowed_measured", json_object_new_uint64(GET(o->measured)));
        json_object_object_add(obj, "on_access_timeouts", json_object_new_uint64(GET(o->timeouts)));
        json_object_object_add(obj, "on_access_unchecked", json_object_new_uint64(GET(o->unchecked)));
        json_object_object_add(obj, "on_access_own_opens", json_object_new_uint64(GET(o->self_allowed)));
        json_object_object_add(obj, "on_access_overflows", json_object_new_uint64(GET(o->overflows)));
        json_object_object_add(obj, "on_access_queue_unlimited", json_object_new_boolean(o->unlimited));
}
