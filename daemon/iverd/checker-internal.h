/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Between the check pipeline (checker.c) and what its outcomes lead to
 * (checker-outcome.c). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checker.h"

/* Act on the outcome o of a check of path made under dec: list it (now, or
 * held until its name comes to rest), list a rename's or another hard link's
 * name, re-check, count. use: the check was made for an exec or open waiting
 * on it (on-access); sig: the security.ima a worker read with the hash. */
void checker_outcome(House *m, const char *path, const IverCheckOutcome *o, const IverDecision *dec,
                     const uint8_t *sig, size_t sig_len, bool use);
