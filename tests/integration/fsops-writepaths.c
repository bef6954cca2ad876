/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* More ways to change content for the operation matrix (issue 15 item 3):
 * writev, fallocate (zero range, extend), copy_file_range, FICLONERANGE,
 * splice, an io_uring write and a write through a loop device backed by the
 * file. 0 done, 1 n/a (the filesystem or kernel refuses it), -errno. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/loop.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fsops.h"

int op_writev(const char *path, Row *row) {
        uint8_t a[1000], b[3000];
        int fd, r = open_op(path, &fd);
        if (r < 0)
                return r;
        fill(a, sizeof a, 301);
        fill(b, sizeof b, 302);
        struct iovec iov[2] = { { a, sizeof a }, { b, sizeof b } };
        ssize_t k = pwritev(fd, iov, 2, 20000);
        r = k == (ssize_t) (sizeof a + sizeof b) ? 0 : k < 0 ? -errno : -EIO;
        close(fd);
        return r;
}

static int fallocate_op(const char *path, int mode, off_t off, off_t len, Row *row, const char *what) {
        int fd, r = open_op(path, &fd);
        if (r < 0)
                return r;
        if (fallocate(fd, mode, off, len) < 0)
                r = -errno;
        close(fd);
        if (r == -EOPNOTSUPP) {
                snprintf(row->note, sizeof row->note, "%s not supported", what);
                return 1;
        }
        return r;
}

int op_zero_range(const char *path, Row *row) {
        return fallocate_op(path, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 32768, 8192, row, "zero range");
}

int op_falloc_extend(const char *path, Row *row) {
        return fallocate_op(path, 0, FILE_SIZE, 65536, row, "fallocate");
}

int setup_source(const char *path, Row *row) {
        snprintf(sidecar, sizeof sidecar, "%s.src", path);
        return make_file(sidecar, 997, FILE_SIZE);
}

/* The sidecar (read) and path (written through open_op). */
static int open_pair(const char *path, int *ret_src, int *ret_dst) {
        int r, src = open(sidecar, O_RDONLY | O_CLOEXEC);
        if (src < 0)
                return -errno;
        if ((r = open_op(path, ret_dst)) < 0) {
                close(src);
                return r;
        }
        *ret_src = src;
        return 0;
}

int op_copy_range(const char *path, Row *row) {
        int src = -1, dst = -1, r = open_pair(path, &src, &dst);
        if (r < 0)
                return r;
        loff_t in = 4096, out = 40960;
        ssize_t k = copy_file_range(src, &in, dst, &out, 8192, 0);
        r = k == 8192 ? 0 : k < 0 ? -errno : -EIO;
        close(dst);
        close(src);
        return r;
}

int op_clone_range(const char *path, Row *row) {
        int src = -1, dst = -1, r = open_pair(path, &src, &dst);
        if (r < 0)
                return r;
        struct file_clone_range fcr = { .src_fd = src, .src_offset = 0, .src_length = 65536, .dest_offset = 65536 };
        if (ioctl(dst, FICLONERANGE, &fcr) < 0)
                r = -errno;
        close(dst);
        close(src);
        if (r == -EOPNOTSUPP || r == -ENOTTY || r == -EXDEV || r == -EINVAL) {
                snprintf(row->note, sizeof row->note, "FICLONERANGE: %s", strerror(-r));
                return 1;
        }
        return r;
}

int op_splice(const char *path, Row *row) {
        uint8_t buf[4096];
        int p[2], fd, r;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fill(buf, sizeof buf, 303);
        r = write(p[1], buf, sizeof buf) == (ssize_t) sizeof buf ? 0 : -EIO;
        if (r == 0 && (r = open_op(path, &fd)) == 0) {
                loff_t off = 12288;
                ssize_t k = splice(p[0], NULL, fd, &off, sizeof buf, 0);
                r = k == (ssize_t) sizeof buf ? 0 : k < 0 ? -errno : -EIO;
                close(fd);
        }
        close(p[0]);
        close(p[1]);
        return r;
}

/* One IORING_OP_WRITE through raw io_uring syscalls (no liburing here). */
int op_io_uring(const char *path, Row *row) {
        struct io_uring_params pr = {};
        uint8_t buf[4096];
        int ring = (int) syscall(__NR_io_uring_setup, 4, &pr), fd = -1, r = 0;
        if (ring < 0) {
                snprintf(row->note, sizeof row->note, "io_uring_setup: %s", strerror(errno));
                return 1;
        }
        size_t sq_len = pr.sq_off.array + pr.sq_entries * sizeof(uint32_t);
        size_t cq_len = pr.cq_off.cqes + pr.cq_entries * sizeof(struct io_uring_cqe);
        size_t sqe_len = pr.sq_entries * sizeof(struct io_uring_sqe);
        uint8_t *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
        uint8_t *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
        struct io_uring_sqe *sqes = mmap(NULL, sqe_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                                         IORING_OFF_SQES);
        if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED || (r = open_op(path, &fd)) < 0) {
                r = r < 0 ? r : -errno;
                goto out;
        }
        fill(buf, sizeof buf, 304);
        uint32_t tail = *(uint32_t *) (sq + pr.sq_off.tail), mask = *(uint32_t *) (sq + pr.sq_off.ring_mask);
        struct io_uring_sqe *e = &sqes[tail & mask];
        memset(e, 0, sizeof(*e));
        e->opcode = IORING_OP_WRITE;
        e->fd = fd;
        e->addr = (uint64_t) (uintptr_t) buf;
        e->len = sizeof buf;
        e->off = 53248;
        ((uint32_t *) (sq + pr.sq_off.array))[tail & mask] = tail & mask;
        __atomic_store_n((uint32_t *) (sq + pr.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
        if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
                r = -errno;
                goto out;
        }
        uint32_t head = __atomic_load_n((uint32_t *) (cq + pr.cq_off.head), __ATOMIC_ACQUIRE);
        struct io_uring_cqe *c = (struct io_uring_cqe *) (cq + pr.cq_off.cqes) +
                                 (head & *(uint32_t *) (cq + pr.cq_off.ring_mask));
        r = c->res == (int) sizeof buf ? 0 : c->res < 0 ? c->res : -EIO;
        __atomic_store_n((uint32_t *) (cq + pr.cq_off.head), head + 1, __ATOMIC_RELEASE);
out:
        if (fd >= 0)
                close(fd);
        close(ring);
        return r;
}

/* Write through a loop device backed by the file (the block layer's writes
 * reach the file through the loop driver, not a write(2) of ours). */
int op_loop(const char *path, Row *row) {
        uint8_t buf[4096];
        char dev[64];
        int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), n, lfd = -1, bfd = -1, r = 0;
        if (ctl < 0 || (n = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
                snprintf(row->note, sizeof row->note, "no loop device: %s", strerror(errno));
                if (ctl >= 0)
                        close(ctl);
                return 1;
        }
        close(ctl);
        snprintf(dev, sizeof dev, "/dev/loop%d", n);
        if ((r = open_op(path, &bfd)) < 0)
                return r;
        lfd = open(dev, O_RDWR | O_CLOEXEC);
        struct loop_config cfg = { .fd = (uint32_t) bfd, .block_size = 512 };
        if (lfd < 0 || ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
                snprintf(row->note, sizeof row->note, "loop %s: %s", dev, strerror(errno));
                if (lfd >= 0)
                        close(lfd);
                close(bfd);
                return 1;
        }
        close(bfd); /* the loop driver holds the file open for writing now */
        fill(buf, sizeof buf, 305);
        if (pwrite(lfd, buf, sizeof buf, 61440) != (ssize_t) sizeof buf || fsync(lfd) < 0)
                r = -errno;
        if (ioctl(lfd, LOOP_CLR_FD) < 0 && r == 0)
                r = -errno;
        close(lfd);
        /* the detach is asynchronous: wait until the driver let go of the file */
        for (int i = 0; i < 200; i++) {
                char sys[96], b[8] = "";
                snprintf(sys, sizeof sys, "/sys/block/loop%d/size", n);
                FILE *f = fopen(sys, "re");
                bool gone = !f || !fgets(b, sizeof b, f) || strtoull(b, NULL, 10) == 0;
                if (f)
                        fclose(f);
                if (gone)
                        break;
                usleep(10000);
        }
        snprintf(row->note, sizeof row->note, "via %s", dev);
        return r;
}
