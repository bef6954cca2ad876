/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the policy parser (iver_policy_load_string).
 *
 * Any input: loading either succeeds or fails with diagnostics, never
 * crashes, leaks or reads out of bounds. When it loads, every rule's
 * canonical form must parse back to a rule with the same canonical form
 * (iver_policy_rule_format promises that), and matching must work on a few
 * paths taken from the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iver/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_diags(const IverPolicyDiags *d) {
        for (size_t i = 0; i < d->n_items; i++) {
                char *s = NULL;
                if (iver_policy_diag_format(&d->items[i], &s) == 0)
                        free(s);
        }
}

static void roundtrip(const IverPolicy *p, size_t i) {
        char *text = NULL;
        if (iver_policy_rule_format(p, i, &text) < 0)
                return; /* -ENOMEM */
        IverPolicyDiags d = {};
        IverPolicy *q = NULL;
        int r = iver_policy_load_string("roundtrip", text, strlen(text), &d, &q);
        if (r < 0 || !q || iver_policy_n_rules(q) != 1)
                abort(); /* canonical form does not parse back */
        char *text2 = NULL;
        if (iver_policy_rule_format(q, 0, &text2) == 0) {
                if (strcmp(text, text2) != 0)
                        abort(); /* canonical form is not a fixed point */
                free(text2);
        }
        if (iver_policy_rule_action(q, 0) != iver_policy_rule_action(p, i))
                abort();
        iver_policy_free(q);
        iver_policy_diags_done(&d);
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        IverPolicyDiags d = {};
        IverPolicy *p = NULL;
        int r = iver_policy_load_string("fuzz.policy", data, size, &d, &p);
        check_diags(&d);
        iver_policy_diags_done(&d);
        if (r < 0)
                return 0;

        size_t n = iver_policy_n_rules(p);
        for (size_t i = 0; i < n && i < 64; i++) {
                const char *file;
                unsigned line;
                iver_policy_rule_source(p, i, &file, &line);
                roundtrip(p, i);
        }

        /* match a few paths: fixed ones, and every line of the input that is
         * an absolute path (so the fuzzer can aim paths at its own patterns) */
        static const char *const fixed[] = { "/", "/usr/bin/ls", "/etc/passwd", "/tmp/a/b/c", "/usr/lib/libz.so.1" };
        IverFileAttr attr = { .fs_magic = 0xEF53, .owner = 0, .subject_uid = 1000, .mode = 0100755, .size = 4096 };
        IverPolicyDecision dec;
        for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
                for (int c = 0; c < _IVER_CLASS_MAX; c++) {
                        iver_policy_match(p, (IverPolicyClass) c, fixed[k], strlen(fixed[k]), &attr, &dec);
                        iver_policy_match(p, (IverPolicyClass) c, fixed[k], strlen(fixed[k]), NULL, &dec);
                        (void) iver_policy_may_match_below(p, (IverPolicyClass) c, fixed[k], strlen(fixed[k]));
                }
        const uint8_t *s = data, *end = data + size;
        unsigned paths = 0;
        while (s < end && paths < 16) {
                const uint8_t *nl = memchr(s, '\n', (size_t) (end - s));
                size_t len = (size_t) ((nl ? nl : end) - s);
                if (len > 0 && s[0] == '/' && !memchr(s, 0, len)) {
                        for (int c = 0; c < _IVER_CLASS_MAX; c++) {
                                iver_policy_match(p, (IverPolicyClass) c, (const char *) s, len, &attr, &dec);
                                (void) iver_policy_may_match_below(p, (IverPolicyClass) c, (const char *) s, len);
                        }
                        paths++;
                }
                s += len + 1;
        }
        iver_policy_free(p);
        return 0;
}
