/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* security.ima v2 signatures: the public key set and the verdict. */
#include <errno.h>
#include <keyutils.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "iver/appraise.h"
#include "digest-internal.h"
#include "keyring-internal.h"
#include "macro.h"

static const char *const result_names[_IVER_APPRAISAL_MAX] = {
        [IVER_APPRAISAL_VALID] = "valid",
        [IVER_APPRAISAL_FAIL] = "invalid",
        [IVER_APPRAISAL_MISSING] = "missing",
        [IVER_APPRAISAL_UNKNOWN_KEY] = "unknown-key",
};

const char *iver_appraisal_result_to_string(IverAppraisalResult r) {
        if (r < 0 || r >= _IVER_APPRAISAL_MAX)
                return NULL;
        return result_names[r];
}

IverAppraisalResult iver_appraisal_result_from_string(const char *s) {
        if (!s)
                return _IVER_APPRAISAL_INVALID;
        for (int i = 0; i < _IVER_APPRAISAL_MAX; i++)
                if (strcmp(s, result_names[i]) == 0)
                        return (IverAppraisalResult) i;
        return _IVER_APPRAISAL_INVALID;
}

/* Kernel HASH_ALGO_* numbers (uapi hash_info.h) of the algorithms we hash
 * with, and the names the kernel's keyctl pkey "hash=" option takes. */
static const struct {
        uint8_t kernel;
        const char *kname;
} hash_map[_IVER_HASH_MAX] = {
        [IVER_HASH_SHA1] = { 2, "sha1" },
        [IVER_HASH_SHA256] = { 4, "sha256" },
        [IVER_HASH_SHA384] = { 5, "sha384" },
        [IVER_HASH_SHA512] = { 6, "sha512" },
        [IVER_HASH_SM3] = { 17, "sm3" },
};

static IverHashAlgo hash_from_kernel(uint8_t k) {
        for (int i = 0; i < _IVER_HASH_MAX; i++)
                if (hash_map[i].kernel == k)
                        return (IverHashAlgo) i;
        return _IVER_HASH_INVALID;
}

/* ---- verification ---- */

static int verify_software(const Key *k, IverHashAlgo algo, const uint8_t *digest, size_t digest_len,
                           const uint8_t *sig, size_t sig_len) {
        const EVP_MD *md = iver_hash_algo_md(algo);
        int ok = 0;

        if (!md)
                return -EOPNOTSUPP;
        /* PKCS#1 v1.5 signatures are exactly the modulus size, as the
         * kernel's pkcs1pad demands; OpenSSL would accept shorter ones. */
        if (EVP_PKEY_get_base_id(k->pkey) == EVP_PKEY_RSA && sig_len != (size_t) EVP_PKEY_get_size(k->pkey))
                return 0;
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(k->pkey, NULL);
        if (!ctx)
                return -ENOMEM;
        if (EVP_PKEY_verify_init(ctx) == 1 &&
            (EVP_PKEY_get_base_id(k->pkey) != EVP_PKEY_RSA ||
             EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1) &&
            EVP_PKEY_CTX_set_signature_md(ctx, md) == 1)
                ok = EVP_PKEY_verify(ctx, sig, sig_len, digest, digest_len) == 1;
        EVP_PKEY_CTX_free(ctx);
        ERR_clear_error();
        return ok;
}

/* -errno of a failed keyctl call; never -EOPNOTSUPP, which tells our
 * caller to re-hash. */
static int kernel_error(void) {
        int r = negative_errno();
        return r == -EOPNOTSUPP ? -EIO : r;
}

/* 1 verified, 0 not, -ENOKEY if the keyring has no such key, -errno if the
 * kernel could not be asked. */
static int verify_kernel(key_serial_t ring, uint32_t keyid, IverHashAlgo algo, const uint8_t *digest,
                         size_t digest_len, const uint8_t *sig, size_t sig_len) {
        static const char *const encodings[] = { "pkcs1", "x962" };
        char desc[16], info[48];
        key_serial_t key;

        snprintf(desc, sizeof desc, "id:%08x", keyid);
        key = keyctl_search(ring, "asymmetric", desc, 0);
        if (key < 0) {
                if (errno == ENOKEY || errno == EKEYREVOKED || errno == EKEYEXPIRED)
                        return -ENOKEY;
                return kernel_error();
        }
        /* The key's algorithm is not visible from user space; a signature can
         * only verify under the encoding of its own key, so try both. */
        for (size_t i = 0; i < ELEMENTSOF(encodings); i++) {
                snprintf(info, sizeof info, "enc=%s hash=%s", encodings[i], hash_map[algo].kname);
                if (keyctl_pkey_verify(key, info, digest, digest_len, sig, sig_len) == 0)
                        return 1;
                /* EKEYREJECTED: a bad signature; EINVAL, EBADMSG, ENOPKG,
                 * EOPNOTSUPP: an encoding or hash this key cannot do. Anything
                 * else is the kernel refusing to answer. */
                if (errno != EKEYREJECTED && errno != EINVAL && errno != EBADMSG && errno != ENOPKG &&
                    errno != EOPNOTSUPP)
                        return kernel_error();
        }
        return 0;
}

static void appraisal_set(IverAppraisal *a, IverAppraisalResult r, const char *reason) {
        a->result = r;
        a->reason = reason;
}

IverHashAlgo iver_appraise_xattr_hash_algo(const uint8_t *value, size_t size) {
        if (!value || size < IVER_IMA_SIG_V2_HDR_SIZE || value[0] != IVER_IMA_XATTR_DIGSIG || value[1] != 2)
                return _IVER_HASH_INVALID;
        return hash_from_kernel(value[2]);
}

/* The v2 signature header, checked in the kernel's order. Sets a's key id and hash and
 * returns true when the signature is there to verify; false with a's verdict set if not. */
static bool check_header(const uint8_t *value, size_t size, IverAppraisal *a) {
        if (size == 0) {
                appraisal_set(a, IVER_APPRAISAL_MISSING, "no security.ima");
                return false;
        }
        if (value[0] == IVER_IMA_VERITY_DIGSIG) {
                appraisal_set(a, IVER_APPRAISAL_FAIL, "fs-verity signature (type 6) not supported");
                return false;
        }
        if (value[0] != IVER_IMA_XATTR_DIGSIG) {
                /* A hash (0x01, 0x04) or an EVM value: there is no signature. */
                appraisal_set(a, IVER_APPRAISAL_MISSING, "security.ima holds no signature");
                return false;
        }
        if (size < 2) {
                appraisal_set(a, IVER_APPRAISAL_FAIL, "truncated signature header");
                return false;
        }
        if (value[1] != 2) {
                appraisal_set(a, IVER_APPRAISAL_FAIL, "signature version not supported (only v2)");
                return false;
        }
        /* The kernel's checks, in its order: a header and at least one byte,
         * sig_size exactly the rest. */
        if (size <= IVER_IMA_SIG_V2_HDR_SIZE) {
                appraisal_set(a, IVER_APPRAISAL_FAIL, "truncated signature header");
                return false;
        }
        size_t sig_len = size - IVER_IMA_SIG_V2_HDR_SIZE;
        if (((size_t) value[7] << 8 | value[8]) != sig_len) {
                appraisal_set(a, IVER_APPRAISAL_FAIL, "signature length does not match the xattr size");
                return false;
        }
        a->keyid = be32(value + 3);
        a->algo = hash_from_kernel(value[2]);
        return true;
}

/* 1 if a key of the set or of a kernel keyring has this id, 0 if none, -errno. */
static int key_known(const IverKeyring *kr, uint32_t keyid) {
        bool known = false;

        for (size_t i = 0; i < kr->n_keys && !known; i++)
                known = kr->keys[i].keyid == keyid;
        for (size_t i = 0; i < kr->n_kernel && !known; i++) {
                char desc[16];
                snprintf(desc, sizeof desc, "id:%08x", keyid);
                if (keyctl_search(kr->kernel[i], "asymmetric", desc, 0) >= 0)
                        known = true;
                else if (errno != ENOKEY && errno != EKEYREVOKED && errno != EKEYEXPIRED)
                        return kernel_error();
        }
        return known;
}

/* 1 if a key with a's id verifies the signature (*ret_via_kernel: a kernel keyring's),
 * 0 if none does, -errno. */
static int verify_with_keys(const IverKeyring *kr, const IverAppraisal *a, const IverDigest *file_digest,
                            const uint8_t *sig, size_t sig_len, bool *ret_via_kernel) {
        bool via_kernel = false;
        int verified = 0, r;

        /* 32-bit key ids collide: any key with the id that verifies will do,
         * as for the kernel, whose search also takes the first match. */
        for (size_t i = 0; i < kr->n_keys && verified == 0; i++) {
                if (kr->keys[i].keyid != a->keyid)
                        continue;
                r = verify_software(&kr->keys[i], a->algo, file_digest->bytes, file_digest->len, sig, sig_len);
                if (r < 0 && r != -EOPNOTSUPP)
                        return r;
                verified = r > 0;
        }
        for (size_t i = 0; i < kr->n_kernel && verified == 0; i++) {
                r = verify_kernel(kr->kernel[i], a->keyid, a->algo, file_digest->bytes, file_digest->len, sig,
                                  sig_len);
                if (r == -ENOKEY)
                        continue;  /* not in this keyring, or unlinked since the lookup */
                if (r < 0)
                        return r == -EOPNOTSUPP ? -EIO : r;
                verified = r;
                via_kernel = r > 0;
        }
        *ret_via_kernel = via_kernel;
        return verified;
}

int iver_appraise_xattr(const IverKeyring *kr, const uint8_t *value, size_t size,
                        const IverDigest *file_digest, IverAppraisal *ret) {
        IverAppraisal a = { .algo = _IVER_HASH_INVALID };
        bool via_kernel = false;
        int verified, r;

        if (!kr || !file_digest || !ret || (!value && size > 0))
                return -EINVAL;

        if (!check_header(value, size, &a))
                goto done;
        const uint8_t *sig = value + IVER_IMA_SIG_V2_HDR_SIZE;
        size_t sig_len = size - IVER_IMA_SIG_V2_HDR_SIZE;

        r = key_known(kr, a.keyid);
        if (r < 0)
                return r;
        if (r == 0) {
                appraisal_set(&a, IVER_APPRAISAL_UNKNOWN_KEY, "no key with the signature's key id");
                goto done;
        }
        if (a.algo < 0) {
                appraisal_set(&a, IVER_APPRAISAL_FAIL, "signature hash algorithm not supported");
                goto done;
        }
        if (file_digest->algo != a.algo)
                return -EOPNOTSUPP;
        if (file_digest->len != iver_hash_algo_size(a.algo))
                return -EINVAL;

        verified = verify_with_keys(kr, &a, file_digest, sig, sig_len, &via_kernel);
        if (verified < 0)
                return verified;
        if (verified > 0) {
                a.kernel_key = via_kernel;
                appraisal_set(&a, IVER_APPRAISAL_VALID, "signature verified");
        } else
                appraisal_set(&a, IVER_APPRAISAL_FAIL, "signature does not verify");
done:
        *ret = a;
        return 0;
}

bool iver_appraise_xattr_is_signature(const uint8_t *value, size_t size) {
        return value && size > 0 && (value[0] == IVER_IMA_XATTR_DIGSIG || value[0] == IVER_IMA_VERITY_DIGSIG);
}

int iver_appraise_read_xattr(int fd, uint8_t **ret, size_t *ret_size) {
        if (fd < 0 || !ret || !ret_size)
                return -EINVAL;
        /* Most values (a v2 RSA-2048 signature: 265 bytes) fit a small buffer:
         * one call. Larger ones are sized first. */
        uint8_t small[1024];
        ssize_t k = fgetxattr(fd, IVER_IMA_XATTR_NAME, small, sizeof(small));
        if (k < 0 && errno != ERANGE)
                return errno == ENODATA || errno == ENOTSUP ? -ENODATA : negative_errno();
        if (k == 0)
                return -ENODATA;
        if (k > 0) {
                uint8_t *buf = malloc((size_t) k);
                if (!buf)
                        return -ENOMEM;
                memcpy(buf, small, (size_t) k);
                *ret = buf;
                *ret_size = (size_t) k;
                return 0;
        }
        /* The size can change between the two calls (a concurrent setxattr):
         * retry a few times on ERANGE. */
        for (int attempt = 0; attempt < 4; attempt++) {
                ssize_t n = fgetxattr(fd, IVER_IMA_XATTR_NAME, NULL, 0);
                if (n < 0)
                        return errno == ENODATA || errno == ENOTSUP ? -ENODATA : negative_errno();
                if (n == 0)
                        return -ENODATA;
                if (n > IVER_IMA_XATTR_MAX)
                        return -E2BIG;
                _cleanup_free_ uint8_t *buf = malloc(n);
                if (!buf)
                        return -ENOMEM;
                ssize_t m = fgetxattr(fd, IVER_IMA_XATTR_NAME, buf, n);
                if (m < 0) {
                        if (errno == ERANGE)
                                continue;
                        return errno == ENODATA || errno == ENOTSUP ? -ENODATA : negative_errno();
                }
                if (m == 0)
                        return -ENODATA;
                *ret = TAKE_PTR(buf);
                *ret_size = (size_t) m;
                return 0;
        }
        return -EAGAIN;
}

int iver_appraise_fd(const IverKeyring *kr, int fd, const IverDigest *file_digest,
                     IverAppraisal *ret, uint8_t **ret_sig, size_t *ret_sig_size) {
        _cleanup_free_ uint8_t *value = NULL;
        size_t size = 0;
        IverAppraisal a;
        int r;

        if (!ret || (ret_sig && !ret_sig_size))
                return -EINVAL;
        r = iver_appraise_read_xattr(fd, &value, &size);
        if (r < 0 && r != -ENODATA)
                return r;
        r = iver_appraise_xattr(kr, value, size, file_digest, &a);
        if (r < 0)
                return r;
        *ret = a;
        if (ret_sig) {
                bool is_sig = iver_appraise_xattr_is_signature(value, size);
                *ret_sig = is_sig ? TAKE_PTR(value) : NULL;
                *ret_sig_size = is_sig ? size : 0;
        }
        return 0;
}
