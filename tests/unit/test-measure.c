/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Version-stable hashing on real files: digests against OpenSSL one-shot,
 * non-regular files never opened, leases and provisional results. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iver/measure.h"
#include "check-run.h"

static char dir[] = "/tmp/iver-test-measure-XXXXXX";
static char path[600];

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/f", dir);
        ck_assert_int_eq(iver_measure_prepare_signals(), 0);
}

static void teardown(void) {
        char cmd[700];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(dir, "/tmp/iver-test-measure-XXXXXX");
}

static void write_file(const char *p, size_t size, uint8_t seed) {
        int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        uint8_t buf[65536];
        for (size_t off = 0; off < size;) {
                size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);
                for (size_t i = 0; i < n; i++)
                        buf[i] = (uint8_t) ((off + i) * 31 + seed);
                ck_assert_int_eq(write(fd, buf, n), (ssize_t) n);
                off += n;
        }
        close(fd);
}

/* Independent digest: read the whole file into memory, EVP one-shot. */
static void oneshot(const char *p, const char *algo, uint8_t *out, unsigned *len) {
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        struct stat st;
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fstat(fd, &st), 0);
        uint8_t *data = malloc(st.st_size + 1);
        ck_assert_int_eq(read(fd, data, st.st_size), st.st_size);
        close(fd);
        ck_assert_int_eq(EVP_Digest(data, st.st_size, out, len, EVP_get_digestbyname(algo), NULL), 1);
        free(data);
}

START_TEST(test_digests_all_algos) {
        static const size_t sizes[] = { 0, 1, 4095, 131072, 131073, 3 * 1024 * 1024 + 17 };
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                write_file(path, sizes[s], (uint8_t) s);
                for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++) {
                        if (!iver_hash_algo_available(a))
                                continue;
                        IverMeasureOptions o = { .algo = a, .source = IVER_COOKIE_CTIME };
                        IverMeasurement m;
                        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
                        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
                        ck_assert_uint_eq(m.st.size, sizes[s]);
                        ck_assert_uint_eq(m.bytes_hashed, sizes[s]);
                        uint8_t want[64];
                        unsigned wl;
                        oneshot(path, iver_hash_algo_to_string(a), want, &wl);
                        ck_assert_uint_eq(m.digest.len, wl);
                        ck_assert_uint_eq(wl, iver_hash_algo_size(a));
                        ck_assert_mem_eq(m.digest.bytes, want, wl);
                }
        }
}
END_TEST

START_TEST(test_fifo_never_blocks) {
        ck_assert_int_eq(mkfifo(path, 0644), 0);
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        alarm(10); /* a blocked open would hang: fail loudly instead */
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
        alarm(0);
        ck_assert_int_eq(m.status, IVER_MEASURE_NOT_REGULAR);
}
END_TEST

START_TEST(test_socket_symlink_dir_device) {
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        char p[700];

        /* a symlink to a regular file is not followed */
        write_file(path, 10, 1);
        snprintf(p, sizeof(p), "%s/link", dir);
        ck_assert_int_eq(symlink(path, p), 0);
        ck_assert_int_eq(iver_measure(AT_FDCWD, p, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_NOT_REGULAR);

        ck_assert_int_eq(iver_measure(AT_FDCWD, dir, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_NOT_REGULAR);

        ck_assert_int_eq(iver_measure(AT_FDCWD, "/dev/null", &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_NOT_REGULAR);

        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
        ck_assert_int_eq(bind(s, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(iver_measure(AT_FDCWD, sa.sun_path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_NOT_REGULAR);
        close(s);
}
END_TEST

/* a symlink measured as itself: the digest of its target string */
START_TEST(test_link_target_digest) {
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        char p[700];
        const char *target = "/nowhere/in particular\n";
        uint8_t want[EVP_MAX_MD_SIZE];
        unsigned len = 0;

        snprintf(p, sizeof(p), "%s/link", dir);
        ck_assert_int_eq(symlink(target, p), 0);
        ck_assert_int_eq(iver_measure_link(AT_FDCWD, p, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert(S_ISLNK(m.st.mode));
        ck_assert_int_eq(EVP_Digest(target, strlen(target), want, &len, EVP_sha256(), NULL), 1);
        ck_assert_uint_eq(m.digest.len, len);
        ck_assert_mem_eq(m.digest.bytes, want, len);
        ck_assert_uint_eq(m.bytes_hashed, strlen(target));

        /* a regular file or a directory is not a link: never read as one */
        write_file(path, 10, 1);
        ck_assert_int_eq(iver_measure_link(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_NOT_REGULAR);
        ck_assert_int_eq(iver_measure_link(AT_FDCWD, dir, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_NOT_REGULAR);
        snprintf(p, sizeof(p), "%s/gone", dir);
        ck_assert_int_eq(iver_measure_link(AT_FDCWD, p, &o, &m), -ENOENT);
}
END_TEST

START_TEST(test_vanished) {
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), -ENOENT);
}
END_TEST

/* read_ima_xattr: security.ima comes with the measurement, whatever its
 * size (above the 8 KiB the daemon once read into), and only when asked. */
START_TEST(test_ima_xattr_with_measurement) {
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME, .read_ima_xattr = true };
        IverMeasurement m;
        /* tmpfs: xattrs of any size (ext4 keeps them within one block) */
        char shm[] = "/dev/shm/iver-test-measure-XXXXXX";
        int sfd = mkstemp(shm);
        const char *f = sfd >= 0 ? shm : path;
        if (sfd >= 0)
                close(sfd);
        write_file(f, 5000, 9);
        ck_assert_int_eq(iver_measure(AT_FDCWD, f, &o, &m), 0);
        ck_assert_int_eq(m.ima_xattr_r, -ENODATA);
        ck_assert_ptr_null(m.ima_xattr);

        static uint8_t value[12000];
        for (size_t i = 0; i < sizeof(value); i++)
                value[i] = (uint8_t) (i * 7 + 3);
        value[0] = 0x03;
        if (setxattr(f, "security.ima", value, sizeof(value), 0) < 0) {
                ck_assert_msg(errno == ENOTSUP || errno == EPERM || errno == E2BIG || errno == ENOSPC,
                              "setxattr: %s", strerror(errno));
                if (sfd >= 0)
                        unlink(shm);
                return; /* no security.* xattrs here */
        }
        ck_assert_int_eq(iver_measure(AT_FDCWD, f, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_int_eq(m.ima_xattr_r, 0);
        ck_assert_uint_eq(m.ima_xattr_size, sizeof(value));
        ck_assert_mem_eq(m.ima_xattr, value, sizeof(value));
        iver_measurement_done(&m);
        ck_assert_ptr_null(m.ima_xattr);

        /* a usual signature's size: read in one call */
        ck_assert_int_eq(setxattr(f, "security.ima", value, 265, 0), 0);
        ck_assert_int_eq(iver_measure(AT_FDCWD, f, &o, &m), 0);
        ck_assert_int_eq(m.ima_xattr_r, 0);
        ck_assert_uint_eq(m.ima_xattr_size, 265);
        ck_assert_mem_eq(m.ima_xattr, value, 265);
        iver_measurement_done(&m);

        o.read_ima_xattr = false;
        ck_assert_int_eq(iver_measure(AT_FDCWD, f, &o, &m), 0);
        ck_assert_ptr_null(m.ima_xattr);
        if (sfd >= 0)
                unlink(shm);
}
END_TEST

/* max_size: the caller's statx said small, the file grew since (a worker
 * pool keeps big files apart): -EFBIG before anything is hashed; a file that
 * was and is small is measured on the caller's statx, and a change since that
 * statx is caught like any other (retried). */
START_TEST(test_max_size_grown_since_statx) {
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME, .max_size = 4096 };
        IverMeasurement m;
        IverStat st;
        write_file(path, 100, 1);
        int64_t at = iver_now_ns();
        ck_assert_int_eq(iver_stat(NULL, AT_FDCWD, path, false, &st), 0);
        ck_assert_int_eq(iver_measure_stat(AT_FDCWD, path, &st, at, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_uint_eq(m.attempts, 1);
        ck_assert_uint_eq(m.bytes_hashed, 100);

        /* grown past max_size after the statx: the first attempt (100 bytes
         * expected) sees the size move, the retry's own statx finds it big */
        write_file(path, 8192, 2);
        ck_assert_int_eq(iver_measure_stat(AT_FDCWD, path, &st, at, &o, &m), -EFBIG);

        /* rewritten (still small) since the statx: retried, the new content's digest */
        write_file(path, 200, 3);
        uint8_t want[64];
        unsigned wl;
        oneshot(path, "sha256", want, &wl);
        ck_assert_int_eq(iver_measure_stat(AT_FDCWD, path, &st, at, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_uint_eq(m.attempts, 2);
        ck_assert_uint_eq(m.st.size, 200);
        ck_assert_mem_eq(m.digest.bytes, want, wl);

        /* without max_size the big file is simply measured */
        write_file(path, 8192, 4);
        o.max_size = 0;
        ck_assert_int_eq(iver_measure_stat(AT_FDCWD, path, &st, at, &o, &m), 0);
        ck_assert_uint_eq(m.st.size, 8192);
}
END_TEST

START_TEST(test_open_writer_is_provisional) {
        write_file(path, 1000, 3);
        int w = open(path, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(w, 0);
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_PROVISIONAL);
        close(w);
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
}
END_TEST

/* defer_writers: a file open for write is not read at all (no digest, no
 * byte hashed); closed, it is hashed under the lease as usual */
START_TEST(test_open_writer_deferred) {
        write_file(path, 1000, 3);
        int w = open(path, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(w, 0);
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME, .defer_writers = true };
        IverMeasurement m;
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_WRITERS);
        ck_assert_uint_eq(m.bytes_hashed, 0);
        ck_assert_uint_eq(m.st.size, 1000);
        close(w);
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_uint_eq(m.bytes_hashed, 1000);
}
END_TEST

START_TEST(test_sigio_default_no_lease) {
        /* With SIGIO at its default a lease break would kill us: no lease. */
        signal(SIGIO, SIG_DFL);
        write_file(path, 1000, 3);
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_PROVISIONAL);
}
END_TEST

/* Whether a line of /proc/locks with what in it ("LEASE": one is held;
 * "BREAKING": a writer's open waits for it) shows for st's inode within ms
 * milliseconds ("N: LEASE  ACTIVE    READ  PID MAJ:MIN:INO 0 EOF"). */
static bool lease_shows(const struct stat *st, const char *what, int ms) {
        char want[64], line[256];
        snprintf(want, sizeof(want), ":%llu ", (unsigned long long) st->st_ino);
        for (int i = 0; i < ms; i++) {
                FILE *f = fopen("/proc/locks", "re");
                bool found = false;
                while (f && !found && fgets(line, sizeof(line), f))
                        found = strstr(line, what) && strstr(line, want);
                if (f)
                        fclose(f);
                if (found)
                        return true;
                usleep(1000);
        }
        return false;
}

START_TEST(test_writer_during_hash_breaks_lease) {
        /* A child opens the file for writing while we hash 256 MiB: its open
         * breaks our lease; we must give up that attempt and never return the
         * old digest as stable under the new content. */
        const size_t size = 256U << 20;
        write_file(path, size, 1);
        struct stat fst;
        ck_assert_int_eq(stat(path, &fst), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                /* open once the lease is held (a fixed 20 ms came before it on
                 * a loaded machine, under ASan: no break to see) */
                if (!lease_shows(&fst, "LEASE", 10000))
                        _exit(4);
                int fd = open(path, O_WRONLY | O_CLOEXEC); /* waits for the lease holder */
                if (fd < 0)
                        _exit(2);
                char b = 'X';
                if (pwrite(fd, &b, 1, (off_t) (size / 2)) != 1)
                        _exit(3);
                close(fd);
                _exit(0);
        }
        IverMeasureOptions o = { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME };
        IverMeasurement m;
        ck_assert_int_eq(iver_measure(AT_FDCWD, path, &o, &m), 0);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        fprintf(stderr, "writer during hash: %s after %u attempt(s), lease broken: %s\n",
                iver_measure_status_to_string(m.status), m.attempts, m.lease_broken ? "yes" : "no");
        /* the writer's open came while we held the lease: it must have broken it */
        ck_assert(m.lease_broken);
        if (m.status == IVER_MEASURE_STABLE) {
                /* a stable digest must be that of the content under its cookie */
                struct statx sx;
                ck_assert_int_eq(statx(AT_FDCWD, path, 0, STATX_CTIME, &sx), 0);
                int64_t ct = sx.stx_ctime.tv_sec * 1000000000LL + sx.stx_ctime.tv_nsec;
                if (ct == m.st.ctime) {
                        uint8_t want[64];
                        unsigned wl;
                        oneshot(path, "sha256", want, &wl);
                        ck_assert_mem_eq(m.digest.bytes, want, wl);
                }
        }
}
END_TEST

/* statx calls made through IverMeasureOptions.statx */
static unsigned statx_calls;
static int (*statx_then)(void); /* run after the first call (a writer set loose under the lease) */
static int counting_statx(int dirfd, const char *p, int flags, unsigned mask, struct statx *buf) {
        int r = statx(dirfd, p, flags, mask, buf);
        if (++statx_calls == 1 && statx_then)
                ck_assert_int_eq(statx_then(), 0);
        return r < 0 ? -errno : 0;
}

static IverMeasureOptions proving_options(void) {
        struct stat st;
        ck_assert_int_eq(stat(dir, &st), 0);
        statx_calls = 0;
        statx_then = NULL;
        return (IverMeasureOptions) { .algo = IVER_HASH_SHA256, .source = IVER_COOKIE_CTIME, .statx = counting_statx,
                                      .lease_proves = true,
                                      .fs_dev = (major(st.st_dev) << 20) | (minor(st.st_dev) & 0xfffffU) };
}

/* Found by name (iver_measure_open): where the lease proves the content, the
 * statx of the open file under it is the one statx; wherever it does not, a
 * statx after the read is compared as ever. */
START_TEST(test_open_one_statx_under_proving_lease) {
        write_file(path, 3000, 7);
        uint8_t want[64];
        unsigned wl;
        oneshot(path, "sha256", want, &wl);
        struct stat fst;
        ck_assert_int_eq(stat(path, &fst), 0);
        IverMeasureOptions o = proving_options();
        IverMeasurement m;
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_mem_eq(m.digest.bytes, want, wl);
        ck_assert_uint_eq(m.st.ino, fst.st_ino);
        ck_assert_uint_eq(m.st.size, 3000);
        ck_assert_uint_eq(statx_calls, 1);

        /* no proof claimed, another filesystem, security.ima read, more than
         * one chunk: the statx after */
        o = proving_options();
        o.lease_proves = false;
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_uint_eq(statx_calls, 2);
        o = proving_options();
        o.fs_dev ^= 1;
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &o, &m), 0);
        ck_assert_uint_eq(statx_calls, 2);
        o = proving_options();
        o.read_ima_xattr = true;
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &o, &m), 0);
        ck_assert_uint_eq(statx_calls, 2);
        iver_measurement_done(&m);
        o = proving_options();
        o.chunk_size = 1024;
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_uint_eq(statx_calls, 2);
        ck_assert_mem_eq(m.digest.bytes, want, wl);

        /* an open writer: no lease, so no proof: provisional, after a statx after */
        int w = open(path, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(w, 0);
        o = proving_options();
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_PROVISIONAL);
        ck_assert_uint_eq(statx_calls, 2);
        close(w);
}
END_TEST

static int go_fd = -1;
static struct stat go_st;
/* let the writer go, and return once its open waits on our lease */
static int writer_go(void) {
        if (write(go_fd, "g", 1) != 1)
                return -1;
        return lease_shows(&go_st, "BREAKING", 10000) ? 0 : -1;
}

/* A writer that opens the file once the lease is held and the statx made
 * (the window where no statx after checks anything): its open waits for the
 * lease, so the digest is of the content before its write, paired with the
 * cookie before it, which its write then moves (the next check re-hashes). */
START_TEST(test_open_writer_after_statx_waits) {
        write_file(path, 3000, 7);
        uint8_t before[64], after[64];
        unsigned wl;
        oneshot(path, "sha256", before, &wl);
        struct stat fst;
        ck_assert_int_eq(stat(path, &fst), 0);
        int go[2], ready[2];
        ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char c;
                if (read(go[0], &c, 1) != 1)
                        _exit(2);
                if (write(ready[1], "r", 1) != 1)
                        _exit(3);
                int fd = open(path, O_WRONLY | O_CLOEXEC); /* breaks the lease: waits for its release */
                if (fd < 0)
                        _exit(4);
                if (pwrite(fd, "XXXX", 4, 100) != 4)
                        _exit(5);
                close(fd);
                _exit(0);
        }
        go_fd = go[1];
        go_st = fst;
        IverMeasureOptions o = proving_options();
        statx_then = writer_go; /* inside the statx under the lease, until the writer waits on it */
        IverMeasurement m;
        char c;
        ck_assert_int_eq(iver_measure_open(AT_FDCWD, path, &o, &m), 0);
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ck_assert_int_eq(m.status, IVER_MEASURE_STABLE);
        ck_assert_uint_eq(statx_calls, 1);
        ck_assert_mem_eq(m.digest.bytes, before, wl);
        oneshot(path, "sha256", after, &wl);
        ck_assert(memcmp(before, after, wl) != 0);
        /* the write moved the cookie away from the one the digest is paired with */
        IverStat now;
        ck_assert_int_eq(iver_stat(NULL, AT_FDCWD, path, false, &now), 0);
        ck_assert(now.ctime != m.st.ctime);
        close(go[0]);
        close(go[1]);
        close(ready[0]);
        close(ready[1]);
}
END_TEST

int main(void) {
        Suite *s = suite_create("measure");
        TCase *tc = tcase_create("files");
        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_digests_all_algos);
        tcase_add_test(tc, test_fifo_never_blocks);
        tcase_add_test(tc, test_socket_symlink_dir_device);
        tcase_add_test(tc, test_link_target_digest);
        tcase_add_test(tc, test_vanished);
        tcase_add_test(tc, test_ima_xattr_with_measurement);
        tcase_add_test(tc, test_max_size_grown_since_statx);
        tcase_add_test(tc, test_open_writer_is_provisional);
        tcase_add_test(tc, test_open_writer_deferred);
        tcase_add_test(tc, test_sigio_default_no_lease);
        tcase_add_test(tc, test_writer_during_hash_breaks_lease);
        tcase_add_test(tc, test_open_one_statx_under_proving_lease);
        tcase_add_test(tc, test_open_writer_after_statx_waits);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
