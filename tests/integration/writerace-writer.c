/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writer of the write race (itest-writerace), a child process: it
 * rewrites the 64 MiB file over and over with alternating byte patterns,
 * every 4 KiB stamped with the round number: odd rounds in one 64 MiB pwrite
 * (ctime stamped once, at its start, while data lands for tens of ms; every
 * other one slowed down by userfaultfd), even rounds in 4 MiB pwrites with
 * 2 ms gaps. It opens and closes the file every round (so read leases can be
 * had between rounds) except after every third round, when it keeps it open
 * across the pause. After every slow and every even round it stops at a
 * quiescent point and waits for the measurer's go. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../unit/seed.h"
#include "itest-util.h"
#include "writerace.h"

/* Slow single writes: the source buffer of one 64 MiB pwrite is registered
 * with userfaultfd and a thread serves its pages 64 KiB at a time with a
 * pause, so the write takes ~0.3 s after ctime was stamped at its start and
 * the hasher overtakes it: exactly the case where comparing cookies before
 * and after hashing records stale data as stable (notes/fs.md). */
#define UFFD_BLOCK (64U * 1024U)
#define UFFD_DELAY_US 200

static uint8_t *slow_area;
static int slow_uffd = -1;
static uint64_t slow_round;
static uint64_t slow_served;

static int uffd_open(void) {
        int fd = (int) syscall(SYS_userfaultfd, O_CLOEXEC);
        if (fd < 0) {
                int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
                if (dev >= 0) {
                        fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
                        close(dev);
                }
        }
        return fd;
}

static void *uffd_server(void *arg) {
        uint8_t *src = malloc(UFFD_BLOCK);
        if (!src)
                return NULL;
        for (;;) {
                struct uffd_msg msg;
                struct pollfd pfd = { .fd = slow_uffd, .events = POLLIN };
                if (poll(&pfd, 1, -1) < 0 || read(slow_uffd, &msg, sizeof msg) != sizeof msg) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        break;
                }
                if (msg.event != UFFD_EVENT_PAGEFAULT)
                        continue;
                uint64_t off = (msg.arg.pagefault.address - (uintptr_t) slow_area) & ~(uint64_t) (UFFD_BLOCK - 1);
                uint64_t round = LOAD(slow_round);
                memset(src, (round & 1) ? 0xAA : 0x55, UFFD_BLOCK);
                for (unsigned c = 0; c < UFFD_BLOCK; c += 4096)
                        memcpy(src + c, &round, sizeof round);
                usleep(UFFD_DELAY_US);
                struct uffdio_copy cp = {
                        .dst = (uintptr_t) slow_area + off, .src = (uintptr_t) src, .len = UFFD_BLOCK,
                };
                if (ioctl(slow_uffd, UFFDIO_COPY, &cp) < 0 && errno == EEXIST) {
                        struct uffdio_range wr = { .start = (uintptr_t) slow_area + off, .len = UFFD_BLOCK };
                        (void) ioctl(slow_uffd, UFFDIO_WAKE, &wr);
                }
                /* The write is under way: its ctime stamp has landed. */
                if (__atomic_add_fetch(&slow_served, 1, __ATOMIC_SEQ_CST) == 1)
                        __atomic_add_fetch(&shared->chunks, 1, __ATOMIC_SEQ_CST);
        }
        free(src);
        return NULL;
}

static bool slow_setup(void) {
        pthread_t t;
        slow_area = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (slow_area == MAP_FAILED)
                return false;
        slow_uffd = uffd_open();
        if (slow_uffd < 0)
                return false;
        struct uffdio_api api = { .api = UFFD_API };
        struct uffdio_register reg = {
                .range = { .start = (uintptr_t) slow_area, .len = FILE_SIZE },
                .mode = UFFDIO_REGISTER_MODE_MISSING,
        };
        if (ioctl(slow_uffd, UFFDIO_API, &api) < 0 || ioctl(slow_uffd, UFFDIO_REGISTER, &reg) < 0)
                return false;
        return pthread_create(&t, NULL, uffd_server, NULL) == 0;
}

void writer(int qfd, int gfd) {
        WriterReport rep = { 0 };
        uint8_t *buf = malloc(FILE_SIZE);
        int fd = -1;
        uint64_t seed = test_seed("writerace writer pauses", (uint64_t) getpid());

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
                _exit(3);
        if (!buf)
                _exit(3);
        bool have_slow = slow_setup();
        if (!have_slow)
                fprintf(stderr, "# [%s] userfaultfd unavailable (%m): no slow single-write rounds\n", fsname);
        for (uint64_t round = 1;; round++) {
                bool keep_open = round % 3 == 0;
                /* Rounds 1, 5, 9…: one slow 64 MiB pwrite (userfaultfd);
                 * rounds 3, 7, 11…: one fast 64 MiB pwrite (ctime is stamped
                 * once, at its start); even rounds: 4 MiB chunks with gaps. */
                bool slow = have_slow && round % 4 == 1;
                size_t chunk = round % 2 ? FILE_SIZE : CHUNK;
                char cmd;

                if (fd < 0) {
                        int64_t t = now_ns();
                        fd = open(path, O_WRONLY | O_CLOEXEC);
                        t = now_ns() - t;
                        if (fd < 0) {
                                rep.error = -errno;
                                break;
                        }
                        rep.opens++;
                        rep.total_open_wait_ns += t;
                        if (t > rep.max_open_wait_ns)
                                rep.max_open_wait_ns = t;
                }
                if (slow) {
                        /* drop the pages: every 64 KiB faults to the server */
                        madvise(slow_area, FILE_SIZE, MADV_DONTNEED);
                        STORE(slow_round, round);
                        STORE(slow_served, 0);
                } else
                        for (uint64_t off = 0; off < FILE_SIZE; off += CHUNK)
                                stamp(buf + off, round);
                STORE(shared->chunks, 0);
                STORE(shared->round, round);
                STORE(shared->writing, 1);
                if (slow) {
                        int64_t t = now_ns();
                        int r = write_all(fd, slow_area, FILE_SIZE, 0);
                        if (r < 0) {
                                rep.error = r;
                                goto out;
                        }
                        t = now_ns() - t;
                        if (t > rep.max_slow_write_ns)
                                rep.max_slow_write_ns = t;
                        rep.slow_rounds++;
                        STORE(shared->chunks, 2);
                } else for (uint64_t off = 0; off < FILE_SIZE; off += chunk) {
                        int r = write_all(fd, buf + off, chunk, (off_t) off);
                        if (r < 0) {
                                rep.error = r;
                                goto out;
                        }
                        __atomic_add_fetch(&shared->chunks, 1, __ATOMIC_SEQ_CST);
                        if (off + chunk < FILE_SIZE)
                                usleep(CHUNK_GAP_US);
                }
                STORE(shared->writing, 0);
                rep.rounds++;
                if (keep_open)
                        rep.kept_open++;
                else {
                        close(fd);
                        fd = -1;
                }
                /* Quiescent point after every slow round and every even one:
                 * tell the measurer (Q: closed, K: kept open), wait for go. */
                if ((slow || round % 2 == 0) &&
                    (write(qfd, keep_open ? "K" : "Q", 1) != 1 || read_full(gfd, &cmd, 1) < 0 || cmd != 'G'))
                        break;
                /* A short closed-but-not-announced window, so that stable
                 * measurements also start while a writer is about to come. */
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                if (fd < 0)
                        usleep((useconds_t) ((seed >> 33) % 20000));
        }
out:
        if (fd >= 0)
                close(fd);
        STORE(shared->writing, 0);
        (void) !write(qfd, "R", 1);
        (void) !write(qfd, &rep, sizeof rep);
        _exit(0);
}
