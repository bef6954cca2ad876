/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whole-filesystem change tracking: which filesystems are tracked how,
 * since when without a gap (coverage), and the attest hook of the hit rule.
 * Decoding and dispatching the events is fstrack-event.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fstrack-internal.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "thread.h"

static const char *const mode_names[_FSTRACK_MODE_MAX] = {
        [FSTRACK_FANOTIFY] = "fanotify-fid",
        [FSTRACK_INOTIFY] = "inotify",
        [FSTRACK_RESCAN_ONLY] = "rescan-only",
};

uint32_t fstrack_pack_dev(dev_t d) {
        return (major(d) << 20) | (minor(d) & 0xfffffU);
}

int fstrack_new(sd_event *event, IverContext *ctx, Rest *rest, const Reports *reports, FsTrack **ret) {
        FsTrack *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->event = event;
        t->ctx = ctx;
        t->rest = rest;
        t->reports = reports;
        t->ignores_ok = true;
        /* unlimited (CAP_SYS_ADMIN; the kernel charges the daemon's memory):
         * a write storm cannot make it lose events; else overflows are
         * handled by fstrack_overflowed() */
        unsigned flags = FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK;
        bool bounded = getenv("IVERD_TEST_BOUNDED_QUEUE"); /* test knob: as without CAP_SYS_ADMIN */
        t->fd = bounded ? -1 : fanotify_init(flags | FAN_UNLIMITED_QUEUE, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
        t->unlimited = t->fd >= 0;
        if (t->fd < 0 && (bounded || errno == EPERM))
                t->fd = fanotify_init(flags, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
        if (t->fd < 0) {
                t->init_error = errno;
                log_notice("Whole-filesystem tracking unavailable (fanotify with file handles: %s): inotify watches; "
                           "every changed file is re-hashed", strerror(errno));
        } else {
                int r = sd_event_add_io(event, &t->source, t->fd, EPOLLIN, fstrack_on_events, t);
                /* after uses and finished measurements (a write storm must not
                 * delay an exec held for its measurement), before scan work;
                 * checks drain the queue first anyway (fstrack_sync) */
                if (r >= 0)
                        r = sd_event_source_set_priority(t->source, SD_EVENT_PRIORITY_NORMAL + 10);
                if (r < 0) {
                        sd_event_source_disable_unref(t->source);
                        close(t->fd);
                        free(t);
                        return r;
                }
                (void) sd_event_source_set_description(t->source, "fstrack");
                brake_init(&t->brake, t->source, reports);
                iver_context_set_attest(ctx, fstrack_attest, t);
        }
        *ret = t;
        return 0;
}

FsTrack *fstrack_free(FsTrack *t) {
        if (!t)
                return NULL;
        if (t->ctx)
                iver_context_set_attest(t->ctx, NULL, NULL);
        for (unsigned i = 0; i < t->n_fs; i++)
                free(t->fs[i].mount);
        fstrack_caches_clear(t);
        fstrack_overlays_free(t);
        sd_event_source_disable_unref(t->source);
        sd_event_source_disable_unref(t->rescan_timer);
        brake_done(&t->brake);
        if (t->fd >= 0)
                close(t->fd);
        free(t);
        return NULL;
}

TrackedFs *fstrack_find_dev(FsTrack *t, uint32_t dev) {
        for (unsigned i = 0; i < t->n_fs; i++)
                if (t->fs[i].dev == dev)
                        return &t->fs[i];
        return NULL;
}

/* The mount point holding path: the highest ancestor on the same device. */
static char *mount_point(const char *path, dev_t dev) {
        char *p = strdup(path);
        if (!p)
                return NULL;
        for (;;) {
                char *slash = strrchr(p, '/');
                if (!slash || slash == p) {
                        struct stat st;
                        if (stat("/", &st) == 0 && st.st_dev == dev)
                                strcpy(p, "/");
                        return p;
                }
                *slash = 0;
                struct stat st;
                if (stat(p, &st) < 0 || st.st_dev != dev) {
                        *slash = '/';
                        return p;
                }
        }
}

static bool remote_fs(uint64_t magic) {
        switch (magic) {
        case 0x6969:     /* nfs */
        case 0xff534d42: /* cifs */
        case 0xfe534d42: /* smb2 */
        case 0x65735546: /* fuse */
        case 0x01021997: /* 9p */
        case 0x00c36400: /* ceph */
        case 0x6b414653: /* afs */
                return true;
        default:
                return false;
        }
}

/* Every entry of the filesystems matching (dev, or mode when dev is 0)
 * counts as written: coverage restarts now. */
static void flag_written(FsTrack *t, const TrackedFs *only) {
        IverCache *c = iver_context_cache(t->ctx);
        for (uint32_t i = 0; i < iver_cache_size(c); i++) {
                IverEntry e;
                iver_cache_get(c, i, &e);
                if (only ? e.id.dev == only->dev : !!fstrack_find_dev(t, e.id.dev))
                        iver_cache_update_flags(c, i, IVER_ENTRY_WRITTEN, 0);
        }
}

static bool pseudo_fs(uint64_t magic) {
        switch (magic) {
        case 0x9fa0:     /* proc */
        case 0x62656572: /* sysfs */
        case 0x64626720: /* debugfs */
        case 0x74726163: /* tracefs */
        case 0x73636673: /* securityfs */
        case 0x27e0eb:   /* cgroup */
        case 0x63677270: /* cgroup2 */
        case 0x1cd1:     /* devpts */
        case 0xcafe4a11: /* bpf */
        case 0xde5e81e4: /* efivarfs */
        case 0x62656570: /* configfs */
        case 0x6165676c: /* pstore */
                return true;
        default:
                return false;
        }
}

static FsTrackMode choose_mode(FsTrack *t, const char *dir, const struct statfs *sfs, const char **ret_why) {
        if (pseudo_fs((uint64_t) sfs->f_type)) {
                *ret_why = "pseudo filesystem: never marked";
                return FSTRACK_INOTIFY;
        }
        if (t->fd < 0) {
                *ret_why = strerror(t->init_error);
                return FSTRACK_INOTIFY;
        }
        if (remote_fs((uint64_t) sfs->f_type)) {
                *ret_why = "network filesystem: writes from other hosts are never seen";
                return FSTRACK_INOTIFY;
        }
        struct {
                struct file_handle fh;
                unsigned char bytes[MAX_HANDLE_SZ];
        } h = { .fh.handle_bytes = MAX_HANDLE_SZ };
        int mnt;
        if (name_to_handle_at(AT_FDCWD, dir, &h.fh, &mnt, 0) < 0) {
                *ret_why = "no file handles";
                return FSTRACK_INOTIFY;
        }
        if (fanotify_mark(t->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FSTRACK_MASK, AT_FDCWD, dir) < 0) {
                *ret_why = strerror(errno);
                return FSTRACK_INOTIFY;
        }
        *ret_why = NULL;
        return FSTRACK_FANOTIFY;
}

/* Whether the policy may measure something in a new subdirectory of dir:
 * false for the ancestors of measured trees (/ and /srv above a tree /srv/tree),
 * which the walk crosses but which hold nothing measured. */
static bool holds_measured(FsTrack *t, const char *dir) {
        _cleanup_free_ char *probe = path_join(dir, "\001");
        return probe && report_dir_wanted(t->reports, probe);
}

TrackedFs *fstrack_track(FsTrack *t, const char *dir, bool layer) {
        struct stat st;
        if (!t || stat(dir, &st) < 0)
                return NULL;
        TrackedFs *f = fstrack_find_dev(t, fstrack_pack_dev(st.st_dev));
        if (f) {
                /* marked for overlay layers only so far: does it hold a
                 * measured directory too (then it stays marked without them)? */
                if (!layer && !f->measured && holds_measured(t, dir))
                        f->measured = true;
                return f;
        }
        /* a filesystem crossed only on the way to a measured tree is not
         * marked (its writes would all come to us): inotify watches the few
         * ancestors */
        if (t->n_fs == FSTRACK_MAX_FS || (!layer && !holds_measured(t, dir)))
                return NULL;
        struct statfs sfs;
        if (statfs(dir, &sfs) < 0)
                return NULL;
        f = &t->fs[t->n_fs];
        *f = (TrackedFs) { .dev = fstrack_pack_dev(st.st_dev), .mount_fd = -1, .measured = !layer };
        memcpy(&f->fsid, &sfs.f_fsid, sizeof(f->fsid));
        f->mount = mount_point(dir, st.st_dev);
        if (!f->mount)
                return NULL;
        const char *name = iver_fstype_to_name((uint64_t) sfs.f_type);
        if (name)
                snprintf(f->fstype, sizeof(f->fstype), "%s", name);
        else
                snprintf(f->fstype, sizeof(f->fstype), "0x%llx", (unsigned long long) sfs.f_type);
        f->mode = choose_mode(t, dir, &sfs, &f->why);
        f->coverage_since = wall_usec();
        t->n_fs++;
        if (f->mode == FSTRACK_FANOTIFY) {
                /* what was measured before the mark (a restored snapshot, an
                 * earlier mount) was measured outside this coverage */
                flag_written(t, f);
                log_info("Tracking %s (%s) as a whole%s: writes through any path are seen, metadata-only changes "
                         "are not re-hashed", f->mount, f->fstype, layer ? " (it holds overlay layers)" : "");
        } else
                log_notice("Tracking %s (%s) with inotify (%s): every changed file is re-hashed%s", f->mount,
                           f->fstype, f->why, layer ? "; direct writes to the overlay layers on it are not seen" : "");
        return f;
}

bool fstrack_add_dir(FsTrack *t, const char *dir) {
        TrackedFs *f = fstrack_track(t, dir, false);
        return f && f->mode == FSTRACK_FANOTIFY;
}

void fstrack_note_unwatched(FsTrack *t, const char *dir) {
        struct stat st;
        if (!t || stat(dir, &st) < 0)
                return;
        TrackedFs *f = fstrack_find_dev(t, fstrack_pack_dev(st.st_dev));
        if (f && f->mode == FSTRACK_INOTIFY)
                f->mode = FSTRACK_RESCAN_ONLY;
}

void fstrack_coverage_break(FsTrack *t, FsTrackMode mode) {
        if (!t)
                return;
        uint64_t now = wall_usec();
        bool any = false;
        for (unsigned i = 0; i < t->n_fs; i++)
                if (t->fs[i].mode == mode || (mode == FSTRACK_INOTIFY && t->fs[i].mode == FSTRACK_RESCAN_ONLY)) {
                        t->fs[i].coverage_since = now;
                        any = true;
                }
        /* within one read of the queue nothing was measured between two
         * breaks: flagging the cache once is enough */
        if (any && mode == FSTRACK_FANOTIFY && (t->flagged_seq != t->drain_seq || t->drain_seq == 0)) {
                flag_written(t, NULL);
                t->flagged_seq = t->drain_seq;
        }
}

static void overflow_rescan(FsTrack *t) {
        log_warning("fanotify queue overflowed (%u times since the last rescan for it): events were lost, rescanning",
                    t->overflows_pending);
        t->overflows_pending = 0;
        t->overflow_rescan_usec = now_usec();
        report_rescan(t->reports);
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        FsTrack *t = userdata;
        if (t->overflows_pending > 0)
                overflow_rescan(t);
        return 0;
}

void fstrack_overflowed(FsTrack *t) {
        t->overflows++;
        t->overflows_pending++;
        fstrack_coverage_break(t, FSTRACK_FANOTIFY);
        uint64_t now = now_usec();
        if (t->overflow_rescan_usec == 0 || now >= t->overflow_rescan_usec + FSTRACK_OVERFLOW_RESCAN_USEC) {
                overflow_rescan(t);
                return;
        }
        /* one rescan at the end of the interval covers every overflow in it */
        uint64_t at = t->overflow_rescan_usec + FSTRACK_OVERFLOW_RESCAN_USEC;
        if (t->rescan_timer) {
                (void) sd_event_source_set_time(t->rescan_timer, at);
                (void) sd_event_source_set_enabled(t->rescan_timer, SD_EVENT_ONESHOT);
        } else if (sd_event_add_time(t->event, &t->rescan_timer, CLOCK_MONOTONIC, at, 0, on_rescan_timer, t) < 0)
                overflow_rescan(t); /* no timer: rescan now rather than never */
        else
                (void) sd_event_source_set_description(t->rescan_timer, "fstrack-overflow-rescan");
}

void fstrack_policy_changed(FsTrack *t) {
        if (!t)
                return;
        fstrack_caches_clear(t);
        fstrack_flush_ignores(t);
        fstrack_overlays_refresh(t); /* which overlays hold measured directories */
}

void fstrack_retire(FsTrack *t, unsigned i) {
        TrackedFs *f = &t->fs[i];
        if (f->mode == FSTRACK_FANOTIFY) {
                t->retired[t->n_retired++ % ELEMENTSOF(t->retired)] = f->fsid;
                for (unsigned k = 0; k < f->n_alias; k++)
                        t->retired[t->n_retired++ % ELEMENTSOF(t->retired)] = f->alias[k];
        }
        free(f->mount);
        if (f->mount_fd >= 0)
                close(f->mount_fd);
        t->fs[i] = t->fs[--t->n_fs];
}

void fstrack_mounts_changed(FsTrack *t) {
        bool left = false;
        if (!t)
                return;
        fstrack_caches_clear(t);
        for (unsigned i = 0; i < t->n_fs;) {
                TrackedFs *f = &t->fs[i];
                struct stat st;
                struct statfs sfs;
                if (stat(f->mount, &st) == 0 && statfs(f->mount, &sfs) == 0 && fstrack_pack_dev(st.st_dev) == f->dev &&
                    memcmp(&sfs.f_fsid, &f->fsid, sizeof(f->fsid)) == 0) {
                        i++;
                        continue;
                }
                /* unmounted (its mark went with it) or covered: its mark (if the
                 * superblock lives on) keeps sending events, dropped from now on;
                 * entries on it are no longer attested (no record) */
                log_info("Filesystem %s (%s) left the mount table", f->mount, f->fstype);
                fstrack_retire(t, i);
                left = true;
        }
        /* the same filesystem may still hold measured directories elsewhere:
         * a full walk tracks them again (a new record, a new coverage start) */
        if (left)
                report_rescan(t->reports);
}

void fstrack_sync(FsTrack *t) {
        if (t && t->fd >= 0 && t->n_fs > 0)
                (void) fstrack_drain(t, 4);
}

void fstrack_sync_use(FsTrack *t) {
        if (t && t->fd >= 0 && t->n_fs > 0)
                (void) fstrack_drain(t, 64);
}

bool fstrack_tracks(FsTrack *t, uint32_t dev) {
        TrackedFs *f = t ? fstrack_find_dev(t, dev) : NULL;
        return f && f->mode == FSTRACK_FANOTIFY;
}

int fstrack_fd(const FsTrack *t) {
        return t ? t->fd : -1;
}

int fstrack_attest(void *userdata, const IverStat *st) {
        FsTrack *t = userdata;
        TrackedFs *f = fstrack_find_dev(t, st->dev);
        if (!f || f->mode != FSTRACK_FANOTIFY)
                return 0;
        /* every event the kernel queued so far sets its flags before the rule looks */
        return fstrack_drain(t, 64) >= 0 ? 1 : 0;
}

static json_object *iso_time(uint64_t usec) {
        time_t s = (time_t) (usec / 1000000);
        struct tm tm;
        char buf[64];
        gmtime_r(&s, &tm);
        strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
        return json_object_new_string(buf);
}

static json_object *fs_json(const TrackedFs *f) {
        json_object *e = json_object_new_object();
        char d[32];
        snprintf(d, sizeof(d), "%u:%u", f->dev >> 20, f->dev & 0xfffff);
        json_object_object_add(e, "mount", json_object_new_string(f->mount));
        json_object_object_add(e, "dev", json_object_new_string(d));
        json_object_object_add(e, "fs", json_object_new_string(f->fstype));
        json_object_object_add(e, "mode", json_object_new_string(mode_names[f->mode]));
        json_object_object_add(e, "writes_attested", json_object_new_boolean(f->mode == FSTRACK_FANOTIFY));
        if (f->layers > 0)
                json_object_object_add(e, "overlay_layers", json_object_new_uint64(f->layers));
        if (f->why)
                json_object_object_add(e, "why", json_object_new_string(f->why));
        json_object_object_add(e, "coverage_since", iso_time(f->coverage_since));
        json_object_object_add(e, "coverage_seconds",
                               json_object_new_uint64((wall_usec() - f->coverage_since) / 1000000));
        json_object_object_add(e, "events", json_object_new_uint64(f->events));
        json_object_object_add(e, "write_events", json_object_new_uint64(f->writes));
        json_object_object_add(e, "handles_read", json_object_new_uint64(f->handles_read));
        return e;
}

json_object *fstrack_status(FsTrack *t) {
        json_object *a = json_object_new_array();
        for (unsigned i = 0; t && i < t->n_fs; i++)
                json_object_array_add(a, fs_json(&t->fs[i]));
        return a;
}

json_object *fstrack_explain(FsTrack *t, const IverStat *st, uint32_t dev, uint64_t ino) {
        json_object *o = json_object_new_object();
        TrackedFs *f = t ? fstrack_find_dev(t, st ? st->dev : dev) : NULL;
        if (f)
                json_object_object_add(o, "tracking", fs_json(f));
        json_object *w = json_object_new_array();
        for (unsigned i = 0; t && i < FSTRACK_RECENT; i++) {
                const RecentWrite *r = &t->recent[i];
                if (!r->usec || r->dev != dev || r->ino != ino)
                        continue;
                json_object *e = json_object_new_object();
                json_object_object_add(e, "event", json_object_new_string(r->close ? "close-write" : "modify"));
                json_object_object_add(e, "at", iso_time(r->usec));
                json_object_object_add(e, "through", json_object_new_string(r->through));
                json_object_array_add(w, e);
        }
        json_object_object_add(o, "write_events", w);
        return o;
}

uint64_t fstrack_events(const FsTrack *t) {
        return t ? t->events : 0;
}

uint64_t fstrack_overflows(const FsTrack *t) {
        return t ? t->overflows : 0;
}

uint64_t fstrack_pauses(const FsTrack *t) {
        return t ? t->brake.pauses : 0;
}

bool fstrack_paused(const FsTrack *t) {
        return t && brake_paused(&t->brake);
}
