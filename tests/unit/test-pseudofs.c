/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/pseudofs.c and the policy lint warning for rules reaching one. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "check-run.h"
#include "iver/policy.h"
#include "pseudofs.h"

START_TEST(test_magic) {
        struct statfs s;
        const char *name = NULL;

        ck_assert_int_eq(statfs("/proc/self", &s), 0);
        ck_assert(iver_fs_is_pseudo((uint64_t) s.f_type, &name));
        ck_assert_str_eq(name, "proc");
        ck_assert_int_eq(statfs("/sys/kernel", &s), 0);
        ck_assert(iver_fs_is_pseudo((uint64_t) s.f_type, NULL));
        ck_assert_int_eq(statfs("/tmp", &s), 0);
        ck_assert(!iver_fs_is_pseudo((uint64_t) s.f_type, NULL)); /* tmpfs, ext4…: real files */
        ck_assert(!iver_fs_is_pseudo(0, NULL));
        ck_assert(!iver_fs_is_pseudo(0xEF53, NULL));              /* ext4 */
}
END_TEST

START_TEST(test_live_mounts) {
        char **v = NULL;
        bool proc = false;
        ck_assert_int_eq(iver_pseudo_fs_mounts(&v), 0);
        for (char **p = v; *p; p++)
                proc |= strcmp(*p, "/proc") == 0;
        ck_assert(proc);
        iver_strv_free(v);
}
END_TEST

static size_t pseudo_warnings(const char *text) {
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;
        size_t n = 0;
        ck_assert_int_eq(iver_policy_load_string("t.policy", text, strlen(text), &d, &p), 0);
        for (size_t i = 0; i < d.n_items; i++)
                n += d.items[i].level == IVER_DIAG_WARNING && strstr(d.items[i].message, "pseudo filesystem") != NULL;
        iver_policy_diags_done(&d);
        iver_policy_free(p);
        return n;
}

START_TEST(test_lint) {
        ck_assert_uint_eq(pseudo_warnings("measure path=/proc/*/pagemap\n"), 1);
        ck_assert_uint_eq(pseudo_warnings("measure path=/sys/**\n"), 1);
        ck_assert_uint_eq(pseudo_warnings("measure path=/**\n"), 1);          /* reaches /proc too */
        ck_assert_uint_eq(pseudo_warnings("measure path=/*/self/exe\n"), 1);  /* /proc/self/exe */
        ck_assert_uint_eq(pseudo_warnings("measure path=/usr/bin/**\nappraise path=/etc/**\n"), 0);
        ck_assert_uint_eq(pseudo_warnings("dont_measure path=/proc/**\n"), 0);
        ck_assert_uint_eq(pseudo_warnings("measure path=/proc\n"), 0);        /* the mount point itself is a directory */
}
END_TEST

int main(void) {
        Suite *s = suite_create("pseudofs");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_magic);
        tcase_add_test(tc, test_live_mounts);
        tcase_add_test(tc, test_lint);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
