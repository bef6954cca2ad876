/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/onaccess_latency: median latency of open()+close() of one file,
 *   plain FILE   as it is (run it with and without iverd --on-access)
 *   perm FILE    with a bare fanotify permission listener on the file that
 *                answers FAN_ALLOW at once (the round trip a blocking
 *                on-access measurer costs at the least)
 * Prints nanoseconds. Used by bench/onaccess.sh; not a test. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <time.h>
#include <unistd.h>

#define N 20000

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return x < y ? -1 : x > y;
}

static int64_t median_open(const char *path) {
        static int64_t t[N];
        for (int i = 0; i < N; i++) {
                int64_t t0 = now_ns();
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0) {
                        perror(path);
                        exit(1);
                }
                close(fd);
                t[i] = now_ns() - t0;
        }
        qsort(t, N, sizeof(t[0]), cmp);
        return t[N / 2];
}

static int fan_fd = -1;

static void *listener(void *arg) {
        char buf[4096] __attribute__((aligned(8)));
        for (;;) {
                ssize_t n = read(fan_fd, buf, sizeof(buf));
                if (n <= 0) {
                        if (n < 0 && errno == EINTR)
                                continue;
                        return NULL;
                }
                for (struct fanotify_event_metadata *ev = (void *) buf; FAN_EVENT_OK(ev, n); ev = FAN_EVENT_NEXT(ev, n)) {
                        if (ev->mask & FAN_OPEN_PERM) {
                                struct fanotify_response r = { .fd = ev->fd, .response = FAN_ALLOW };
                                (void) !write(fan_fd, &r, sizeof(r));
                        }
                        if (ev->fd >= 0)
                                close(ev->fd);
                }
        }
}

int main(int argc, char *argv[]) {
        if (argc != 3) {
                fprintf(stderr, "usage: %s plain|perm FILE\n", argv[0]);
                return 2;
        }
        (void) median_open(argv[2]); /* warm up */
        if (strcmp(argv[1], "perm") == 0) {
                fan_fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
                if (fan_fd < 0 || fanotify_mark(fan_fd, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, argv[2]) < 0) {
                        perror("fanotify");
                        return 1;
                }
                pthread_t t;
                pthread_create(&t, NULL, listener, NULL);
                (void) median_open(argv[2]);
        }
        printf("%lld\n", (long long) median_open(argv[2]));
        return 0;
}
