/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "workers.h"

/* Appraise a hashed file on its worker: read security.ima, verify the
 * signature against the job's keyring, and make sure the verdict belongs to
 * the version that was hashed (the xattr is read after the hash; a change in
 * between moves ctime, and then the verdict is dropped and the file
 * re-checked). A signature over another algorithm re-hashes with it. */
void appraisal_run(Job *j);
