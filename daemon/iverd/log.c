/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Journal / stderr logging and audit records. */
#include <libaudit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

void log_violation(const char *path, const char *what) {
        char esc[8192];
        escape(path, esc, sizeof(esc));
        if (use_journal) {
                if (sd_journal_send("MESSAGE=Violation on %s: %s", esc, what, "MESSAGE_ID=" IVERD_MESSAGE_VIOLATION,
                                    "PRIORITY=%i", LOG_WARNING, "IVERD_PATH=%s", path, "IVERD_VIOLATION=%s", what,
                                    "SYSLOG_IDENTIFIER=iverd", NULL) < 0)
                        dropped++;
        } else
                fprintf(stderr, "iverd: Violation on %s: %s\n", esc, what);
        char extra[300], cause[64];
        cause_token(what, cause, sizeof(cause));
        snprintf(extra, sizeof(extra), "cause=%s", cause);
        audit("violation", path, extra, false);
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
