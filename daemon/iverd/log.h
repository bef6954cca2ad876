/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <syslog.h>

#include "iver/check.h"

/* Logging: the journal with structured fields when journald is there,
 * otherwise stderr. Library code never logs; the daemon logs once, where it
 * decides. Audit records go through libaudit; without audit, one warning. */

/* MESSAGE_IDs (stable; journalctl MESSAGE_ID=…). */
#define IVERD_MESSAGE_MEASURED  "5b8a2f3c1d6e4a0b9c7d8e9f0a1b2c3d"
#define IVERD_MESSAGE_VIOLATION "7e1d9c0b2a3f4e5d6c7b8a9f0e1d2c3b"
#define IVERD_MESSAGE_RELOAD    "a3c5e7f9b1d3456789abcdef01234567"

void log_setup(bool verbose);
void log_close(void);
int log_full_errno(int level, int error, const char *format, ...) __attribute__((format(printf, 3, 4)));

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)

/* A new measurement: journal (IVERD_PATH=, IVERD_DIGEST=, MESSAGE_ID=) and an audit record. */
void log_measurement(const char *path, const IverCheckOutcome *o);
/* A violation (unstable file, appraisal failure, open_writers…): an audit
 * record always, a journal line at warning (rate-limited per path and in all). */
void log_violation(const char *path, const char *what);
/* Violation journal lines left out by the rate limit since start. */
unsigned long long log_violations_suppressed(void);
/* A daemon-level audit event (snapshot discarded…). */
void log_audit(const char *op, const char *detail, bool ok);
/* Reload outcome. */
void log_reload(bool ok, const char *detail);

/* Messages dropped because the journal would have blocked. */
unsigned long log_dropped(void);
