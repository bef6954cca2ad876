/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Journal / stderr logging and audit records. */
#include <libaudit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"

static bool use_journal;
static bool verbose_log;
static int audit_fd = -1;
static bool audit_warned;
static unsigned long dropped;

void log_setup(bool verbose) {
        struct stat st;
        verbose_log = verbose;
        /* journald is there when its socket is; JOURNAL_STREAM tells us our stderr is the journal anyway */
        use_journal = stat("/run/systemd/journal/socket", &st) == 0 && getenv("IVERD_LOG_STDERR") == NULL;
        audit_fd = audit_open();
        if (audit_fd < 0 && !audit_warned) {
                audit_warned = true;
                log_warning("Audit is not available (%m): no audit records will be written.");
        }
}

void log_close(void) {
        if (audit_fd >= 0)
                audit_close(audit_fd);
        audit_fd = -1;
}

unsigned long log_dropped(void) {
        return dropped;
}

static void emit(int level, const char *msg) {
        if (level == LOG_DEBUG && !verbose_log)
                return;
        if (use_journal) {
                if (sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", level, "SYSLOG_IDENTIFIER=iverd", NULL) < 0)
                        dropped++;
                return;
        }
        fprintf(stderr, "iverd: %s\n", msg);
}

int log_full_errno(int level, int error, const char *format, ...) {
        char buf[2 * 4096 + 2048]; /* a path of PATH_MAX, the text and the reason (%m) fit */
        va_list ap;
        int saved = errno;
        if (error != 0)
                errno = error < 0 ? -error : error;
        va_start(ap, format);
        vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);
        emit(level, buf);
        errno = saved;
        return error < 0 ? error : -error;
}

/* Paths are bytes: escape for one-line text and audit's key=value format. */
static void escape(const char *s, char *out, size_t n) {
        size_t o = 0;
        for (; *s && o + 5 < n; s++) {
                unsigned char c = (unsigned char) *s;
                if (c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80)
                        o += (size_t) snprintf(out + o, n - o, "\\x%02x", c);
                else
                        out[o++] = (char) c;
        }
        out[o] = 0;
}

static void audit(const char *op, const char *path, const char *extra, bool ok) {
        if (audit_fd < 0)
                return;
        char msg[8192];
        /* audit_encode_nv_string hex-encodes values with spaces/quotes/controls */
        char *enc = audit_encode_nv_string("path", path, 0);
        snprintf(msg, sizeof(msg), "op=%s %s %s", op, enc ? enc : "path=?", extra ? extra : "");
        free(enc);
        if (audit_log_user_message(audit_fd, AUDIT_TRUSTED_APP, msg, NULL, NULL, NULL, ok ? 1 : 0) <= 0 &&
            !audit_warned) {
                audit_warned = true;
                log_warning("Failed to write audit record: %m (further failures not reported)");
        }
}

void log_audit(const char *op, const char *detail, bool ok) {
        if (audit_fd < 0)
                return;
        char msg[1024];
        char *enc = audit_encode_nv_string("detail", detail, 0);
        snprintf(msg, sizeof(msg), "op=%s %s", op, enc ? enc : "detail=?"); /* libaudit appends res= */
        free(enc);
        (void) audit_log_user_message(audit_fd, AUDIT_TRUSTED_APP, msg, NULL, NULL, NULL, ok ? 1 : 0);
}

void log_measurement(const char *path, const IverCheckOutcome *o) {
        char hex[2 * IVER_DIGEST_MAX + 1], digest[2 * IVER_DIGEST_MAX + 16], esc[8192];
        snprintf(digest, sizeof(digest), "%s:%s", iver_hash_algo_to_string(o->digest.algo),
                 iver_digest_to_hex(&o->digest, hex));
        escape(path, esc, sizeof(esc));
        if (use_journal) {
                if (sd_journal_send("MESSAGE=Measured %s %s%s", esc, digest, o->provisional ? " (provisional)" : "",
                                    "MESSAGE_ID=" IVERD_MESSAGE_MEASURED, "PRIORITY=%i", verbose_log ? LOG_INFO : LOG_DEBUG,
                                    "IVERD_PATH=%s", path, "IVERD_DIGEST=%s", digest,
                                    "IVERD_PROVISIONAL=%d", o->provisional, "SYSLOG_IDENTIFIER=iverd", NULL) < 0)
                        dropped++;
        } else if (verbose_log)
                fprintf(stderr, "iverd: Measured %s %s%s\n", esc, digest, o->provisional ? " (provisional)" : "");
        char extra[200];
        snprintf(extra, sizeof(extra), "digest=%s", digest);
        audit("measure", path, extra, true);
}

/* The cause as one audit token: the words before the first ':' ("unstable",
 * "appraisal invalid" → "appraisal-invalid"). */
static void cause_token(const char *what, char *out, size_t n) {
        size_t o = 0;
        for (; *what && *what != ':' && o + 1 < n; what++)
                out[o++] = *what == ' ' ? '-' : *what;
        out[o] = 0;
}

/* Violation lines in the journal are rate-limited (a file rewritten ten times
 * a second must not flood it): a token bucket per path (hashed into a small
 * table; a new path takes over a slot with a full bucket) and one for all
 * paths. Suppressed lines are counted (status: violation_log_suppressed) and
 * the next line that goes out says how many were left out. The list entries
 * and the audit records are never rate-limited here: they are the evidence. */
#define VIOL_SLOTS 64
#define VIOL_PATH_BURST 3.0
#define VIOL_PATH_RATE 0.1      /* lines per second per path */
#define VIOL_ALL_BURST 30.0
#define VIOL_ALL_RATE 2.0       /* lines per second in all */

static struct {
        uint64_t hash;
        double tokens;
        uint64_t at;
} viol_slot[VIOL_SLOTS];
static double viol_all_tokens = VIOL_ALL_BURST;
static uint64_t viol_all_at;
static unsigned long long viol_suppressed, viol_pending;

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static double refill(double tokens, uint64_t *at, uint64_t now, double rate, double burst) {
        if (*at == 0)
                tokens = burst;
        else if (now > *at)
                tokens += (double) (now - *at) / 1e6 * rate;
        *at = now;
        return tokens > burst ? burst : tokens;
}

static bool violation_line_allowed(const char *path) {
        uint64_t h = 1469598103934665603ULL; /* FNV-1a */
        for (const unsigned char *p = (const unsigned char *) path; *p; p++)
                h = (h ^ *p) * 1099511628211ULL;
        uint64_t now = mono_usec();
        unsigned i = (unsigned) (h % VIOL_SLOTS);
        if (viol_slot[i].hash != h) {
                viol_slot[i].hash = h;
                viol_slot[i].at = 0;
        }
        viol_slot[i].tokens = refill(viol_slot[i].tokens, &viol_slot[i].at, now, VIOL_PATH_RATE, VIOL_PATH_BURST);
        viol_all_tokens = refill(viol_all_tokens, &viol_all_at, now, VIOL_ALL_RATE, VIOL_ALL_BURST);
        if (viol_slot[i].tokens < 1.0 || viol_all_tokens < 1.0) {
                viol_suppressed++;
                viol_pending++;
                return false;
        }
        viol_slot[i].tokens -= 1.0;
        viol_all_tokens -= 1.0;
        return true;
}

unsigned long long log_violations_suppressed(void) {
        return viol_suppressed;
}

void log_violation(const char *path, const char *what) {
        char extra[300], cause[64];
        cause_token(what, cause, sizeof(cause));
        snprintf(extra, sizeof(extra), "cause=%s", cause);
        audit("violation", path, extra, false);
        if (!violation_line_allowed(path))
                return;
        char esc[8192], more[96] = "";
        escape(path, esc, sizeof(esc));
        if (viol_pending > 0)
                snprintf(more, sizeof(more), " (%llu violation lines suppressed before this one)", viol_pending);
        viol_pending = 0;
        if (use_journal) {
                if (sd_journal_send("MESSAGE=Violation on %s: %s%s", esc, what, more, "MESSAGE_ID=" IVERD_MESSAGE_VIOLATION,
                                    "PRIORITY=%i", LOG_WARNING, "IVERD_PATH=%s", path, "IVERD_VIOLATION=%s", what,
                                    "SYSLOG_IDENTIFIER=iverd", NULL) < 0)
                        dropped++;
        } else
                fprintf(stderr, "iverd: Violation on %s: %s%s\n", esc, what, more);
}

void log_reload(bool ok, const char *detail) {
        if (use_journal)
                sd_journal_send("MESSAGE=%s: %s", ok ? "Reloaded configuration and policy" : "Reload failed, keeping the running policy",
                                detail, "MESSAGE_ID=" IVERD_MESSAGE_RELOAD, "PRIORITY=%i", ok ? LOG_NOTICE : LOG_ERR,
                                "SYSLOG_IDENTIFIER=iverd", NULL);
        else
                fprintf(stderr, "iverd: %s: %s\n", ok ? "Reloaded configuration and policy" : "Reload failed, keeping the running policy",
                        detail);
}
