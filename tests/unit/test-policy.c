/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy language: every grammar element, every error class with its
 * exact FILE:LINE:COLUMN message, first-match order, "**" semantics, the
 * subtree-skip query, drop-in order and all-or-nothing loading. The indexed
 * matcher is checked against a plain first-to-last scan on random policies. */
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
#include "check-run.h"

static IverPolicy *load_ok(const char *text) {
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
static char *first_error_n(const char *text, size_t len) {
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

static char *first_error(const char *text) {
        return first_error_n(text, strlen(text));
}

/* Action deciding path for class measure, or -1 when no rule matched; line of the rule in *line. */
static int decide_attr(const IverPolicy *p, const char *path, size_t len, const IverFileAttr *a, unsigned *line) {
        IverPolicyDecision d;
        int r = iver_policy_match(p, IVER_CLASS_MEASURE, path, len, a, &d);
        ck_assert_int_ge(r, 0);
        ck_assert_int_eq(r, d.matched);
        if (line)
                *line = d.line;
        return d.matched ? (int) d.action : -1;
}

static int decide(const IverPolicy *p, const char *path) {
        return decide_attr(p, path, strlen(path), NULL, NULL);
}

static unsigned decide_line(const IverPolicy *p, const char *path, const IverFileAttr *a) {
        unsigned line = 0;
        int r = decide_attr(p, path, strlen(path), a, &line);
        return r < 0 ? 0 : line;
}

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

static const struct {
        const char *pattern, *path;
        bool match;
} glob_cases[] = {
        { "/usr/bin/ls", "/usr/bin/ls", true },
        { "/usr/bin/ls", "/usr/bin/lsx", false },
        { "/usr/bin/ls", "/usr/bin", false },
        { "/usr/bin/*", "/usr/bin/ls", true },
        { "/usr/bin/*", "/usr/binx", false },
        { "/usr/bin/*", "/usr/bin/x/y", false },
        { "/usr/*/ls", "/usr/bin/ls", true },
        { "/usr/*/ls", "/usr/a/b/ls", false },
        { "/usr/b?n/ls", "/usr/bin/ls", true },
        { "/usr/b?n/ls", "/usr/bn/ls", false },
        { "/usr/b?n/ls", "/usr/b/n/ls", false },
        { "/a/*.so", "/a/libc.so", true },
        { "/a/*.so", "/a/.so", true },
        { "/a/*.so", "/a/x/libc.so", false },
        { "/a/**", "/a/b", true },
        { "/a/**", "/a/b/c/d", true },
        { "/a/**", "/a", false },
        { "/a/**", "/ab", false },
        { "/a/**/b", "/a/b", true },
        { "/a/**/b", "/a/x/b", true },
        { "/a/**/b", "/a/x/y/z/b", true },
        { "/a/**/b", "/a/xb", false },
        { "/a/**/b", "/a/x/b/c", false },
        { "/a/**/b/*.conf", "/a/1/2/b/x.conf", true },
        { "/a/**/b/*.conf", "/a/1/2/b/c/x.conf", false },
        { "/usr/lib/**.so*", "/usr/lib/libc.so.6", true },
        { "/usr/lib/**.so*", "/usr/lib/x86_64-linux-gnu/libc.so.6", true },
        { "/usr/lib/**.so*", "/usr/lib/x86_64-linux-gnu/libc.a", false },
        { "/usr/lib/**.so*", "/usr/lib/a.so/b", false },
        { "/usr/lib/**.so*", "/usr/lib/a.so/b.so", true },
        { "/**", "/anything/at/all", true },
        { "/**", "/", false },
        { "/", "/", true },
        { "/*", "/etc", true },
        { "/*", "/etc/passwd", false },
        { "/x/*a*a*a*a*a*a*b", "/x/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
        { "/x/**a**a**a**a**a**b", "/x/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a", false },
        { "/x/**a**a**a**a**a**b", "/x/a/a/a/a/a/a/a/a/a/a/a/b", true },
        { "/e/**/*", "/e/f", true },
        { "/e/**/*", "/e/f/g", true },
        { "/e/b**", "/e/bin/x/y", true },
        { "/e/b**", "/e/a", false },
};

START_TEST(test_glob_semantics) {
        for (size_t i = 0; i < sizeof glob_cases / sizeof glob_cases[0]; i++) {
                char text[256];
                snprintf(text, sizeof text, "measure path=%s\n", glob_cases[i].pattern);
                IverPolicy *p = load_ok(text);
                int r = decide(p, glob_cases[i].path);
                ck_assert_msg((r == IVER_ACTION_MEASURE) == glob_cases[i].match, "pattern %s path %s: expected %s",
                              glob_cases[i].pattern, glob_cases[i].path, glob_cases[i].match ? "match" : "no match");
                iver_policy_free(p);
        }
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

static const struct {
        const char *text;
        const char *error;
} error_cases[] = {
        { "mesure path=/x\n",
          "t.policy:1:1: unknown action 'mesure', expected measure, dont_measure, appraise, dont_appraise or audit" },
        { "path=/x\n",
          "t.policy:1:1: unknown action 'path=/x', expected measure, dont_measure, appraise, dont_appraise or audit" },
        { "# ok\nmeasure path=/x foo=1\n",
          "t.policy:2:17: unknown condition or option 'foo', expected path=, fstype=, uid=, fowner=, mode=, size<=, size>=, pcr=, hash= or template=" },
        { "measure bar\n",
          "t.policy:1:9: 'bar' is not a condition or option, expected KEY=VALUE such as path=/usr/bin/**" },
        { "measure measure\n",
          "t.policy:1:9: 'measure' is not a condition or option, expected KEY=VALUE such as path=/usr/bin/**" },
        { "measure =x\n",
          "t.policy:1:9: '=x' is not a condition or option, expected KEY=VALUE such as path=/usr/bin/**" },
        { "measure path<=/x\n",
          "t.policy:1:13: 'path' does not take '<=', expected path=" },
        { "measure size=5\n",
          "t.policy:1:13: 'size' does not take '=', expected size<= or size>=" },
        { "measure path=/a path=/b\n",
          "t.policy:1:17: duplicate condition 'path=', expected each condition and option at most once in a rule" },
        { "measure size<=1 size<=2\n",
          "t.policy:1:17: duplicate condition 'size<=', expected each condition and option at most once in a rule" },
        { "measure pcr=1 pcr=2\n",
          "t.policy:1:15: duplicate option 'pcr=', expected each condition and option at most once in a rule" },
        { "dont_measure path=/a pcr=3\n",
          "t.policy:1:22: option 'pcr=' does not apply to dont_measure rules, expected it on measure rules only" },
        { "appraise template=ima-sig\n",
          "t.policy:1:10: option 'template=' does not apply to appraise rules, expected it on measure rules only" },
        { "dont_appraise hash=sha256\n",
          "t.policy:1:15: option 'hash=' does not apply to dont_appraise rules, expected it on measure and appraise rules only" },
        { "measure path=\n",
          "t.policy:1:14: missing value after 'path=', expected an absolute path pattern" },
        { "measure path=\"\"\n",
          "t.policy:1:14: missing value after 'path=', expected an absolute path pattern" },
        { "measure path=\"/a b\n",
          "t.policy:1:14: unterminated quoted string, expected a closing '\"'" },
        { "measure path=\"/a\"x\n",
          "t.policy:1:18: unexpected 'x' after a closing quote, expected a blank or the end of the line" },
        { "measure path=/a\"b\"\n",
          "t.policy:1:16: unexpected '\"' inside an unquoted value, expected the whole value in quotes" },
        { "measure path=/a\\q\n",
          "t.policy:1:16: unknown escape '\\q', expected one of \\\\ \\\" \\' \\n \\t \\r \\* \\? \\# \\(space) or \\xHH" },
        { "measure path=/a\\xZ1\n",
          "t.policy:1:16: '\\x' not followed by two hex digits, expected \\xHH" },
        { "measure path=/a\\x0\n",
          "t.policy:1:16: '\\x' not followed by two hex digits, expected \\xHH" },
        { "measure path=/a\\x00b\n",
          "t.policy:1:16: '\\x00' in a value, expected a byte other than NUL" },
        { "measure path=/a\\\n",
          "t.policy:1:16: backslash at the end of the line, expected an escape such as \\\\ or \\xHH" },
        { "measure path=usr/bin\n",
          "t.policy:1:14: path is not absolute, expected a pattern starting with '/'" },
        { "measure path=/usr/../etc\n",
          "t.policy:1:19: '.' or '..' path component, expected a canonical path" },
        { "measure path=/usr/./etc\n",
          "t.policy:1:19: '.' or '..' path component, expected a canonical path" },
        { "measure path=/usr//bin\n",
          "t.policy:1:19: empty path component '//', expected a single '/'" },
        { "measure path=/usr/bin/\n",
          "t.policy:1:22: path ends in '/', expected a file or directory name (use '/**' for everything below)" },
        { "measure path=\"/a/\\x2e\\x2e\"\n",
          "t.policy:1:18: '.' or '..' path component, expected a canonical path" },
        { "measure path=/a/***\n",
          "t.policy:1:17: '***' in pattern, expected '*' or '**'" },
        { "measure path=/?????????????????????????????????????????????????????????????????\n",
          "t.policy:1:79: too many wildcards, expected at most 64 in one pattern" },
        { "measure fstype=ext5\n",
          "t.policy:1:16: unknown filesystem type 'ext5', expected a name such as ext4, xfs, btrfs or tmpfs, or a magic number such as 0xef53" },
        { "measure fstype=0x\n",
          "t.policy:1:16: unknown filesystem type '0x', expected a name such as ext4, xfs, btrfs or tmpfs, or a magic number such as 0xef53" },
        { "measure uid=root\n",
          "t.policy:1:13: invalid uid 'root', expected a decimal number from 0 to 4294967294" },
        { "measure fowner=4294967295\n",
          "t.policy:1:16: invalid fowner '4294967295', expected a decimal number from 0 to 4294967294" },
        { "measure mode=0999\n",
          "t.policy:1:14: invalid mode '0999', expected exec, setuid, setgid, sticky, an octal mode such as 0755, or &OCTAL for any of those bits" },
        { "measure mode=&0\n",
          "t.policy:1:14: invalid mode '&0', expected exec, setuid, setgid, sticky, an octal mode such as 0755, or &OCTAL for any of those bits" },
        { "measure size<=12Q\n",
          "t.policy:1:15: invalid size '12Q', expected a number of bytes with an optional K, M, G or T suffix" },
        { "measure size<=\"64 \"\n",
          "t.policy:1:15: invalid size '64 ', expected a number of bytes with an optional K, M, G or T suffix" },
        { "measure size>=99999999999999999999\n",
          "t.policy:1:15: invalid size '99999999999999999999', expected a number of bytes with an optional K, M, G or T suffix" },
        { "measure size<=16777216T\n",
          "t.policy:1:15: invalid size '16777216T', expected a number of bytes with an optional K, M, G or T suffix" },
        { "measure size<=1K size>=2K\n",
          "t.policy:1:18: size range is empty (size>= is above size<=), expected size>=MIN size<=MAX with MIN <= MAX" },
        { "measure pcr=24\n",
          "t.policy:1:13: invalid PCR '24', expected a number from 0 to 23" },
        { "measure pcr=-1\n",
          "t.policy:1:13: invalid PCR '-1', expected a number from 0 to 23" },
        { "measure hash=md5\n",
          "t.policy:1:14: unknown hash algorithm 'md5', expected sha1, sha256, sha384, sha512 or sm3" },
        { "measure template=ima\n",
          "t.policy:1:18: unknown template 'ima', expected ima-ng or ima-sig" },
        { "measure path=/a\n\n   measure   path=/b   pcr=x\n",
          "t.policy:3:28: invalid PCR 'x', expected a number from 0 to 23" },
        { "measure \x01\xff\n",
          "t.policy:1:9: '\\x01\\xff' is not a condition or option, expected KEY=VALUE such as path=/usr/bin/**" },
};

START_TEST(test_error_messages) {
        for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
                char *m = first_error(error_cases[i].text);
                ck_assert_msg(strcmp(m, error_cases[i].error) == 0, "case %zu:\n got: %s\nwant: %s", i, m, error_cases[i].error);
                free(m);
        }
}
END_TEST

START_TEST(test_nul_and_long_lines) {
        static const char nul[] = "measure path=/a\0b\n";
        char *m = first_error_n(nul, sizeof nul - 1);
        ck_assert_str_eq(m, "t.policy:1:16: NUL byte, expected text");
        free(m);

        size_t n = 1024 * 1024;
        char *big = malloc(n + 64);
        memcpy(big, "measure path=/", 14);
        memset(big + 14, 'a', n);
        memcpy(big + 14 + n, "\nmeasure path=/ok\n", 19);
        m = first_error(big);
        ck_assert_str_eq(m, "t.policy:1:65537: line longer than 65536 bytes, expected one short rule per line");
        free(m);
        free(big);
}
END_TEST

START_TEST(test_all_errors_reported) {
        IverPolicyDiags d = {};
        IverPolicy *p = (IverPolicy *) 0x1; /* must stay untouched */
        const char *text =
                "measure path=/ok\n"
                "bogus\n"
                "measure path=/ok2\n"
                "measure pcr=99\n"
                "measure path=rel\n";
        ck_assert_int_eq(iver_policy_load_string("t.policy", text, strlen(text), &d, &p), -EINVAL);
        ck_assert_ptr_eq(p, (IverPolicy *) 0x1);
        ck_assert_uint_eq(d.n_errors, 3);
        ck_assert_uint_eq(d.n_items, 3);
        ck_assert_uint_eq(d.items[0].line, 2);
        ck_assert_uint_eq(d.items[1].line, 4);
        ck_assert_uint_eq(d.items[2].line, 5);
        ck_assert_uint_eq(d.items[2].column, 14);
        iver_policy_diags_done(&d);

        /* Garbage: every line an error, the count goes on past the kept ones. */
        size_t len = 10 * 1024 * 1024;
        char *g = malloc(len);
        unsigned seed = 42;
        for (size_t i = 0; i < len; i++)
                g[i] = (char) (rand_r(&seed) & 0xff);
        p = NULL;
        ck_assert_int_eq(iver_policy_load_string("g.policy", g, len, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(d.n_items, IVER_POLICY_DIAGS_MAX);
        ck_assert_uint_gt(d.n_errors, IVER_POLICY_DIAGS_MAX);
        ck_assert_uint_eq(d.n_dropped, d.n_errors + d.n_warnings - IVER_POLICY_DIAGS_MAX);
        iver_policy_diags_done(&d);
        free(g);
}
END_TEST

START_TEST(test_shadow_warnings) {
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;
        const char *text =
                "measure path=/usr/bin/*\n"
                "dont_measure path=/usr/bin/* fowner=0\n"   /* same pattern: never reached */
                "appraise path=/usr/bin/*\n"                /* other class: fine */
                "measure path=/usr/bin/* mode=exec\n"       /* 4: attrs don't help: shadowed */
                "measure fstype=ext4\n"                     /* conditional: no catch-all */
                "dont_measure\n"                            /* 6: catch-all */
                "measure path=/etc/*\n";                    /* 7: never reached */
        ck_assert_int_eq(iver_policy_load_string("w.policy", text, strlen(text), &d, &p), 0);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq(d.n_errors, 0);
        ck_assert_uint_eq(d.n_warnings, 3);
        ck_assert_uint_eq(d.items[0].line, 2);
        ck_assert_uint_eq(d.items[1].line, 4);
        ck_assert_uint_eq(d.items[2].line, 7);
        char *m = NULL;
        ck_assert_int_eq(iver_policy_diag_format(&d.items[2], &m), 0);
        ck_assert_str_eq(m, "w.policy:7:1: warning: rule can never match: the rule at w.policy:6 decides every path it could match, expected specific rules before general ones");
        free(m);
        iver_policy_diags_done(&d);
        iver_policy_free(p);
}
END_TEST

START_TEST(test_may_match_below) {
        IverPolicy *p = load_ok(
                "dont_measure path=/proc/**\n"
                "dont_measure path=/sys/** fstype=sysfs\n"
                "measure path=/usr/bin/*\n"
                "measure path=/usr/lib/**.so*\n"
                "measure path=/etc/ssh/sshd_config\n"
                "measure path=/opt/*/bin/*\n"
                "dont_measure path=/var/**\n"
                "measure path=/var/lib/important\n"
                "measure path=/srv/x* mode=exec\n"
                "measure path=/sys/firmware/*\n");
#define BELOW(dir, expect) ck_assert_msg(iver_policy_may_match_below(p, IVER_CLASS_MEASURE, dir, strlen(dir)) == (expect), \
                                         "may_match_below(%s) should be %s", dir, (expect) ? "true" : "false")
        BELOW("/", true);
        BELOW("/proc", false);
        BELOW("/proc/1/task", false);
        BELOW("/sys", true);            /* the dont_ rule has a condition, and a measure rule is below */
        BELOW("/sys/kernel", false);    /* nothing positive can match there */
        BELOW("/usr", true);
        BELOW("/usr/bin", true);
        BELOW("/usr/bin/sub", false);   /* '*' stays in one component */
        BELOW("/usr/lib", true);
        BELOW("/usr/lib/x86_64-linux-gnu/deep", true);
        BELOW("/usr/share", false);
        BELOW("/etc", true);
        BELOW("/etc/ssh", true);
        BELOW("/etc/ssl", false);
        BELOW("/etc/ssh/sshd_config", false); /* a literal file: nothing below it */
        BELOW("/opt", true);
        BELOW("/opt/foo", true);
        BELOW("/opt/foo/bin", true);
        BELOW("/opt/foo/lib", false);
        BELOW("/var", false);           /* covered before the later literal */
        BELOW("/var/lib", false);
        BELOW("/srv", true);
        BELOW("/srv/xy", false);        /* x* names entries of /srv, not what is below them */
        BELOW("/srv/y", false);
        BELOW("/home", false);
        BELOW("/usr/bin/", true);       /* a trailing slash is ignored */
        BELOW("/proc/", false);
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_APPRAISE, "/usr", 4));
#undef BELOW
        iver_policy_free(p);

        p = load_ok("measure\n");
        ck_assert(iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/anything", 9));
        iver_policy_free(p);
        p = load_ok("dont_measure path=/**\nmeasure\n");
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/anything", 9));
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/", 1));
        iver_policy_free(p);
        p = load_ok("measure path=/a/**/b\n");
        ck_assert(iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/a/x/y", 6));
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/b", 2));
        iver_policy_free(p);
}
END_TEST

/* ---- files and drop-ins ---- */

static char tmpdir[64];

static void write_file(const char *dir, const char *name, const char *text) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

static void make_tmpdir(void) {
        strcpy(tmpdir, "/tmp/test-policy-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmpdir(void) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_dropin_order) {
        char main_file[128], dir[128];
        make_tmpdir();
        snprintf(dir, sizeof dir, "%s/policy.d", tmpdir);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        write_file(tmpdir, "iverd.policy", "measure path=/main\n");
        write_file(dir, "20-b.policy", "measure path=/b\n");
        write_file(dir, "10-a.policy", "# a\nmeasure path=/a\nmeasure path=/shared/*\n");
        write_file(dir, "30-c.policy", "dont_measure path=/shared/x\nmeasure path=/c\n");
        write_file(dir, "README", "this is not a policy\n");
        write_file(dir, ".hidden.policy", "garbage\n");
        write_file(dir, "x.policy.bak", "garbage\n");
        ck_assert_int_eq(mkdir(strcat(strcpy((char[192]) {}, dir), "/sub.policy"), 0755), 0);
        snprintf(main_file, sizeof main_file, "%s/iverd.policy", tmpdir);

        const char *paths[] = { main_file, dir };
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;
        int r = iver_policy_load(paths, 2, 0, &d, &p);
        /* a directory named *.policy inside the drop-in dir is an error: nothing is silently skipped */
        ck_assert_int_eq(r, -EISDIR);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(d.n_errors, 1);
        char *m = NULL;
        iver_policy_diag_format(&d.items[0], &m);
        char want[256];
        snprintf(want, sizeof want, "%s/sub.policy: cannot load: Is a directory, expected a readable policy file or directory", dir);
        ck_assert_str_eq(m, want);
        free(m);
        iver_policy_diags_done(&d);
        ck_assert_int_eq(rmdir(strcat(strcpy((char[192]) {}, dir), "/sub.policy")), 0);

        ck_assert_int_eq(iver_policy_load(paths, 2, 0, &d, &p), 0);
        ck_assert_uint_eq(iver_policy_n_rules(p), 6);
        static const char *const order[] = { "iverd.policy", "10-a.policy", "10-a.policy", "20-b.policy", "30-c.policy", "30-c.policy" };
        static const unsigned lines[] = { 1, 2, 3, 1, 1, 2 };
        for (size_t i = 0; i < 6; i++) {
                const char *file;
                unsigned line;
                iver_policy_rule_source(p, i, &file, &line);
                ck_assert_ptr_nonnull(strstr(file, order[i]));
                ck_assert_uint_eq(line, lines[i]);
        }
        /* First match across files: 10-a's shared-star rule comes before 30-c's dont_measure. */
        IverPolicyDecision dec;
        ck_assert_int_eq(iver_policy_match(p, IVER_CLASS_MEASURE, "/shared/x", 9, NULL, &dec), 1);
        ck_assert_int_eq(dec.action, IVER_ACTION_MEASURE);
        ck_assert_ptr_nonnull(strstr(dec.file, "/policy.d/10-a.policy"));
        ck_assert_uint_eq(dec.line, 3);
        iver_policy_free(p);
        iver_policy_diags_done(&d);

        /* One bad drop-in rejects the whole policy, and says where. */
        write_file(dir, "25-bad.policy", "measure path=/ok\nmeasure hash=md4\n");
        p = NULL;
        ck_assert_int_eq(iver_policy_load(paths, 2, 0, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(d.n_errors, 1);
        ck_assert_ptr_nonnull(strstr(d.items[0].file, "25-bad.policy"));
        ck_assert_uint_eq(d.items[0].line, 2);
        ck_assert_uint_eq(d.items[0].column, 14);
        iver_policy_diags_done(&d);
        ck_assert_int_eq(iver_policy_check_file(dir, &d), 1);
        iver_policy_diags_done(&d);
        ck_assert_int_eq(iver_policy_check_file(main_file, NULL), 0);

        /* Missing paths: an error, unless they are optional. */
        char missing[160];
        snprintf(missing, sizeof missing, "%s/nope", tmpdir);
        const char *mp[] = { missing };
        ck_assert_int_eq(iver_policy_load(mp, 1, 0, &d, &p), -ENOENT);
        ck_assert_uint_eq(d.n_errors, 1);
        m = NULL;
        iver_policy_diag_format(&d.items[0], &m);
        snprintf(want, sizeof want, "%s: cannot open: No such file or directory, expected a readable policy file or directory", missing);
        ck_assert_str_eq(m, want);
        free(m);
        iver_policy_diags_done(&d);
        ck_assert_int_eq(iver_policy_load(mp, 1, IVER_POLICY_LOAD_MISSING_OK, &d, &p), 0);
        ck_assert_uint_eq(iver_policy_n_rules(p), 0);
        iver_policy_free(p);
        iver_policy_diags_done(&d);

        /* An empty drop-in dir is an empty policy. */
        char empty[160];
        snprintf(empty, sizeof empty, "%s/empty.d", tmpdir);
        ck_assert_int_eq(mkdir(empty, 0755), 0);
        const char *ep[] = { empty };
        ck_assert_int_eq(iver_policy_load(ep, 1, 0, NULL, &p), 0);
        ck_assert_uint_eq(iver_policy_n_rules(p), 0);
        iver_policy_free(p);
        rm_tmpdir();
}
END_TEST

static void shipped_dir(char *buf, size_t size, const char *name) {
        /* __FILE__ is tests/unit/test-policy.c in the source tree. */
        snprintf(buf, size, "%s", __FILE__);
        char *s = strstr(buf, "tests/unit/test-policy.c");
        ck_assert_ptr_nonnull(s);
        snprintf(s, size - (size_t) (s - buf), "policy/%s", name);
}

START_TEST(test_shipped_policies) {
        char path[4096];
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;

        shipped_dir(path, sizeof path, "iverd.policy");
        const char *paths[] = { path };
        ck_assert_int_eq(iver_policy_load(paths, 1, 0, &d, &p), 0);
        ck_assert_uint_eq(d.n_errors + d.n_warnings, 0);
        ck_assert_int_eq(decide(p, "/usr/bin/ls"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/usr/lib/x86_64-linux-gnu/libc.so.6"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/etc/passwd"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/tmp/x"), IVER_ACTION_DONT_MEASURE);
        ck_assert_int_eq(decide(p, "/var/log/syslog"), IVER_ACTION_DONT_MEASURE);
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/proc", 5));
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/home", 5));
        ck_assert(iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/usr", 4));
        iver_policy_free(p);
        iver_policy_diags_done(&d);

        shipped_dir(path, sizeof path, "demo.policy");
        ck_assert_int_eq(iver_policy_load(paths, 1, 0, &d, &p), 0);
        ck_assert_uint_eq(d.n_errors + d.n_warnings, 0);
        ck_assert_int_eq(decide(p, "/tmp/iverd-demo/tree/a/b"), IVER_ACTION_MEASURE);
        ck_assert_int_eq(decide(p, "/usr/bin/ls"), -1);
        ck_assert(!iver_policy_may_match_below(p, IVER_CLASS_MEASURE, "/usr", 4));
        iver_policy_free(p);
        iver_policy_diags_done(&d);
}
END_TEST

/* ---- the index against a plain scan ---- */
/* Random policies over a small alphabet of components and wildcards, random
 * paths over a small alphabet of names: collisions are frequent. */

static const char *const comps[] = { "usr", "bin", "lib", "etc", "a", "ab", "x.so", "x.so.1", "libc.so.6", "conf" };
static const char *const pcomps[] = { "usr", "bin", "lib", "etc", "a", "*", "a*", "*.so*", "?", "**", "lib*", "x.so" };

static void random_path(unsigned *seed, char *buf, size_t size, const char *const *set, size_t n_set) {
        size_t depth = 1 + (size_t) rand_r(seed) % 4, o = 0;
        for (size_t i = 0; i < depth; i++)
                o += (size_t) snprintf(buf + o, size - o, "/%s", set[(size_t) rand_r(seed) % n_set]);
}

START_TEST(test_index_equals_linear_scan) {
        unsigned seed = 7;
        for (int round = 0; round < 20; round++) {
                size_t cap = 64 * 1024, o = 0;
                char *text = malloc(cap);
                int n_rules = 1 + rand_r(&seed) % 60;
                for (int i = 0; i < n_rules; i++) {
                        char pat[256];
                        do
                                random_path(&seed, pat, sizeof pat, pcomps, sizeof pcomps / sizeof pcomps[0]);
                        while (strstr(pat, "***") || strstr(pat, "**?") || strstr(pat, "?**") || strstr(pat, "***"));
                        static const char *const acts[] = { "measure", "dont_measure", "appraise", "dont_appraise" };
                        o += (size_t) snprintf(text + o, cap - o, "%s path=%s%s\n", acts[rand_r(&seed) % 4], pat,
                                               rand_r(&seed) % 5 == 0 ? " mode=exec" : "");
                }
                IverPolicyDiags d = {};
                IverPolicy *p = NULL;
                ck_assert_int_eq(iver_policy_load_string("r.policy", text, o, &d, &p), 0);
                iver_policy_diags_done(&d);
                for (int k = 0; k < 300; k++) {
                        char path[256];
                        random_path(&seed, path, sizeof path, comps, sizeof comps / sizeof comps[0]);
                        IverFileAttr a = { .mode = (rand_r(&seed) & 1) ? 0100755 : 0100644 };
                        for (int c = 0; c < _IVER_CLASS_MAX; c++) {
                                size_t want = SIZE_MAX;
                                for (size_t i = 0; i < p->n_rules; i++) {
                                        const IverRule *r = &p->rules[i];
                                        if (iver_policy_action_class(r->action) != (IverPolicyClass) c)
                                                continue;
                                        if (policy_rule_attrs_match(r, &a) && glob_match(&r->path, (const uint8_t *) path, strlen(path))) {
                                                want = i;
                                                break;
                                        }
                                }
                                IverPolicyDecision dec;
                                int m = iver_policy_match(p, (IverPolicyClass) c, path, strlen(path), &a, &dec);
                                ck_assert_int_eq(m, want != SIZE_MAX);
                                if (m)
                                        ck_assert_msg(dec.rule == want, "%s: rule %zu, want %zu\n%s", path, dec.rule, want, text);
                                /* The skip query must never hide a path that a positive rule decides. */
                                if (m && iver_policy_action_is_positive(dec.action)) {
                                        char dir[256];
                                        strcpy(dir, path);
                                        for (char *s; (s = strrchr(dir, '/')) && s != dir; ) {
                                                *s = 0;
                                                ck_assert_msg(iver_policy_may_match_below(p, (IverPolicyClass) c, dir, strlen(dir)),
                                                              "%s decided by rule %zu but %s said skip\n%s", path, dec.rule, dir, text);
                                        }
                                        ck_assert(iver_policy_may_match_below(p, (IverPolicyClass) c, "/", 1));
                                }
                        }
                }
                iver_policy_free(p);
                free(text);
        }
}
END_TEST

int main(void) {
        Suite *s = suite_create("policy");
        TCase *tc = tcase_create("grammar");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_actions_comments_blank);
        tcase_add_test(tc, test_empty_policy);
        tcase_add_test(tc, test_first_match_wins);
        tcase_add_test(tc, test_glob_semantics);
        tcase_add_test(tc, test_quoting_and_bytes);
        tcase_add_test(tc, test_attribute_conditions);
        tcase_add_test(tc, test_options_in_decision);
        tcase_add_test(tc, test_audit_class);
        tcase_add_test(tc, test_error_messages);
        tcase_add_test(tc, test_nul_and_long_lines);
        tcase_add_test(tc, test_all_errors_reported);
        tcase_add_test(tc, test_shadow_warnings);
        tcase_add_test(tc, test_may_match_below);
        tcase_add_test(tc, test_dropin_order);
        tcase_add_test(tc, test_shipped_policies);
        tcase_add_test(tc, test_index_equals_linear_scan);
        suite_add_tcase(s, tc);

        return iver_run_suite(s);
}
