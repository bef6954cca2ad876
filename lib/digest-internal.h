/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <openssl/evp.h>
#include "iver/digest.h"

/* The OpenSSL method for an algorithm, NULL if unavailable. */
const EVP_MD *iver_hash_algo_md(IverHashAlgo a);
/* This thread's digest context (NULL: no memory), for one digest at a time:
 * initialise it for each, and hash nothing else until it is final. */
EVP_MD_CTX *iver_digest_thread_ctx(void);
/* The method for algo and this thread's context: 0, -EOPNOTSUPP, -ENOMEM. */
int iver_digest_start(IverHashAlgo algo, const EVP_MD **ret_md, EVP_MD_CTX **ret_ctx);
/* ret = H_algo(data): 0, -EOPNOTSUPP (no such algorithm here), -ENOMEM, -EIO. */
int iver_hash_buf(IverHashAlgo algo, const void *data, size_t size, uint8_t *ret);
