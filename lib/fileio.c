/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whole reads and writes, safe opens of regular files and atomic replacement;
 * see lib/fileio.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"

/* read() from the file position when offset < 0, else pread() from offset. */
static int read_loop(int fd, void *buf, size_t size, int64_t offset, size_t *ret_len) {
        uint8_t *p = buf;
        size_t len = 0;

        while (len < size) {
                ssize_t k = offset < 0 ? read(fd, p + len, size - len)
                                       : pread(fd, p + len, size - len, (off_t) ((uint64_t) offset + len));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        *ret_len = len;
        return 0;
}

int iver_read_full(int fd, void *buf, size_t size, size_t *ret_len) {
        return read_loop(fd, buf, size, -1, ret_len);
}

int iver_pread_full(int fd, void *buf, size_t size, uint64_t offset, size_t *ret_len) {
        size_t len;
        if (offset > INT64_MAX)
                return -EINVAL;
        int r = read_loop(fd, buf, size, (int64_t) offset, &len);
        if (r < 0)
                return r;
        if (!ret_len)
                return len == size ? 0 : -EIO;
        *ret_len = len;
        return 0;
}

int iver_write_full(int fd, const void *buf, size_t len) {
        const uint8_t *p = buf;

        while (len > 0) {
                ssize_t k = write(fd, p, len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return -EIO;
                p += k;
                len -= (size_t) k;
        }
        return 0;
}

int iver_open_regular(const char *path, unsigned flags, struct stat *ret_st) {
        struct stat st;

        if (!path)
                return -EINVAL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();        /* a symlink: -ELOOP */
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode)) {
                if (!(flags & IVER_OPEN_DIR_OK))
                        return -EISDIR;
        } else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
                if (!(flags & IVER_OPEN_DEV_NULL_OK))
                        return -EBADFD;
        } else if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (ret_st)
                *ret_st = st;
        return TAKE_FD(fd);
}

int iver_read_fd_max(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        for (;;) {
                if (len == cap) {
                        if (cap > max)
                                return -EFBIG;
                        cap = cap ? cap * 2 : 16384;
                        if (cap > max + 1)
                                cap = max + 1;
                        char *n = realloc(buf, cap + 1);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                }
                size_t k;
                int r = iver_read_full(fd, buf + len, cap - len, &k);
                if (r < 0)
                        return r;
                len += k;
                if (len > max)
                        return -EFBIG;
                if (len < cap)
                        break;          /* EOF */
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int iver_read_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = iver_open_regular(path, IVER_OPEN_DEV_NULL_OK, NULL);
        if (fd < 0)
                return fd;
        return iver_read_fd_max(fd, max, ret, ret_len);
}

const char *iver_file_strerror(int r) {
        switch (r) {
        case -ELOOP:
                return "a symbolic link (not followed)";
        case -EBADFD:
                return "not a regular file (a FIFO, socket or device)";
        case -EFBIG:
                return "file too large";
        default:
                return strerror(r < 0 ? -r : r);
        }
}

int iver_atomic_open(int dir_fd, const char *name, mode_t mode, IverAtomicFile *ret) {
        int fd = -EBADF;

        if (!name || !*name || strchr(name, '/'))
                return -EINVAL;
        for (unsigned attempt = 0; fd < 0; attempt++) {
                uint64_t rnd;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
                        rnd = ((uint64_t) getpid() << 32) ^ (uint64_t) (uintptr_t) &rnd ^ attempt;
                if (snprintf(ret->tmp, sizeof(ret->tmp), ".%.200s.%016llx.tmp", name, (unsigned long long) rnd) >=
                    (int) sizeof(ret->tmp))
                        return -ENAMETOOLONG;
                fd = openat(dir_fd, ret->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd < 0 && (errno != EEXIST || attempt >= 16))
                        return negative_errno();
        }
        ret->dir_fd = dir_fd;
        ret->fd = fd;
        return 0;
}

int iver_atomic_commit(IverAtomicFile *f, const char *name, mode_t mode, unsigned flags, int r) {
        _cleanup_close_ int fd = TAKE_FD(f->fd);

        if (r >= 0 && (flags & IVER_WRITE_EXACT_MODE) && fchmod(fd, mode) < 0)
                r = negative_errno();
        if (r >= 0 && (flags & IVER_WRITE_SYNC) && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(f->dir_fd, f->tmp, f->dir_fd, name) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(f->dir_fd, f->tmp, 0);
                return r;
        }
        if (flags & IVER_WRITE_SYNC)
                (void) fsync(f->dir_fd);        /* the rename itself durable */
        return 0;
}

int iver_write_file_atomic_at(int dir_fd, const char *name, const void *data, size_t len, mode_t mode,
                              unsigned flags) {
        IverAtomicFile f;
        int r = iver_atomic_open(dir_fd, name, mode, &f);
        if (r < 0)
                return r;
        return iver_atomic_commit(&f, name, mode, flags, iver_write_full(f.fd, data, len));
}

int iver_open_dir_of(const char *path, const char **ret_name) {
        if (!path || !*path)
                return -EINVAL;
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *dir = slash ? strndup(path, slash == path ? 1 : (size_t) (slash - path)) : strdup(".");
        if (!dir)
                return -ENOMEM;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        *ret_name = slash ? slash + 1 : path;
        return dfd;
}

int iver_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags) {
        const char *name;
        _cleanup_close_ int dfd = iver_open_dir_of(path, &name);
        if (dfd < 0)
                return dfd;
        return iver_write_file_atomic_at(dfd, name, data, len, mode, flags);
}
