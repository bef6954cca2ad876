/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared by the policy tests (test-policy.c, test-policy-load.c,
 * test-policy-match.c): load a text that must load, or the first error of
 * one that must not, and ask which rule decides a path. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iver/policy.h"

static inline IverPolicy *load_ok(const char *text) {
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;
        int r = iver_policy_load_string("t.policy", text, strlen(text), &d, &p);
        if (r < 0 && d.n_items > 0) {
                char *m = NULL;
                iver_policy_diag_format(&d.items[0], &m);
                ck_abort_msg("unexpected error: %s", m);
        }
        ck_assert_int_eq(r, 0);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq(d.n_errors, 0);
        iver_policy_diags_done(&d);
        return p;
}

/* The first diagnostic of a text that must not load, formatted. */
static inline char *first_error_n(const char *text, size_t len) {
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;
        char *m = NULL;
        int r = iver_policy_load_string("t.policy", text, len, &d, &p);
        ck_assert_int_eq(r, -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_uint_ge(d.n_errors, 1);
        ck_assert_int_eq(d.items[0].level, IVER_DIAG_ERROR);
        ck_assert_int_eq(iver_policy_diag_format(&d.items[0], &m), 0);
        iver_policy_diags_done(&d);
        return m;
}

static inline char *first_error(const char *text) {
        return first_error_n(text, strlen(text));
}

/* Action deciding path for class measure, or -1 when no rule matched; line of the rule in *line. */
static inline int decide_attr(const IverPolicy *p, const char *path, size_t len, const IverFileAttr *a, unsigned *line) {
        IverPolicyDecision d;
        int r = iver_policy_match(p, IVER_CLASS_MEASURE, path, len, a, &d);
        ck_assert_int_ge(r, 0);
        ck_assert_int_eq(r, d.matched);
        if (line)
                *line = d.line;
        return d.matched ? (int) d.action : -1;
}

static inline int decide(const IverPolicy *p, const char *path) {
        return decide_attr(p, path, strlen(path), NULL, NULL);
}

static inline unsigned decide_line(const IverPolicy *p, const char *path, const IverFileAttr *a) {
        unsigned line = 0;
        int r = decide_attr(p, path, strlen(path), a, &line);
        return r < 0 ? 0 : line;
}
