/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The seed of a test's random choices: IVER_TEST_SEED when set, else the
 * test's fixed default. Printed, so that a failure can be replayed with the
 * same choices. */
#include <stdio.h>
#include <stdlib.h>

static inline unsigned long long test_seed(const char *what, unsigned long long dflt) {
        const char *e = getenv("IVER_TEST_SEED");
        unsigned long long s = dflt;
        if (e && *e) {
                char *end = NULL;
                s = strtoull(e, &end, 0);
                if (!end || *end) {
                        fprintf(stderr, "IVER_TEST_SEED=%s is not a number\n", e);
                        abort();
                }
        }
        fprintf(stderr, "%s: seed %llu (IVER_TEST_SEED=%llu to replay)\n", what, s, s);
        return s;
}
