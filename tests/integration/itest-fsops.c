/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The operation matrix: for one mounted filesystem, every operation of
 * issue 2 is performed on a fresh file right after it was measured and found
 * a hit; the next iver_check() must re-hash exactly for explicit changes,
 * never for read/open, and the digest on record must equal an independent
 * SHA-256 (OpenSSL EVP here, not lib's hashing) of the file's bytes. The
 * ledger delta of that last check is checked for the rows DESIGN §5 names.
 *
 * Column "metadata-only attested" (issue 15): the same operation on a second
 * fresh file, checked by a context with the write-attestation hook fed by a
 * real fanotify group (FAN_REPORT_FID filesystem mark; a write or close-write
 * event sets IVER_ENTRY_WRITTEN on the inode's entry, a close-write also
 * IVER_ENTRY_STALE, as iverd's fstrack does). Every metadata operation must
 * then be a metadata-only hit (nothing hashed), every content operation a
 * re-hash, and the digest on record must equal the independent SHA-256.
 *
 * Usage: itest-fsops FSNAME DIR
 * Prints one markdown table row per operation; exit 0 all PASS (or n/a),
 * 1 on any FAIL, 2 on a setup error. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/loop.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "iver/iver.h"
#include "itest-util.h"

#define FILE_SIZE (256 * 1024)
#define REUSE_TRIES 256

static const char *fsname;
static const char *dir;
static IverContext *ctx;
static IverContext *actx;     /* with the attestation hook */
static int fan_fd = -1, mnt_fd = -1;
static uint32_t fan_dev;
static struct timespec t0;   /* atime = mtime of every fresh file: an hour ago */
static int failures;

typedef enum { EXP_HIT, EXP_REHASH } Expect;
typedef enum {
        L_NONE,           /* open: nothing to count */
        L_AVOID_ATIME,    /* read: atime heuristic re-hashes, iverd does not */
        L_EXTRA_UNCHANGED,/* metadata only: extra_vs_mtime and unchanged_content */
        L_MISSED,         /* content changed under an unchanged mtime+size: missed_by_mtime */
        L_CONTENT,        /* visible content change: re-hash, nothing missed */
        L_INFO,           /* only printed */
} LedgerExpect;

typedef struct Row {
        char note[160];
        bool na;
} Row;

typedef struct Op {
        const char *name;
        int (*setup)(const char *path, Row *row); /* before the first check */
        int (*run)(const char *path, Row *row);   /* 0 done, 1 n/a, -errno failure */
        Expect expect;
        LedgerExpect ledger;
        const char *blind_fs;  /* filesystem where the kernel moves no timestamp: a known gap */
} Op;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "FAIL [%s] ", fsname);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

static void fill(uint8_t *buf, size_t n, unsigned seed) {
        uint32_t x = seed * 2654435761u + 12345u;
        for (size_t i = 0; i < n; i++) {
                x = x * 1103515245u + 12345u;
                buf[i] = (uint8_t) (x >> 16) | 1; /* never zero: a hole punched is visible */
        }
}

/* A fresh file of FILE_SIZE bytes, fsynced, atime = mtime = t0. */
static int make_file(const char *path, unsigned seed, size_t size) {
        uint8_t *buf = malloc(size);
        int fd, r;

        if (!buf)
                return -ENOMEM;
        fill(buf, size, seed);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
                r = -errno;
                free(buf);
                return r;
        }
        r = write_all(fd, buf, size, 0);
        free(buf);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r == 0 && futimens(fd, (struct timespec[2]) { t0, t0 }) < 0)
                r = -errno;
        close(fd);
        return r;
}


static void hex(const uint8_t *b, size_t n, char *out) {
        for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", b[i]);
        out[2 * n] = 0;
}

/* Whether the digest on record equals an independent SHA-256 of path now. */
static bool digest_matches(const char *path, const IverDigest *d, const char *what) {
        uint8_t ref[32];
        char a[2 * IVER_DIGEST_MAX + 1], b[65];
        int r = sha256_file(path, ref);

        if (r < 0) {
                fail("%s: independent sha256 of %s: %s", what, path, strerror(-r));
                return false;
        }
        if (d->algo == IVER_HASH_SHA256 && d->len == 32 && memcmp(d->bytes, ref, 32) == 0)
                return true;
        iver_digest_to_hex(d, a);
        hex(ref, 32, b);
        fail("%s: digest on record %s:%s != sha256 of bytes %s", what,
             iver_hash_algo_to_string(d->algo) ?: "?", a, b);
        return false;
}

static const char *res(IverCheckResult r) {
        return iver_check_result_to_string(r) ?: "?";
}

static bool cookie_changed(const IverCheckOutcome *a, const IverCheckOutcome *b) {
        return !iver_identity_equal(&a->id, &b->id) || !iver_cookie_equal(&a->cookie, &b->cookie);
}

static bool entry_trusted(uint32_t idx, char *why, size_t n) {
        IverEntry e;

        if (idx == IVER_CACHE_NONE) {
                snprintf(why, n, "no cache entry");
                return false;
        }
        iver_cache_get(iver_context_cache(ctx), idx, &e);
        if (!(e.flags & IVER_ENTRY_MEASURED) || (e.flags & (IVER_ENTRY_PROVISIONAL | IVER_ENTRY_UNSTABLE))) {
                snprintf(why, n, "entry flags 0x%x (want MEASURED, not PROVISIONAL/UNSTABLE)", e.flags);
                return false;
        }
        return true;
}

/* ---- operations ---------------------------------------------------------- */

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

static char sidecar[4096];

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

/* ---- more ways to change content (issue 15 item 3) ----------------------- */

static int open_op(const char *path, int *ret_fd) {
        *ret_fd = open(path, O_RDWR | O_CLOEXEC);
        return *ret_fd < 0 ? -errno : 0;
}

static int op_writev(const char *path, Row *row) {
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

static int op_zero_range(const char *path, Row *row) {
        return fallocate_op(path, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 32768, 8192, row, "zero range");
}

static int op_falloc_extend(const char *path, Row *row) {
        return fallocate_op(path, 0, FILE_SIZE, 65536, row, "fallocate");
}

static int setup_source(const char *path, Row *row) {
        snprintf(sidecar, sizeof sidecar, "%s.src", path);
        return make_file(sidecar, 997, FILE_SIZE);
}

static int op_copy_range(const char *path, Row *row) {
        int src = open(sidecar, O_RDONLY | O_CLOEXEC), dst, r = 0;
        if (src < 0)
                return -errno;
        if ((r = open_op(path, &dst)) < 0) {
                close(src);
                return r;
        }
        loff_t in = 4096, out = 40960;
        ssize_t k = copy_file_range(src, &in, dst, &out, 8192, 0);
        r = k == 8192 ? 0 : k < 0 ? -errno : -EIO;
        close(dst);
        close(src);
        return r;
}

static int op_clone_range(const char *path, Row *row) {
        int src = open(sidecar, O_RDONLY | O_CLOEXEC), dst, r = 0;
        if (src < 0)
                return -errno;
        if ((r = open_op(path, &dst)) < 0) {
                close(src);
                return r;
        }
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

static int op_splice(const char *path, Row *row) {
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
static int op_io_uring(const char *path, Row *row) {
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
static int op_loop(const char *path, Row *row) {
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

static const Op ops[] = {
        { "read",                  NULL,              op_read,         EXP_HIT,    L_AVOID_ATIME, NULL },
        { "open-no-read",          NULL,              op_open,         EXP_HIT,    L_NONE, NULL },
        { "write",                 NULL,              op_write,        EXP_REHASH, L_CONTENT, NULL },
        { "append",                NULL,              op_append,       EXP_REHASH, L_CONTENT, NULL },
        { "mmap-write+msync",      NULL,              op_mmap,         EXP_REHASH, L_CONTENT, NULL },
        /* tmpfs has no page_mkwrite: a read fault maps the page writable, the
         * store after it faults no more and no timestamp ever moves. No
         * cookie can see that; only a close-after-write trigger can. */
        { "mmap-load+store+msync", NULL,              op_mmap_rmw,     EXP_REHASH, L_CONTENT, "tmpfs" },
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

#define D(f) (b->f - a->f)

static bool ledger_ok(LedgerExpect le, const IverLedgerCounters *a, const IverLedgerCounters *b, char *txt, size_t n) {
        bool ok;
        const char *want;

        switch (le) {
        case L_NONE:
                want = "nothing";
                ok = D(remeasured) == 0 && D(avoided_vs_atime) == 0 && D(avoided_vs_mtime) == 0;
                break;
        case L_AVOID_ATIME:
                want = "avoided_vs_atime+1";
                ok = D(avoided_vs_atime) == 1 && D(remeasured) == 0 && D(bytes_avoided_vs_atime) > 0;
                break;
        case L_EXTRA_UNCHANGED:
                want = "extra_vs_mtime+1 unchanged_content+1";
                ok = D(extra_vs_mtime) == 1 && D(unchanged_content) == 1 && D(missed_by_mtime) == 0;
                break;
        case L_MISSED:
                want = "missed_by_mtime+1";
                ok = D(missed_by_mtime) == 1 && D(extra_vs_mtime) == 1 && D(unchanged_content) == 0;
                break;
        case L_CONTENT:
                want = "remeasured+1";
                ok = D(remeasured) == 1 && D(unchanged_content) == 0 && D(missed_by_mtime) == 0 && D(extra_vs_mtime) == 0;
                break;
        default:
                want = "(info)";
                ok = true;
        }
        ok = ok && D(checks) == 1;
        snprintf(txt, n, "%s: %s", want, ok ? "ok" : "WRONG");
        if (!ok)
                fail("ledger delta: checks %+" PRId64 " first_seen %+" PRId64 " remeasured %+" PRId64
                     " avoided_vs_atime %+" PRId64 " avoided_vs_mtime %+" PRId64 " extra_vs_mtime %+" PRId64
                     " missed_by_mtime %+" PRId64 " unchanged_content %+" PRId64 " (want %s)",
                     (int64_t) D(checks), (int64_t) D(first_seen), (int64_t) D(remeasured),
                     (int64_t) D(avoided_vs_atime), (int64_t) D(avoided_vs_mtime), (int64_t) D(extra_vs_mtime),
                     (int64_t) D(missed_by_mtime), (int64_t) D(unchanged_content), want);
        if (le == L_INFO)
                snprintf(txt, n, "missed_by_mtime%+" PRId64 " first_seen%+" PRId64 " remeasured%+" PRId64,
                         (int64_t) D(missed_by_mtime), (int64_t) D(first_seen), (int64_t) D(remeasured));
        return ok;
}

/* ---- the attested column ------------------------------------------------- */

/* Apply queued fanotify write events to actx's cache entries. */
static void fan_drain(void) {
        char buf[16384] __attribute__((aligned(8)));
        ssize_t n;
        while (fan_fd >= 0 && (n = read(fan_fd, buf, sizeof buf)) > 0) {
                /* FID records make event_len a multiple of 4, not 8: read each
                 * event from an aligned copy */
                for (size_t off = 0; off + FAN_EVENT_METADATA_LEN <= (size_t) n;) {
                        uint32_t len;
                        memcpy(&len, buf + off + offsetof(struct fanotify_event_metadata, event_len), sizeof(len));
                        if (len < FAN_EVENT_METADATA_LEN || len > (size_t) n - off)
                                break;
                        char ev[4096] __attribute__((aligned(8)));
                        const struct fanotify_event_metadata *md = (const void *) ev;
                        memcpy(ev, buf + off, len < sizeof(ev) ? len : sizeof(ev));
                        off += len;
                        if (len > sizeof(ev) || !(md->mask & (FAN_MODIFY | FAN_CLOSE_WRITE)))
                                continue;
                        const char *p = (const char *) md + md->metadata_len, *end = (const char *) md + md->event_len;
                        while (p < end) {
                                const struct fanotify_event_info_header *h = (const void *) p;
                                if (h->len == 0)
                                        break;
                                if (h->info_type == FAN_EVENT_INFO_TYPE_FID) {
                                        struct fanotify_event_info_fid *fi = (void *) p;
                                        int fd = open_by_handle_at(mnt_fd, (struct file_handle *) fi->handle, O_PATH | O_CLOEXEC);
                                        struct stat st;
                                        if (fd >= 0 && fstat(fd, &st) == 0) {
                                                IverCache *c = iver_context_cache(actx);
                                                uint32_t dev = (major(st.st_dev) << 20) | minor(st.st_dev);
                                                uint32_t idx = iver_cache_find_inode(c, dev, st.st_ino);
                                                if (idx != IVER_CACHE_NONE)
                                                        iver_cache_update_flags(c, idx, IVER_ENTRY_WRITTEN |
                                                                (md->mask & FAN_CLOSE_WRITE ? IVER_ENTRY_STALE : 0), 0);
                                        }
                                        if (fd >= 0)
                                                close(fd);
                                }
                                p += h->len;
                        }
                }
        }
}

static int fan_attest(void *userdata, const IverStat *st) {
        fan_drain();
        return st->dev == fan_dev;
}

static int fan_setup(void) {
        struct stat st;
        fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK,
                               O_RDONLY | O_CLOEXEC);
        if (fan_fd < 0)
                return -errno;
        if (fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_MODIFY | FAN_CLOSE_WRITE, AT_FDCWD, dir) < 0)
                return -errno;
        mnt_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mnt_fd < 0 || fstat(mnt_fd, &st) < 0)
                return -errno;
        fan_dev = (major(st.st_dev) << 20) | minor(st.st_dev);
        return 0;
}

/* The operation on a fresh file, checked with attestation. Returns the cell. */
static const char *run_attested(const Op *op, bool *ok) {
        char path[4096];
        IverCheckOutcome o1, o2, o3;
        IverLedgerCounters c0, c1;
        Row row = { .note = "" };
        bool metadata = op->ledger == L_EXTRA_UNCHANGED;
        int r;

        if (!actx)
                return "-";
        snprintf(path, sizeof path, "%s/att-%s", dir, op->name);
        if (make_file(path, (unsigned) (op - ops) + 101, FILE_SIZE) < 0 || (op->setup && op->setup(path, &row) != 0))
                return "n/a";
        fan_drain(); /* the creation's own events: before the measurement */
        if (iver_check(actx, AT_FDCWD, path, &o1) < 0 || o1.result != IVER_CHECK_MEASURED ||
            iver_check(actx, AT_FDCWD, path, &o2) < 0 || o2.result != IVER_CHECK_HIT) {
                fail("%s (attested): preconditions: %s then %s", op->name, res(o1.result), res(o2.result));
                *ok = false;
                return "FAIL (setup)";
        }
        c0 = *iver_ledger_counters(iver_context_ledger(actx));
        r = op->run(path, &row);
        if (r > 0)
                return "n/a";
        if (r < 0) {
                *ok = false;
                return "FAIL (op)";
        }
        /* as iverd does: the events are applied (a close-write marks the entry
         * stale) before the check they trigger; a hit never calls the hook */
        fan_drain();
        r = iver_check(actx, AT_FDCWD, path, &o3);
        c1 = *iver_ledger_counters(iver_context_ledger(actx));
        const IverLedgerCounters *a = &c0, *b = &c1;
        bool dig = r >= 0 && digest_matches(path, &o3.digest, "attested");
        bool good;
        const char *cell;
        if (metadata) {
                good = o3.result == IVER_CHECK_HIT && o3.metadata_only && D(metadata_only) == 1 && D(bytes_hashed) == 0 &&
                       D(remeasured) == 0;
                cell = good && dig ? "metadata-only: ok" : "metadata-only: WRONG";
        } else if (op->expect == EXP_HIT) {
                good = o3.result == IVER_CHECK_HIT && !o3.metadata_only;
                cell = good && dig ? "hit: ok" : "hit: WRONG";
        } else {
                good = o3.result == IVER_CHECK_MEASURED && !o3.provisional;
                cell = good && dig ? "re-hash: ok" : "re-hash: WRONG";
        }
        if (!good || !dig) {
                fail("%s (attested): got %s%s (reason %s), metadata_only %+" PRId64 ", bytes_hashed %+" PRId64, op->name,
                     res(o3.result), o3.metadata_only ? " metadata-only" : "",
                     iver_check_reason_to_string(o3.reason) ?: "?", (int64_t) D(metadata_only), (int64_t) D(bytes_hashed));
                *ok = false;
        }
        return cell;
}

static const char *attested_cell = "-";

static void print_row(const Op *op, const char *cookie, const char *rehash, const char *digest,
                      const char *ledger, const char *result, const char *note) {
        printf("| %-6s | %-22s | %-14s | %-9s | %-14s | %-9s | %-44s | %-20s | %-6s | %s |\n", fsname, op->name, cookie,
               rehash, digest, op->expect == EXP_HIT ? "no rehash" : "re-hash", ledger, attested_cell, result, note);
        fflush(stdout);
}

static bool run_op(const Op *op) {
        char path[4096], why[200] = "", ltxt[120] = "";
        IverCheckOutcome o1, o2, o3;
        IverLedgerCounters c0, c1;
        Row row = { .note = "" };
        bool ok = true, changed, rehashed, dig;
        int r;

        bool att_ok = true;
        attested_cell = run_attested(op, &att_ok);
        if (!att_ok)
                failures++; /* counted apart: the plain column below stands on its own */
        snprintf(path, sizeof path, "%s/%s", dir, op->name);
        r = make_file(path, (unsigned) (op - ops) + 1, FILE_SIZE);
        if (r < 0) {
                fail("%s: create %s: %s", op->name, path, strerror(-r));
                print_row(op, "-", "-", "-", "-", "FAIL", "setup failed");
                return false;
        }
        sidecar[0] = 0;
        if (op->setup) {
                r = op->setup(path, &row);
                if (r != 0) {
                        if (r > 0) {
                                print_row(op, "n/a", "n/a", "n/a", "-", "n/a", row.note);
                                return true;
                        }
                        fail("%s: setup: %s", op->name, strerror(-r));
                        print_row(op, "-", "-", "-", "-", "FAIL", "setup failed");
                        return false;
                }
        }

        /* First check: measured, stable, right digest. */
        r = iver_check(ctx, AT_FDCWD, path, &o1);
        if (r < 0 || o1.result != IVER_CHECK_MEASURED || o1.provisional) {
                fail("%s: first check: %s%s (%s)", op->name, res(o1.result), o1.provisional ? " provisional" : "",
                     strerror(r < 0 ? -r : 0));
                ok = false;
        } else if (!entry_trusted(o1.idx, why, sizeof why)) {
                fail("%s: first check: %s", op->name, why);
                ok = false;
        }
        if (!digest_matches(path, &o1.digest, "first check"))
                ok = false;

        /* Second check: a hit. */
        r = iver_check(ctx, AT_FDCWD, path, &o2);
        if (r < 0 || o2.result != IVER_CHECK_HIT) {
                fail("%s: second check (no change) must be a HIT, got %s", op->name, res(o2.result));
                ok = false;
        }
        if (!digest_matches(path, &o2.digest, "second check"))
                ok = false;
        if (!ok) {
                print_row(op, "-", "-", "-", "-", "FAIL", "preconditions failed");
                return false;
        }

        c0 = *iver_ledger_counters(iver_context_ledger(ctx));
        r = op->run(path, &row);
        if (r > 0) {
                print_row(op, "n/a", "n/a", "n/a", "-", "n/a", row.note);
                return true;
        }
        if (r < 0) {
                fail("%s: operation failed: %s", op->name, strerror(-r));
                print_row(op, "-", "-", "-", "-", "FAIL", "operation failed");
                return false;
        }

        r = iver_check(ctx, AT_FDCWD, path, &o3);
        c1 = *iver_ledger_counters(iver_context_ledger(ctx));
        if (r < 0 || (o3.result != IVER_CHECK_HIT && o3.result != IVER_CHECK_MEASURED)) {
                fail("%s: check after the operation: %s (%s)", op->name, res(o3.result), strerror(r < 0 ? -r : 0));
                print_row(op, "-", "-", "-", "-", "FAIL", res(o3.result));
                return false;
        }
        changed = cookie_changed(&o2, &o3);
        rehashed = o3.result == IVER_CHECK_MEASURED;
        if (op->blind_fs && strcmp(op->blind_fs, fsname) == 0 && !changed && !rehashed) {
                uint8_t ref[32];
                dig = sha256_file(path, ref) == 0 && o3.digest.len == 32 && memcmp(o3.digest.bytes, ref, 32) == 0;
                fprintf(stderr, "GAP  [%s] %s: the kernel moved no timestamp; the digest on record is %s\n", fsname,
                        op->name, dig ? "still right (?)" : "stale");
                /* What the daemon does on the writer's close (IN_CLOSE_WRITE /
                 * FAN_CLOSE_WRITE): invalidate, so the next check re-hashes. */
                iver_check_invalidate(ctx, path);
                IverCheckOutcome o4;
                r = iver_check(ctx, AT_FDCWD, path, &o4);
                if (r < 0 || o4.result != IVER_CHECK_MEASURED || !digest_matches(path, &o4.digest, op->name)) {
                        fail("%s: the close-write re-check did not re-hash to the right digest", op->name);
                        print_row(op, "no", "no", "no", "-", "FAIL", "close-write re-check failed");
                        return false;
                }
                print_row(op, "no", "close-write", "yes", "-", "PASS",
                          "no timestamp moves (tmpfs, no page_mkwrite): the close-write trigger re-hashed it");
                return true;
        }
        dig = digest_matches(path, &o3.digest, op->name);
        if (!dig)
                ok = false;
        if ((op->expect == EXP_HIT) != !rehashed) {
                fail("%s: expected %s, got %s", op->name, op->expect == EXP_HIT ? "HIT" : "MEASURED", res(o3.result));
                ok = false;
        }
        if (op->expect == EXP_REHASH && !changed) {
                fail("%s: an explicit change, but the cookie/identity did not change", op->name);
                ok = false;
        }
        if (op->expect == EXP_HIT && changed) {
                fail("%s: the cookie changed on a read-only operation", op->name);
                ok = false;
        }
        if (rehashed && (o3.provisional || !entry_trusted(o3.idx, why, sizeof why))) {
                fail("%s: re-measurement not trusted: %s", op->name, o3.provisional ? "provisional" : why);
                ok = false;
        }
        if (!ledger_ok(op->ledger, &c0, &c1, ltxt, sizeof ltxt))
                ok = false;

        /* And once more: no change since, so a hit with the same digest. */
        IverCheckOutcome o4;
        r = iver_check(ctx, AT_FDCWD, path, &o4);
        if (r < 0 || o4.result != IVER_CHECK_HIT) {
                fail("%s: check after the re-measurement must be a HIT, got %s", op->name, res(o4.result));
                ok = false;
        } else if (!digest_matches(path, &o4.digest, "final hit")) {
                ok = false;
        }

        print_row(op, changed ? "yes" : "no", rehashed ? "yes" : "no", dig ? "yes" : "no", ltxt,
                  ok ? "PASS" : "FAIL", row.note);
        return ok;
}

int main(int argc, char **argv) {
        IverContextOptions opt = {
                .version_mode = IVER_VERSION_AUTO,
                .algo = IVER_HASH_SHA256,
        };
        struct timespec now;
        int r;

        if (argc != 3) {
                fprintf(stderr, "usage: %s FSNAME DIR\n", argv[0]);
                return 2;
        }
        fsname = argv[1];
        dir = argv[2];
        setvbuf(stdout, NULL, _IOLBF, 0);

        if (iver_measure_prepare_signals() < 0) {
                fprintf(stderr, "iver_measure_prepare_signals failed\n");
                return 2;
        }
        clock_gettime(CLOCK_REALTIME, &now);
        t0 = (struct timespec) { .tv_sec = now.tv_sec - 3600, .tv_nsec = 123456789 };

        r = iver_context_new(&opt, &ctx);
        if (r < 0) {
                fprintf(stderr, "iver_context_new: %s\n", strerror(-r));
                return 2;
        }

        r = fan_setup();
        if (r < 0)
                fprintf(stderr, "# [%s] no fanotify FID group (%s): the attested column is not run\n", fsname, strerror(-r));
        else if (iver_context_new(&opt, &actx) >= 0)
                iver_context_set_attest(actx, fan_attest, NULL);
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
                if (!run_op(&ops[i]))
                        failures++;

        {
                /* The cookie source chosen for this filesystem. */
                uint32_t dev;
                IverCookieSource src;
                uint64_t magic;
                for (unsigned i = 0; iver_cookie_table_get(iver_context_cookies(ctx), i, &dev, &src, &magic); i++)
                        fprintf(stderr, "# [%s] dev %u:%u fs magic 0x%" PRIx64 " cookie source %s\n", fsname,
                                dev >> 20, dev & 0xfffff, magic, iver_cookie_source_to_string(src) ?: "?");
                fprintf(stderr, "# [%s] ledger after all operations:\n", fsname);
                iver_ledger_print(iver_ledger_counters(iver_context_ledger(ctx)), stderr);
        }
        iver_context_free(ctx);
        iver_context_free(actx);
        if (fan_fd >= 0)
                close(fan_fd);
        if (mnt_fd >= 0)
                close(mnt_fd);
        if (failures)
                fprintf(stderr, "FAIL [%s] %d operation(s) failed\n", fsname, failures);
        return failures ? 1 : 0;
}
