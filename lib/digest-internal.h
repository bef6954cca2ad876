/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <openssl/evp.h>
#include "iver/digest.h"

/* The OpenSSL method for an algorithm, NULL if unavailable. */
const EVP_MD *iver_hash_algo_md(IverHashAlgo a);
