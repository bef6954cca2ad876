/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Incremental rescan walker. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "grow.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "pseudofs.h"
#include "walk.h"
#include "pathfd.h"

#define STEP_ENTRIES 2048
#define STAT_BATCHES_MAX 8U /* statx batches at the workers at a time */

typedef struct Dir {
        struct Dir *next;
        char path[];
} Dir;

struct Walk {
        IverContext *ctx;
        Workers *workers;
        const Reports *reports;
        Dir *todo;            /* stack of directories still to read */
        DIR *cur;
        char *cur_path;
        DirFiles cur_files;            /* which files directly in cur may be measured (none: an ancestor) */
        sd_event_source *source;
        uint64_t files;
        uint64_t dirs_done, dirs_todo; /* for the progress estimate */
        bool waiting;                  /* for room in the hashing window, or for statx batches */
        Job *batch;                    /* files of cur being gathered for the workers to statx */
        unsigned batches;              /* statx batches at the workers */
};

static int walk_step(sd_event_source *s, void *userdata);

int walk_new(sd_event *event, IverContext *ctx, Workers *workers, const Reports *reports, Walk **ret) {
        Walk *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->ctx = ctx;
        w->workers = workers;
        w->reports = reports;
        int r = sd_event_add_defer(event, &w->source, walk_step, w);
        if (r < 0) {
                free(w);
                return r;
        }
        (void) sd_event_source_set_description(w->source, "walk");
        (void) sd_event_source_set_priority(w->source, SD_EVENT_PRIORITY_IDLE);
        (void) sd_event_source_set_enabled(w->source, SD_EVENT_OFF);
        *ret = w;
        return 0;
}

Walk *walk_free(Walk *w) {
        if (!w)
                return NULL;
        while (w->todo) {
                Dir *d = w->todo;
                w->todo = d->next;
                free(d);
        }
        if (w->cur)
                closedir(w->cur);
        job_free(w->batch);
        free(w->cur_path);
        sd_event_source_unref(w->source);
        free(w);
        return NULL;
}

static int push(Walk *w, const char *path) {
        size_t len = strlen(path);
        Dir *d = malloc(sizeof(Dir) + len + 1);
        if (!d)
                return -ENOMEM;
        memcpy(d->path, path, len + 1);
        d->next = w->todo;
        w->todo = d;
        w->dirs_todo++;
        return 0;
}

int walk_add(Walk *w, const char *dir) {
        int r = push(w, dir);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(w->source, SD_EVENT_ON);
}

bool walk_busy(const Walk *w) {
        return w->todo || w->cur || w->batch || w->batches > 0;
}

static bool may_go_on(const Walk *w) {
        return report_has_room(w->reports, false) && w->batches < STAT_BATCHES_MAX;
}

void walk_resume(Walk *w) {
        if (w->waiting && report_has_room(w->reports, true) && w->batches < STAT_BATCHES_MAX) {
                w->waiting = false;
                (void) sd_event_source_set_enabled(w->source, SD_EVENT_ON);
        }
}

uint64_t walk_files_seen(const Walk *w) {
        return w->files;
}

void walk_dirs(const Walk *w, uint64_t *ret_done, uint64_t *ret_todo) {
        *ret_done = w->dirs_done;
        *ret_todo = w->dirs_todo;
}

/* Hand the gathered files to the workers for their statx (walk_stat_done
 * takes them back). */
static void batch_submit(Walk *w) {
        if (!w->batch)
                return;
        w->batches++;
        workers_submit_stat(w->workers, TAKE_PTR(w->batch));
}

static void job_freep(Job **j) {
        job_free(*j);
}

/* Add name (a file in the directory being read) to the statx batch. */
static int batch_add(Walk *w, const char *name) {
        if (!w->batch) {
                _cleanup_(job_freep) Job *j = calloc(1, sizeof(*j));
                StatBatch *b = j ? calloc(1, sizeof(*b)) : NULL;
                if (!b)
                        return -ENOMEM;
                j->stat = b;
                b->dirfd = fcntl(dirfd(w->cur), F_DUPFD_CLOEXEC, 3);
                if (b->dirfd < 0)
                        return -errno;
                b->dir = strdup(w->cur_path);
                if (!b->dir)
                        return -ENOMEM;
                /* as iver_context_stat() makes it */
                b->statx = iver_context_statx(w->ctx);
                b->want_version = iver_cookie_table_wants_version(iver_context_cookies(w->ctx));
                w->batch = TAKE_PTR(j);
        }
        StatBatch *b = w->batch->stat;
        size_t len = strlen(name) + 1;
        if (GROW(b->names, b->names_cap, b->names_len + len, 1024) < 0)
                return -ENOMEM;
        memcpy(b->names + b->names_len, name, len);
        b->name_off[b->n++] = (uint32_t) b->names_len;
        b->names_len += len;
        if (b->n == STAT_BATCH_MAX)
                batch_submit(w);
        return 0;
}

void walk_stat_done(Walk *w, StatBatch *b) {
        assert(w->batches > 0);
        w->batches--;
        for (unsigned i = 0; i < b->n; i++) {
                _cleanup_free_ char *p = path_join(b->dir, b->names + b->name_off[i]);
                if (!p) {
                        log_error_errno(-ENOMEM, "Out of memory while walking");
                        continue;
                }
                /* a failed statx: the queued check reports it */
                if (b->r[i] < 0 || !report_file_found(w->reports, p, &b->st[i], b->at[i]))
                        report_check(w->reports, p);
        }
}

/* Open the next directory to walk as w->cur: 1 opened, 0 none left (or this
 * one cannot be walked: the caller asks again), -ENOMEM. */
static int open_next(Walk *w) {
        Dir *d = w->todo;
        if (!d)
                return 0;
        w->todo = d->next;
        w->dirs_todo--;
        w->dirs_done++;
        free(w->cur_path);
        w->cur_path = strdup(d->path);
        free(d);
        if (!w->cur_path)
                return log_error_errno(-ENOMEM, "Out of memory while walking");
        /* no symlink on the way, and no PATH_MAX limit (pathfd.c) */
        int fd = path_open_dir(w->cur_path, O_RDONLY | O_NOATIME);
        if (fd < 0) {
                /* vanished, or a symlink now (measured as one where it is listed) */
                if (fd != -ENOENT && fd != -ENOTDIR && fd != -ELOOP)
                        report_unmeasurable(w->reports, w->cur_path, fd);
                return 1;
        }
        struct statfs sfs;
        const char *fs;
        if (fstatfs(fd, &sfs) == 0 && iver_fs_is_pseudo((uint64_t) sfs.f_type, &fs)) {
                /* never descend into proc, sysfs… (lib/pseudofs.h) */
                log_debug("Not walking %s: a pseudo filesystem (%s) is never measured", w->cur_path, fs);
                close(fd);
                return 1;
        }
        w->cur = fdopendir(fd);
        if (!w->cur) {
                close(fd);
                return 1;
        }
        report_dir_entered(w->reports, fd, w->cur_path);
        w->cur_files = report_dir_files(w->reports, w->cur_path);
        return 1;
}

/* Whether the policy may measure name, in the directory being read, by its
 * path alone (a path too long to build here: yes, the check decides). */
static bool file_wanted(Walk *w, const char *name) {
        char p[PATH_MAX];
        size_t a = strlen(w->cur_path);
        int n = snprintf(p, sizeof(p), "%s%s%s", w->cur_path, a > 0 && w->cur_path[a - 1] == '/' ? "" : "/", name);
        return n < 0 || (size_t) n >= sizeof(p) || report_file_wanted(w->reports, p);
}

/* One entry of the directory being read: a directory to walk, a file for
 * the statx batch; symlinks are measured by their target string, never
 * followed; FIFOs, sockets, devices: never measured. */
static int entry(Walk *w, const struct dirent *de) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                return 0;
        unsigned char type = de->d_type;
        if (type == DT_UNKNOWN) {
                struct stat st;
                if (fstatat(dirfd(w->cur), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG
                               : S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
        }
        if (type == DT_DIR) {
                _cleanup_free_ char *p = path_join(w->cur_path, de->d_name);
                if (!p)
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                if (report_dir_wanted(w->reports, p))
                        (void) push(w, p);
        } else if (w->cur_files != DIR_FILES_NONE && (type == DT_REG || type == DT_LNK || type == DT_UNKNOWN)) {
                /* (a directory only on the way to measured ones: its files
                 * are never looked at, as its watch ignores them; nor is a
                 * name no rule can match, /usr/lib/x.py under **.so*) */
                if (w->cur_files == DIR_FILES_SOME && !file_wanted(w, de->d_name))
                        return 0;
                w->files++;
                /* the statx on a worker, the rest when it is back */
                if (batch_add(w, de->d_name) < 0) {
                        _cleanup_free_ char *p = path_join(w->cur_path, de->d_name);
                        if (!p)
                                return log_error_errno(-ENOMEM, "Out of memory while walking");
                        report_check(w->reports, p);
                }
        }
        return 0;
}

static int walk_step(sd_event_source *s, void *userdata) {
        Walk *w = userdata;
        unsigned n = 0;
        int r;

        while (n < STEP_ENTRIES) {
                if (!may_go_on(w)) {
                        /* misses go to the workers from here: wait for
                         * room (walk_resume) rather than queue paths that
                         * would be looked at again at dispatch */
                        w->waiting = true;
                        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        break;
                }
                if (!w->cur) {
                        r = open_next(w);
                        if (r <= 0) {
                                if (r < 0)
                                        return r;
                                break;
                        }
                        continue;
                }
                errno = 0;
                struct dirent *de = readdir(w->cur);
                if (!de) {
                        batch_submit(w); /* it holds its own fd of the directory */
                        closedir(w->cur);
                        w->cur = NULL;
                        continue;
                }
                n++;
                r = entry(w, de);
                if (r < 0)
                        return r;
        }
        batch_submit(w); /* not left waiting while the loop does other things */
        if (!w->todo && !w->cur) {
                /* nothing left to read: what is left is at the workers (statx
                 * batches), and their return settles it (walk_stat_done, then
                 * the loop's settle check); not a step every loop iteration
                 * until then */
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                if (!walk_busy(w))
                        report_settled(w->reports);
        }
        return 0;
}
