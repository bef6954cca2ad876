/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hash algorithms iverd measures with. Names are the IMA / kernel crypto names. */
typedef enum IverHashAlgo {
        IVER_HASH_SHA1,
        IVER_HASH_SHA256,
        IVER_HASH_SHA384,
        IVER_HASH_SHA512,
        IVER_HASH_SM3,
        _IVER_HASH_MAX,
        _IVER_HASH_INVALID = -22, /* -EINVAL */
} IverHashAlgo;

#define IVER_DIGEST_MAX 64

typedef struct IverDigest {
        IverHashAlgo algo;
        uint8_t len;
        uint8_t bytes[IVER_DIGEST_MAX];
} IverDigest;

/* "sha256" → IVER_HASH_SHA256; -EINVAL for unknown names. */
IverHashAlgo iver_hash_algo_from_string(const char *s);
const char *iver_hash_algo_to_string(IverHashAlgo a);
/* Digest length in bytes, 0 for an invalid algorithm. */
size_t iver_hash_algo_size(IverHashAlgo a);
/* Whether the linked OpenSSL provides the algorithm (sm3 may be missing). */
bool iver_hash_algo_available(IverHashAlgo a);

bool iver_digest_equal(const IverDigest *a, const IverDigest *b);
/* Decode exactly len hex characters (either case, nothing else) into len/2
 * bytes of out (room for max). -EINVAL for an odd length, a non-hex
 * character or more than max bytes. */
int iver_hex_decode(const char *hex, size_t len, uint8_t *out, size_t max, size_t *ret_len);
/* Value of one hex digit, -1 if c is not one. */
int iver_unhexchar(int c);

/* Lower-case hex into buf (at least 2*IVER_DIGEST_MAX+1 bytes). Returns buf. */
char *iver_digest_to_hex(const IverDigest *d, char *buf);
