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
