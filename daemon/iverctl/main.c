/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl: verb dispatch. */
#include <stdio.h>
#include <string.h>

#include "iverctl.h"

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char *argv[]);
        const char *help;
} Verb;

static const Verb verbs[] = {
        { "hash", verb_hash, "hash [--json] [--algo ALGO] FILE…   measure files offline" },
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
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                if (strcmp(argv[1], verbs[i].name) == 0)
                        return verbs[i].run(argc - 1, argv + 1);
        fprintf(stderr, "iverctl: unknown verb '%s'\n", argv[1]);
        usage(stderr);
        return IVERCTL_EXIT_USAGE;
}
