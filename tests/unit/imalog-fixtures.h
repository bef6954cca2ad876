/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared by the IMA list tests (test-imalog.c, test-imalog-names.c,
 * test-imalog-list.c): a message digest by name, an ima-ng entry made from a
 * fill byte, and the awkward file names every encoder must carry. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <openssl/evp.h>

#include "iver/imalog.h"

static inline void md(const char *name, const uint8_t *d, size_t n, uint8_t *out) {
        ck_assert_int_eq(EVP_Digest(d, n, out, NULL, EVP_get_digestbyname(name), NULL), 1);
}

static inline IverImaEntry *mk(uint32_t pcr, uint8_t fill, const char *path) {
        uint8_t d[32];
        IverImaEntry *e = NULL;
        memset(d, fill, sizeof(d));
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, pcr, IVER_HASH_SHA256, d, 32, path, strlen(path),
                                               NULL, 0, 0, &e), 0);
        return e;
}

/* Names that are legal on Linux and hard for a line format; ascii_ok: its
 * ASCII line parses back to it (else the parse must fail). */
static const struct { const char *s; size_t n; bool ascii_ok; } weird[] = {
        { "/tmp/with space", 15, true },
        { " leading and trailing ", 22, true },
        { "/tmp/new\nline", 13, false },
        { "/tmp/\xff\xfe\x80not-utf8", 16, true },
        { "/tmp/tab\there", 13, true },
        { "", 0, true },
        { "/tmp/x 0302abcd", 15, true },     /* looks like a signature after the space */
        { "/tmp/ends-in-space ", 19, true },
};
