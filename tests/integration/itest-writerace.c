/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The write race (issue 2): a writer process rewrites a 64 MiB file over and
 * over with alternating byte patterns, every 4 KiB stamped with the round
 * number: odd rounds in one 64 MiB pwrite (ctime stamped once, at its start,
 * while data lands for tens of ms), even rounds in 4 MiB pwrites with 2 ms
 * gaps. Meanwhile this process measures the file with the library again and
 * again. The writer opens and closes the file every round (so read leases
 * can be had between rounds) except after every third round, when it keeps
 * it open across the pause (measurements must then be provisional).
 * After every round the writer stops and waits for a go: at that quiescent
 * point, and at the end, the invariant is verified:
 *
 *   every cache entry that is MEASURED and neither PROVISIONAL nor UNSTABLE,
 *   whose cookie (or raw ctime+mtime+size snapshot) equals the file's current
 *   one, has a digest equal to an independent SHA-256 of the current bytes.
 *
 * Also at quiescent points, a fresh check (hit or measured, provisional or
 * not) must hand out the digest of the current bytes, and the writer must
 * never have waited long in open() for a lease (the library lets go within
 * one chunk's hashing).
 *
 * Usage: itest-writerace FSNAME DIR [SECONDS]   (default 5) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "iver/iver.h"
#include "itest-util.h"

#define FILE_SIZE (64ULL << 20)
#define CHUNK (4U << 20)
#define MIN_QUIESCENT 10
#define MIN_MEASUREMENTS 50   /* hashes (stable, provisional or unstable) per filesystem */
#define MAX_SECONDS_FACTOR 6
#define MAX_OPEN_WAIT_NS (2000LL * 1000 * 1000)
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
static Shared *shared;

static const char *fsname;
static char path[4096];
static IverContext *ctx;

typedef struct Stats {
        unsigned checks, hits, stable, provisional, unstable, errors, not_trusted;
        unsigned lease_broken, retried;
        unsigned quiescent, invariant_entries, invariant_compared, cookie_moved;
        unsigned violations, quiescent_wrong;
        unsigned mid_checks, mid_hits, mid_stable, mid_provisional, mid_unstable;
        unsigned inside_checks, inside_trusted;
} Stats;

typedef struct WriterReport {
        uint64_t rounds, opens, kept_open, slow_rounds;
        int64_t max_slow_write_ns;
        int64_t max_open_wait_ns, total_open_wait_ns;
        int error;
} WriterReport;

static Stats S;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
        static unsigned n;
        va_list ap;
        if (++n > 20) {
                if (n == 21)
                        fprintf(stderr, "FAIL [%s] (further failures not printed)\n", fsname);
                return;
        }
        va_start(ap, fmt);
        fprintf(stderr, "FAIL [%s] ", fsname);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void stamp(uint8_t *buf, uint64_t round) {
        memset(buf, (round & 1) ? 0xAA : 0x55, CHUNK);
        for (unsigned c = 0; c < CHUNK; c += 4096)
                memcpy(buf + c, &round, sizeof round);
}

static int read_full(int fd, void *buf, size_t n) {
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

/* ---- the writer (a child process) ------------------------------------ */

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

static void writer(int qfd, int gfd) {
        WriterReport rep = { 0 };
        uint8_t *buf = malloc(FILE_SIZE);
        int fd = -1;
        uint64_t seed = (uint64_t) getpid();

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


static bool digest_is(const IverDigest *d, const uint8_t ref[32]) {
        return d->algo == IVER_HASH_SHA256 && d->len == 32 && memcmp(d->bytes, ref, 32) == 0;
}

static void report_mismatch(const char *what, const IverDigest *d, const uint8_t ref[32]) {
        char a[2 * IVER_DIGEST_MAX + 1], b[65];
        iver_digest_to_hex(d, a);
        for (int i = 0; i < 32; i++)
                sprintf(b + 2 * i, "%02x", ref[i]);
        fail("%s: digest %s on record, current bytes are %s", what, a, b);
}

/* The invariant over every trusted cache entry. Writer must be stopped. */
static void invariant(const char *when) {
        IverCache *c = iver_context_cache(ctx);
        bool want_version = iver_cookie_table_wants_version(iver_context_cookies(ctx));
        uint8_t ref[32];
        bool have_ref = false;

        for (size_t i = 0; i < iver_cache_size(c); i++) {
                IverEntry e;
                IverStat st;
                char p[IVER_CACHE_PATH_MAX];

                iver_cache_get(c, (uint32_t) i, &e);
                if (!(e.flags & IVER_ENTRY_MEASURED) || (e.flags & (IVER_ENTRY_PROVISIONAL | IVER_ENTRY_UNSTABLE)))
                        continue;
                S.invariant_entries++;
                (void) iver_cache_path(c, (uint32_t) i, p, sizeof(p));
                if (strcmp(p, path) != 0) {
                        fail("%s: unexpected cache entry for path %s", when, p);
                        S.violations++;
                        continue;
                }
                if (iver_stat(NULL, AT_FDCWD, path, want_version, &st) < 0) {
                        fail("%s: statx %s: %m", when, path);
                        continue;
                }
                IverIdentity id = iver_stat_identity(&st);
                if (!iver_identity_equal(&id, &e.id))
                        continue;
                IverCookie now = iver_cookie_from_stat(e.source, &st), rec = iver_cache_cookie(c, (uint32_t) i);
                bool same_cookie = iver_cookie_equal(&now, &rec);
                bool same_raw = st.ctime == e.ctime && st.mtime == e.mtime && st.size == e.size;
                if (!same_cookie && !same_raw) {
                        S.cookie_moved++;
                        continue;
                }
                if (!have_ref) {
                        int r = sha256_file(path, ref);
                        if (r < 0) {
                                fail("%s: sha256: %s", when, strerror(-r));
                                return;
                        }
                        have_ref = true;
                }
                S.invariant_compared++;
                if (!digest_is(&e.digest, ref)) {
                        S.violations++;
                        report_mismatch(when, &e.digest, ref);
                        fprintf(stderr, "  cookie %s, raw snapshot %s; entry flags 0x%x\n",
                                same_cookie ? "equal" : "moved", same_raw ? "equal" : "moved", e.flags);
                }
        }
}

/* One check through the split API, so the measurement's details are seen. */
static IverCheckResult check_once(IverCheckOutcome *out, IverMeasurement *m, bool *measured) {
        IverPending p;
        int r;
        uint64_t round0 = LOAD(shared->round);
        unsigned chunks0 = LOAD(shared->chunks);
        /* Begun mid-round: at least one chunk (and its ctime stamp) landed
         * and the writer still holds the file open. */
        bool mid = LOAD(shared->writing) && chunks0 >= 1 && LOAD(shared->round) == round0;

        memset(m, 0, sizeof *m);
        *measured = false;
        r = iver_check_begin(ctx, AT_FDCWD, path, (IverHashAlgo) -1, &p, out);
        if (r == 1) {
                IverMeasureOptions mo = iver_check_measure_options(ctx, &p);
                int mr = iver_measure(AT_FDCWD, path, &mo, m);
                *measured = mr >= 0;
                iver_check_finish(ctx, path, &p, mr, m, out);
        }
        S.checks++;
        switch (out->result) {
        case IVER_CHECK_HIT:
                S.hits++;
                break;
        case IVER_CHECK_MEASURED:
                if (out->provisional)
                        S.provisional++;
                else
                        S.stable++;
                break;
        case IVER_CHECK_UNSTABLE:
                S.unstable++;
                break;
        default:
                S.errors++;
                fail("check: %s (%s)", iver_check_result_to_string(out->result) ?: "?", strerror(-out->error));
        }
        /* Entirely inside one round, after its first chunk landed, with the
         * writer's fd open all along: no lease could be had, and the current
         * cookie postdates the writer's open. A hit or a stable result here
         * would mean a digest trusted under a cookie a writer was changing. */
        if (mid && LOAD(shared->writing) && LOAD(shared->round) == round0) {
                S.inside_checks++;
                if (out->result == IVER_CHECK_HIT || (out->result == IVER_CHECK_MEASURED && !out->provisional)) {
                        S.inside_trusted++;
                        fail("round %" PRIu64 " chunk %u..%u: %s%s while the writer held the file open", round0,
                             chunks0, LOAD(shared->chunks), iver_check_result_to_string(out->result) ?: "?",
                             out->result == IVER_CHECK_MEASURED ? " (stable)" : "");
                }
        }
        if (mid) {
                S.mid_checks++;
                /* The cookie seen postdates the writer's open: no stable
                 * measurement can have been taken under it. */
                if (out->result == IVER_CHECK_HIT) {
                        S.mid_hits++;
                        fail("round %" PRIu64 " chunk %u: HIT mid-round", round0, chunks0);
                }
                else if (out->result == IVER_CHECK_MEASURED && out->provisional)
                        S.mid_provisional++;
                else if (out->result == IVER_CHECK_MEASURED)
                        S.mid_stable++;
                else if (out->result == IVER_CHECK_UNSTABLE)
                        S.mid_unstable++;
        }
        if (*measured) {
                if (m->lease_broken)
                        S.lease_broken++;
                if (m->attempts > 1)
                        S.retried++;
        }
        return out->result;
}

/* At a quiescent point: whatever a check hands out must be the current bytes. */
static void quiescent_check(bool writer_has_it_open) {
        IverCheckOutcome o;
        IverMeasurement m;
        bool measured;
        uint8_t ref[32];

        S.quiescent++;
        invariant("quiescent point (before check)");
        for (int i = 0; i < 2; i++) {
                IverCheckResult r = check_once(&o, &m, &measured);
                if (r != IVER_CHECK_HIT && r != IVER_CHECK_MEASURED) {
                        /* unstable while nothing writes would be a bug */
                        S.quiescent_wrong++;
                        fail("quiescent check %d: %s", i, iver_check_result_to_string(r) ?: "?");
                        continue;
                }
                if (sha256_file(path, ref) < 0)
                        continue;
                if (!digest_is(&o.digest, ref)) {
                        S.quiescent_wrong++;
                        report_mismatch(r == IVER_CHECK_HIT ? "quiescent check: HIT" : "quiescent check: MEASURED",
                                        &o.digest, ref);
                }
                if (r == IVER_CHECK_MEASURED && !writer_has_it_open && o.provisional) {
                        /* no writer: a lease must have been possible */
                        S.not_trusted++;
                }
        }
        invariant("quiescent point (after check)");
}

int main(int argc, char **argv) {
        IverContextOptions opt = { .version_mode = IVER_VERSION_AUTO, .algo = IVER_HASH_SHA256 };
        int qp[2], gp[2], fd, r, status;
        double seconds = 5;
        WriterReport rep = { 0 };
        bool got_report = false;
        pid_t pid;

        if (argc < 3) {
                fprintf(stderr, "usage: %s FSNAME DIR [SECONDS]\n", argv[0]);
                return 2;
        }
        fsname = argv[1];
        snprintf(path, sizeof path, "%s/race.bin", argv[2]);
        if (argc > 3)
                seconds = atof(argv[3]);
        setvbuf(stdout, NULL, _IOLBF, 0);
        signal(SIGPIPE, SIG_IGN);
        if (iver_measure_prepare_signals() < 0) {
                fprintf(stderr, "iver_measure_prepare_signals failed\n");
                return 2;
        }

        /* The file, written once in full. */
        {
                uint8_t *buf = malloc(CHUNK);
                if (!buf)
                        return 2;
                stamp(buf, 0);
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0) {
                        fprintf(stderr, "create %s: %m\n", path);
                        return 2;
                }
                for (uint64_t off = 0; off < FILE_SIZE; off += CHUNK)
                        if (write_all(fd, buf, CHUNK, (off_t) off) < 0) {
                                fprintf(stderr, "write %s: %m\n", path);
                                return 2;
                        }
                fsync(fd);
                close(fd);
                free(buf);
        }

        shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED)
                return 2;
        if (pipe2(qp, O_CLOEXEC) < 0 || pipe2(gp, O_CLOEXEC) < 0)
                return 2;
        pid = fork();
        if (pid < 0)
                return 2;
        if (pid == 0) {
                close(qp[0]);
                close(gp[1]);
                writer(qp[1], gp[0]);
        }
        close(qp[1]);
        close(gp[0]);

        r = iver_context_new(&opt, &ctx);
        if (r < 0) {
                fprintf(stderr, "iver_context_new: %s\n", strerror(-r));
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return 2;
        }

        int64_t start = now_ns(), budget = (int64_t) (seconds * 1e9);
        for (;;) {
                struct pollfd pfd = { .fd = qp[0], .events = POLLIN };
                int64_t el = now_ns() - start;
                bool done = (el >= budget && S.quiescent >= MIN_QUIESCENT &&
                             S.stable + S.provisional + S.unstable >= MIN_MEASUREMENTS) ||
                            el >= MAX_SECONDS_FACTOR * budget;

                if (poll(&pfd, 1, 0) > 0) {
                        char c;
                        if (read_full(qp[0], &c, 1) < 0) {
                                fail("writer vanished");
                                break;
                        }
                        if (c == 'R') {
                                got_report = read_full(qp[0], &rep, sizeof rep) == 0;
                                fail("writer stopped early: %s", strerror(-rep.error));
                                break;
                        }
                        quiescent_check(c == 'K');
                        /* Every other closed pause: forget the file so that the
                         * next check hashes it under a lease right away, while
                         * the writer is about to open it again: the lease must
                         * break and be let go at once (max open wait). */
                        if (c == 'Q' && S.quiescent % 2 == 0)
                                iver_check_forget(ctx, path);
                        if (write(gp[1], done ? "X" : "G", 1) != 1) {
                                fail("writer pipe: %m");
                                break;
                        }
                        if (done)
                                break;
                        continue;
                }
                IverCheckOutcome o;
                IverMeasurement m;
                bool measured;
                if (check_once(&o, &m, &measured) == IVER_CHECK_HIT)
                        usleep(100); /* don't starve the writer of CPU with hits */
        }
        close(gp[1]);
        if (!got_report) {
                char c;
                /* The writer sends 'R' + its report when it stops. */
                while (read_full(qp[0], &c, 1) == 0) {
                        if (c == 'R') {
                                got_report = read_full(qp[0], &rep, sizeof rep) == 0;
                                break;
                        }
                }
        }
        waitpid(pid, &status, 0);
        close(qp[0]);

        /* Writer gone for good: the final bytes. */
        invariant("end");
        quiescent_check(false);

        double secs = (double) (now_ns() - start) / 1e9;
        if (S.stable + S.provisional + S.unstable < MIN_MEASUREMENTS)
                fprintf(stderr, "# [%s] note: only %u measurements in the time allowed\n", fsname,
                        S.stable + S.provisional + S.unstable);
        bool ok = S.violations == 0 && S.quiescent_wrong == 0 && S.inside_trusted == 0 && S.mid_hits == 0 && S.errors == 0 && got_report && rep.error == 0 &&
                  rep.max_open_wait_ns < MAX_OPEN_WAIT_NS && S.stable > 0;
        if (!got_report)
                fail("no report from the writer");
        if (rep.max_open_wait_ns >= MAX_OPEN_WAIT_NS)
                fail("the writer waited %.3f s in open(): a lease was held up", (double) rep.max_open_wait_ns / 1e9);
        if (S.stable == 0)
                fail("no stable measurement at all (leases never taken?)");
        if (S.not_trusted)
                fprintf(stderr, "# [%s] note: %u quiescent measurement(s) provisional with the writer closed\n", fsname,
                        S.not_trusted);

        printf("| %-6s | %5.1f | %6u | %4u | %6u | %11u | %8u | %12u | %7u | %9u | %13u/%-5u | %10u | %6" PRIu64 " | %8.2f | %-4s |\n",
               fsname, secs, S.checks, S.hits, S.stable, S.provisional, S.unstable, S.lease_broken, S.retried,
               S.quiescent, S.invariant_compared, S.invariant_entries, S.violations + S.quiescent_wrong + S.inside_trusted + S.mid_hits,
               rep.rounds,
               (double) rep.max_open_wait_ns / 1e6, ok ? "PASS" : "FAIL");
        fprintf(stderr, "# [%s] writer: %" PRIu64 " rounds, %" PRIu64 " opens (mean open wait %.3f ms), %" PRIu64
                        " rounds kept open, %" PRIu64 " slow single writes (longest %.0f ms); cookie moved at %u invariant points\n"
                        "# [%s] checks begun mid-round (writer's fd open, >= 1 chunk landed): %u (hit %u (must be 0), stable %u, provisional %u, unstable %u);"
                        " wholly inside a round with the writer's fd open: %u, of them trusted (must be 0): %u\n",
                fsname, rep.rounds, rep.opens,
                rep.opens ? (double) rep.total_open_wait_ns / 1e6 / (double) rep.opens : 0.0, rep.kept_open,
                rep.slow_rounds, (double) rep.max_slow_write_ns / 1e6, S.cookie_moved, fsname, S.mid_checks, S.mid_hits, S.mid_stable, S.mid_provisional, S.mid_unstable,
                S.inside_checks, S.inside_trusted);
        fprintf(stderr, "# [%s] violations: invariant (stale digest trusted) %u, quiescent check wrong %u,"
                        " hit mid-round %u, trusted wholly inside a round %u\n",
                fsname, S.violations, S.quiescent_wrong, S.mid_hits, S.inside_trusted);
        fprintf(stderr, "# [%s] ledger:\n", fsname);
        iver_ledger_print(iver_ledger_counters(iver_context_ledger(ctx)), stderr);
        iver_context_free(ctx);
        return ok ? 0 : 1;
}
