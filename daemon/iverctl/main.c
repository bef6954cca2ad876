/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl: verb dispatch. */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "iverctl.h"

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char *argv[]);
        const char *help;
} Verb;

static const Verb verbs[] = {
        { "status", verb_status, "status [--json]                      daemon state: version sources, watches, queue, TPM" },
        { "stats", verb_stats, "stats [--json|--prometheus] [--top N] the avoided-remeasurement ledger" },
        { "list", verb_list, "list [--violations] [PREFIX]         cached measurements" },
        { "log", verb_log, "log [--ascii|--binary]               the IMA-format measurement list" },
        { "explain", verb_explain, "explain PATH                         why a file is (not) measured, cookies, heuristics, list entries" },
        { "remeasure", verb_remeasure, "remeasure PATH…                      check paths now" },
        { "rescan", verb_rescan, "rescan                               walk everything the policy measures" },
        { "settle", verb_settle, "settle [--timeout S]                 wait until nothing is pending" },
        { "reload", verb_reload, "reload                               reload configuration and policy" },
        { "quote", verb_quote, "quote --nonce HEX --out DIR [--bank ALGO]  TPM quote + list for a verifier" },
        { "verify", verb_verify, "verify DIR [--nonce HEX]             verify a quote directory (OpenSSL only)" },
        { "policy", verb_policy, "policy check FILE|DIR                lint a policy" },
        { "policy", verb_policy, "policy export --keylime [--out FILE] Keylime runtime policy from the current list" },
        { "policy", verb_policy, "policy export --keylime --from-deb [--base POLICY] [--root DIR] [--algo ALGO] [--out FILE] FILE.deb…\n"
                                 "                                       Keylime runtime policy from packages' archives" },
        { "hash", verb_hash, "hash [--json] [--algo ALGO] FILE…    measure files offline" },
};

static void usage(FILE *f) {
        fprintf(f, "Usage: iverctl VERB [OPTIONS…]\n\nVerbs:\n");
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                fprintf(f, "  %s\n", verbs[i].help);
}

int main(int argc, char *argv[]) {
        if (argc < 2) {
                usage(stderr);
                return IVERCTL_EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                usage(stdout);
                return IVERCTL_EXIT_OK;
        }
        if (strcmp(argv[1], "--socket") == 0 || strncmp(argv[1], "--socket=", 9) == 0) {
                if (argv[1][8] == '=')
                        arg_socket = argv[1] + 9;
                else if (argc > 2)
                        arg_socket = argv[2], argv++, argc--;
                argv++, argc--;
                if (argc < 2) {
                        usage(stderr);
                        return IVERCTL_EXIT_USAGE;
                }
        }
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                if (strcmp(argv[1], verbs[i].name) == 0)
                        return verbs[i].run(argc - 1, argv + 1);
        fprintf(stderr, "iverctl: unknown verb '%s'\n", argv[1]);
        usage(stderr);
        return IVERCTL_EXIT_USAGE;
}
