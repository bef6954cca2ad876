/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared by check.c (the check pipeline) and check-rule.c (the hit rule). */
#include "iver/check.h"

struct IverContext {
        IverContextOptions opt;
        IverCache *cache;
        IverLedger *ledger;
        IverCookieTable *cookies;
        iver_attest_fn attest;
        void *attest_userdata;
};

/* The previous observation the heuristics and the rule compare against: this
 * inode when it is the same file (any path), else whatever was recorded at
 * this path. *ret_same: it is this very file; *ret_entry gets a copy. */
uint32_t iver_check_find_prev(const IverContext *ctx, const IverStat *st, const char *path, bool *ret_same,
                              IverEntry *ret_entry);

/* The hit rule's first steps on the previous entry of this very file (st's
 * identity): IVER_REASON_NOT_TRUSTED (not measured, or provisional, racy,
 * unstable, stale), IVER_REASON_ALGORITHM (another hash algorithm than algo)
 * or IVER_REASON_HIT (same cookie as now); -ESTALE: the cookie moved, the
 * rule goes on (iver_check_rule). */
int iver_check_entry_reason(const IverEntry *e, const IverCookie *now, IverHashAlgo algo);
