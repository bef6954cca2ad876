/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Mount table changes → rescans of what they cover. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "fstrack.h"
#include "log.h"
#include "macro.h"
#include "mounts.h"
#include "overlay.h"

struct Mounts {
        FsTrack *fstrack;
        const Reports *reports;
        int fd;
        sd_event_source *source;
        char **lines;            /* "ID MOUNTPOINT", sorted */
        size_t n;
        unsigned long long changes;
};

static void lines_free(char **l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i]);
        free(l);
}

static int cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* /proc/self/mountinfo is ~150 bytes a mount: room for 400,000 */
#define MOUNTINFO_MAX (64U * 1024U * 1024U)

/* Add the overlay mount line describes (if it is one) to *v. */
static void add_overlay(const char *line, IverOverlay ***v, size_t *n) {
        IverOverlay *o = NULL;
        int r = iver_overlay_from_mountinfo(line, &o);
        if (r < 0) {
                log_full_errno(LOG_DEBUG, r, "Cannot read the overlay layers of mount table line '%s': %m", line);
                return;
        }
        IverOverlay **nv = o ? realloc(*v, (*n + 1) * sizeof(*nv)) : NULL;
        if (!nv) {
                iver_overlay_free(o);
                return;
        }
        nv[(*n)++] = o;
        *v = nv;
}

/* Read the table: "ID MOUNTPOINT" per mount, sorted, and the overlay mounts
 * (given to fstrack). */
static int read_table(int fd, char ***ret, size_t *ret_n, IverOverlay ***ret_overlays, size_t *ret_n_overlays) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        int r = iver_read_fd_max(fd, MOUNTINFO_MAX, &buf, &len);
        if (r < 0)
                return r;
        char **l = NULL;
        size_t n = 0;
        for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (strstr(line, " - overlay "))
                        add_overlay(line, ret_overlays, ret_n_overlays);
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
                char *f[5], *s2 = NULL;
                unsigned k = 0;
                for (char *tok = strtok_r(line, " ", &s2); tok && k < 5; tok = strtok_r(NULL, " ", &s2))
                        f[k++] = tok;
                if (k < 5)
                        continue;
                iver_mountinfo_unescape(f[4]);
                char **nl = realloc(l, (n + 1) * sizeof(char *));
                if (!nl) {
                        lines_free(l, n);
                        return -ENOMEM;
                }
                l = nl;
                if (asprintf(&l[n], "%s %s", f[0], f[4]) < 0) {
                        lines_free(l, n);
                        return -ENOMEM;
                }
                n++;
        }
        qsort(l, n, sizeof(char *), cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}

/* read_table, the overlays handed to fstrack (the layer mapping follows
 * the table). */
static int read_tables(Mounts *t, char ***ret, size_t *ret_n) {
        IverOverlay **ov = NULL;
        size_t n_ov = 0;
        int r = read_table(t->fd, ret, ret_n, &ov, &n_ov);
        if (r < 0) {
                fstrack_overlays_set(NULL, ov, n_ov); /* frees them */
                return r;
        }
        fstrack_mounts_changed(t->fstrack);
        fstrack_overlays_set(t->fstrack, ov, n_ov);
        return 0;
}

static int on_change(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Mounts *t = userdata;
        char **l;
        size_t n;
        if (read_tables(t, &l, &n) < 0)
                return 0;
        t->changes++;
        /* merge the two sorted tables: a line in one only is a change */
        for (size_t i = 0, j = 0; i < t->n || j < n;) {
                int c = i == t->n ? 1 : j == n ? -1 : strcmp(t->lines[i], l[j]);
                const char *line = c < 0 ? t->lines[i] : l[j];
                if (c != 0)
                        report_changed_below(t->reports, strchr(line, ' ') + 1);
                i += c <= 0;
                j += c >= 0;
        }
        lines_free(t->lines, t->n);
        t->lines = l;
        t->n = n;
        return 0;
}

int mounts_new(sd_event *event, FsTrack *fstrack, const Reports *reports, Mounts **ret) {
        Mounts *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->fstrack = fstrack;
        t->reports = reports;
        t->fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        int r = t->fd < 0 ? -errno : read_tables(t, &t->lines, &t->n);
        if (r >= 0)
                r = sd_event_add_io(event, &t->source, t->fd, EPOLLPRI, on_change, t);
        if (r >= 0)
                (void) sd_event_source_set_description(t->source, "mounts");
        if (r < 0) {
                log_warning_errno(r, "Cannot watch the mount table: %m; mounts over measured directories are seen at the next rescan");
                if (t->fd >= 0)
                        close(t->fd);
                t->fd = -1;
        }
        *ret = t;
        return 0;
}

Mounts *mounts_free(Mounts *t) {
        if (!t)
                return NULL;
        sd_event_source_disable_unref(t->source);
        if (t->fd >= 0)
                close(t->fd);
        lines_free(t->lines, t->n);
        free(t);
        return NULL;
}

unsigned long long mounts_changes(const Mounts *t) {
        return t ? t->changes : 0;
}
