/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <syslog.h>

#include "iver/check.h"

/* Logging: the journal with structured fields when journald is there,
 * otherwise stderr. Library code never logs; the daemon logs once, where it
 * decides. Audit records go through libaudit; without audit, one warning.
 *
 * The journal never blocks: iverd sends native-protocol datagrams on its own
 * non-blocking socket. A message journald cannot take at once (its queue is
 * full, or it restarted and one reconnect did not reach it) or whose fields
 * exceed one 24 KiB datagram is dropped — not written to stderr instead —
 * and counted (log_dropped(): journal_dropped in iverctl status and stats).
 * Without a journal (IVERD_LOG_STDERR, or no socket at start) messages go
 * to stderr and nothing is dropped. Per-file messages are rate-limited
 * apart (log_file_errno, log_suppressed()). */

/* MESSAGE_IDs (stable; journalctl MESSAGE_ID=…). */
#define IVERD_MESSAGE_MEASURED  "5b8a2f3c1d6e4a0b9c7d8e9f0a1b2c3d"
#define IVERD_MESSAGE_VIOLATION "7e1d9c0b2a3f4e5d6c7b8a9f0e1d2c3b"
#define IVERD_MESSAGE_RELOAD    "a3c5e7f9b1d3456789abcdef01234567"
#define IVERD_MESSAGE_SCAN      "c41f0d6e8a2b4c7d9e1f3a5b7c9d0e2f"

/* Per-file errors on the measurement path: at most this many per interval;
 * the rest are counted and said with the next one that gets through. */
#define LOG_FILE_BURST 20
#define LOG_FILE_INTERVAL_USEC (10ULL * 1000000ULL)

void log_setup(bool verbose);
void log_close(void);
bool log_verbose(void);
int log_full_errno(int level, int error, const char *format, ...) __attribute__((format(printf, 3, 4)));
/* The same, rate-limited (LOG_FILE_BURST per LOG_FILE_INTERVAL_USEC): for
 * messages about one file ("Cannot measure %s"), which a broken tree makes
 * by the thousand. */
int log_file_errno(int level, int error, const char *format, ...) __attribute__((format(printf, 3, 4)));

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_file_warning_errno(e, ...) log_file_errno(LOG_WARNING, (e), __VA_ARGS__)

/* A new measurement: a journal message (IVERD_PATH=, IVERD_DIGEST=,
 * MESSAGE_ID=) only with -v, an audit record only when audit is true (an
 * audit policy rule matched the file). */
void log_measurement(const char *path, const IverCheckOutcome *o, bool audit);
/* A violation (unstable file, appraisal failure, open_writers…): an audit
 * record always, a journal line at warning (rate-limited per path and in all). */
void log_violation(const char *path, const char *what);
/* Violation journal lines left out by the rate limit since start. */
unsigned long long log_violations_suppressed(void);
/* A daemon-level audit event (snapshot discarded…). */
void log_audit(const char *op, const char *detail, bool ok);
/* Reload outcome. */
void log_reload(bool ok, const char *detail);
/* The end of a scan: one message at info (MESSAGE_ID=IVERD_MESSAGE_SCAN). */
void log_scan_summary(const char *what, unsigned long long files, unsigned long long measured,
                      unsigned long long bytes, double seconds, unsigned long long errors,
                      unsigned long long violations);

/* Journal messages dropped because the journal would have blocked (or was gone). */
unsigned long log_dropped(void);
/* Per-file messages held back by the rate limit. */
unsigned long log_suppressed(void);
