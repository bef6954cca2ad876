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
 * The writer is in writerace-writer.c.
 *
 * Usage: itest-writerace FSNAME DIR [SECONDS]   (default 5) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iver/iver.h"
#include "itest-util.h"
#include "writerace.h"

#define MIN_QUIESCENT 10
#define MIN_MEASUREMENTS 50   /* hashes (stable, provisional or unstable) per filesystem */
#define MAX_SECONDS_FACTOR 6
#define MAX_OPEN_WAIT_NS (2000LL * 1000 * 1000)

Shared *shared;
const char *fsname;
char path[4096];
static IverContext *ctx;

typedef struct Stats {
        unsigned checks, hits, stable, provisional, unstable, errors, not_trusted;
        unsigned lease_broken, retried;
        unsigned quiescent, invariant_entries, invariant_compared, cookie_moved;
        unsigned violations, quiescent_wrong;
        unsigned mid_checks, mid_hits, mid_stable, mid_provisional, mid_unstable;
        unsigned inside_checks, inside_trusted;
        unsigned unseen, unseen_stable, unseen_one_statx;
} Stats;

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

/* statx calls made by a measurement (IverMeasureOptions.statx) */
static unsigned measure_statx;
static int counting_statx(int dirfd, const char *p, int flags, unsigned mask, struct statx *buf) {
        measure_statx++;
        return statx(dirfd, p, flags, mask, buf) < 0 ? -errno : 0;
}

/* Begin as a walk that finds the file by name and has nothing on record for
 * it: no statx before (the inode number is what a directory read gives),
 * the record forgotten first. false when begin wants a statx after all. */
static bool begin_unseen(IverPending *p) {
        struct stat st;
        if (stat(path, &st) < 0)
                return false;
        iver_check_forget(ctx, path);
        uint32_t dev = (major(st.st_dev) << 20) | (minor(st.st_dev) & 0xfffffU);
        return iver_check_begin_unseen(ctx, path, dev, st.st_ino, (IverHashAlgo) -1, p) == 1;
}

/* One check through the split API, so the measurement's details are seen.
 * Every other one as a walk's of a file found by name (begin_unseen): the
 * open file's statx under the lease is the one observation, and with the
 * whole file one chunk, the lease is never polled and no statx follows the
 * read when it took less than the least lease-break-time. */
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
        bool unseen = S.checks % 2 == 1 && begin_unseen(&p);
        r = unseen ? 1 : iver_check_begin(ctx, AT_FDCWD, path, (IverHashAlgo) -1, &p, out);
        if (r == 1) {
                IverMeasureOptions mo = iver_check_measure_options(ctx, &p);
                int mr;
                if (unseen) {
                        mo.chunk_size = FILE_SIZE;
                        mo.statx = counting_statx;
                        measure_statx = 0;
                        mr = iver_measure_open(AT_FDCWD, path, &mo, m);
                        S.unseen++;
                        if (mr >= 0 && m->status == IVER_MEASURE_STABLE) {
                                S.unseen_stable++;
                                S.unseen_one_statx += measure_statx == 1;
                        }
                } else
                        mr = iver_measure(AT_FDCWD, path, &mo, m);
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
                  rep.max_open_wait_ns < MAX_OPEN_WAIT_NS && S.stable > 0 && S.unseen_one_statx > 0;
        if (!got_report)
                fail("no report from the writer");
        if (rep.max_open_wait_ns >= MAX_OPEN_WAIT_NS)
                fail("the writer waited %.3f s in open(): a lease was held up", (double) rep.max_open_wait_ns / 1e9);
        if (S.stable == 0)
                fail("no stable measurement at all (leases never taken?)");
        if (S.unseen_one_statx == 0)
                fail("no measurement of the file found by name was stable on one statx (%u begun, %u stable)",
                     S.unseen, S.unseen_stable);
        fprintf(stderr, "# [%s] found by name (no statx before): %u measured, %u stable, %u of them on one statx\n",
                fsname, S.unseen, S.unseen_stable, S.unseen_one_statx);
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
