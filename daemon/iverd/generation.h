/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdint.h>

#include "iver/appraise.h"
#include "iver/digest.h"
#include "iver/policy.h"

/* One loaded policy with everything decided together with it: the
 * appraisal keys and the hash algorithm (Hash=). The manager holds the
 * current one (m->gen); each hashing job holds the one it was decided under
 * from dispatch to finish, so a reload never changes the rule, the keys or
 * the algorithm of a job in flight. Immutable once made; the count is
 * touched on the loop thread only (workers read j->gen->keyring). */
typedef struct Generation {
        unsigned refs;
        uint64_t number;            /* 1, 2, …: one per successful load or reload */
        IverPolicy *policy;
        IverKeyring *keyring;       /* appraisal keys */
        IverHashAlgo hash;          /* Hash= at load */
        char *source;               /* what was loaded (status "policy") */
        bool by_path;               /* no rule looks at a file's attributes (iver_policy_uses_file_attrs):
                                     * a scan decides a file by its path and filesystem alone */
} Generation;

/* Takes policy, keyring and source (freed on failure too). */
int generation_new(uint64_t number, IverPolicy *policy, IverKeyring *keyring, IverHashAlgo hash, char *source,
                   Generation **ret);
Generation *generation_ref(Generation *g);
Generation *generation_unref(Generation *g); /* frees policy and keyring at 0; returns NULL */
