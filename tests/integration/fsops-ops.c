/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The operations of the matrix (issue 2), each on a file that was just
 * measured: reads that must not re-hash, writes, truncation, holes, metadata
 * changes, content changed under restored timestamps, rename over, links,
 * reflinks and inode reuse; and the table of all operations with what each
 * must do to the cache and the ledger. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "itest-util.h"
#include "fsops.h"

#define REUSE_TRIES 256

static int op_read(const char *path, Row *row) {
        char buf[4096];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, buf, sizeof buf);
        int r = k < 0 ? -errno : 0;
        close(fd);
        return r;
}

static int op_open(const char *path, Row *row) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

static int pwrite_path(const char *path, int flags, off_t off, size_t n, unsigned seed) {
        uint8_t *buf = malloc(n);
        int fd, r;
        if (!buf)
                return -ENOMEM;
        fill(buf, n, seed);
        fd = open(path, flags | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                free(buf);
                return r;
        }
        r = write_all(fd, buf, n, off);
        free(buf);
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

static int op_write(const char *path, Row *row) {
        return pwrite_path(path, O_WRONLY, 8192, 4096, 101);
}

static int op_append(const char *path, Row *row) {
        return pwrite_path(path, O_WRONLY | O_APPEND, 0, 1000, 102);
}

/* Store through a fresh shared mapping, msync. load_first: read the page
 * before storing to it (a read-modify-write, as most programs do). */
static int do_mmap(const char *path, bool load_first) {
        int fd = open(path, O_RDWR | O_CLOEXEC), r = 0;
        if (fd < 0)
                return -errno;
        uint8_t *p = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
                r = -errno;
                close(fd);
                return r;
        }
        if (load_first)
                for (size_t i = 0; i < 64; i++)
                        p[12345 + i] ^= 0x5a;
        else
                memset(p + 12345, 0x5a, 64);
        if (msync(p, FILE_SIZE, MS_SYNC) < 0)
                r = -errno;
        munmap(p, FILE_SIZE);
        close(fd);
        return r;
}

/* A store through a mapping, left dirty in the page cache (no msync). */
static int store_unsynced(const char *path, size_t off, bool load_first) {
        int fd = open(path, O_RDWR | O_CLOEXEC), r = 0;
        if (fd < 0)
                return -errno;
        uint8_t *p = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                r = -errno;
        else {
                if (load_first)
                        p[off] ^= 0x5a;
                else
                        p[off] = 0x5a;
                munmap(p, FILE_SIZE);
        }
        close(fd);
        return r;
}

/* The page is dirty from a mapping made before the measurement; a new
 * mapping reads and stores to it, with no msync: the store faults
 * (->page_mkwrite) even though the page is dirty, and moves the times
 * (iver_cookie_table_stores_move relies on it). */
static int op_mmap_dirty_setup(const char *path, Row *row) {
        return store_unsynced(path, 12345, false);
}

static int op_mmap_dirty(const char *path, Row *row) {
        return store_unsynced(path, 12346, true);
}

static int op_mmap(const char *path, Row *row) {
        return do_mmap(path, false);
}

static int op_mmap_rmw(const char *path, Row *row) {
        return do_mmap(path, true);
}

static int op_odirect(const char *path, Row *row) {
        void *buf = NULL;
        int fd, r;

        if (posix_memalign(&buf, 4096, 4096) != 0)
                return -ENOMEM;
        fill(buf, 4096, 104);
        fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                free(buf);
                if (r == -EINVAL || r == -EOPNOTSUPP) {
                        snprintf(row->note, sizeof row->note, "O_DIRECT refused: %s", strerror(-r));
                        return 1;
                }
                return r;
        }
        ssize_t k = pwrite(fd, buf, 4096, 4096);
        r = k == 4096 ? 0 : k < 0 ? -errno : -EIO;
        free(buf);
        close(fd);
        if (r == -EINVAL || r == -EOPNOTSUPP) {
                snprintf(row->note, sizeof row->note, "O_DIRECT write refused: %s", strerror(-r));
                return 1;
        }
        return r;
}

static int op_trunc_shrink(const char *path, Row *row) {
        return truncate(path, FILE_SIZE / 2) < 0 ? -errno : 0;
}

static int op_trunc_extend(const char *path, Row *row) {
        return truncate(path, FILE_SIZE * 2) < 0 ? -errno : 0;
}

static int op_punch(const char *path, Row *row) {
        int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;
        if (fd < 0)
                return -errno;
        if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16384, 16384) < 0)
                r = -errno;
        close(fd);
        if (r == -EOPNOTSUPP) {
                snprintf(row->note, sizeof row->note, "punch hole not supported");
                return 1;
        }
        return r;
}

static int op_chmod(const char *path, Row *row) {
        return chmod(path, 0600) < 0 ? -errno : 0;
}

static int op_chown(const char *path, Row *row) {
        return chown(path, 4242, 4243) < 0 ? -errno : 0;
}

static int xattr_na(int r, Row *row) {
        if (r == -ENOTSUP || r == -EOPNOTSUPP) {
                snprintf(row->note, sizeof row->note, "user xattrs not supported");
                return 1;
        }
        return r;
}

static int op_setxattr(const char *path, Row *row) {
        return xattr_na(setxattr(path, "user.iver.test", "v1", 2, 0) < 0 ? -errno : 0, row);
}

static int setup_removexattr(const char *path, Row *row) {
        return xattr_na(setxattr(path, "user.iver.test", "v1", 2, 0) < 0 ? -errno : 0, row);
}

static int op_removexattr(const char *path, Row *row) {
        return xattr_na(removexattr(path, "user.iver.test") < 0 ? -errno : 0, row);
}

/* Change content (same size), then put atime and mtime back (`touch -r`). */
static int op_tamper(const char *path, Row *row) {
        struct stat st;
        int r;
        if (stat(path, &st) < 0)
                return -errno;
        r = pwrite_path(path, O_WRONLY, 0, 4096, 105);
        if (r < 0)
                return r;
        if (utimensat(AT_FDCWD, path, (struct timespec[2]) { st.st_atim, st.st_mtim }, 0) < 0)
                return -errno;
        struct stat st2;
        if (stat(path, &st2) < 0)
                return -errno;
        if (st2.st_size != st.st_size || st2.st_mtim.tv_sec != st.st_mtim.tv_sec ||
            st2.st_mtim.tv_nsec != st.st_mtim.tv_nsec)
                return -EILSEQ;
        return 0;
}

char sidecar[4096];

static int setup_rename(const char *path, Row *row) {
        /* Same size, same atime+mtime (t0), other bytes. */
        snprintf(sidecar, sizeof sidecar, "%s.new", path);
        return make_file(sidecar, 999, FILE_SIZE);
}

static int op_rename(const char *path, Row *row) {
        struct stat a, b;
        if (stat(path, &a) < 0 || stat(sidecar, &b) < 0)
                return -errno;
        if (a.st_size != b.st_size || a.st_mtim.tv_sec != b.st_mtim.tv_sec || a.st_mtim.tv_nsec != b.st_mtim.tv_nsec)
                return -EILSEQ;
        return rename(sidecar, path) < 0 ? -errno : 0;
}

static int op_link(const char *path, Row *row) {
        snprintf(sidecar, sizeof sidecar, "%s.lnk", path);
        return link(path, sidecar) < 0 ? -errno : 0;
}

static int setup_reflink(const char *path, Row *row) {
        snprintf(sidecar, sizeof sidecar, "%s.src", path);
        return make_file(sidecar, 998, FILE_SIZE);
}

static int op_reflink(const char *path, Row *row) {
        int src = open(sidecar, O_RDONLY | O_CLOEXEC), dst, r = 0;
        if (src < 0)
                return -errno;
        dst = open(path, O_WRONLY | O_CLOEXEC);
        if (dst < 0) {
                r = -errno;
                close(src);
                return r;
        }
        if (ioctl(dst, FICLONE, src) < 0)
                r = -errno;
        close(dst);
        close(src);
        if (r == -EOPNOTSUPP || r == -ENOTTY || r == -EXDEV || r == -EINVAL || r == -ENOSYS) {
                snprintf(row->note, sizeof row->note, "FICLONE: %s", strerror(-r));
                return 1;
        }
        return r;
}

/* Unlink, then create files until one gets the old inode number (ext4: at
 * once); losers are renamed aside so their numbers stay taken. Same size,
 * same atime+mtime, other bytes. */
static int op_reuse(const char *path, Row *row) {
        struct stat st, nst;
        char junk[4200];
        int tries, r;

        if (stat(path, &st) < 0)
                return -errno;
        if (unlink(path) < 0)
                return -errno;
        for (tries = 1; tries <= REUSE_TRIES; tries++) {
                r = make_file(path, 2000 + tries, FILE_SIZE);
                if (r < 0)
                        return r;
                if (stat(path, &nst) < 0)
                        return -errno;
                if (nst.st_ino == st.st_ino)
                        break;
                if (tries == REUSE_TRIES)
                        break;
                snprintf(junk, sizeof junk, "%s.junk%d", path, tries);
                if (rename(path, junk) < 0)
                        return -errno;
        }
        if (nst.st_ino == st.st_ino)
                snprintf(row->note, sizeof row->note, "ino %ju reused after %d create(s)", (uintmax_t) st.st_ino, tries);
        else
                snprintf(row->note, sizeof row->note, "ino not reused in %d creates", REUSE_TRIES);
        return 0;
}

int open_op(const char *path, int *ret_fd) {
        *ret_fd = open(path, O_RDWR | O_CLOEXEC);
        return *ret_fd < 0 ? -errno : 0;
}

const Op ops[] = {
        { "read",                  NULL,              op_read,         EXP_HIT,    L_AVOID_ATIME, NULL },
        { "open-no-read",          NULL,              op_open,         EXP_HIT,    L_NONE, NULL },
        { "write",                 NULL,              op_write,        EXP_REHASH, L_CONTENT, NULL },
        { "append",                NULL,              op_append,       EXP_REHASH, L_CONTENT, NULL },
        { "mmap-write+msync",      NULL,              op_mmap,         EXP_REHASH, L_CONTENT, NULL },
        /* tmpfs has no page_mkwrite: a read fault maps the page writable, the
         * store after it faults no more and no timestamp ever moves. No
         * cookie can see that; only a close-after-write trigger can. */
        { "mmap-load+store+msync", NULL,              op_mmap_rmw,     EXP_REHASH, L_CONTENT, "tmpfs" },
        { "mmap-store-dirty-page", op_mmap_dirty_setup, op_mmap_dirty, EXP_REHASH, L_CONTENT, "tmpfs" },
        { "O_DIRECT-write",        NULL,              op_odirect,      EXP_REHASH, L_CONTENT, NULL },
        { "truncate-shrink",       NULL,              op_trunc_shrink, EXP_REHASH, L_CONTENT, NULL },
        { "truncate-extend",       NULL,              op_trunc_extend, EXP_REHASH, L_CONTENT, NULL },
        { "punch-hole",            NULL,              op_punch,        EXP_REHASH, L_CONTENT, NULL },
        { "chmod",                 NULL,              op_chmod,        EXP_REHASH, L_EXTRA_UNCHANGED, NULL },
        { "chown",                 NULL,              op_chown,        EXP_REHASH, L_EXTRA_UNCHANGED, NULL },
        { "setxattr",              NULL,              op_setxattr,     EXP_REHASH, L_EXTRA_UNCHANGED, NULL },
        { "removexattr",           setup_removexattr, op_removexattr,  EXP_REHASH, L_EXTRA_UNCHANGED, NULL },
        { "write+restore-times",   NULL,              op_tamper,       EXP_REHASH, L_MISSED, NULL },
        { "rename-over-same-mtime", setup_rename,     op_rename,       EXP_REHASH, L_MISSED, NULL },
        { "hard-link",             NULL,              op_link,         EXP_REHASH, L_EXTRA_UNCHANGED, NULL },
        { "reflink-FICLONE",       setup_reflink,     op_reflink,      EXP_REHASH, L_CONTENT, NULL },
        { "writev",                NULL,              op_writev,       EXP_REHASH, L_CONTENT, NULL },
        { "zero-range",            NULL,              op_zero_range,   EXP_REHASH, L_CONTENT, NULL },
        { "fallocate-extend",      NULL,              op_falloc_extend, EXP_REHASH, L_CONTENT, NULL },
        { "copy_file_range",       setup_source,      op_copy_range,   EXP_REHASH, L_CONTENT, NULL },
        { "FICLONERANGE",          setup_source,      op_clone_range,  EXP_REHASH, L_CONTENT, NULL },
        { "splice",                NULL,              op_splice,       EXP_REHASH, L_CONTENT, NULL },
        { "io_uring-write",        NULL,              op_io_uring,     EXP_REHASH, L_CONTENT, NULL },
        { "loop-device-write",     NULL,              op_loop,         EXP_REHASH, L_CONTENT, NULL },
        { "delete+reuse-ino",      NULL,              op_reuse,        EXP_REHASH, L_INFO, NULL },
};

const size_t n_ops = sizeof ops / sizeof ops[0];
