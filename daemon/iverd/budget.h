/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per-owner budget of list entries (issue 22 item 4): a user who may write a
 * measured directory cannot grow the list without end. Each file owner but
 * root has a bucket of BUDGET_BURST entries, refilled at BUDGET_PER_HOUR an
 * hour; an entry listed because its file changed (not a use: an exec or an
 * open under a rule is always listed) takes one. An owner whose bucket runs
 * dry is limited: one violation entry names the file that crossed it, and its
 * files' further changes are not listed (the cache forgets their versions,
 * so a use measures and lists them, as kernel IMA lists a file at its use)
 * until the bucket is back to BUDGET_RESUME. At most BUDGET_OWNERS_MAX
 * owners have a bucket of their own; the others share one. */
#define BUDGET_BURST 4096
#define BUDGET_PER_HOUR 1024
#define BUDGET_RESUME (BUDGET_BURST / 4)
#define BUDGET_OWNERS_MAX 1024

typedef struct Budget Budget;

typedef enum BudgetVerdict {
        BUDGET_LIST,            /* list it */
        BUDGET_LIMIT,           /* the bucket ran dry now: record the violation, not this entry */
        BUDGET_SUPPRESS,        /* limited: not listed */
} BudgetVerdict;

int budget_new(Budget **ret);
Budget *budget_free(Budget *b);
/* An entry of a file owned by uid is about to be listed at now (µs). Root's
 * (uid 0) always are. */
BudgetVerdict budget_take(Budget *b, uint32_t uid, uint64_t now);
/* Owners limited now; entries not listed for a budget so far. */
size_t budget_limited(const Budget *b);
uint64_t budget_suppressed(const Budget *b);
