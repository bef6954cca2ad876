/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fanotify events with file handles → cache flags and checks. A write
 * (FAN_MODIFY, FAN_CLOSE_WRITE) is mapped by the object's handle to (dev,
 * ino) and flags that inode's cache entry whatever name it came through (a
 * hard link outside the measured tree, a bind mount); every other event is
 * mapped by its directory handle + name to a path and dropped unless the
 * policy may measure below that directory (an ignore mark then keeps further
 * namespace events of that directory in the kernel). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fstrack-internal.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "rest.h"
#include "thread.h"

#define IGNORE_MASK (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ATTRIB | FAN_ONDIR | FAN_EVENT_ON_CHILD)

static int mount_fd(TrackedFs *f) {
        if (f->mount_fd < 0)
                f->mount_fd = open(f->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK); /* not O_PATH: EBADF */
        return f->mount_fd;
}

/* The filesystem an event belongs to. Events carry the fsid of the
 * superblock, statfs() of a directory may give another (a btrfs subvolume
 * mixes its id in): an unknown fsid is learnt by finding the marked
 * filesystem whose mount can open the event's handle. Never drop a write
 * of a marked filesystem for a mismatch. */
static TrackedFs *find_fsid(FsTrack *t, const fsid_t *fsid, struct file_handle *fh) {
        for (unsigned i = 0; i < t->n_fs; i++) {
                TrackedFs *f = &t->fs[i];
                if (f->mode != FSTRACK_FANOTIFY)
                        continue;
                if (memcmp(&f->fsid, fsid, sizeof(*fsid)) == 0)
                        return f;
                for (unsigned k = 0; k < f->n_alias; k++)
                        if (memcmp(&f->alias[k], fsid, sizeof(*fsid)) == 0)
                                return f;
        }
        for (unsigned i = 0; i < t->n_retired && i < ELEMENTSOF(t->retired); i++)
                if (memcmp(&t->retired[i], fsid, sizeof(*fsid)) == 0)
                        return NULL; /* left the mount table; nothing measured is reached through it */
        for (unsigned i = 0; i < t->n_fs; i++) {
                TrackedFs *f = &t->fs[i];
                if (f->mode != FSTRACK_FANOTIFY || mount_fd(f) < 0)
                        continue;
                int fd = open_by_handle_at(f->mount_fd, fh, O_PATH | O_CLOEXEC);
                if (fd < 0)
                        continue;
                close(fd);
                if (f->n_alias < ELEMENTSOF(f->alias))
                        f->alias[f->n_alias++] = *fsid;
                return f;
        }
        /* an event of a marked filesystem we cannot place (its object is
         * gone): writes may have been lost, coverage restarts */
        if (!t->warned_fsid) {
                t->warned_fsid = true;
                log_warning("fanotify event with an unknown filesystem id: treating it as a gap in coverage");
        }
        fstrack_coverage_break(t, FSTRACK_FANOTIFY);
        return NULL;
}

static void slot_free(HandleSlot *s) {
        free(s->key);
        free(s->path);
        *s = (HandleSlot) {};
}

void fstrack_caches_clear(FsTrack *t) {
        for (unsigned i = 0; i < FSTRACK_SLOTS; i++) {
                slot_free(&t->dirs[i]);
                slot_free(&t->inodes[i]);
        }
}

void fstrack_flush_ignores(FsTrack *t) {
        if (t->fd < 0 || t->ignores == 0)
                return;
        /* inode marks only: the filesystem marks stay */
        for (unsigned i = 0; i < t->n_fs; i++)
                if (t->fs[i].mode == FSTRACK_FANOTIFY)
                        (void) fanotify_mark(t->fd, FAN_MARK_FLUSH, 0, AT_FDCWD, t->fs[i].mount);
        t->ignores = 0;
}

/* Cache key: which filesystem, then the handle as the kernel gave it. */
static size_t make_key(const TrackedFs *f, const FsTrack *t, const struct file_handle *fh, unsigned char *key) {
        uint32_t fsi = (uint32_t) (f - t->fs);
        memcpy(key, &fsi, 4);
        memcpy(key + 4, &fh->handle_type, 4);
        memcpy(key + 8, fh->f_handle, fh->handle_bytes);
        return 8 + fh->handle_bytes;
}

static HandleSlot *lookup(HandleSlot *table, const unsigned char *key, size_t len, bool *ret_found) {
        uint64_t h = 1469598103934665603ULL;
        for (size_t i = 0; i < len; i++)
                h = (h ^ key[i]) * 1099511628211ULL;
        HandleSlot *s = &table[h & (FSTRACK_SLOTS - 1)];
        *ret_found = s->key && s->key_len == len && memcmp(s->key, key, len) == 0;
        return s;
}

static bool slot_fill(HandleSlot *s, const unsigned char *key, size_t len) {
        slot_free(s);
        s->key = malloc(len);
        if (!s->key)
                return false;
        memcpy(s->key, key, len);
        s->key_len = len;
        return true;
}

/* Directory handle → path and whether the policy may measure below it. The
 * fd is returned (O_RDONLY: an ignore mark needs it) when opened. */
static const HandleSlot *resolve_dir(FsTrack *t, TrackedFs *f, struct file_handle *fh, int *ret_fd) {
        unsigned char key[8 + MAX_HANDLE_SZ];
        bool found;
        *ret_fd = -1;
        if (fh->handle_bytes > MAX_HANDLE_SZ)
                return NULL;
        size_t len = make_key(f, t, fh, key);
        HandleSlot *s = lookup(t->dirs, key, len, &found);
        if (found)
                return s;
        int mfd = mount_fd(f);
        if (mfd < 0)
                return NULL;
        int fd = open_by_handle_at(mfd, fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                /* ESTALE: gone. Out of fds or memory, the event is lost to
                 * us, not to the file: count it as a gap in coverage */
                if (errno != ESTALE && errno != ENOENT)
                        fstrack_coverage_break(t, FSTRACK_FANOTIFY);
                return NULL;
        }
        char proc[64], buf[PATH_MAX];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, buf, sizeof(buf) - 1);
        if (n <= 0 || buf[0] != '/') {
                close(fd);
                return NULL;
        }
        buf[n] = 0;
        struct stat st;
        if (n > 10 && strcmp(buf + n - 10, " (deleted)") == 0 && lstat(buf, &st) < 0) {
                close(fd); /* removed: the event of its own removal cleans up below it */
                return NULL;
        }
        if (!slot_fill(s, key, len) || !(s->path = strdup(buf))) {
                slot_free(s);
                close(fd);
                return NULL;
        }
        s->wanted = report_dir_wanted(t->reports, buf);
        s->in_layer = t->n_overlays > 0 && fstrack_overlay_wanted(t, buf);
        *ret_fd = fd;
        return s;
}

/* Object handle → (dev, ino). */
static int resolve_inode(FsTrack *t, TrackedFs *f, struct file_handle *fh, uint32_t *ret_dev, uint64_t *ret_ino) {
        unsigned char key[8 + MAX_HANDLE_SZ];
        bool found;
        if (fh->handle_bytes > MAX_HANDLE_SZ)
                return -EINVAL;
        if (fstrack_handle_ino(f, fh, ret_dev, ret_ino))
                return 0;
        size_t len = make_key(f, t, fh, key);
        HandleSlot *s = lookup(t->inodes, key, len, &found);
        if (!found) {
                int mfd = mount_fd(f);
                if (mfd < 0)
                        return -EBADF;
                _cleanup_close_ int fd = open_by_handle_at(mfd, fh, O_PATH | O_CLOEXEC);
                struct stat st;
                if (fd < 0)
                        return errno == ENOENT ? -ESTALE : -errno;
                if (fstat(fd, &st) < 0)
                        return -ESTALE;
                if (!slot_fill(s, key, len))
                        return -ENOMEM;
                s->dev = fstrack_pack_dev(st.st_dev);
                s->ino = (uint64_t) st.st_ino;
                fstrack_handle_learn(f, fh, s->dev, s->ino);
        }
        *ret_dev = s->dev;
        *ret_ino = s->ino;
        return 0;
}

static void note_write(FsTrack *t, uint32_t dev, uint64_t ino, bool close_write, const char *name) {
        RecentWrite *r = &t->recent[t->recent_next++ % FSTRACK_RECENT];
        *r = (RecentWrite) { .dev = dev, .ino = ino, .usec = wall_usec(), .close = close_write };
        snprintf(r->through, sizeof(r->through), "%s", name ?: "");
}

/* A write to an inode: its entry (any path) may no longer hold its digest. */
static void on_write(FsTrack *t, TrackedFs *f, uint64_t mask, struct file_handle *ofh, const char *name, int pid) {
        uint32_t dev = 0;
        uint64_t ino = 0;
        int r = resolve_inode(t, f, ofh, &dev, &ino);
        if (r == -ESTALE)
                return; /* deleted meanwhile: its name events remove it */
        if (r < 0) {
                /* out of fds or memory: a write we cannot place is a gap in
                 * coverage (every entry there flagged written, a rescan) */
                fstrack_coverage_break(t, FSTRACK_FANOTIFY);
                return;
        }
        f->writes++;
        rest_note_change(t->rest, dev, ino, pid, NULL); /* not at rest: a held digest waits */
        IverCache *c = iver_context_cache(t->ctx);
        uint32_t idx = iver_cache_find_inode(c, dev, ino);
        if (idx == IVER_CACHE_NONE)
                return;
        bool close_write = mask & FAN_CLOSE_WRITE;
        note_write(t, dev, ino, close_write, name);
        /* any write: a later cookie move is content; a close after a write,
         * where a store through a shared mapping may move no timestamp:
         * re-hash whatever the cookie says */
        bool stale = close_write && !iver_cookie_table_stores_move(iver_context_cookies(t->ctx), dev);
        iver_cache_update_flags(c, idx, IVER_ENTRY_WRITTEN | (stale ? IVER_ENTRY_STALE : 0), 0);
        char p[IVER_CACHE_PATH_MAX];
        (void) iver_cache_path(c, idx, p, sizeof(p));
        if (close_write)
                report_check(t->reports, p); /* the queue keeps its own copy */
        else
                report_written(t->reports, p);
}

/* A change in a measured tree by process pid: its files are not at rest
 * while it goes on (rest.h); a name that came to hold an inode (rename,
 * link) moves that inode's held digest to it; an unlinked name drops it. */
static void note_name(FsTrack *t, uint64_t mask, const char *path, int pid) {
        struct stat st;
        if ((mask & (FAN_MOVED_TO | FAN_CREATE)) && fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
                rest_note_change(t->rest, fstrack_pack_dev(st.st_dev), (uint64_t) st.st_ino, pid, path);
        else
                rest_note_change(t->rest, 0, 0, pid, NULL);
        if (mask & FAN_DELETE)
                rest_note_gone(t->rest, path);
}

static void add_ignore(FsTrack *t, int dirfd) {
        if (!t->ignores_ok || t->ignores >= FSTRACK_IGNORES_MAX || dirfd < 0)
                return;
        if (fanotify_mark(t->fd, FAN_MARK_ADD | FAN_MARK_IGNORE_SURV, IGNORE_MASK, dirfd, NULL) < 0) {
                t->ignores_ok = false; /* kernel < 6.0: filter in user space only */
                return;
        }
        t->ignores++;
}

static void on_event(FsTrack *t, const struct fanotify_event_metadata *md) {
        struct fanotify_event_info_fid *dfid = NULL, *ofid = NULL;
        const char *name = NULL;
        const char *end = (const char *) md + md->event_len;

        for (const char *p = (const char *) md + md->metadata_len; p + sizeof(struct fanotify_event_info_header) <= end;) {
                const struct fanotify_event_info_header *h = (const void *) p;
                if (h->len == 0 || p + h->len > end)
                        break;
                struct fanotify_event_info_fid *fi = (void *) p;
                struct file_handle *fh = (struct file_handle *) fi->handle;
                if (h->info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
                        dfid = fi;
                        name = (const char *) fh->f_handle + fh->handle_bytes;
                } else if (h->info_type == FAN_EVENT_INFO_TYPE_DFID)
                        dfid = fi;
                else if (h->info_type == FAN_EVENT_INFO_TYPE_FID)
                        ofid = fi;
                p += h->len;
        }
        const struct fanotify_event_info_fid *any = dfid ?: ofid;
        if (!any)
                return;
        TrackedFs *f = find_fsid(t, (const fsid_t *) &any->fsid, (struct file_handle *) any->handle);
        if (!f)
                return;
        f->events++;
        uint64_t mask = md->mask;
        bool dir = mask & FAN_ONDIR;

        if ((mask & (FAN_MODIFY | FAN_CLOSE_WRITE)) && !dir && ofid)
                on_write(t, f, mask, (struct file_handle *) ofid->handle, name, md->pid);
        if (dir && (mask & (FAN_MOVED_FROM | FAN_MOVED_TO | FAN_DELETE | FAN_DELETE_SELF)))
                fstrack_caches_clear(t); /* cached directory paths may be wrong now */
        if (!dfid || !name || !*name || strcmp(name, ".") == 0)
                return;

        int dfd;
        const HandleSlot *s = resolve_dir(t, f, (struct file_handle *) dfid->handle, &dfd);
        if (!s) {
                if (dfd >= 0)
                        close(dfd);
                return;
        }
        _cleanup_free_ char *path = path_join(s->path, name);
        bool wanted = s->wanted, layer = s->in_layer;
        if (!wanted && !layer && !(mask & (FAN_MODIFY | FAN_CLOSE_WRITE)))
                add_ignore(t, dfd);
        if (dfd >= 0)
                close(dfd);
        if (!path)
                return;
        if (layer)
                fstrack_overlay_event(t, mask, path, md->pid);
        if (wanted)
                fstrack_dispatch(t, mask, path, md->pid);
}

/* A writer closed path (the name event of a close): as on_write's close. */
static void close_written(FsTrack *t, const char *path) {
        IverCache *c = iver_context_cache(t->ctx);
        uint32_t idx = iver_cache_find_path(c, path, strlen(path));
        if (idx == IVER_CACHE_NONE)
                return;
        IverEntry e;
        iver_cache_get(c, idx, &e);
        if (!iver_cookie_table_stores_move(iver_context_cookies(t->ctx), e.id.dev))
                iver_cache_update_flags(c, idx, IVER_ENTRY_STALE, 0);
}

void fstrack_dispatch(FsTrack *t, uint64_t mask, const char *path, int pid) {
        if (mask & FAN_ONDIR) {
                if (mask & (FAN_MOVED_FROM | FAN_DELETE))
                        report_forget_below(t->reports, path);
                if ((mask & FAN_MOVED_TO) && t->ignores > 0)
                        fstrack_flush_ignores(t); /* an ignored directory may have moved in */
                if (mask & (FAN_CREATE | FAN_MOVED_TO))
                        report_new_dir(t->reports, path);
                return;
        }
        note_name(t, mask, path, pid);
        if (mask & FAN_CLOSE_WRITE)
                close_written(t, path);
        /* deletions and moves away: the check sees ENOENT and drops the entry */
        if ((mask & ~(uint64_t) FAN_MODIFY) == 0)
                report_written(t->reports, path);
        else
                report_check(t->reports, path);
}

int fstrack_drain(FsTrack *t, unsigned rounds) {
        char buf[64 * 1024] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
        int r = -EAGAIN;

        t->drain_seq++;
        for (unsigned i = 0; i < rounds; i++) {
                ssize_t n = read(t->fd, buf, sizeof(buf));
                if (n < 0) {
                        r = errno == EAGAIN ? 0 : -errno;
                        break;
                }
                /* with FID records event_len is a multiple of 4, not of 8: each
                 * event is copied to an aligned buffer before it is read */
                for (size_t off = 0; off + FAN_EVENT_METADATA_LEN <= (size_t) n;) {
                        uint32_t len;
                        memcpy(&len, buf + off + offsetof(struct fanotify_event_metadata, event_len), sizeof(len));
                        if (len < FAN_EVENT_METADATA_LEN || len > (size_t) n - off)
                                break;
                        char ev[4096] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
                        const struct fanotify_event_metadata *md = (const void *) ev;
                        memcpy(ev, buf + off, len < sizeof(ev) ? len : sizeof(ev));
                        off += len;
                        if (len > sizeof(ev) || md->vers != FANOTIFY_METADATA_VERSION)
                                continue;
                        t->events++;
                        if (md->fd >= 0)
                                close(md->fd); /* never with FID reporting; be safe */
                        if (md->mask & FAN_Q_OVERFLOW) {
                                fstrack_overflowed(t);
                                continue;
                        }
                        on_event(t, md);
                }
        }
        for (unsigned i = 0; i < t->n_fs; i++)
                if (t->fs[i].mount_fd >= 0) {
                        close(t->fs[i].mount_fd);
                        t->fs[i].mount_fd = -1;
                }
        return r;
}

int fstrack_on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FsTrack *t = userdata;
        bool pause = brake_before(&t->brake);
        (void) fstrack_drain(t, 16); /* bounded: let other sources run */
        brake_after(&t->brake, pause);
        return 0;
}
