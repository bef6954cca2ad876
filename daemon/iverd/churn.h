/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per-inode version rate limit for the measurement list (a name is not the
 * key: renaming one inode through new names, or a name moved onto another
 * inode, neither escapes nor borrows a limit): a file that gets more
 * than CHURN_MAX_VERSIONS new list entries within CHURN_WINDOW_USEC is
 * limited: recorded once as a violation, its further versions not listed
 * until a backoff (10 s, doubling to 1 h while it keeps churning) ends, when
 * it is re-checked and its content then listed. Bounded: at most
 * CHURN_TRACKED_MAX paths are tracked at once, a path only while it is
 * active (forgotten after a quiet window), and nothing during the initial
 * measurement (evidence.c), which lists each file once. */
#define CHURN_MAX_VERSIONS 32
#define CHURN_WINDOW_USEC (60ULL * 1000000ULL)
#define CHURN_BACKOFF_USEC (10ULL * 1000000ULL)
#define CHURN_BACKOFF_MAX_USEC (3600ULL * 1000000ULL)
#define CHURN_TRACKED_MAX 65536

typedef struct Churn Churn;

typedef enum ChurnVerdict {
        CHURN_LIST,             /* list this version */
        CHURN_LIMIT,            /* over the limit now: record the violation, not this version */
        CHURN_SUPPRESS,         /* limited: neither (re-checked when the backoff ends) */
} ChurnVerdict;

int churn_new(Churn **ret);
Churn *churn_free(Churn *c);
/* A new version of inode (dev, ino), named path, is about to be listed at
 * now (µs). Never asked for a use (exec, open under a rule): a use is
 * always listed. */
ChurnVerdict churn_note(Churn *c, uint32_t dev, uint64_t ino, const char *path, uint64_t now);
/* Paths whose backoff ended with versions suppressed: fn(path) re-checks
 * each; paths quiet for a window are forgotten. Returns how many. */
size_t churn_due(Churn *c, uint64_t now, void (*fn)(const char *path, void *userdata), void *userdata);
/* Whether versions were not listed and wait for their re-check (settle
 * waits for it: the list is complete only then). */
bool churn_pending(const Churn *c);
/* Paths limited right now. */
size_t churn_limited(const Churn *c, uint64_t now);
