/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl verbs that need no daemon: policy check, verify. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iver/policy.h"
#include "iver/tpm.h"
#include "iverctl.h"

int verb_policy(int argc, char *argv[]) {
        if (argc != 3 || strcmp(argv[1], "check") != 0) {
                fprintf(stderr, "iverctl policy: usage: policy check FILE|DIR\n");
                return IVERCTL_EXIT_USAGE;
        }
        IverPolicyDiags diags = {};
        int r = iver_policy_check_file(argv[2], &diags);
        for (size_t i = 0; i < diags.n_items; i++) {
                char *s = NULL;
                if (iver_policy_diag_format(&diags.items[i], &s) >= 0)
                        fprintf(stderr, "%s\n", s);
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
        if (n == 0 || n % 2 || n / 2 > max)
                return -1;
        for (size_t i = 0; i < n / 2; i++) {
                unsigned v;
                if (sscanf(hex + 2 * i, "%2x", &v) != 1)
                        return -1;
                nonce[i] = (uint8_t) v;
        }
        *ret_len = n / 2;
        return 0;
}

int verb_verify(int argc, char *argv[]) {
        const char *dir = NULL, *hex = NULL, *ak = NULL;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--nonce") == 0 && i + 1 < argc)
                        hex = argv[++i];
                else if (strcmp(argv[i], "--ak") == 0 && i + 1 < argc)
                        ak = argv[++i];
                else if (!dir)
                        dir = argv[i];
                else {
                        fprintf(stderr, "iverctl verify: unexpected argument '%s'\n", argv[i]);
                        return IVERCTL_EXIT_USAGE;
                }
        if (!dir) {
                fprintf(stderr, "iverctl verify: usage: verify DIR [--nonce HEX] [--ak PEM]\n");
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
                fprintf(stderr, "iverctl verify: FAILED: %s\n", rep.message);
                return IVERCTL_EXIT_VERIFY;
        }
        printf("Verified: signature, nonce, PCR digest; list of %zu entries, %zu replayed into the quoted PCR.\n",
               rep.list_entries, rep.matched_prefix);
        return IVERCTL_EXIT_OK;
}
