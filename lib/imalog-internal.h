/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* What the binary (imalog.c) and ASCII (imalog-ascii.c) codecs share. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iver/imalog.h"

/* The legacy "ima" template: the name is hashed zero-padded to this size
 * (IMA_EVENT_NAME_LEN_MAX + 1), and no name may be longer than 255 bytes. */
#define IMA_NAME_HASHED 256
#define IMA_DIGEST_SIZE 20

/* Whether the template has a third field (ima-sig's sig, ima-buf's buf). */
bool iver_imalog_has_extra(IverImaTemplate t);
bool iver_imalog_all_zero(const uint8_t *p, size_t n);
/* A new entry from its fields (template data built and hashed; violation:
 * a zero template digest). IVER_IMA_NAME_* flags. */
int iver_imalog_entry_build(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo, const uint8_t *digest,
                       size_t digest_len, const char *path, size_t path_len, const uint8_t *sig, size_t sig_len,
                       unsigned flags, bool violation, IverImaEntry **ret);
/* A zero template digest is a violation, accepted only with a zero file
 * digest; otherwise tdigest must be the entry's template digest. */
int iver_imalog_check_template_digest(IverImaEntry *e, const uint8_t *tdigest);
