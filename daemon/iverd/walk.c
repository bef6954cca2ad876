/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Incremental rescan walker. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "checker.h"
#include "evidence.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "path.h"
#include "pseudofs.h"
#include "walk.h"
#include "onaccess.h"
#include "pathfd.h"
#include "watch.h"

#define STEP_ENTRIES 2048

typedef struct Dir {
        struct Dir *next;
        char path[];
} Dir;

struct Walk {
        Manager *m;
        Dir *todo;            /* stack of directories still to read */
        DIR *cur;
        char *cur_path;
        sd_event_source *source;
        uint64_t files;
        uint64_t dirs_done, dirs_todo; /* for the progress estimate */
        bool waiting;                  /* for room in the hashing window */
};

static int walk_step(sd_event_source *s, void *userdata);

int walk_new(Manager *m, Walk **ret) {
        Walk *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->m = m;
        int r = sd_event_add_defer(m->event, &w->source, walk_step, w);
        if (r < 0) {
                free(w);
                return r;
        }
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
        return w->todo || w->cur;
}

void walk_resume(Walk *w) {
        if (w->waiting && checker_window_low(w->m)) {
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

static int walk_step(sd_event_source *s, void *userdata) {
        Walk *w = userdata;
        unsigned n = 0;

        while (n < STEP_ENTRIES) {
                if (!checker_has_room(w->m)) {
                        /* misses go to the workers from here: wait for
                         * room (walk_resume) rather than queue paths that
                         * would be looked at again at dispatch */
                        w->waiting = true;
                        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        break;
                }
                if (!w->cur) {
                        Dir *d = w->todo;
                        if (!d)
                                break;
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
                                        manager_unmeasurable(w->m, w->cur_path, fd);
                                continue;
                        }
                        struct statfs sfs;
                        const char *fs;
                        if (fstatfs(fd, &sfs) == 0 && iver_fs_is_pseudo((uint64_t) sfs.f_type, &fs)) {
                                /* never descend into proc, sysfs… (lib/pseudofs.h) */
                                log_debug("Not walking %s: a pseudo filesystem (%s) is never measured", w->cur_path, fs);
                                close(fd);
                                continue;
                        }
                        w->cur = fdopendir(fd);
                        if (!w->cur) {
                                close(fd);
                                continue;
                        }
                        watch_add_fd(w->m->watch, fd, w->cur_path);
                        onaccess_add(w->m->onaccess, w->cur_path);
                }
                errno = 0;
                struct dirent *de = readdir(w->cur);
                if (!de) {
                        closedir(w->cur);
                        w->cur = NULL;
                        continue;
                }
                n++;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                _cleanup_free_ char *p = path_join(w->cur_path, de->d_name);
                if (!p)
                        return log_error_errno(-ENOMEM, "Out of memory while walking");
                unsigned char type = de->d_type;
                if (type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(dirfd(w->cur), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                                type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG
                                       : S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
                }
                if (type == DT_DIR) {
                        if (manager_dir_wanted(w->m, p))
                                (void) push(w, p);
                } else if (type == DT_REG || type == DT_LNK || type == DT_UNKNOWN) {
                        w->files++;
                        if (!checker_scan_file(w->m, dirfd(w->cur), de->d_name, p))
                                manager_queue(w->m, p);
                }
                /* symlinks are measured by their target string, never followed;
                 * FIFOs, sockets, devices: never measured */
        }
        workers_flush(w->m->workers);
        (void) evidence_flush(w->m->evidence); /* symlinks measured on the way */
        if (!walk_busy(w)) {
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                manager_maybe_settled(w->m);
        }
        return 0;
}
