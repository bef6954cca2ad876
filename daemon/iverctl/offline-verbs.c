/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl verbs that need no daemon: policy check, verify. */
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "iver/imalog.h"
#include "iver/digest.h"
#include "iver/policy.h"
#include "iver/tpm.h"
#include "client.h"
#include "iverctl.h"
#include "output.h"

int verb_policy(int argc, char *argv[]) {
        if (argc >= 2 && strcmp(argv[1], "export") == 0)
                return verb_policy_export(argc - 1, argv + 1);
        if (argc != 3 || strcmp(argv[1], "check") != 0) {
                fprintf(stderr, "iverctl policy: usage: policy check FILE|DIR\n"
                                "                     policy export --keylime [--out FILE]\n"
                                "                     policy export --keylime --from-deb [--base POLICY.json] [--root DIR]\n"
                                "                                   [--algo ALGO] [--out FILE] FILE.deb...\n");
                return IVERCTL_EXIT_USAGE;
        }
        IverPolicyDiags diags = {};
        int r = iver_policy_check_file(argv[2], &diags);
        for (size_t i = 0; i < diags.n_items; i++) {
                char *s = NULL;
                if (iver_policy_diag_format(&diags.items[i], &s) >= 0) {
                        print_text(stderr, s);
                        fputc('\n', stderr);
                }
                free(s);
        }
        if (diags.n_dropped)
                fprintf(stderr, "… and %zu more\n", diags.n_dropped);
        iver_policy_diags_done(&diags);
        if (r < 0) {
                fprintf(stderr, "iverctl policy check: %s: %s\n", argv[2], strerror(-r));
                return IVERCTL_EXIT_FAILURE;
        }
        if (r > 0)
                return IVERCTL_EXIT_FAILURE;
        printf("%s: OK\n", argv[2]);
        return IVERCTL_EXIT_OK;
}

static int read_nonce_file(const char *dir, uint8_t *nonce, size_t max, size_t *ret_len, const char *hex) {
        char buf[256] = "", path[4096];
        if (!hex) {
                snprintf(path, sizeof(path), "%s/nonce", dir);
                FILE *f = fopen(path, "re");
                if (!f)
                        return -1;
                if (!fgets(buf, sizeof(buf), f))
                        buf[0] = 0;
                fclose(f);
                buf[strcspn(buf, "\n")] = 0;
                hex = buf;
        }
        size_t n = strlen(hex);
        if (n == 0 || iver_hex_decode(hex, n, nonce, max, ret_len) < 0)
                return -1;
        return 0;
}

static void print_hex(FILE *f, const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%02x", p[i]);
}

static void free_excludes(regex_t *ex, size_t n_ex) {
        for (size_t j = 0; j < n_ex; j++)
                regfree(&ex[j]);
        free(ex);
}

/* The policy's "excludes" regexes, compiled; -1 after printing why not. */
static int compile_excludes(json_object *pol, const char *policy_path, regex_t **ret_ex, size_t *ret_n_ex) {
        json_object *excl = NULL;
        size_t n_ex = 0;
        regex_t *ex = NULL;
        if (json_object_object_get_ex(pol, "excludes", &excl) && json_object_is_type(excl, json_type_array)) {
                ex = calloc(json_object_array_length(excl) + 1, sizeof(regex_t));
                if (!ex) {
                        (void) oom();
                        return -1;
                }
                for (size_t i = 0; i < json_object_array_length(excl); i++) {
                        const char *re = json_object_get_string(json_object_array_get_idx(excl, i));
                        if (!re || regcomp(&ex[n_ex], re, REG_EXTENDED) != 0) {
                                fprintf(stderr, "iverctl verify: %s: bad exclude regex '%s'\n", policy_path,
                                        re ? re : "(null)");
                                free_excludes(ex, n_ex);
                                return -1;
                        }
                        n_ex++;
                }
        }
        *ret_ex = ex;
        *ret_n_ex = n_ex;
        return 0;
}

/* An exclude matches at the start of the path, like Python's re.match. */
static bool is_excluded(const regex_t *ex, size_t n_ex, const char *path) {
        bool excluded = false;
        for (size_t j = 0; j < n_ex && !excluded; j++) {
                regmatch_t m;
                excluded = regexec(&ex[j], path, 1, &m, 0) == 0 && m.rm_so == 0;
        }
        return excluded;
}

/* True if the policy lists the entry's digest for its path; *ret_known: the policy has
 * a digest list for the path (*ret_allowed). */
static bool entry_allowed(json_object *digests, const IverImaEntry *e, json_object **ret_allowed, bool *ret_known) {
        char h[2 * 64 + 1] = "";
        for (size_t k = 0; k < e->digest_len && k < 64; k++)
                snprintf(h + 2 * k, 3, "%02x", e->digest[k]);
        json_object *allowed = NULL;
        bool ok = false, known = json_object_object_get_ex(digests, e->path, &allowed) &&
                                 json_object_is_type(allowed, json_type_array);
        for (size_t k = 0; known && k < json_object_array_length(allowed) && !ok; k++) {
                const char *a = json_object_get_string(json_object_array_get_idx(allowed, k));
                ok = a && strcasecmp(a, h) == 0;
        }
        *ret_allowed = allowed;
        *ret_known = known;
        return ok;
}

static void print_disallowed(size_t i, const IverImaEntry *e, bool known, json_object *allowed) {
        printf("DISALLOWED entry %zu: ", i);
        print_path(stdout, e->path);
        printf(" %s:", iver_hash_algo_to_string(e->algo));
        print_hex(stdout, e->digest, e->digest_len);
        if (e->violation)
                printf(" (violation)");
        if (!known)
                printf(" — path not in policy\n");
        else {
                printf(" — policy allows");
                for (size_t k = 0; k < json_object_array_length(allowed); k++)
                        printf(" %s", json_object_get_string(json_object_array_get_idx(allowed, k)));
                putchar('\n');
        }
}

/* --policy: every entry of DIR/measurements.bin must have its file digest in
 * the Keylime runtime policy's "digests" list for its path, as Keylime's
 * verifier requires of ima-ng / ima-sig entries (hex digest, no "algo:"
 * prefix; paths matching an "excludes" regex, anchored at the start like
 * Python's re.match, are skipped). The regexes are POSIX extended ones here:
 * the common subset of Python's syntax behaves the same. Violations carry a
 * zero digest and so are disallowed unless the policy lists it. Every
 * disallowed entry is reported on stdout. Returns the number of disallowed
 * entries, or -1 after printing why the check could not be made. */
static long check_runtime_policy(const char *dir, const char *policy_path) {
        json_object *pol = json_object_from_file(policy_path), *digests;
        if (!pol || !json_object_is_type(pol, json_type_object) ||
            !json_object_object_get_ex(pol, "digests", &digests) || !json_object_is_type(digests, json_type_object)) {
                fprintf(stderr, "iverctl verify: %s: not a runtime policy (a JSON object with a \"digests\" object)\n",
                        policy_path);
                json_object_put(pol);
                return -1;
        }
        size_t n_ex = 0;
        regex_t *ex = NULL;
        if (compile_excludes(pol, policy_path, &ex, &n_ex) < 0) {
                json_object_put(pol);
                return -1;
        }
        char path[4096];
        snprintf(path, sizeof(path), "%s/measurements.bin", dir);
        IverImaLog *l = NULL;
        int r = iver_imalog_load(path, &l);
        if (r < 0) {
                fprintf(stderr, "iverctl verify: %s: %s\n", path, strerror(-r));
                free_excludes(ex, n_ex);
                json_object_put(pol);
                return -1;
        }
        long bad = 0;
        size_t n_excluded = 0, n = iver_imalog_size(l);
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *e = iver_imalog_get(l, i);
                if (is_excluded(ex, n_ex, e->path)) {
                        n_excluded++;
                        continue;
                }
                json_object *allowed;
                bool known;
                if (entry_allowed(digests, e, &allowed, &known))
                        continue;
                bad++;
                print_disallowed(i, e, known, allowed);
        }
        printf("Policy %s: %zu list entries, %zu excluded, %ld disallowed.\n", policy_path, n, n_excluded, bad);
        iver_imalog_free(l);
        free_excludes(ex, n_ex);
        json_object_put(pol);
        return bad;
}

/* What the replay accepts but a reader must see: the restart gaps (one line
 * each, with their span) and how many other entries are violations (each
 * all-0xFF in the PCR: the list says something there was not measured). */
/* Banks that replayed in the kernel's padded SHA-1 form: said, with what
 * that means for a verifier (SHA-1's strength only in those banks). */
static void print_padded(unsigned banks) {
        if (!banks)
                return;
        printf("PADDED bank%s", (banks & (banks - 1)) ? "s" : "");
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b))
                        printf(" %s", iver_hash_algo_to_string((IverHashAlgo) b));
        printf(": the kernel's padded SHA-1 form (it had no such hash when its IMA started); "
               "SHA-1's strength only, verify another bank\n");
}

static void print_violations(const char *dir) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/measurements.bin", dir);
        IverImaLog *l = NULL;
        if (iver_imalog_load(path, &l) < 0)
                return;         /* the verification above said why */
        size_t other = 0, n = iver_imalog_size(l);
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *e = iver_imalog_get(l, i);
                int64_t start, end;
                if (!e->violation)
                        continue;
                if (iver_imalog_gap_parse(e->path, e->path_len, &start, &end) <= 0) {
                        other++;
                        continue;
                }
                if (start < 0)
                        printf("GAP entry %zu: %s: iverd was not watching for an unknown time before %lld; what ran then "
                               "is not in the list\n", i, e->path, (long long) end);
                else
                        printf("GAP entry %zu: %s: iverd was not watching for %lld s (%lld to %lld); what ran then is "
                               "not in the list\n", i, e->path, (long long) (end - start), (long long) start, (long long) end);
        }
        if (other)
                printf("VIOLATIONS: %zu other list entr%s (each extended as all-0xFF: not measured as it ran)\n", other,
                       other == 1 ? "y is a violation" : "ies are violations");
        iver_imalog_free(l);
}

int verb_verify(int argc, char *argv[]) {
        const char *dir = NULL, *hex = NULL, *ak = NULL, *policy = NULL;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--nonce") == 0 && i + 1 < argc)
                        hex = argv[++i];
                else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
                        policy = argv[++i];
                else if (strcmp(argv[i], "--ak") == 0 && i + 1 < argc)
                        ak = argv[++i];
                else if (!dir)
                        dir = argv[i];
                else {
                        fprintf(stderr, "iverctl verify: unexpected argument '%s'\n", argv[i]);
                        return IVERCTL_EXIT_USAGE;
                }
        if (!dir) {
                fprintf(stderr, "iverctl verify: usage: verify DIR [--nonce HEX] [--ak PEM] [--policy RUNTIME-POLICY.json]\n");
                return IVERCTL_EXIT_USAGE;
        }
        uint8_t nonce[64];
        size_t nonce_len;
        if (read_nonce_file(dir, nonce, sizeof(nonce), &nonce_len, hex) < 0) {
                fprintf(stderr, "iverctl verify: no valid nonce (give --nonce HEX or DIR/nonce)\n");
                return IVERCTL_EXIT_USAGE;
        }
        IverQuoteReport rep;
        int r = iver_quote_verify_dir(dir, ak, nonce, nonce_len, &rep);
        if (r < 0) {
                fprintf(stderr, "iverctl verify: %s: %s\n", dir, strerror(-r));
                return IVERCTL_EXIT_VERIFY;
        }
        if (rep.failed) {
                fputs("iverctl verify: FAILED: ", stderr);
                print_text(stderr, rep.message);
                fputc('\n', stderr);
        } else {
                printf("Verified: signature, nonce, PCR digest; list of %zu entries, %zu replayed into the quoted PCR%s",
                       rep.list_entries, rep.matched_prefix, __builtin_popcount(rep.pcr_mask) == 1 ? "" : "s");
                for (unsigned p = 0, first = 1; p < 32; p++)
                        if (rep.pcr_mask & (1u << p)) {
                                printf("%s%u", first ? " " : ", ", p);
                                first = 0;
                        }
                printf(".\n");
                print_padded(rep.padded_banks);
        }
        print_violations(dir);
        if (policy) {
                long bad = check_runtime_policy(dir, policy);
                if (bad < 0)
                        return IVERCTL_EXIT_VERIFY;
                if (bad > 0) {
                        fflush(stdout);
                        fprintf(stderr, "iverctl verify: FAILED: %ld list entr%s not allowed by %s\n", bad,
                                bad == 1 ? "y" : "ies", policy);
                        return IVERCTL_EXIT_VERIFY;
                }
        }
        return rep.failed ? IVERCTL_EXIT_VERIFY : IVERCTL_EXIT_OK;
}
