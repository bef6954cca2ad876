/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "workers.h"

/* After the hash of a job measured with read_ima_xattr, on its worker: when
 * j->appraise is set, verify the signature in security.ima against the keys
 * of the job's generation (j->gen->keyring) and the digest (j->appraise_r,
 * j->appraisal). The xattr is the one the measurement read from the fd it hashed, between the hash and the
 * closing statx, so the verdict belongs to the version that was hashed. A
 * signature over another algorithm re-hashes with it (j->m, j->opt
 * replaced). Whether appraised or not, a signature in the xattr moves to
 * j->sig for an ima-sig entry; j->m owns no xattr afterwards. */
void appraisal_run(Job *j);
