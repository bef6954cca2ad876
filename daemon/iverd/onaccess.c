/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fanotify on-access triggers. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "manager.h"
#include "onaccess.h"

#define MAX_FS 64

struct OnAccess {
        Manager *m;
        int fd;
        uint64_t mask;
        sd_event_source *source;
        dev_t devs[MAX_FS];
        unsigned n_devs;
        unsigned long long events;
        pid_t self;
};

static int on_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        OnAccess *o = userdata;
        char buf[16384] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));

        for (int rounds = 0; rounds < 16; rounds++) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (struct fanotify_event_metadata *ev = (void *) buf; FAN_EVENT_OK(ev, n); ev = FAN_EVENT_NEXT(ev, n)) {
                        if (ev->vers != FANOTIFY_METADATA_VERSION)
                                continue;
                        if (ev->fd < 0) {
                                if (ev->mask & FAN_Q_OVERFLOW) {
                                        log_warning("fanotify queue overflowed: rescanning");
                                        (void) manager_rescan(o->m);
                                }
                                continue;
                        }
                        o->events++;
                        /* our own hashing opens files: not a use worth a check */
                        if (ev->pid != o->self) {
                                char link[64], path[PATH_MAX + 1];
                                snprintf(link, sizeof(link), "/proc/self/fd/%d", ev->fd);
                                ssize_t k = readlink(link, path, sizeof(path) - 1);
                                if (k > 0 && path[0] == '/') {
                                        path[k] = 0;
                                        if (ev->mask & FAN_CLOSE_WRITE)
                                                iver_check_invalidate(o->m->ctx, path);
                                        manager_queue(o->m, path);
                                }
                        }
                        close(ev->fd);
                }
        }
        return 0;
}

int onaccess_new(Manager *m, IverOnAccess mode, OnAccess **ret) {
        OnAccess *o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->m = m;
        o->self = getpid();
        o->mask = FAN_CLOSE_WRITE | FAN_OPEN_EXEC | (mode == IVER_ON_ACCESS_OPEN ? FAN_OPEN : 0);
        o->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
        if (o->fd < 0) {
                int r = -errno;
                free(o);
                return log_error_errno(r, "fanotify_init failed: %m (OnAccess= needs CAP_SYS_ADMIN)");
        }
        int r = sd_event_add_io(m->event, &o->source, o->fd, EPOLLIN, on_event, o);
        if (r < 0) {
                close(o->fd);
                free(o);
                return r;
        }
        *ret = o;
        return 0;
}

OnAccess *onaccess_free(OnAccess *o) {
        if (!o)
                return NULL;
        sd_event_source_disable_unref(o->source);
        close(o->fd);
        free(o);
        return NULL;
}

void onaccess_add(OnAccess *o, const char *dir) {
        struct stat st;
        if (!o || stat(dir, &st) < 0)
                return;
        for (unsigned i = 0; i < o->n_devs; i++)
                if (o->devs[i] == st.st_dev)
                        return;
        if (o->n_devs == MAX_FS)
                return;
        if (fanotify_mark(o->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, o->mask, AT_FDCWD, dir) < 0) {
                log_warning_errno(errno, "Cannot add a fanotify filesystem mark for %s: %m", dir);
                return;
        }
        o->devs[o->n_devs++] = st.st_dev;
}

unsigned onaccess_marks(const OnAccess *o) {
        return o ? o->n_devs : 0;
}

unsigned long long onaccess_events(const OnAccess *o) {
        return o ? o->events : 0;
}
