/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Directory fds for paths of any length, never through a symlink. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "pathfd.h"

static int open_piece(int at, const char *piece, int flags, bool beneath) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_DIRECTORY | O_CLOEXEC),
                .resolve = RESOLVE_NO_SYMLINKS | (beneath ? RESOLVE_BENEATH : 0),
        };
        int fd = (int) syscall(SYS_openat2, at, piece, &how, sizeof(how));
        if (fd < 0 && errno == EPERM && (flags & O_NOATIME)) /* not ours and no CAP_FOWNER */
                return open_piece(at, piece, flags & ~O_NOATIME, beneath);
        if (fd < 0 && (errno == ENOSYS || errno == EPERM)) /* no openat2 (old kernel, seccomp) */
                fd = openat(at, piece, flags | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

int path_open_dir(const char *path, int flags) {
        char piece[PATH_MAX];
        int at = AT_FDCWD;
        const char *p = path;

        for (;;) {
                size_t rest = strlen(p), len = rest;
                if (rest >= sizeof(piece)) {
                        /* the longest run of whole components that fits */
                        const char *cut = memrchr(p, '/', sizeof(piece) - 1);
                        if (!cut || cut == p) {
                                if (at >= 0)
                                        close(at);
                                return -ENAMETOOLONG;
                        }
                        len = (size_t) (cut - p);
                }
                memcpy(piece, p, len);
                piece[len] = 0;
                bool last = len == rest;
                int fd = open_piece(at, piece, last ? flags : O_PATH, at != AT_FDCWD);
                if (at >= 0)
                        close(at);
                if (fd < 0 || last)
                        return fd;
                at = fd;
                p += len;
                while (*p == '/')
                        p++;
                if (!*p)
                        return at;
        }
}

int path_open_parent(const char *path, const char **ret_name) {
        const char *slash = strrchr(path, '/');
        if (!slash) {
                *ret_name = path;
                return path_open_dir(".", O_PATH);
        }
        *ret_name = slash + 1;
        if (slash == path)
                return path_open_dir("/", O_PATH);
        _cleanup_free_ char *dir = strndup(path, (size_t) (slash - path));
        if (!dir)
                return -ENOMEM;
        return path_open_dir(dir, O_PATH);
}

int path_context_stat(IverContext *ctx, const char *path, IverStat *ret) {
        int r = iver_context_stat(ctx, AT_FDCWD, path, ret);
        if (r != -ENAMETOOLONG)
                return r;
        const char *name;
        int dfd = path_open_parent(path, &name);
        if (dfd < 0)
                return dfd == -ELOOP ? -ENOTDIR : dfd;
        r = iver_context_stat(ctx, dfd, name, ret);
        close(dfd);
        return r;
}
