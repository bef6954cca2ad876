/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The parts of itest-writerace: the measurer and the invariant
 * (itest-writerace.c) and the writer child (writerace-writer.c), and what
 * they share: the file's layout, the round state in shared memory and the
 * writer's report. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (64ULL << 20)
#define CHUNK (4U << 20)
#define CHUNK_GAP_US 2000     /* between chunks: a round lasts about as long as one hash */

/* Shared with the writer: which round, whether its writes are in progress,
 * how many of its chunks have been written. */
typedef struct Shared {
        uint64_t round;
        int writing;
        unsigned chunks;
} Shared;
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

typedef struct WriterReport {
        uint64_t rounds, opens, kept_open, slow_rounds;
        int64_t max_slow_write_ns;
        int64_t max_open_wait_ns, total_open_wait_ns;
        int error;
} WriterReport;

/* Set up by itest-writerace.c's main before the writer is forked. */
extern Shared *shared;
extern const char *fsname;
extern char path[4096];

static inline int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void stamp(uint8_t *buf, uint64_t round) {
        memset(buf, (round & 1) ? 0xAA : 0x55, CHUNK);
        for (unsigned c = 0; c < CHUNK; c += 4096)
                memcpy(buf + c, &round, sizeof round);
}

static inline int read_full(int fd, void *buf, size_t n) {
        uint8_t *p = buf;
        while (n > 0) {
                ssize_t k = read(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EPIPE;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* The writer child: rewrites path round after round, announces quiescent
 * points on qfd ('Q' closed, 'K' kept open) and waits for 'G' on gfd; when it
 * stops, writes 'R' and its WriterReport to qfd and exits. Never returns. */
void writer(int qfd, int gfd);
