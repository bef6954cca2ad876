/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy matcher benchmark: median nanoseconds per iver_policy_match() with
 * a 1,000-rule policy over a set of typical paths, next to a plain
 * first-to-last scan of the same compiled rules for comparison.
 *
 *   bench-policy_match [RULES]      (default 1000; no linear scan above 5000)
 *
 * Prints figures; it is not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iver/policy.h"
#include "policy-internal.h"

static const char *const paths[] = {
        "/usr/bin/ls",
        "/usr/bin/python3.11",
        "/usr/sbin/sshd",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libssl.so.3",
        "/usr/lib/systemd/systemd-journald",
        "/usr/lib/modules/6.18.0/kernel/fs/ext4/ext4.ko.xz",
        "/usr/share/doc/bash/README",
        "/usr/share/zoneinfo/Europe/Paris",
        "/etc/ssh/sshd_config",
        "/etc/app418/app418.conf",
        "/etc/passwd",
        "/opt/vendor042/bin/tool",
        "/opt/vendor142/lib/plugins/libplug.so.1",
        "/var/lib/app77/db/data.sqlite",
        "/var/log/journal/0123456789abcdef/system.journal",
        "/home/alice/.cache/mozilla/firefox/cache2/entries/0A1B2C3D",
        "/srv/site17/htdocs/wp/index.php",
        "/tmp/iverd-demo/tree/a/b/c.txt",
        "/boot/vmlinuz-6.18.0",
};

static char *make_policy(unsigned n_rules, size_t *ret_len) {
        size_t cap = (size_t) n_rules * 128 + 4096, o = 0;
        char *t = malloc(cap);
        unsigned n = 0;
#define RULE(...) do { if (n < n_rules) { o += (size_t) snprintf(t + o, cap - o, __VA_ARGS__); n++; } } while (0)
        /* The shape of a real policy: exclusions first, attribute rules, then
         * many per-package rules (vendors, apps, sites), then the broad ones. */
        static const char *const excl[] = { "/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/var/log",
                                            "/var/cache", "/var/spool", "/home", "/root", "/mnt", "/media",
                                            "/usr/share/doc", "/usr/share/man", "/usr/share/locale", "/usr/lib/debug" };
        for (size_t i = 0; i < sizeof excl / sizeof excl[0]; i++)
                RULE("dont_measure path=%s/**\n", excl[i]);
        static const char *const fs[] = { "proc", "sysfs", "devpts", "securityfs", "debugfs", "tracefs", "cgroup2", "efivarfs" };
        for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
                RULE("dont_measure fstype=%s\n", fs[i]);
        RULE("dont_measure size>=4G\n");
        for (unsigned i = 0; n < n_rules && i < 1000; i++) {
                switch (i % 6) {
                case 0: RULE("measure path=/opt/vendor%03u/bin/* hash=sha384\n", i / 6); break;
                case 1: RULE("measure path=/opt/vendor%03u/lib/**.so*\n", i / 6); break;
                case 2: RULE("measure path=/etc/app%03u/app%03u.conf pcr=14\n", i / 2, i / 2); break;
                case 3: RULE("dont_measure path=/var/lib/app%u/**\n", i / 6); break;
                case 4: RULE("measure path=/usr/lib/app%03u/** mode=exec\n", i / 6); break;
                case 5: RULE("measure path=/srv/site%u/**/*.php\n", i / 6); break;
                }
                if (n + 16 >= n_rules)
                        break;
        }
        RULE("measure path=/usr/bin/**\n");
        RULE("measure path=/usr/sbin/**\n");
        RULE("measure path=/usr/lib/**.so*\n");
        RULE("measure path=/usr/lib/** mode=exec\n");
        RULE("measure path=/usr/lib/modules/**\n");
        RULE("measure path=/boot/**\n");
        RULE("measure path=/etc/**\n");
        RULE("measure path=/tmp/iverd-demo/tree/**\n");
        while (n < n_rules)
                RULE("measure path=/opt/extra%u/*\n", n);
#undef RULE
        *ret_len = o;
        return t;
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* The reference: every rule in order until one matches. */
static int linear_match(const IverPolicy *p, const char *path, size_t len, const IverFileAttr *a) {
        for (size_t i = 0; i < p->n_rules; i++) {
                const IverRule *r = &p->rules[i];
                if (iver_policy_action_class(r->action) != IVER_CLASS_MEASURE || !policy_rule_attrs_match(r, a))
                        continue;
                if ((r->set & (1u << COND_PATH)) && !glob_match(&r->path, (const uint8_t *) path, len))
                        continue;
                return (int) i;
        }
        return -1;
}

#define N_PATHS (sizeof paths / sizeof paths[0])
#define BATCH 2000
#define SAMPLES 101

static volatile int sink;

static double median_ns(const IverPolicy *p, size_t k, bool linear, const IverFileAttr *a) {
        double samples[SAMPLES];
        size_t len = strlen(paths[k]);
        for (int s = 0; s < SAMPLES; s++) {
                uint64_t t0 = now_ns();
                for (int i = 0; i < BATCH; i++) {
                        if (linear)
                                sink = linear_match(p, paths[k], len, a);
                        else {
                                IverPolicyDecision d;
                                sink = iver_policy_match(p, IVER_CLASS_MEASURE, paths[k], len, a, &d);
                        }
                }
                samples[s] = (double) (now_ns() - t0) / BATCH;
        }
        qsort(samples, SAMPLES, sizeof(double), cmp_double);
        return samples[SAMPLES / 2];
}

int main(int argc, char **argv) {
        unsigned n_rules = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : 1000;
        size_t len;
        char *text = make_policy(n_rules, &len);
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;

        uint64_t t0 = now_ns();
        int r = iver_policy_load_string("bench.policy", text, len, &d, &p);
        uint64_t t_load = now_ns() - t0;
        if (r < 0) {
                char *m = NULL;
                if (d.n_items > 0 && iver_policy_diag_format(&d.items[0], &m) >= 0)
                        fprintf(stderr, "%s\n", m);
                return EXIT_FAILURE;
        }
        IverFileAttr a = { .fs_magic = 0xef53, .owner = 0, .subject_uid = IVER_UID_UNKNOWN, .mode = 0100755, .size = 123456 };

        printf("policy: %zu rules, parsed and compiled in %.2f ms\n", iver_policy_n_rules(p), (double) t_load / 1e6);
        printf("%-60s %8s %10s %10s\n", "path", "rule", "indexed", "linear");
        double all[N_PATHS], all_lin[N_PATHS];
        for (size_t k = 0; k < N_PATHS; k++) {
                IverPolicyDecision dec;
                iver_policy_match(p, IVER_CLASS_MEASURE, paths[k], strlen(paths[k]), &a, &dec);
                int want = linear_match(p, paths[k], strlen(paths[k]), &a);
                if ((dec.matched ? (int) dec.rule : -1) != want) {
                        fprintf(stderr, "mismatch on %s: index %d, linear %d\n", paths[k], dec.matched ? (int) dec.rule : -1, want);
                        return EXIT_FAILURE;
                }
                all[k] = median_ns(p, k, false, &a);
                /* The linear scan is the slow reference: skip it for huge policies. */
                all_lin[k] = iver_policy_n_rules(p) <= 5000 ? median_ns(p, k, true, &a) : 0;
                char rule[16];
                snprintf(rule, sizeof rule, dec.matched ? "%u" : "-", dec.line);
                printf("%-60s %8s %8.1fns %8.1fns\n", paths[k], rule, all[k], all_lin[k]);
        }
        qsort(all, N_PATHS, sizeof(double), cmp_double);
        qsort(all_lin, N_PATHS, sizeof(double), cmp_double);
        printf("median ns/match over %zu paths, %zu rules: indexed %.1f ns (max %.1f), linear scan %.1f ns\n",
               N_PATHS, iver_policy_n_rules(p), (all[N_PATHS / 2 - 1] + all[N_PATHS / 2]) / 2, all[N_PATHS - 1],
               (all_lin[N_PATHS / 2 - 1] + all_lin[N_PATHS / 2]) / 2);
        iver_policy_free(p);
        iver_policy_diags_done(&d);
        free(text);
        return EXIT_SUCCESS;
}
