/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Incremental rescan walker. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "walk.h"

#define STEP_ENTRIES 2048
#define STAT_BATCHES_MAX 8U /* statx batches at the statx threads at a time */
#define READS_MAX 8U        /* directories read, or read and waiting (dirread.h: 14 KiB, 29 with statx) */

typedef struct Dir {
        struct Dir *next;
        uint32_t covered;     /* its parent's covering filesystem mark (0: none) */
        char path[];
} Dir;

/* A directory read (dirread.h) waiting for its entries to be looked at. */
typedef struct Ready {
        struct Ready *next;
        DirRead *d;
} Ready;

struct Walk {
        IverContext *ctx;
        Workers *workers;
        const Reports *reports;
        Dir *todo;            /* stack of directories still to read */
        unsigned reading;     /* directories at the statx threads, or back and not yet looked at
                               * (ready): what bounds their buffers' memory */
        Ready *ready, **ready_tail; /* read, in the order they came back */
        DirRead *cur;         /* the directory whose entries are being looked at */
        size_t pos;           /* its next entry */
        uint32_t cur_covered; /* the filesystem mark covering cur's (0: none): its subdirectories' */
        sd_event_source *source;
        uint64_t files;
        uint64_t dirs_done, dirs_todo; /* for the progress estimate */
        bool waiting;                  /* for room in the hashing window, or for statx batches */
        Job *batch;                    /* files of cur being gathered for the statx threads */
        unsigned batches;              /* statx batches at the statx threads */
};

static int walk_step(sd_event_source *s, void *userdata);

int walk_new(sd_event *event, IverContext *ctx, Workers *workers, const Reports *reports, Walk **ret) {
        Walk *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->ctx = ctx;
        w->workers = workers;
        w->reports = reports;
        w->ready_tail = &w->ready;
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
        while (w->ready) {
                Ready *r = w->ready;
                w->ready = r->next;
                dir_read_free(r->d);
                free(r);
        }
        dir_read_free(w->cur);
        job_free(w->batch);
        sd_event_source_unref(w->source);
        free(w);
        return NULL;
}

static int push(Walk *w, const char *path, uint32_t covered) {
        size_t len = strlen(path);
        Dir *d = malloc(sizeof(Dir) + len + 1);
        if (!d)
                return -ENOMEM;
        memcpy(d->path, path, len + 1);
        d->covered = covered;
        d->next = w->todo;
        w->todo = d;
        w->dirs_todo++;
        return 0;
}

int walk_add(Walk *w, const char *dir) {
        int r = push(w, dir, 0);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(w->source, SD_EVENT_ON);
}

bool walk_busy(const Walk *w) {
        return w->todo || w->reading > 0 || w->ready || w->cur || w->batch || w->batches > 0;
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
                b->dirfd = fcntl(w->cur->fd, F_DUPFD_CLOEXEC, 3);
                if (b->dirfd < 0)
                        return -errno;
                b->dir = strdup(w->cur->path);
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

/* Hand a directory to the statx threads: opened, and read unless it is on
 * another filesystem than its parent's covering mark (dirread.h). */
static int read_submit(Walk *w, DirRead *d) {
        Job *j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->dir = d;
        w->reading++;
        workers_submit_stat(w->workers, j);
        return 0;
}

/* Start reading the directories on top of the stack, while few are out. */
static int reads_submit(Walk *w) {
        while (w->todo && w->reading < READS_MAX) {
                Dir *t = w->todo;
                w->todo = t->next;
                w->dirs_todo--;
                w->dirs_done++;
                DirRead *d = malloc(sizeof(*d));
                if (d)
                        *d = (DirRead) { .fd = -EBADF };
                if (!d || !(d->path = strdup(t->path))) {
                        free(d);
                        free(t);
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                }
                d->covered_dev = t->covered;
                free(t);
                d->files = report_dir_files(w->reports, d->path);
                d->names_only = report_names_suffice(w->reports, d->path);
                if (d->files == DIR_FILES_ALL && !d->names_only)
                        d->stats = malloc(READ_STATS_MAX * sizeof(*d->stats)); /* NULL: each in a batch */
                /* as iver_context_stat() makes it */
                d->statx = iver_context_statx(w->ctx);
                d->want_version = iver_cookie_table_wants_version(iver_context_cookies(w->ctx));
                if (read_submit(w, d) < 0) {
                        dir_read_free(d);
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                }
        }
        return 0;
}

void walk_dir_done(Walk *w, DirRead *d) {
        assert(w->reading > 0);
        Ready *r = malloc(sizeof(*r));
        if (!r) {
                w->reading--;
                log_error_errno(-ENOMEM, "Out of memory while walking: %s is not walked", d->path);
                dir_read_free(d);
                return;
        }
        *r = (Ready) { .d = d };
        *w->ready_tail = r;
        w->ready_tail = &r->next;
        if (!w->waiting)
                (void) sd_event_source_set_enabled(w->source, SD_EVENT_ON);
}

static DirRead *ready_take(Walk *w) {
        Ready *r = w->ready;
        if (!r)
                return NULL;
        assert(w->reading > 0);
        w->reading--;
        w->ready = r->next;
        if (!w->ready)
                w->ready_tail = &w->ready;
        DirRead *d = r->d;
        free(r);
        return d;
}

/* A directory back from the statx thread: 1 its entries are to be looked
 * at (w->cur), 0 not (gone, a pseudo filesystem, or back to be read once
 * watched). */
static int enter(Walk *w, DirRead *d) {
        if (d->fd < 0) {
                /* vanished, or a symlink now (measured as one where it is listed) */
                if (d->fd != -ENOENT && d->fd != -ENOTDIR && d->fd != -ELOOP)
                        report_unmeasurable(w->reports, d->path, d->fd);
                dir_read_free(d);
                return 0;
        }
        if (d->pseudo) {
                /* never descend into proc, sysfs… (lib/pseudofs.h) */
                log_debug("Not walking %s: a pseudo filesystem (%s) is never measured", d->path, d->pseudo);
                dir_read_free(d);
                return 0;
        }
        if (d->opened) {
                /* another filesystem: watched (or its mark placed) before it is read */
                d->entered = true;
                d->covered_dev = report_dir_entered(w->reports, d->fd, d->path) ? d->dev : 0;
                if (read_submit(w, d) < 0) {
                        log_error_errno(-ENOMEM, "Out of memory while walking: %s is not walked", d->path);
                        dir_read_free(d);
                }
                return 0;
        }
        if (!d->entered) { /* read at once, its filesystem's mark in place: now the rest of entering it */
                d->entered = true;
                d->covered_dev = report_dir_entered(w->reports, d->fd, d->path) ? d->dev : 0;
        }
        w->cur_covered = d->covered_dev;
        w->cur = d;
        w->pos = 0;
        return 1;
}

/* Whether the policy may measure name, in the directory being read, by its
 * path alone (a path too long to build here: yes, the check decides). */
static bool file_wanted(Walk *w, const char *name) {
        char p[PATH_MAX];
        const char *dir = w->cur->path;
        size_t a = strlen(dir);
        int n = snprintf(p, sizeof(p), "%s%s%s", dir, a > 0 && dir[a - 1] == '/' ? "" : "/", name);
        return n < 0 || (size_t) n >= sizeof(p) || report_file_wanted(w->reports, p);
}

/* One entry of the directory being looked at: a directory to walk, a file
 * for its check; symlinks are measured by their target string, never
 * followed; FIFOs, sockets, devices: never measured (dirread.c leaves them
 * out). */
static int entry(Walk *w, const DirEntryRead *e) {
        const char *name = w->cur->buf + e->name_off;
        if (e->type == DT_DIR) {
                _cleanup_free_ char *p = path_join(w->cur->path, name);
                if (!p)
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                if (report_dir_wanted(w->reports, p))
                        (void) push(w, p, w->cur_covered);
                return 0;
        }
        /* (a directory only on the way to measured ones: its files are
         * never looked at, as its watch ignores them; nor is a name no
         * rule can match, /usr/lib/x.py under **.so*) */
        if (w->cur->files == DIR_FILES_NONE || (w->cur->files == DIR_FILES_SOME && !file_wanted(w, name)))
                return 0;
        w->files++;
        if (e->stat >= 0) { /* its statx made with the read: on to its check */
                const DirStatRead *sr = &w->cur->stats[e->stat];
                _cleanup_free_ char *p = path_join(w->cur->path, name);
                if (!p)
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                /* a failed statx: the queued check reports it */
                if (sr->r < 0 || !report_file_found(w->reports, p, &sr->st, sr->at))
                        report_check(w->reports, p);
                return 0;
        }
        if (w->cur->names_only && e->type == DT_REG) { /* first by name: a file new to the cache needs no statx */
                _cleanup_free_ char *p = path_join(w->cur->path, name);
                if (!p)
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                if (report_file_named(w->reports, p, w->cur->dev, e->ino))
                        return 0;
        }
        /* the statx on a statx thread, the rest when it is back */
        if (batch_add(w, name) < 0) {
                _cleanup_free_ char *p = path_join(w->cur->path, name);
                if (!p)
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                report_check(w->reports, p);
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
                r = reads_submit(w);
                if (r < 0)
                        return r;
                if (!w->cur) {
                        DirRead *d = ready_take(w);
                        if (!d)
                                break; /* the statx threads are reading: walk_dir_done */
                        (void) enter(w, d);
                        continue;
                }
                if (w->pos == w->cur->n) {
                        batch_submit(w); /* it holds its own fd of the directory */
                        DirRead *d = TAKE_PTR(w->cur);
                        if (d->error < 0)
                                report_unmeasurable(w->reports, d->path, d->error);
                        if (d->eof)
                                dir_read_free(d);
                        else if (read_submit(w, d) < 0) { /* the next buffer of it */
                                log_error_errno(-ENOMEM, "Out of memory while walking: the rest of %s is not walked",
                                                d->path);
                                dir_read_free(d);
                        }
                        continue;
                }
                n++;
                r = entry(w, &w->cur->e[w->pos++]);
                if (r < 0)
                        return r;
        }
        batch_submit(w); /* not left waiting while the loop does other things */
        workers_flush(w->workers); /* nor the hashes of the misses found */
        if (!w->waiting && !w->cur && !w->ready && !(w->todo && w->reading < READS_MAX)) {
                /* nothing to look at until a directory comes back
                 * (walk_dir_done) or, when nothing is left to read, what is
                 * left is at the statx threads (batches), and their return
                 * settles it (walk_stat_done, then the loop's settle check):
                 * not a step every loop iteration until then */
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                if (!walk_busy(w))
                        report_settled(w->reports);
        }
        return 0;
}
