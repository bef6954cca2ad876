/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loading a policy: every error class with its exact FILE:LINE:COLUMN
 * message, NUL bytes and long lines, all errors reported with the policy
 * untouched, shadowed-rule warnings, drop-in order and all-or-nothing
 * loading from files, and the policies shipped in policy/. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seed.h"
#include "iver/policy.h"
#include "policy-internal.h"
#include "policy-fixtures.h"
#include "check-run.h"
static const struct {
        const char *text;
        const char *error;
} error_cases[] = {
        { "mesure path=/x\n",
          "t.policy:1:1: unknown action 'mesure', expected measure, dont_measure, appraise, dont_appraise or audit" },
        { "path=/x\n",
          "t.policy:1:1: unknown action 'path=/x', expected measure, dont_measure, appraise, dont_appraise or audit" },
        { "# ok\nmeasure path=/x foo=1\n",
          "t.policy:2:17: unknown condition or option 'foo', expected path=, fstype=, uid=, fowner=, mode=, size<=, size>=, func=, mask=, pcr=, hash= or template=" },
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
        { "measure func=MMAP_CHECK\n",
          "t.policy:1:14: unsupported func 'MMAP_CHECK', expected FILE_CHECK (open) or BPRM_CHECK (exec)" },
        { "measure mask=MAY_SEE\n",
          "t.policy:1:14: invalid mask 'MAY_SEE', expected MAY_READ, MAY_WRITE, MAY_APPEND or MAY_EXEC, with ^ for any of the bits" },
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
        unsigned seed = (unsigned) test_seed("policy garbage", 42);
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
        /* __FILE__ is tests/unit/test-policy-load.c in the source tree. */
        snprintf(buf, size, "%s", __FILE__);
        char *s = strstr(buf, "tests/unit/test-policy-load.c");
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

int main(void) {
        Suite *s = suite_create("policy-load");
        TCase *tc = tcase_create("load");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_error_messages);
        tcase_add_test(tc, test_nul_and_long_lines);
        tcase_add_test(tc, test_all_errors_reported);
        tcase_add_test(tc, test_shadow_warnings);
        tcase_add_test(tc, test_dropin_order);
        tcase_add_test(tc, test_shipped_policies);
        suite_add_tcase(s, tc);

        return iver_run_suite(s);
}
