/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy matcher: glob and "**" semantics, the subtree-skip query, and
 * the indexed matcher checked against a plain first-to-last scan on random
 * policies. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iver/check.h"
#include "seed.h"
#include "iver/policy.h"
#include "policy-internal.h"
#include "policy-fixtures.h"
#include "check-run.h"
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

/* Directories only on the way to measured ones (ancestors): their own files
 * are never measured, so a watcher needs only their directories. */
START_TEST(test_may_match_child) {
        IverPolicy *p = load_ok(
                "measure path=/tmp/rsb.x/t/**\n"
                "measure path=/etc/ssh/sshd_config\n"
                "measure path=/opt/*/bin/*\n"
                "appraise path=/boot/vmlinuz*\n");
#define CHILD(dir, expect) ck_assert_msg(iver_policy_may_match_child(p, IVER_CLASS_MEASURE, dir, strlen(dir)) == (expect), \
                                         "may_match_child(%s) should be %s", dir, (expect) ? "true" : "false")
        CHILD("/", false);
        CHILD("/tmp", false);
        CHILD("/tmp/rsb.x", false);
        CHILD("/tmp/rsb.x/t", true);
        CHILD("/tmp/rsb.x/t/deep", true);
        CHILD("/tmp/other", false);
        CHILD("/etc", false);
        CHILD("/etc/ssh", true);
        CHILD("/etc/ssh/", true);
        CHILD("/opt", true);            /* conservative: '*' is a wildcard right after /opt/ */
        CHILD("/opt/x/bin", true);
        CHILD("/boot", false);          /* an appraise rule: another class */
        ck_assert(iver_policy_may_match_child(p, IVER_CLASS_APPRAISE, "/boot", 5));
#undef CHILD
        iver_policy_free(p);
        p = load_ok("measure func=exec\n");
        ck_assert(iver_policy_may_match_child(p, IVER_CLASS_MEASURE, "/anything", 9));
        iver_policy_free(p);
}
END_TEST

/* The walk's per-name query: a file no positive rule's pattern can match
 * is not looked at; a directory whose files all may match needs no query. */
START_TEST(test_may_match_path) {
        IverPolicy *p = load_ok(
                "dont_measure path=/usr/lib/skip/**\n"
                "measure path=/usr/lib/**.so*\n"
                "measure path=/usr/bin/** fowner=0\n"
                "appraise path=/boot/vmlinuz*\n");
#define PATHQ(path, expect) ck_assert_msg(iver_policy_may_match_path(p, IVER_CLASS_MEASURE, path, strlen(path)) == (expect), \
                                         "may_match_path(%s) should be %s", path, (expect) ? "true" : "false")
#define ALL(dir, expect) ck_assert_msg(iver_policy_may_match_children(p, IVER_CLASS_MEASURE, dir, strlen(dir)) == (expect), \
                                       "may_match_children(%s) should be %s", dir, (expect) ? "true" : "false")
        PATHQ("/usr/lib/libc.so.6", true);
        PATHQ("/usr/lib/x/y/libz.so", true);
        PATHQ("/usr/lib/python3/os.py", false);
        PATHQ("/usr/lib/skip/a.so", true);  /* conservative: dont_ rules are not looked at */
        PATHQ("/usr/bin/ls", true);         /* whatever its owner */
        PATHQ("/usr/share/doc/x", false);
        PATHQ("/boot/vmlinuz-6.1", false);  /* another class */
        ck_assert(iver_policy_may_match_path(p, IVER_CLASS_APPRAISE, "/boot/vmlinuz-6.1", 17));
        ALL("/usr/lib", false);
        ALL("/usr/bin", true);
        ALL("/usr/bin/sub", true);
        ALL("/usr", false);
#undef PATHQ
#undef ALL
        iver_policy_free(p);
        p = load_ok("measure func=exec\n");
        ck_assert(iver_policy_may_match_children(p, IVER_CLASS_MEASURE, "/anything", 9));
        ck_assert(iver_policy_may_match_path(p, IVER_CLASS_MEASURE, "/anything/x", 11));
        iver_policy_free(p);
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
        unsigned seed = (unsigned) test_seed("index = linear scan", 7);
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
                                        /* nor the ancestor query a file of its directory */
                                        strcpy(dir, path);
                                        char *s = strrchr(dir, '/');
                                        s == dir ? (void) (dir[1] = 0) : (void) (*s = 0);
                                        ck_assert_msg(iver_policy_may_match_child(p, (IverPolicyClass) c, dir, strlen(dir)),
                                                      "%s decided by rule %zu but %s said no file of it\n%s", path, dec.rule, dir, text);
                                        /* nor the walk's per-name query */
                                        ck_assert_msg(iver_policy_may_match_path(p, (IverPolicyClass) c, path, strlen(path)),
                                                      "%s decided by rule %zu but may_match_path said no\n%s", path, dec.rule, text);
                                }
                                /* a directory said to have every file wanted: this one is */
                                char dir[256];
                                strcpy(dir, path);
                                char *sl = strrchr(dir, '/');
                                sl == dir ? (void) (dir[1] = 0) : (void) (*sl = 0);
                                if (iver_policy_may_match_children(p, (IverPolicyClass) c, dir, strlen(dir)))
                                        ck_assert_msg(iver_policy_may_match_path(p, (IverPolicyClass) c, path, strlen(path)),
                                                      "%s: every file of %s may match, but not by path\n%s", path, dir, text);
                        }
                }
                iver_policy_free(p);
                free(text);
        }
}
END_TEST

/* The one decision (iver_check_decide): pseudo filesystems refused whatever
 * the policy says, the appraise rule's hash= before the measure rule's before
 * the default, ima-sig and appraise bind the signature, audit only with measure. */
START_TEST(test_decide) {
        static const char text[] =
                "dont_measure path=/skip/**\n"
                "measure path=/m/** hash=sha384 pcr=11\n"
                "measure path=/sig/** template=ima-sig\n"
                "appraise path=/m/a hash=sha512\n"
                "audit path=/m/**\n";
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;
        ck_assert_int_eq(iver_policy_load_string("d.policy", text, strlen(text), &d, &p), 0);
        iver_policy_diags_done(&d);
        IverFileAttr a = { .mode = 0100644, .size = 1, .subject_uid = IVER_UID_UNKNOWN };
        IverDecision dec;

        iver_check_decide(p, "/m/b", &a, IVER_HASH_SHA256, &dec);
        ck_assert(dec.measure && !dec.appraise && dec.audit && !dec.pseudo);
        ck_assert_int_eq(dec.algo, IVER_HASH_SHA384);
        ck_assert_int_eq(dec.d.pcr, 11);
        ck_assert_int_eq(dec.flags, 0);

        iver_check_decide(p, "/m/a", &a, IVER_HASH_SHA256, &dec);
        ck_assert(dec.measure && dec.appraise);
        ck_assert_int_eq(dec.algo, IVER_HASH_SHA512);
        ck_assert_int_eq(dec.flags, IVER_CHECK_SIGNATURE_BOUND);

        iver_check_decide(p, "/sig/x", &a, IVER_HASH_SHA256, &dec);
        ck_assert(dec.measure && !dec.audit);
        ck_assert_int_eq(dec.algo, IVER_HASH_SHA256);
        ck_assert_int_eq(dec.flags, IVER_CHECK_SIGNATURE_BOUND);

        iver_check_decide(p, "/skip/x", &a, IVER_HASH_SHA256, &dec);
        ck_assert(!dec.measure && !dec.appraise && !dec.audit && dec.d.matched);
        ck_assert_int_eq(dec.d.action, IVER_ACTION_DONT_MEASURE);

        a.fs_magic = 0x9fa0; /* proc */
        iver_check_decide(p, "/m/b", &a, IVER_HASH_SHA256, &dec);
        ck_assert(dec.pseudo && !dec.measure && !dec.appraise && !dec.audit);
        iver_policy_free(p);
}
END_TEST

int main(void) {
        Suite *s = suite_create("policy-match");
        TCase *tc = tcase_create("match");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_glob_semantics);
        tcase_add_test(tc, test_may_match_below);
        tcase_add_test(tc, test_may_match_child);
        tcase_add_test(tc, test_may_match_path);
        tcase_add_test(tc, test_index_equals_linear_scan);
        tcase_add_test(tc, test_decide);
        suite_add_tcase(s, tc);

        return iver_run_suite(s);
}
