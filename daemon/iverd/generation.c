/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy generation: policy, keys and hash algorithm as one refcounted
 * object (generation.h). */
#include <errno.h>
#include <stdlib.h>

#include "generation.h"

int generation_new(uint64_t number, IverPolicy *policy, IverKeyring *keyring, IverHashAlgo hash, char *source,
                   Generation **ret) {
        Generation *g = calloc(1, sizeof(*g));
        if (!g) {
                iver_policy_free(policy);
                iver_keyring_free(keyring);
                free(source);
                return -ENOMEM;
        }
        *g = (Generation) { .refs = 1, .number = number, .policy = policy, .keyring = keyring, .hash = hash,
                            .source = source, .by_path = !iver_policy_uses_file_attrs(policy) };
        *ret = g;
        return 0;
}

Generation *generation_ref(Generation *g) {
        if (g)
                g->refs++;
        return g;
}

Generation *generation_unref(Generation *g) {
        if (!g || --g->refs > 0)
                return NULL;
        iver_policy_free(g->policy);
        iver_keyring_free(g->keyring);
        free(g->source);
        free(g);
        return NULL;
}
