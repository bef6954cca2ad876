/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/onaccess_latency: median latency of one use of a file.
 *   plain FILE       open()+close() as it is (run it with and without iverd)
 *   perm FILE        open()+close() with a bare FAN_OPEN_PERM listener on the
 *                    file's filesystem that answers FAN_ALLOW at once
 *   exec FILE        execve() of FILE as it is; FILE is executable but no
 *                    known format, so execve() opens it (the permission event
 *                    and the wait for its answer happen), reads its header and
 *                    fails with ENOEXEC: the exec path up to the binary
 *                    loader, without the cost of a new process, which would
 *                    drown a few microseconds
 *   execperm FILE    the same with a bare FAN_OPEN_EXEC_PERM listener
 *                    (filesystem mark, answers at once): the round trip
 *                    any on-access measurer costs at the least
 *   execbothperm FILE the same with a bare listener of both FAN_OPEN_PERM and
 *                    FAN_OPEN_EXEC_PERM (an exec is then two events, as
 *                    for a measurer of opens and execs)
 *   execmiss FILE    write new bytes into FILE, then time its execve(): the
 *                    exec waits for the new content to be measured (a miss)
 *   openmiss FILE    the same for open()+close() (OnAccess=open)
 *   spawn FILE       posix_spawn() + waitpid() of a real program (context:
 *                    what a whole exec costs)
 * Prints the median in nanoseconds. Used by bench/onaccess.sh; not a test. */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return x < y ? -1 : x > y;
}

static int64_t median(int64_t *t, int n) {
        qsort(t, (size_t) n, sizeof(t[0]), cmp);
        return t[n / 2];
}

static void rewrite_once(const char *path, int i);

/* miss: the file is rewritten before each open (not timed) */
static int64_t median_open(const char *path, int n, bool miss) {
        int64_t *t = calloc((size_t) n, sizeof(*t));
        for (int i = 0; i < n; i++) {
                if (miss)
                        rewrite_once(path, i);
                int64_t t0 = now_ns();
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0) {
                        perror(path);
                        exit(1);
                }
                close(fd);
                t[i] = now_ns() - t0;
        }
        int64_t m = median(t, n);
        free(t);
        return m;
}

static int64_t exec_once(const char *path) {
        char *argv[] = { (char *) path, NULL };
        int64_t t0 = now_ns();
        execve(path, argv, environ);
        int64_t dt = now_ns() - t0;
        if (errno != ENOEXEC) {
                fprintf(stderr, "execve %s: %s (expected ENOEXEC: a file of no known format)\n", path, strerror(errno));
                exit(1);
        }
        return dt;
}

/* new content each time (round i): a use cannot be a cache hit */
static void rewrite_once(const char *path, int i) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        char b[16];
        int k = snprintf(b, sizeof(b), "%08d", i);
        if (fd < 0 || pwrite(fd, b, (size_t) k, 64) != k) {
                perror(path);
                exit(1);
        }
        close(fd);
}

static int64_t median_exec(const char *path, int n, bool rewrite) {
        int64_t *t = calloc((size_t) n, sizeof(*t));
        for (int i = 0; i < n; i++) {
                if (rewrite)
                        rewrite_once(path, i);
                t[i] = exec_once(path);
        }
        int64_t m = median(t, n);
        free(t);
        return m;
}

static int64_t median_spawn(const char *path, int n) {
        int64_t *t = calloc((size_t) n, sizeof(*t));
        char *argv[] = { (char *) path, NULL };
        for (int i = 0; i < n; i++) {
                pid_t pid;
                int64_t t0 = now_ns();
                if (posix_spawn(&pid, path, NULL, NULL, argv, environ) != 0) {
                        perror("posix_spawn");
                        exit(1);
                }
                int st;
                waitpid(pid, &st, 0);
                t[i] = now_ns() - t0;
        }
        int64_t m = median(t, n);
        free(t);
        return m;
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
                        if (ev->mask & (FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM)) {
                                struct fanotify_response r = { .fd = ev->fd, .response = FAN_ALLOW };
                                (void) !write(fan_fd, &r, sizeof(r));
                        }
                        if (ev->fd >= 0)
                                close(ev->fd);
                }
        }
}

static void listen_on(const char *path, uint64_t mask) {
        fan_fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
        if (fan_fd < 0 || fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, mask, AT_FDCWD, path) < 0) {
                perror("fanotify");
                exit(1);
        }
        pthread_t t;
        pthread_create(&t, NULL, listener, NULL);
}

int main(int argc, char *argv[]) {
        if (argc < 3) {
                fprintf(stderr, "usage: %s plain|perm|exec|execperm|execbothperm|execmiss|openmiss|spawn FILE [N]\n", argv[0]);
                return 2;
        }
        const char *mode = argv[1], *f = argv[2];
        int n = argc > 3 ? atoi(argv[3]) : 0;
        int64_t r;
        if (strcmp(mode, "plain") == 0 || strcmp(mode, "perm") == 0) {
                (void) median_open(f, 2000, false); /* warm up */
                if (strcmp(mode, "perm") == 0)
                        listen_on(f, FAN_OPEN_PERM);
                (void) median_open(f, 2000, false);
                r = median_open(f, n ?: 20000, false);
        } else if (strcmp(mode, "exec") == 0 || strcmp(mode, "execperm") == 0 || strcmp(mode, "execbothperm") == 0) {
                (void) median_exec(f, 2000, false);
                if (strcmp(mode, "execperm") == 0)
                        listen_on(f, FAN_OPEN_EXEC_PERM);
                else if (strcmp(mode, "execbothperm") == 0)
                        listen_on(f, FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM);
                (void) median_exec(f, 2000, false);
                r = median_exec(f, n ?: 20000, false);
        } else if (strcmp(mode, "execmiss") == 0)
                r = median_exec(f, n ?: 500, true);
        else if (strcmp(mode, "openmiss") == 0)
                r = median_open(f, n ?: 500, true);
        else if (strcmp(mode, "spawn") == 0) {
                (void) median_spawn(f, 100);
                r = median_spawn(f, n ?: 2000);
        } else {
                fprintf(stderr, "unknown mode %s\n", mode);
                return 2;
        }
        printf("%lld\n", (long long) r);
        return 0;
}
