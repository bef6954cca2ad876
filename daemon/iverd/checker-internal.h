/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Between the check pipeline (checker.c) and what its outcomes lead to
 * (checker-outcome.c). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checker.h"

/* How a check was made (checker_outcome's how). */
enum {
        OUTCOME_USE = 1 << 0,      /* for an exec or open waiting on it (on-access) */
        OUTCOME_LAST_TRY = 1 << 1, /* a re-check's last try: hashed even under a writer (recheck_is_final) */
};

/* Act on the outcome o of a check of path made under dec: list it (now, or
 * held until its name comes to rest), list a rename's or another hard link's
 * name, re-check, count. how: OUTCOME_*; sig: the security.ima a worker read
 * with the hash. */
void checker_outcome(House *m, const char *path, const IverCheckOutcome *o, const IverDecision *dec,
                     const uint8_t *sig, size_t sig_len, unsigned how);
