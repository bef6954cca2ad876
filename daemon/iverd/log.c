/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Journal / stderr logging and audit records. */
#include <endian.h>
#include <libaudit.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
#define JOURNAL_SNDBUF (8 * 1024 * 1024)

static int journal_fd = -1;
static char journal_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];
static bool verbose_log;
static int audit_fd = -1;
static bool audit_warned;
static unsigned long dropped, suppressed;

/* ---- the journal's native protocol on a non-blocking datagram socket ---- */

static int journal_connect(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        memcpy(sa.sun_path, journal_path, sizeof(sa.sun_path));
        int sz = JOURNAL_SNDBUF;
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)); /* capped at wmem_max */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

typedef struct Fields {
        char buf[3 * 8192];
        size_t len;
        bool truncated;
} Fields;

/* KEY=value\n, or KEY\n<le64 length>value\n when the value holds a newline. */
static void field(Fields *f, const char *key, const char *value) {
        size_t k = strlen(key), v = strlen(value);
        bool binary = memchr(value, '\n', v) != NULL;
        size_t need = k + 1 + (binary ? 8 : 0) + v + 1;
        if (f->len + need > sizeof(f->buf)) {
                f->truncated = true;
                return;
        }
        char *p = f->buf + f->len;
        memcpy(p, key, k);
        p += k;
        if (binary) {
                *p++ = '\n';
                uint64_t le = htole64((uint64_t) v);
                memcpy(p, &le, 8);
                p += 8;
        } else
                *p++ = '=';
        memcpy(p, value, v);
        p += v;
        *p++ = '\n';
        f->len = (size_t) (p - f->buf);
}

/* Send MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, MESSAGE_ID (if any) and the
 * KEY, VALUE pairs that follow (NULL-terminated). Never blocks: a full
 * journal queue drops the message and counts it. */
static int journal_send(int priority, const char *message_id, const char *message, ...) {
        Fields f;
        char prio[4];
        va_list ap;

        f.len = 0;
        f.truncated = false;
        snprintf(prio, sizeof(prio), "%d", priority);
        field(&f, "PRIORITY", prio);
        field(&f, "SYSLOG_IDENTIFIER", "iverd");
        if (message_id)
                field(&f, "MESSAGE_ID", message_id);
        va_start(ap, message);
        for (const char *k; (k = va_arg(ap, const char *));)
                field(&f, k, va_arg(ap, const char *));
        va_end(ap);
        field(&f, "MESSAGE", message);
        if (f.truncated) {
                dropped++;
                return -E2BIG;
        }
        for (int attempt = 0; attempt < 2; attempt++) {
                if (send(journal_fd, f.buf, f.len, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
                        return 0;
                if (errno != ECONNREFUSED && errno != ENOTCONN)
                        break; /* EAGAIN, ENOBUFS: journald is behind; drop */
                /* journald restarted: its socket is a new one */
                int fd = journal_connect();
                if (fd < 0)
                        break;
                close(journal_fd);
                journal_fd = fd;
        }
        dropped++;
        return -EAGAIN;
}

void log_setup(bool verbose) {
        verbose_log = verbose;
        /* IVERD_JOURNAL_SOCKET points tests at a receiver of their own */
        const char *p = getenv("IVERD_JOURNAL_SOCKET");
        snprintf(journal_path, sizeof(journal_path), "%s", p && *p ? p : JOURNAL_SOCKET);
        if (journal_fd < 0 && !getenv("IVERD_LOG_STDERR")) {
                int fd = journal_connect();
                if (fd >= 0)
                        journal_fd = fd;
        }
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
        if (journal_fd >= 0)
                close(journal_fd);
        journal_fd = -1;
}

bool log_verbose(void) {
        return verbose_log;
}

unsigned long log_dropped(void) {
        return dropped;
}

unsigned long log_suppressed(void) {
        return suppressed;
}

static void emit(int level, const char *msg) {
        if (level == LOG_DEBUG && !verbose_log)
                return;
        if (journal_fd >= 0) {
                (void) journal_send(level, NULL, msg, NULL);
                return;
        }
        fprintf(stderr, "iverd: %s\n", msg);
}

static int vlog(int level, int error, const char *format, va_list ap, const char *suffix) {
        char buf[2 * 4096 + 2048]; /* a path of PATH_MAX, the text and the reason (%m) fit */
        int saved = errno;
        if (error != 0)
                errno = error < 0 ? -error : error;
        int n = vsnprintf(buf, sizeof(buf), format, ap);
        if (suffix && n >= 0 && (size_t) n < sizeof(buf))
                snprintf(buf + n, sizeof(buf) - (size_t) n, "%s", suffix);
        emit(level, buf);
        errno = saved;
        return error < 0 ? error : -error;
}

int log_full_errno(int level, int error, const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int r = vlog(level, error, format, ap, NULL);
        va_end(ap);
        return r;
}

int log_file_errno(int level, int error, const char *format, ...) {
        static uint64_t window_start;
        static unsigned in_window;
        static unsigned long held; /* suppressed since the last message let through */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
        if (window_start == 0 || now - window_start >= LOG_FILE_INTERVAL_USEC) {
                window_start = now;
                in_window = 0;
        }
        if (in_window >= LOG_FILE_BURST) {
                held++;
                suppressed++;
                return error < 0 ? error : -error;
        }
        in_window++;
        char note[96] = "";
        if (held > 0)
                snprintf(note, sizeof(note), " (%lu similar messages suppressed before this one)", held);
        held = 0;
        va_list ap;
        va_start(ap, format);
        int r = vlog(level, error, format, ap, note);
        va_end(ap);
        return r;
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
        /* tty "?": a daemon has none, and NULL makes libaudit probe fds 0-2 (3 ioctls a record) */
        if (audit_log_user_message(audit_fd, AUDIT_TRUSTED_APP, msg, NULL, NULL, "?", ok ? 1 : 0) <= 0 &&
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
        (void) audit_log_user_message(audit_fd, AUDIT_TRUSTED_APP, msg, NULL, NULL, "?", ok ? 1 : 0);
}

void log_measurement(const char *path, const IverCheckOutcome *o, bool audit_it) {
        if (!verbose_log && !audit_it)
                return; /* the common case at scale: nothing per file */
        char hex[2 * IVER_DIGEST_MAX + 1], digest[2 * IVER_DIGEST_MAX + 16], esc[8192];
        snprintf(digest, sizeof(digest), "%s:%s", iver_hash_algo_to_string(o->digest.algo),
                 iver_digest_to_hex(&o->digest, hex));
        if (verbose_log) {
                char msg[8192 + 256];
                escape(path, esc, sizeof(esc));
                /* why it was hashed: new, written, size, identity… (iver_check_reason_to_string) */
                const char *why = iver_check_reason_to_string(o->reason) ?: "?";
                snprintf(msg, sizeof(msg), "Measured %s %s (%s%s)", esc, digest, why,
                         o->provisional ? ", provisional" : "");
                if (journal_fd >= 0)
                        (void) journal_send(LOG_INFO, IVERD_MESSAGE_MEASURED, msg, "IVERD_PATH", path, "IVERD_DIGEST",
                                            digest, "IVERD_REASON", why, "IVERD_PROVISIONAL", o->provisional ? "1" : "0",
                                            NULL);
                else
                        fprintf(stderr, "iverd: %s\n", msg);
        }
        if (audit_it) {
                char extra[200];
                snprintf(extra, sizeof(extra), "digest=%s", digest);
                audit("measure", path, extra, true);
        }
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
        char msg[8192 + 512];
        snprintf(msg, sizeof(msg), "Violation on %s: %s%s", esc, what, more);
        if (journal_fd >= 0)
                (void) journal_send(LOG_WARNING, IVERD_MESSAGE_VIOLATION, msg, "IVERD_PATH", path, "IVERD_VIOLATION", what,
                                    NULL);
        else
                fprintf(stderr, "iverd: %s\n", msg);
}

void log_reload(bool ok, const char *detail) {
        char msg[4096];
        snprintf(msg, sizeof(msg), "%s: %s", ok ? "Reloaded configuration and policy" : "Reload failed, keeping the running policy",
                 detail);
        if (journal_fd >= 0)
                (void) journal_send(ok ? LOG_NOTICE : LOG_ERR, IVERD_MESSAGE_RELOAD, msg, NULL);
        else
                fprintf(stderr, "iverd: %s\n", msg);
}

/* 1234567 → "1,234,567" */
static const char *thousands(unsigned long long v, char buf[32]) {
        char tmp[32];
        int n = snprintf(tmp, sizeof(tmp), "%llu", v), o = 0;
        for (int i = 0; i < n; i++) {
                if (i > 0 && (n - i) % 3 == 0)
                        buf[o++] = ',';
                buf[o++] = tmp[i];
        }
        buf[o] = 0;
        return buf;
}

void log_scan_summary(const char *what, unsigned long long files, unsigned long long measured,
                      unsigned long long bytes, double seconds, unsigned long long errors,
                      unsigned long long violations) {
        char msg[512], a[32], b[32], e[32], files_s[32], measured_s[32], bytes_s[32];
        static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
        double v = (double) bytes;
        unsigned u = 0;
        while (v >= 1000 && u + 1 < sizeof(units) / sizeof(units[0]))
                v /= 1000, u++;
        snprintf(msg, sizeof(msg), "%s: %s files, %s measured, %.*f %s hashed, %.1f s, %s errors, %llu violations", what,
                 thousands(files, a), thousands(measured, b), u == 0 ? 0 : 1, v, units[u], seconds,
                 thousands(errors, e), violations);
        snprintf(files_s, sizeof(files_s), "%llu", files);
        snprintf(measured_s, sizeof(measured_s), "%llu", measured);
        snprintf(bytes_s, sizeof(bytes_s), "%llu", bytes);
        if (journal_fd >= 0)
                (void) journal_send(LOG_INFO, IVERD_MESSAGE_SCAN, msg, "IVERD_SCAN_FILES", files_s, "IVERD_SCAN_MEASURED",
                                    measured_s, "IVERD_SCAN_BYTES", bytes_s, NULL);
        else
                fprintf(stderr, "iverd: %s\n", msg);
}
