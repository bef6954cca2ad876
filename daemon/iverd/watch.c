/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* inotify watches on measured directories: the fallback for filesystems
 * that whole-filesystem tracking (fstrack.c) cannot mark. The watch budget
 * (fs.inotify.max_user_watches) is root's, shared with every other root
 * program: iverd uses at most half of what was free when it first needed a
 * watch, and none at all where fanotify covers the filesystem. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "brake.h"
#include "log.h"
#include "fstrack.h"
#include "macro.h"
#include "path.h"
#include "watch.h"

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
                    IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)
/* A directory only on the way to measured ones (an ancestor, e.g. /tmp above
 * a measured tmpfs): its directories coming and going, not every write to
 * its files (a writer there would cost the daemon an event each). */
#define ANCESTOR_MASK (IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)

typedef struct WatchDir {
        int wd;
        bool ancestor;           /* ANCESTOR_MASK: its files are never measured */
        char *path;
} WatchDir;

struct Watch {
        IverContext *ctx;
        FsTrack *fstrack;
        const Reports *reports;
        int fd;
        sd_event_source *source;
        Brake brake;             /* a write storm's events merged in the kernel (brake.h) */
        WatchDir *dirs;          /* open addressing by wd */
        unsigned n, cap, tomb;
        unsigned failed;
        long budget;             /* watches iverd may hold (-1: not computed yet) */
        bool warned_limit;
        uint64_t overflows, events;
};

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata);

int watch_new(sd_event *event, IverContext *ctx, FsTrack *fstrack, const Reports *reports, Watch **ret) {
        Watch *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->ctx = ctx;
        w->fstrack = fstrack;
        w->reports = reports;
        w->budget = -1;
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0) {
                int r = -errno;
                free(w);
                return r;
        }
        int r = sd_event_add_io(event, &w->source, w->fd, EPOLLIN, on_inotify, w);
        if (r < 0) {
                close(w->fd);
                free(w);
                return r;
        }
        (void) sd_event_source_set_description(w->source, "inotify");
        brake_init(&w->brake, w->source, reports);
        *ret = w;
        return 0;
}

Watch *watch_free(Watch *w) {
        if (!w)
                return NULL;
        for (unsigned i = 0; i < w->cap; i++)
                free(w->dirs[i].path);
        free(w->dirs);
        brake_done(&w->brake);
        sd_event_source_unref(w->source);
        close(w->fd);
        free(w);
        return NULL;
}

static WatchDir *slot(Watch *w, int wd) {
        if (!w->cap)
                return NULL;
        for (unsigned i = (unsigned) wd * 2654435761U;; i++) {
                WatchDir *d = &w->dirs[i & (w->cap - 1)];
                if (d->wd == wd || d->wd == 0)
                        return d;
        }
}

static int grow(Watch *w) {
        unsigned ncap = w->cap ? w->cap * 2 : 1024;
        WatchDir *old = w->dirs;
        unsigned ocap = w->cap;
        w->dirs = calloc(ncap, sizeof(WatchDir));
        if (!w->dirs) {
                w->dirs = old;
                return -ENOMEM;
        }
        w->cap = ncap;
        w->tomb = 0;
        for (unsigned i = 0; i < ocap; i++)
                if (old[i].wd > 0)
                        *slot(w, old[i].wd) = old[i];
        free(old);
        return 0;
}

/* Removal by backward shift is not worth it: keep the path NULL and the wd
 * as a tombstone (-wd), rare (directory deletions). */
static void forget(Watch *w, int wd) {
        WatchDir *d = slot(w, wd);
        if (d && d->wd == wd) {
                free(d->path);
                d->path = NULL;
                d->wd = -wd;
                w->n--;
                w->tomb++;
        }
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
static void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_closedir_ _cleanup_(closedirp)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* inotify watches root already holds: "inotify wd:" lines in the fdinfo of
 * every inotify fd of every root process. Once, at the first watch. */
static long watches_in_use(void) {
        _cleanup_closedir_ DIR *proc = opendir("/proc");
        long n = 0;
        if (!proc)
                return 0;
        for (struct dirent *p; (p = readdir(proc));) {
                char path[600], link[64];
                if (p->d_name[0] < '0' || p->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/status", p->d_name);
                _cleanup_fclose_ FILE *st = fopen(path, "re");
                char line[256];
                bool root = false;
                while (st && fgets(line, sizeof(line), st))
                        if (strncmp(line, "Uid:", 4) == 0) {
                                root = strtol(line + 4, NULL, 10) == 0;
                                break;
                        }
                if (!root)
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
                _cleanup_closedir_ DIR *fds = opendir(path);
                for (struct dirent *f; fds && (f = readdir(fds));) {
                        snprintf(path, sizeof(path), "/proc/%s/fd/%s", p->d_name, f->d_name);
                        ssize_t k = readlink(path, link, sizeof(link) - 1);
                        if (k <= 0 || (link[k] = 0, strcmp(link, "anon_inode:inotify") != 0))
                                continue;
                        snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", p->d_name, f->d_name);
                        _cleanup_fclose_ FILE *fi = fopen(path, "re");
                        while (fi && fgets(line, sizeof(line), fi))
                                n += strncmp(line, "inotify wd:", 11) == 0;
                }
        }
        return n;
}

static long compute_budget(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "re");
        long max = 8192;
        if (!f || fscanf(f, "%ld", &max) != 1)
                max = 8192;
        long free_ = max - watches_in_use();
        long b = free_ / 2;
        log_debug("inotify budget: %ld watches (max_user_watches %ld, %ld free)", b, max, free_);
        return b > 0 ? b : 0;
}

long watch_budget(const Watch *w) {
        return w->budget;
}

void watch_add(Watch *w, const char *dir) {
        (void) watch_add_fd(w, -EBADF, dir);
}

bool watch_add_fd(Watch *w, int dirfd, const char *dir) {
        if (fstrack_add_dir(w->fstrack, dir))
                return true; /* the filesystem mark sees everything below */
        if (w->budget < 0)
                w->budget = compute_budget();
        /* through the open directory when there is one: the watch is on the
         * directory the walk reads, even if its name was taken by another
         * directory (or a symlink) since it was opened (off the loop,
         * dirread.c), and a name longer than PATH_MAX works */
        char proc[64];
        bool via_fd = dirfd >= 0;
        if (via_fd)
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dirfd);
        bool ancestor = report_dir_files(w->reports, dir) == DIR_FILES_NONE;
        int wd = (long) w->n < w->budget ? inotify_add_watch(w->fd, via_fd ? proc : dir, ancestor ? ANCESTOR_MASK : WATCH_MASK)
                                         : (errno = ENOSPC, -1);
        if (wd < 0) {
                if (errno == ENOSPC) {
                        fstrack_note_unwatched(w->fstrack, dir);
                        w->failed++;
                        if (!w->warned_limit) {
                                w->warned_limit = true;
                                log_warning("inotify watch budget (%ld, half of what was free) reached at %s: unwatched "
                                            "directories are covered by the periodic rescan (raise fs.inotify.max_user_watches)",
                                            w->budget, dir);
                        }
                } else if (errno != ENOENT && errno != ENOTDIR)
                        log_warning_errno(errno, "Cannot watch %s: %m", dir);
                return false;
        }
        if ((w->n + w->tomb + 1) * 2 > w->cap && grow(w) < 0)
                return false;
        WatchDir *d = slot(w, wd);
        if (d->wd == wd && d->path) {
                d->ancestor = ancestor; /* the mask was replaced (a policy reload) */
                if (strcmp(d->path, dir) != 0) { /* same directory under a new name (moved) */
                        char *p = strdup(dir);
                        if (p) {
                                free(d->path);
                                d->path = p;
                        }
                }
                return false;
        }
        d->path = strdup(dir);
        if (!d->path)
                return false;
        d->wd = wd;
        d->ancestor = ancestor;
        w->n++;
        return false;
}

unsigned watch_count(const Watch *w) {
        return w->n;
}

unsigned watch_failed(const Watch *w) {
        return w->failed;
}

uint64_t watch_overflows(const Watch *w) {
        return w->overflows;
}

uint64_t watch_events(const Watch *w) {
        return w->events;
}

uint64_t watch_pauses(const Watch *w) {
        return w ? w->brake.pauses : 0;
}

bool watch_paused(const Watch *w) {
        return w && brake_paused(&w->brake);
}

static void handle(Watch *w, const struct inotify_event *ev) {
        w->events++;
        if (ev->mask & IN_Q_OVERFLOW) {
                w->overflows++;
                log_warning("inotify queue overflowed: events were lost, rescanning everything");
                fstrack_coverage_break(w->fstrack, FSTRACK_INOTIFY);
                report_rescan(w->reports);
                return;
        }
        if (ev->mask & IN_IGNORED) {
                forget(w, ev->wd);
                return;
        }
        WatchDir *d = slot(w, ev->wd);
        if (!d || d->wd != ev->wd || !d->path)
                return;
        if (ev->len == 0)
                return; /* IN_DELETE_SELF / IN_MOVE_SELF: the parent's event covers it */
        if (d->ancestor && !(ev->mask & IN_ISDIR))
                return; /* a file created or moved where nothing is measured */
        _cleanup_free_ char *p = path_join(d->path, ev->name);
        if (!p)
                return;
        if (ev->mask & IN_ISDIR) {
                if (ev->mask & IN_MOVED_FROM)
                        report_forget_below(w->reports, p);
                if (ev->mask & (IN_CREATE | IN_MOVED_TO))
                        report_new_dir(w->reports, p);
                return;
        }

        /* a writer closed it: re-hash even if no timestamp moved (mmap stores) */
        if (ev->mask & IN_CLOSE_WRITE)
                iver_check_invalidate(w->ctx, p);
        /* a write alone (no close, no name change): no check while one is
         * due anyway (report_written); deletions and moves away: the check
         * sees ENOENT and drops the entry */
        if (ev->mask == IN_MODIFY)
                report_written(w->reports, p);
        else
                report_check(w->reports, p);
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watch *w = userdata;
        char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool pause = brake_before(&w->brake);

        for (int rounds = 0; rounds < 16; rounds++) { /* bounded: let other sources run */
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        handle(w, ev);
                        p += sizeof(*ev) + ev->len;
                }
        }
        brake_after(&w->brake, pause);
        return 0;
}
