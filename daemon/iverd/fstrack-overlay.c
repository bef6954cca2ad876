/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Overlay layers. An overlay's files are its layers' files: a write made to
 * the upper or a lower directory directly, not through the overlay, changes
 * what the merged path shows without any event on the overlay (whose inodes
 * are its own: st_dev and st_ino differ from the layer's, and it exports no
 * file handles, so it is tracked by inotify). For each overlay that holds or
 * is below a measured directory, the filesystems of its layers get the same
 * filesystem mark as a measured directory's, and an event on a path below a
 * layer is checked at the merged path. The check re-hashes: the overlay's
 * stat passes the layer inode's ctime and size through, and a cookie move on
 * a filesystem tracked by inotify always re-hashes (a close after writing
 * also marks the merged entry stale, for stores through a mapping that move
 * no timestamp). A write to a lower file that the upper layer (or a higher
 * lower one) hides is checked too: the merged file's cookie did not move, so
 * the check costs a statx. Data-only layers (reached through metacopy
 * redirects, never by name) and the work directory are not mapped. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "fstrack-internal.h"
#include "log.h"
#include "macro.h"
#include "rest.h"

#define OVERLAYFS_MAGIC 0x794c7630

void fstrack_overlays_free(FsTrack *t) {
        for (size_t i = 0; i < t->n_overlays; i++)
                iver_overlay_free(t->overlays[i].o);
        free(t->overlays);
        t->overlays = NULL;
        t->n_overlays = 0;
}

static uint64_t hash_str(uint64_t h, const char *s) {
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * 1099511628211ULL;
        return (h ^ 0xff) * 1099511628211ULL; /* a separator no path has */
}

static uint64_t overlay_id(const IverOverlay *o) {
        uint64_t h = hash_str(1469598103934665603ULL, o->mount);
        for (size_t i = 0; i < iver_overlay_layers(o); i++)
                h = hash_str(h, iver_overlay_layer(o, i));
        return h;
}

void fstrack_overlays_set(FsTrack *t, IverOverlay **v, size_t n) {
        if (!t) {
                for (size_t i = 0; i < n; i++)
                        iver_overlay_free(v[i]);
                free(v);
                return;
        }
        OverlayMap *m = n > 0 ? calloc(n, sizeof(*m)) : NULL;
        for (size_t i = 0; i < n; i++) {
                if (!m) {
                        iver_overlay_free(v[i]); /* no memory: no mapping (the hourly rescan remains) */
                        continue;
                }
                m[i] = (OverlayMap) { .o = v[i], .id = overlay_id(v[i]) };
                for (size_t k = 0; k < t->n_overlays; k++)
                        if (t->overlays[k].id == m[i].id) {
                                m[i].known |= t->overlays[k].active;
                                m[i].seen = true;
                        }
        }
        free(v);
        fstrack_overlays_free(t);
        t->overlays = m;
        t->n_overlays = m ? n : 0;
        fstrack_overlays_refresh(t);
}

/* The layers as iverd's own mount namespace sees them: canonical (event
 * paths come from /proc/self/fd), directories, and not hidden under an
 * overlay (lowerdir=/usr mounted on /usr: the name now leads into the
 * overlay itself; a layer that is an overlay exports no handles). */
static bool canonical_layers(IverOverlay *o, bool quiet) {
        for (size_t i = 0; i < iver_overlay_layers(o); i++) {
                const char *l = iver_overlay_layer(o, i);
                char *real = l[0] == '/' ? realpath(l, NULL) : NULL;
                struct statfs sfs;
                struct stat st;
                if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode) || statfs(real, &sfs) < 0 ||
                    (uint64_t) sfs.f_type == OVERLAYFS_MAGIC) {
                        if (!quiet)
                                log_notice("Overlay %s: layer %s is not reachable from here (%s): direct writes to its layers "
                                           "are seen only by the periodic rescan", o->mount, l,
                                           real ? "an overlay or not a directory" : "no such directory");
                        free(real);
                        return false;
                }
                iver_overlay_set_layer(o, i, real);
        }
        return true;
}

/* Whether the overlay holds or is below a measured directory: the policy
 * may measure something below its mount point. */
static bool overlay_measured(FsTrack *t, const IverOverlay *o) {
        return report_dir_wanted(t->reports, o->mount);
}

/* A filesystem marked for layers only that holds none now: unmark it. */
static void unmark_unused(FsTrack *t) {
        bool any = false;
        for (unsigned i = 0; i < t->n_fs;) {
                TrackedFs *f = &t->fs[i];
                if (f->measured || f->layers > 0) {
                        i++;
                        continue;
                }
                log_info("Filesystem %s (%s) holds no layer of a measured overlay now: no longer tracked", f->mount,
                         f->fstype);
                if (f->mode == FSTRACK_FANOTIFY)
                        (void) fanotify_mark(t->fd, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, FSTRACK_MASK, AT_FDCWD,
                                             f->mount);
                fstrack_retire(t, i);
                any = true;
        }
        /* while marked it answered for the directories a walk crossed on it
         * (no inotify watch was set there): a walk sets them up again */
        if (any)
                report_rescan(t->reports);
}

void fstrack_overlays_refresh(FsTrack *t) {
        if (!t)
                return;
        bool any = false;
        for (unsigned i = 0; i < t->n_fs; i++) {
                any |= t->fs[i].layers > 0;
                t->fs[i].layers = 0;
        }
        for (size_t i = 0; i < t->n_overlays; i++) {
                OverlayMap *m = &t->overlays[i];
                bool was = m->active;
                /* canonical once: the strings are replaced by their real paths */
                m->active = overlay_measured(t, m->o) && (was || canonical_layers(m->o, m->seen));
                if (!m->active)
                        continue;
                any = true;
                unsigned marked = 0;
                for (size_t k = 0; k < iver_overlay_layers(m->o); k++) {
                        TrackedFs *f = fstrack_track(t, iver_overlay_layer(m->o, k), true);
                        if (f)
                                f->layers++;
                        marked += f && f->mode == FSTRACK_FANOTIFY;
                }
                if (!was && !m->known)
                        log_info("Overlay %s: %u of %zu layers on marked filesystems: direct writes to them re-check "
                                 "the merged files", m->o->mount, marked, iver_overlay_layers(m->o));
        }
        if (!any)
                return;
        unmark_unused(t);
        /* directories of a layer may carry ignore marks from before, and
         * cached directory slots their old in_layer */
        fstrack_caches_clear(t);
        fstrack_flush_ignores(t);
}

bool fstrack_overlay_wanted(FsTrack *t, const char *dir) {
        for (size_t i = 0; i < t->n_overlays; i++) {
                _cleanup_free_ char *merged = NULL;
                if (t->overlays[i].active && iver_overlay_map(t->overlays[i].o, dir, &merged) >= 0 &&
                    report_dir_wanted(t->reports, merged))
                        return true;
        }
        return false;
}

/* The merged path's directory is one the policy may measure in. */
static bool merged_wanted(FsTrack *t, const char *merged) {
        const char *slash = strrchr(merged, '/');
        if (!slash)
                return false;
        _cleanup_free_ char *dir = slash == merged ? strdup("/") : strndup(merged, (size_t) (slash - merged));
        return dir && report_dir_wanted(t->reports, dir);
}

void fstrack_overlay_event(FsTrack *t, uint64_t mask, const char *path, int pid) {
        for (size_t i = 0; i < t->n_overlays; i++) {
                if (!t->overlays[i].active)
                        continue;
                _cleanup_free_ char *merged = NULL;
                if (iver_overlay_map(t->overlays[i].o, path, &merged) < 0 || !merged)
                        continue;
                if (mask & FAN_ONDIR) {
                        /* a directory came or went in one layer: the merged one may
                         * still be there (another layer has it) or show other files:
                         * walk it again and re-check what was recorded below it */
                        if (mask & (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO))
                                report_changed_below(t->reports, merged);
                        continue;
                }
                if (!merged_wanted(t, merged))
                        continue;
                /* the write reached the layer's inode: the merged file (its own
                 * identity) is not at rest either while it goes on (rest.h) */
                struct stat st;
                if ((mask & (FAN_MODIFY | FAN_CLOSE_WRITE)) && lstat(merged, &st) == 0 && S_ISREG(st.st_mode))
                        rest_note_change(t->rest, fstrack_pack_dev(st.st_dev), (uint64_t) st.st_ino, pid, NULL);
                fstrack_dispatch(t, mask, merged, pid);
        }
}
