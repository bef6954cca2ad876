/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The appraisal key set, shared by lib/keyring.c (loading) and
 * lib/appraise.c (verifying). */
#include <keyutils.h>
#include <openssl/evp.h>
#include <stdint.h>

#include "iver/appraise.h"

typedef struct Key {
        uint32_t keyid;          /* last 4 bytes of the key's SKID, as in signature v2 headers */
        EVP_PKEY *pkey;
} Key;

struct IverKeyring {
        Key *keys;               /* keys read from files and 'user' keys */
        size_t n_keys;
        key_serial_t *kernel;    /* kernel keyrings searched at verification time */
        size_t n_kernel;
};

static inline uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}
