/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The operation matrix: for one mounted filesystem, every operation of
 * issue 2 is performed on a fresh file right after it was measured and found
 * a hit; the next iver_check() must re-hash exactly for explicit changes,
 * never for read/open, and the digest on record must equal an independent
 * SHA-256 (OpenSSL EVP here, not lib's hashing) of the file's bytes. The
 * ledger delta of that last check is checked for the rows DESIGN §5 names.
 * This file runs the matrix and checks the plain columns; the operations are
 * in fsops-ops.c and fsops-writepaths.c, the column "metadata-only attested"
 * (issue 15) in fsops-attest.c.
 *
 * Usage: itest-fsops FSNAME DIR
 * Prints one markdown table row per operation; exit 0 all PASS (or n/a),
 * 1 on any FAIL, 2 on a setup error. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "iver/iver.h"
#include "itest-util.h"
#include "fsops.h"

const char *fsname;
const char *dir;
struct timespec t0;
static IverContext *ctx;
static int failures;
void fail(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "FAIL [%s] ", fsname);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

void fill(uint8_t *buf, size_t n, unsigned seed) {
        uint32_t x = seed * 2654435761u + 12345u;
        for (size_t i = 0; i < n; i++) {
                x = x * 1103515245u + 12345u;
                buf[i] = (uint8_t) (x >> 16) | 1; /* never zero: a hole punched is visible */
        }
}

int make_file(const char *path, unsigned seed, size_t size) {
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

bool digest_matches(const char *path, const IverDigest *d, const char *what) {
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

const char *res(IverCheckResult r) {
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

        r = attest_setup(&opt);
        if (r < 0)
                fprintf(stderr, "# [%s] no fanotify FID group (%s): the attested column is not run\n", fsname, strerror(-r));
        for (size_t i = 0; i < n_ops; i++)
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
        attest_done();
        if (failures)
                fprintf(stderr, "FAIL [%s] %d operation(s) failed\n", fsname, failures);
        return failures ? 1 : 0;
}
