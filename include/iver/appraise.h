/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iver/digest.h"

/* Appraisal of a file's security.ima extended attribute: the IMA/EVM v2
 * digital signature that `evmctl sign --imasig` / `evmctl ima_sign` write
 * and the kernel checks (security/integrity/digsig_asymmetric.c):
 *
 *   u8 type      0x03 EVM_IMA_XATTR_DIGSIG
 *   u8 version   2
 *   u8 hash_algo kernel HASH_ALGO_* (include/uapi/linux/hash_info.h):
 *                sha1 2, sha256 4, sha384 5, sha512 6, sm3 17
 *   be32 keyid   last 4 bytes of the signer's X.509 subjectKeyIdentifier,
 *                which evmctl computes (calc_keyid_v2) as bytes 16..19 of the
 *                SHA-1 of the subjectPublicKey BIT STRING contents (PKCS#1
 *                RSAPublicKey, or the EC point) — not of the whole SPKI
 *   be16 sig_size  bytes that follow, exactly
 *   sig          RSA PKCS#1 v1.5 (DigestInfo of hash_algo) or DER ECDSA,
 *                over the raw file digest in hash_algo
 *
 * Only version 2 over a file digest is verified. Version 3 (sigv3) and type
 * 0x06 (fs-verity) signatures are signatures we cannot check: "invalid", so
 * that an appraise rule fails closed. */

#define IVER_IMA_XATTR_NAME "security.ima"
#define IVER_IMA_XATTR_DIGSIG 0x03      /* EVM_IMA_XATTR_DIGSIG */
#define IVER_IMA_VERITY_DIGSIG 0x06     /* IMA_VERITY_DIGSIG */
#define IVER_IMA_SIG_V2_HDR_SIZE 9
#define IVER_IMA_XATTR_MAX 65536        /* XATTR_SIZE_MAX */

/* FAIL prints as "invalid"; it is named apart from the _INVALID sentinel. */
typedef enum IverAppraisalResult {
        IVER_APPRAISAL_VALID,           /* "valid": a known key verifies the signature over the digest */
        IVER_APPRAISAL_FAIL,            /* "invalid": malformed, unsupported, or does not verify */
        IVER_APPRAISAL_MISSING,         /* "missing": no security.ima, or it holds no signature (a hash) */
        IVER_APPRAISAL_UNKNOWN_KEY,     /* "unknown-key": well formed, no key with its key id */
        _IVER_APPRAISAL_MAX,
        _IVER_APPRAISAL_INVALID = -22,  /* -EINVAL */
} IverAppraisalResult;

const char *iver_appraisal_result_to_string(IverAppraisalResult r);
IverAppraisalResult iver_appraisal_result_from_string(const char *s);

typedef struct IverAppraisal {
        IverAppraisalResult result;
        const char *reason;     /* static text for the log line ("signature does not verify"), never NULL */
        IverHashAlgo algo;      /* the signature's hash algorithm, _IVER_HASH_INVALID if none or unsupported */
        uint32_t keyid;         /* the signature's key id (host order), 0 if not parsed */
        bool kernel_key;        /* VALID through an asymmetric key in a kernel keyring */
} IverAppraisal;

/* ---- the set of public keys ---- */

/* Two kinds of keys:
 *  - software keys: RSA or EC public keys held here, from PEM/DER files or
 *    from 'user'-type keys of a kernel keyring whose payload is a public key
 *    (PEM or DER, SubjectPublicKeyInfo or X.509 certificate);
 *  - kernel keyrings: 'asymmetric' keys (X.509 certificates, as in the .ima
 *    keyring) cannot be read from user space (keyctl read: EOPNOTSUPP), so
 *    they are not copied: at appraisal the keyring is searched for
 *    "id:<keyid>" and the kernel verifies (KEYCTL_PKEY_VERIFY), the same key
 *    lookup IMA itself does. Keys added to the keyring later are found too.
 * A certificate's key id is the last 4 bytes of its subjectKeyIdentifier
 * (what the kernel matches and what evmctl uses when the signing key file
 * carries the certificate); a bare public key's is computed as evmctl does. */
typedef struct IverKeyring IverKeyring;

int iver_keyring_new(IverKeyring **ret);
IverKeyring *iver_keyring_free(IverKeyring *kr);
static inline void iver_keyring_freep(IverKeyring **kr) {
        if (*kr)
                *kr = iver_keyring_free(*kr);
}

/* Add every "PUBLIC KEY" and "CERTIFICATE" block of a PEM file (other
 * blocks, private keys included, are skipped). Returns the number of keys
 * added (≥ 1); -ENOKEY if the file holds none, -EBADMSG if a block does not
 * decode, -EOPNOTSUPP for a key type other than RSA or EC. All or nothing.
 * The file must be a regular file: -ELOOP for a symlink (not followed),
 * -EBADFD for a FIFO, socket or device (never blocks on one). */
int iver_keyring_add_pem_file(IverKeyring *kr, const char *path);
/* The same for a buffer: PEM as above, or one DER SubjectPublicKeyInfo or
 * X.509 certificate. */
int iver_keyring_add_key_data(IverKeyring *kr, const uint8_t *data, size_t size);

/* Use the kernel keyring `name`: "@u", "@s", "@us", "@p", "@t", "@g" (the
 * caller's special keyrings, resolved now to their serial), a decimal
 * serial, or a keyring description such as ".ima" or "iverd" (optionally
 * written "%keyring:NAME"), found with find_key_by_type_and_desc(). The
 * 'user' keys directly in it are read now and added as software keys; one
 * whose payload is not an RSA/EC public key is skipped (a keyring such as @u
 * holds other 'user' keys too: iverd's own snapshot key lives there). Its
 * 'asymmetric' keys are used through the kernel at appraisal; nested
 * keyrings are searched by the kernel for asymmetric keys only. Returns the
 * number of usable keys (user keys loaded + asymmetric keys present, may be
 * 0: the caller should warn); -ENOKEY if there is no such keyring,
 * -ENOTDIR if the name is a key that is not a keyring, -EACCES if an
 * asymmetric key in it may not be used by this process. All or nothing.
 *
 * Permissions: the kernel lets a process search for and verify with an
 * asymmetric key only if it possesses it (the keyring is reachable from its
 * session/user keyring, e.g. a keyring linked under root's @u, as in
 * ima-evm-utils' `keyctl newring _ima @u; evmctl import cert.der <id>`) or
 * the key grants the user 's'earch. The kernel's own .ima/.evm keys grant
 * user view+read only, so "%keyring:.ima" gives -EACCES: load the same
 * certificates from their files (iver_keyring_add_pem_file, or
 * iver_keyring_add_key_data for /etc/keys/x509_ima.der) instead. */
int iver_keyring_add_kernel(IverKeyring *kr, const char *name);

/* Software keys held (kernel keyrings not counted) and their key ids. */
size_t iver_keyring_size(const IverKeyring *kr);
int iver_keyring_get_keyid(const IverKeyring *kr, size_t i, uint32_t *ret);
/* Kernel keyrings in use. */
size_t iver_keyring_kernel_size(const IverKeyring *kr);

/* ---- appraisal ---- */

/* The hash algorithm a v2 signature in value requires: _IVER_HASH_INVALID if
 * value is not a v2 signature or names an algorithm iverd cannot compute. */
IverHashAlgo iver_appraise_xattr_hash_algo(const uint8_t *value, size_t size);

/* Appraise security.ima bytes (value may be NULL with size 0: no xattr)
 * against file_digest, the digest of the content that was measured.
 * Returns 0 and fills *ret for each of the four outcomes.
 * -EOPNOTSUPP: the signature is well formed, a key with its key id is known,
 * but it covers a digest in another algorithm than file_digest->algo — the
 * caller re-hashes with iver_appraise_xattr_hash_algo(value) and calls again
 * (the kernel, too, measures a signed file with the signature's algorithm).
 * The key lookup comes first so that an unknown key never costs a re-hash.
 * Other -errno: the check could not be made (ENOMEM, a kernel keyring that
 * refuses the search), not a verdict on the file. */
int iver_appraise_xattr(const IverKeyring *kr, const uint8_t *value, size_t size,
                        const IverDigest *file_digest, IverAppraisal *ret);

/* Whether security.ima bytes hold a signature (type 0x03 or 0x06) rather
 * than a hash: what the sig field of an ima-sig entry records. */
bool iver_appraise_xattr_is_signature(const uint8_t *value, size_t size);

/* Read security.ima of fd. -ENODATA when there is none or the filesystem has
 * no xattrs; *ret is malloc'ed. */
int iver_appraise_read_xattr(int fd, uint8_t **ret, size_t *ret_size);

/* iver_appraise_read_xattr() + iver_appraise_xattr(). When ret_sig is not
 * NULL it receives a malloc'ed copy of the xattr if it is a signature (type
 * 0x03 or 0x06: what an ima-sig entry records), else NULL. -EOPNOTSUPP as
 * above (ret_sig untouched: read the xattr to learn the algorithm). */
int iver_appraise_fd(const IverKeyring *kr, int fd, const IverDigest *file_digest,
                     IverAppraisal *ret, uint8_t **ret_sig, size_t *ret_sig_size);
