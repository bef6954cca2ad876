/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <check.h>
#include <stdlib.h>

/* Run a suite the way every unit test does; the exit status ctest reads. */
static inline int iver_run_suite(Suite *s) {
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
