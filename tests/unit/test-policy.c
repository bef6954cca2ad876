/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy language: every grammar element (actions, comments, quoting
 * and bytes, attribute conditions, options), first-match order and the audit
 * class. Errors, warnings and files: test-policy-load.c; globs, the
 * subtree-skip query and the index: test-policy-match.c. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iver/policy.h"
#include "policy-internal.h"
#include "policy-fixtures.h"
#include "check-run.h"
START_TEST(test_actions_comments_blank) {
        IverPolicy *p = load_ok(
                "# a comment\n"
                "\n"
                "   \t  \n"
                "measure path=/usr/bin/ls   # trailing comment\n"
                "dont_measure path=/tmp/**\n"
                "\t appraise path=/usr/sbin/*\r\n"
                "dont_appraise\n");
        ck_assert_uint_eq(iver_policy_n_rules(p), 4);
        ck_assert_int_eq(iver_policy_rule_action(p, 0), IVER_ACTION_MEASURE);
        ck_assert_int_eq(iver_policy_rule_action(p, 1), IVER_ACTION_DONT_MEASURE);
        ck_assert_int_eq(iver_policy_rule_action(p, 2), IVER_ACTION_APPRAISE);
        ck_assert_int_eq(iver_policy_rule_action(p, 3), IVER_ACTION_DONT_APPRAISE);
        const char *file;
        unsigned line;
        iver_policy_rule_source(p, 2, &file, &line);
        ck_assert_str_eq(file, "t.policy");
        ck_assert_uint_eq(line, 6);

        ck_assert_int_eq(decide(p, "/usr/bin/ls"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/tmp/x"), IVER_ACTION_DONT_MEASURE);
        ck_assert_int_eq(decide(p, "/usr/bin/cat"), -1);
        ck_assert_int_eq(decide(p, "/tmp/x/"), IVER_ACTION_DONT_MEASURE);

        IverPolicyDecision d;
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_APPRAISE, "/usr/sbin/sshd", 14, NULL, &d), 1);
        ck_assert_int_eq(d.action, IVER_ACTION_APPRAISE);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_APPRAISE, "/etc/passwd", 11, NULL, &d), 1);
        ck_assert_int_eq(d.action, IVER_ACTION_DONT_APPRAISE);
        ck_assert_uint_eq(d.line, 7);
        iver_policy_free(p);
}
END_TEST

START_TEST(test_empty_policy) {
        IverPolicy *p = load_ok("");
        IverPolicyDecision d;
        ck_assert_uint_eq(iver_policy_n_rules(p), 0);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_MEASURE, "/usr/bin/ls", 11, NULL, &d), 0);
        ck_assert(!d.matched);
        ck_assert_int_eq(d.action, IVER_ACTION_DONT_MEASURE);
        ck_assert_ptr_null(d.file);
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/", 1));
        iver_policy_free(p);
        ck_assert_ptr_null(iver_policy_free(NULL));
}
END_TEST

START_TEST(test_first_match_wins) {
        IverPolicy *p = load_ok(
                "dont_measure path=/usr/bin/secret\n"
                "measure path=/usr/bin/*\n"
                "dont_measure path=/usr/bin/ls\n"
                "measure path=/usr/**\n"
                "dont_measure path=/usr/lib/**\n");
        unsigned line;
        ck_assert_int_eq(decide_attr(p, "/usr/bin/secret", 15, NULL, &line), IVER_ACTION_DONT_MEASURE);
        ck_assert_uint_eq(line, 1);
        ck_assert_int_eq(decide_attr(p, "/usr/bin/ls", 11, NULL, &line), IVER_ACTION_MEASURE);
        ck_assert_uint_eq(line, 2);
        ck_assert_int_eq(decide_attr(p, "/usr/lib/libc.so.6", 18, NULL, &line), IVER_ACTION_MEASURE);
        ck_assert_uint_eq(line, 4);
        ck_assert_int_eq(decide(p, "/usr"), -1);
        iver_policy_free(p);
}
END_TEST

/* audit is a class of its own (kernel IMA's audit action): the first audit
 * rule whose conditions hold decides, measure rules don't see it, and it
 * takes no measure-only options. */
START_TEST(test_audit_class) {
        IverPolicy *p = load_ok(
                "audit path=/usr/sbin/* fowner=0\n"
                "measure path=/usr/**\n"
                "audit path=/usr/bin/**\n");
        IverPolicyDecision d;
        IverFileAttr root = { .owner = 0, .subject_uid = IVER_UID_UNKNOWN }, user = { .owner = 1000, .subject_uid = IVER_UID_UNKNOWN };
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_AUDIT, "/usr/bin/ls", 11, NULL, &d), 1);
        ck_assert_int_eq(d.action, IVER_ACTION_AUDIT);
        ck_assert_uint_eq(d.rule, 2);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_AUDIT, "/usr/sbin/sshd", 14, &root, &d), 1);
        ck_assert_uint_eq(d.rule, 0);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_AUDIT, "/usr/sbin/sshd", 14, &user, &d), 0);
        ck_assert(!d.matched);
        ck_assert_int_eq(d.action, _IVER_ACTION_INVALID);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_AUDIT, "/usr/lib/x", 10, NULL, &d), 0);
        /* the measure class is untouched by audit rules */
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_MEASURE, "/usr/bin/ls", 11, NULL, &d), 1);
        ck_assert_int_eq(d.action, IVER_ACTION_MEASURE);
        ck_assert_uint_eq(d.rule, 1);
        ck_assert(iver_policy_may_match_below(p, IVER_CLASS_AUDIT, "/usr/bin", 8));
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_AUDIT, "/etc", 4));
        ck_assert_str_eq(iver_policy_action_to_string(IVER_ACTION_AUDIT), "audit");
        ck_assert_int_eq(iver_policy_action_class(IVER_ACTION_AUDIT), IVER_CLASS_AUDIT);
        char *text = NULL;
        ck_assert_int_eq(iver_policy_rule_format(p, 2, &text), 0);
        ck_assert_str_eq(text, "audit path=\"/usr/bin/**\"");
        free(text);
        iver_policy_free(p);

        IverPolicyDiags diags = {};
        ck_assert_int_eq(iver_policy_load_string("t.policy", "audit pcr=11\n", 13, &diags, &p), -EINVAL);
        ck_assert_uint_eq(diags.n_errors, 1);
        iver_policy_diags_done(&diags);
}
END_TEST

START_TEST(test_quoting_and_bytes) {
        IverPolicy *p = load_ok(
                "measure path=\"/opt/my app/bin/*\"\n"
                "measure path=/srv/two\\ words\n"
                "measure path=\"/data/\\xff\\xfe/*\"\n"
                "measure path=\"/n/line\\nbreak\"\n"
                "measure path=\"/lit/star\\*\"\n"
                "measure path=\"/q/\\\"quoted\\\"\\\\back\"\n"
                "measure path=/h/#not-a-comment\n"
                "measure path=\"/tab\\there\"\n"
                "measure path=/utf8/\xc3\xa9t\xc3\xa9\n");
        unsigned line;
        ck_assert_int_eq(decide_attr(p, "/opt/my app/bin/tool", 20, NULL, &line), IVER_ACTION_MEASURE);
        ck_assert_uint_eq(line, 1);
        ck_assert_int_eq(decide_attr(p, "/srv/two words", 14, NULL, &line), IVER_ACTION_MEASURE);
        ck_assert_uint_eq(line, 2);
        ck_assert_int_eq(decide_attr(p, "/data/\xff\xfe/x", 10, NULL, &line), IVER_ACTION_MEASURE);
        ck_assert_uint_eq(line, 3);
        ck_assert_int_eq(decide_attr(p, "/data/\xff\xfd/x", 10, NULL, &line), -1);
        ck_assert_int_eq(decide_attr(p, "/n/line\nbreak", 13, NULL, &line), IVER_ACTION_MEASURE);
        ck_assert_uint_eq(line, 4);
        ck_assert_int_eq(decide(p, "/lit/star*"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/lit/starx"), -1);
        ck_assert_int_eq(decide(p, "/q/\"quoted\"\\back"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/h/#not-a-comment"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/tab\there"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/utf8/\xc3\xa9t\xc3\xa9"), IVER_ACTION_MEASURE);
        /* The path length is honoured: bytes after len are not part of the path. */
        ck_assert_int_eq(decide_attr(p, "/srv/two wordsEXTRA", 14, NULL, &line), IVER_ACTION_MEASURE);

        /* Canonical text parses back to the same rule. */
        for (size_t i = 0; i < iver_policy_n_rules(p); i++) {
                char *a = NULL, *b = NULL;
                ck_assert_int_eq(iver_policy_rule_format(p, i, &a), 0);
                IverPolicy *q = load_ok(a);
                ck_assert_int_eq(iver_policy_rule_format(q, 0, &b), 0);
                ck_assert_str_eq(a, b);
                free(a);
                free(b);
                iver_policy_free(q);
        }
        char *s = NULL;
        ck_assert_int_eq(iver_policy_rule_format(p, 2, &s), 0);
        ck_assert_str_eq(s, "measure path=\"/data/\\xff\\xfe/*\"");
        free(s);
        ck_assert_int_eq(iver_policy_rule_format(p, 4, &s), 0);
        ck_assert_str_eq(s, "measure path=\"/lit/star\\*\"");
        free(s);
        iver_policy_free(p);
}
END_TEST

START_TEST(test_attribute_conditions) {
        IverPolicy *p = load_ok(
                "dont_measure fstype=proc\n"                      /* 1 */
                "dont_measure fstype=0x62656572\n"                /* 2: sysfs by magic */
                "measure path=/big/* size>=1K size<=1M\n"         /* 3 */
                "dont_measure path=/big/*\n"                      /* 4 */
                "measure path=/x/* mode=exec\n"                   /* 5 */
                "measure path=/x/* mode=setuid\n"                 /* 6 */
                "measure path=/x/* mode=0640\n"                   /* 7 */
                "measure path=/x/* mode=&0002\n"                  /* 8 */
                "measure path=/u/* uid=1000\n"                    /* 9 */
                "measure path=/u/* fowner=0\n"                    /* 10 */
                "measure path=/s/* size<=2G\n"                    /* 11 */
                "measure fstype=ext4 path=/e/*\n");               /* 12 */
        IverFileAttr a = { .fs_magic = 0x9fa0, .owner = 1, .subject_uid = IVER_UID_UNKNOWN, .mode = 0100644, .size = 10 };
        ck_assert_uint_eq(decide_line(p, "/proc/1/maps", &a), 1);
        a.fs_magic = 0x62656572;
        ck_assert_uint_eq(decide_line(p, "/sys/kernel", &a), 2);
        a.fs_magic = 0xef53;

        a.size = 1023;
        ck_assert_uint_eq(decide_line(p, "/big/f", &a), 4);
        a.size = 1024;
        ck_assert_uint_eq(decide_line(p, "/big/f", &a), 3);
        a.size = 1024 * 1024;
        ck_assert_uint_eq(decide_line(p, "/big/f", &a), 3);
        a.size = 1024 * 1024 + 1;
        ck_assert_uint_eq(decide_line(p, "/big/f", &a), 4);
        /* Without attributes, attribute rules do not match. */
        ck_assert_uint_eq(decide_line(p, "/big/f", NULL), 4);

        a.size = 10;
        a.mode = 0100644;
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 0);
        a.mode = 0100640;
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 7);
        a.mode = 0100010;
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 5);
        a.mode = 0104000;
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 6);
        a.mode = 0100602;
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 8);

        a.mode = 0100644;
        a.owner = 0;
        ck_assert_uint_eq(decide_line(p, "/u/f", &a), 10);
        a.owner = 5;
        ck_assert_uint_eq(decide_line(p, "/u/f", &a), 0);
        a.subject_uid = 1000;
        ck_assert_uint_eq(decide_line(p, "/u/f", &a), 9);
        a.subject_uid = 1001;
        ck_assert_uint_eq(decide_line(p, "/u/f", &a), 0);

        a.size = 2ull << 30;
        ck_assert_uint_eq(decide_line(p, "/s/f", &a), 11);
        a.size++;
        ck_assert_uint_eq(decide_line(p, "/s/f", &a), 0);

        ck_assert_uint_eq(decide_line(p, "/e/f", &a), 12);
        a.fs_magic = 0x58465342;
        ck_assert_uint_eq(decide_line(p, "/e/f", &a), 0);

        ck_assert_uint_eq(iver_fstype_from_name("btrfs"), 0x9123683e);
        ck_assert_str_eq(iver_fstype_to_name(0x01021994), "tmpfs");
        ck_assert_uint_eq(iver_fstype_from_name("nope"), 0);
        iver_policy_free(p);
}
END_TEST

/* func= and mask= (kernel IMA's FILE_CHECK, BPRM_CHECK, MAY_*): which uses a
 * rule checks; a scan (no use) matches them; with OnAccess=exec an open is
 * checked only by rules that name func=open. */
START_TEST(test_func_and_mask) {
        IverPolicy *p = load_ok(
                "measure path=/o/** func=FILE_CHECK mask=^MAY_READ\n"   /* 1 */
                "measure path=/e/** func=exec\n"                        /* 2 */
                "measure path=/x/** mask=MAY_EXEC\n"                    /* 3 */
                "measure path=/**\n");                                  /* 4 */
        ck_assert(iver_policy_wants_opens(p));
        IverFileAttr a = { .fs_magic = 0xef53, .subject_uid = IVER_UID_UNKNOWN, .mode = 0100755, .size = 10 };
        /* a scan: every rule's use conditions hold */
        ck_assert_uint_eq(decide_line(p, "/o/f", &a), 1);
        ck_assert_uint_eq(decide_line(p, "/e/f", &a), 2);
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 3);
        /* an open with OnAccess=exec: only the func=open rule */
        a.func = IVER_FUNC_OPEN;
        a.mask = IVER_MAY_READ;
        ck_assert_uint_eq(decide_line(p, "/o/f", &a), 1);
        ck_assert_uint_eq(decide_line(p, "/e/f", &a), 0);
        ck_assert_uint_eq(decide_line(p, "/y/f", &a), 0);
        a.mask = IVER_MAY_WRITE;
        ck_assert_uint_eq(decide_line(p, "/o/f", &a), 0);
        /* with OnAccess=open, rules without func= check opens too */
        a.open_default = true;
        a.mask = IVER_MAY_READ;
        ck_assert_uint_eq(decide_line(p, "/e/f", &a), 4);
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 4);
        ck_assert_uint_eq(decide_line(p, "/y/f", &a), 4);
        /* an exec */
        a.func = IVER_FUNC_EXEC;
        a.mask = IVER_MAY_EXEC;
        ck_assert_uint_eq(decide_line(p, "/o/f", &a), 4);
        ck_assert_uint_eq(decide_line(p, "/e/f", &a), 2);
        ck_assert_uint_eq(decide_line(p, "/x/f", &a), 3);
        iver_policy_free(p);

        p = load_ok("measure path=/**\nmeasure path=/e/** func=BPRM_CHECK\n");
        ck_assert(!iver_policy_wants_opens(p));
        /* no rule looks at the user: a use is decided without its process */
        ck_assert(!iver_policy_uses_subject(p));
        iver_policy_free(p);
        p = load_ok("measure path=/** fowner=0\ndont_measure path=/u/* uid=1000\n");
        ck_assert(iver_policy_uses_subject(p));
        iver_policy_free(p);
}
END_TEST

START_TEST(test_options_in_decision) {
        IverPolicy *p = load_ok(
                "measure path=/a/* pcr=14 hash=sha384 template=ima-sig\n"
                "measure path=/b/*\n"
                "appraise path=/a/* hash=sha512\n");
        IverPolicyDecision d;
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_MEASURE, "/a/x", 4, NULL, &d), 1);
        ck_assert_int_eq(d.pcr, 14);
        ck_assert_int_eq(d.hash, IVER_HASH_SHA384);
        ck_assert_int_eq(d.template_, IVER_IMA_TEMPLATE_SIG);
        ck_assert_str_eq(d.file, "t.policy");
        ck_assert_uint_eq(d.line, 1);
        ck_assert_uint_eq(d.rule, 0);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_MEASURE, "/b/x", 4, NULL, &d), 1);
        ck_assert_int_eq(d.pcr, IVER_POLICY_PCR_UNSET);
        ck_assert_int_eq(d.hash, _IVER_HASH_INVALID);
        ck_assert_int_eq(d.template_, _IVER_IMA_TEMPLATE_INVALID);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_APPRAISE, "/a/x", 4, NULL, &d), 1);
        ck_assert_int_eq(d.hash, IVER_HASH_SHA512);
        ck_assert_uint_eq(d.rule, 2);
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_APPRAISE, "/b/x", 4, NULL, &d), 0);
        iver_policy_free(p);
}
END_TEST

int main(void) {
        Suite *s = suite_create("policy");
        TCase *tc = tcase_create("grammar");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_actions_comments_blank);
        tcase_add_test(tc, test_empty_policy);
        tcase_add_test(tc, test_first_match_wins);
        tcase_add_test(tc, test_quoting_and_bytes);
        tcase_add_test(tc, test_attribute_conditions);
        tcase_add_test(tc, test_options_in_decision);
        tcase_add_test(tc, test_func_and_mask);
        tcase_add_test(tc, test_audit_class);
        suite_add_tcase(s, tc);

        return iver_run_suite(s);
}
