/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hash algorithm names and sizes, digest helpers. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <openssl/evp.h>

#include "iver/digest.h"
#include "digest-internal.h"

static const struct {
        const char *name;
        size_t size;
} algos[_IVER_HASH_MAX] = {
        [IVER_HASH_SHA1]   = { "sha1",   20 },
        [IVER_HASH_SHA256] = { "sha256", 32 },
        [IVER_HASH_SHA384] = { "sha384", 48 },
        [IVER_HASH_SHA512] = { "sha512", 64 },
        [IVER_HASH_SM3]    = { "sm3",    32 },
};

IverHashAlgo iver_hash_algo_from_string(const char *s) {
        if (!s)
                return _IVER_HASH_INVALID;
        for (int i = 0; i < _IVER_HASH_MAX; i++)
                if (strcmp(s, algos[i].name) == 0)
                        return (IverHashAlgo) i;
        return _IVER_HASH_INVALID;
}

const char *iver_hash_algo_to_string(IverHashAlgo a) {
        if (a < 0 || a >= _IVER_HASH_MAX)
                return NULL;
        return algos[a].name;
}

size_t iver_hash_algo_size(IverHashAlgo a) {
        if (a < 0 || a >= _IVER_HASH_MAX)
                return 0;
        return algos[a].size;
}

static const EVP_MD *fetched[_IVER_HASH_MAX];
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;

static void fetch_all(void) {
        /* Explicit fetches once per process: an implicit fetch on every
         * EVP_DigestInit_ex() costs more than hashing a small file. Kept for
         * the life of the process. */
        for (int i = 0; i < _IVER_HASH_MAX; i++)
                fetched[i] = EVP_MD_fetch(NULL, algos[i].name, NULL);
}

const EVP_MD *iver_hash_algo_md(IverHashAlgo a) {
        if (a < 0 || a >= _IVER_HASH_MAX)
                return NULL;
        pthread_once(&fetch_once, fetch_all);
        return fetched[a];
}

/* One context per thread, kept: a context made and freed for every file
 * hashed (and every list entry's template digest) cost more than hashing a
 * small file's bytes. Freed when its thread ends. */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static __thread EVP_MD_CTX *thread_ctx;

static void ctx_free(void *ctx) {
        EVP_MD_CTX_free(ctx);
        thread_ctx = NULL;
}

static void ctx_key_make(void) {
        (void) pthread_key_create(&ctx_key, ctx_free);
}

EVP_MD_CTX *iver_digest_thread_ctx(void) {
        if (thread_ctx)
                return thread_ctx;
        pthread_once(&ctx_once, ctx_key_make);
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (ctx && pthread_setspecific(ctx_key, ctx) != 0) {
                EVP_MD_CTX_free(ctx);
                return NULL;
        }
        return thread_ctx = ctx;
}

int iver_digest_start(IverHashAlgo algo, const EVP_MD **ret_md, EVP_MD_CTX **ret_ctx) {
        if (!(*ret_md = iver_hash_algo_md(algo)))
                return -EOPNOTSUPP;
        if (!(*ret_ctx = iver_digest_thread_ctx()))
                return -ENOMEM;
        return 0;
}

int iver_hash_buf(IverHashAlgo algo, const void *data, size_t size, uint8_t *ret) {
        const EVP_MD *md;
        EVP_MD_CTX *ctx;
        int r = iver_digest_start(algo, &md, &ctx);
        if (r < 0)
                return r;
        if (EVP_DigestInit_ex(ctx, md, NULL) != 1 || EVP_DigestUpdate(ctx, data, size) != 1 ||
            EVP_DigestFinal_ex(ctx, ret, NULL) != 1)
                return -EIO;
        return 0;
}

bool iver_hash_algo_available(IverHashAlgo a) {
        return iver_hash_algo_md(a) != NULL;
}

bool iver_digest_equal(const IverDigest *a, const IverDigest *b) {
        return a->algo == b->algo && a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

char *iver_digest_to_hex(const IverDigest *d, char *buf) {
        static const char hex[] = "0123456789abcdef";
        size_t n = d->len <= IVER_DIGEST_MAX ? d->len : IVER_DIGEST_MAX;
        for (size_t i = 0; i < n; i++) {
                buf[2 * i] = hex[d->bytes[i] >> 4];
                buf[2 * i + 1] = hex[d->bytes[i] & 15];
        }
        buf[2 * n] = 0;
        return buf;
}

int iver_unhexchar(int c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int iver_hex_decode(const char *hex, size_t len, uint8_t *out, size_t max, size_t *ret_len) {
        if (len % 2 || len / 2 > max)
                return -EINVAL;
        for (size_t i = 0; i < len / 2; i++) {
                int hi = iver_unhexchar((unsigned char) hex[2 * i]), lo = iver_unhexchar((unsigned char) hex[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                out[i] = (uint8_t) (hi << 4 | lo);
        }
        if (ret_len)
                *ret_len = len / 2;
        return 0;
}
