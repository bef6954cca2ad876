/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A worker's opens: a path measured without following a symlink, the
 * parent directory kept for the next sibling (DirCache), a batch's files
 * opened and read ahead (workers-io.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pathfd.h"
#include "workers-io.h"

/* Measure path without following a symlink in any component: the parent
 * directory is pinned with openat2(RESOLVE_NO_SYMLINKS), in pieces when the
 * path is longer than PATH_MAX, and the file is looked up (AT_SYMLINK_NOFOLLOW,
 * O_NOFOLLOW) from there. Otherwise a measured directory swapped for a symlink
 * between the event and the hash would have a file outside the policy
 * measured (and listed) under the name of one inside it. A path through a
 * symlink is treated as gone. A symlink itself: the digest of its target
 * (iver_measure_link). */
static int measure_in_parent(const char *path, bool link, const IverMeasureOptions *opt, IverMeasurement *ret) {
        const char *name;
        int dfd = path_open_parent(path, &name);
        if (dfd < 0)
                return dfd == -ELOOP ? -ENOTDIR : dfd;
        int r = (link ? iver_measure_link : iver_measure)(dfd, name, opt, ret);
        close(dfd);
        return r;
}

int workers_measure_path(const char *path, const IverMeasureOptions *opt, IverMeasurement *ret) {
        return measure_in_parent(path, false, opt, ret);
}

int workers_measure_link(const char *path, const IverMeasureOptions *opt, IverMeasurement *ret) {
        return measure_in_parent(path, true, opt, ret);
}

void dir_cache_done(DirCache *c) {
        free(c->dir);
        if (c->fd >= 0)
                close(c->fd);
        *c = (DirCache) { .fd = -EBADF };
}

void dir_cache_expire(DirCache *c) {
        if (c->fd >= 0 && iver_now_ns() - c->opened_at > DIR_CACHE_NS)
                dir_cache_done(c);
}

/* The parent directory of path, from the cache or opened (and cached). */
int dir_of(DirCache *c, const char *path, const char **ret_name) {
        const char *slash = strrchr(path, '/');
        if (!slash || slash == path || slash[1] == 0)
                return -EINVAL; /* the daemon's paths are absolute file names */
        size_t len = (size_t) (slash - path);
        if (!(c->fd >= 0 && c->len == len && memcmp(c->dir, path, len) == 0)) {
                char *dir = strndup(path, len);
                if (!dir)
                        return -ENOMEM;
                int fd = path_open_dir(dir, O_PATH);
                if (fd < 0) {
                        free(dir);
                        return fd == -ELOOP ? -ENOTDIR : fd;
                }
                dir_cache_done(c);
                *c = (DirCache) { .dir = dir, .len = len, .fd = fd, .opened_at = iver_now_ns() };
        }
        *ret_name = slash + 1;
        return c->fd;
}

/* A cold file's hash waits for the disk, and a worker reads one file at a
 * time: a batch's files on a device (opt.read_ahead) are opened first and
 * their reads started (readahead, which does not wait for them), so the disk
 * has the batch's reads in flight while the worker hashes the first (a cold
 * ext4 tree of 200,000 small files: `xargs -P8 openssl` 10.6-11.0 s, -P2
 * 13.7-16.8 s). The open is the one the measurement makes; nothing is
 * observed until it does (the statx, and the lease, come after). */
unsigned read_ahead(const char **held, DirCache *c, const Job *first, unsigned max, int *ret_fd) {
        unsigned i = 0;
        for (const Job *j = first; j && i < max; j = j->next, i++) {
                const char *name;
                int dfd;
                ret_fd[i] = -1;
                if (!j->opt.read_ahead || j->by_fd || j->big ||
                    (!j->pending.unseen && !S_ISREG(j->pending.st.mode)) || (dfd = dir_of(c, j->path, &name)) < 0)
                        continue;
                __atomic_store_n(held, j->path, __ATOMIC_RELEASE); /* an open may hang (FUSE, a held fanotify event) */
                int fd = iver_measure_open_fd(dfd, name);
                __atomic_store_n(held, NULL, __ATOMIC_RELEASE);
                if (fd < 0)
                        continue; /* run() opens it again, and says why it cannot */
                /* (the kernel reads no further than the end; a bigger file,
                 * the batch's first, is read ahead by the kernel as it is
                 * read) */
                (void) readahead(fd, 0, READ_AHEAD_BYTES);
                ret_fd[i] = fd;
        }
        return i;
}
