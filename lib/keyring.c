/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The appraisal key set: public keys and certificates from PEM/DER files and
 * 'user' keys, and kernel keyrings whose asymmetric keys are used in place
 * (their material cannot be read from user space). */
#include <errno.h>
#include <keyutils.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "iver/appraise.h"
#include "keyring-internal.h"
#include "fileio.h"
#include "macro.h"

/* A PEM bundle of certificates is small; a bigger file is not one. */
#define IVER_KEY_FILE_MAX (16U << 20)


int iver_keyring_new(IverKeyring **ret) {
        IverKeyring *kr = calloc(1, sizeof(*kr));
        if (!kr)
                return -ENOMEM;
        *ret = kr;
        return 0;
}

static void keys_free(Key *keys, size_t n) {
        for (size_t i = 0; i < n; i++)
                EVP_PKEY_free(keys[i].pkey);
        free(keys);
}

IverKeyring *iver_keyring_free(IverKeyring *kr) {
        if (!kr)
                return NULL;
        keys_free(kr->keys, kr->n_keys);
        free(kr->kernel);
        free(kr);
        return NULL;
}

size_t iver_keyring_size(const IverKeyring *kr) {
        return kr ? kr->n_keys : 0;
}

size_t iver_keyring_kernel_size(const IverKeyring *kr) {
        return kr ? kr->n_kernel : 0;
}

int iver_keyring_get_keyid(const IverKeyring *kr, size_t i, uint32_t *ret) {
        if (!kr || i >= kr->n_keys)
                return -ERANGE;
        *ret = kr->keys[i].keyid;
        return 0;
}


/* evmctl's calc_keyid_v2, which is also RFC 5280 method 1 for the SKID:
 * SHA-1 over the subjectPublicKey BIT STRING contents, last 4 bytes. */
static int keyid_from_pkey(EVP_PKEY *pkey, uint32_t *ret) {
        X509_PUBKEY *pk = NULL;
        const unsigned char *bits = NULL;
        unsigned char sha1[EVP_MAX_MD_SIZE];
        unsigned sha1_len = 0;
        int len = 0, r = -EBADMSG;

        if (X509_PUBKEY_set(&pk, pkey) == 1 && X509_PUBKEY_get0_param(NULL, &bits, &len, NULL, pk) == 1 &&
            EVP_Digest(bits, len, sha1, &sha1_len, EVP_sha1(), NULL) == 1 && sha1_len == 20) {
                *ret = be32(sha1 + 16);
                r = 0;
        }
        X509_PUBKEY_free(pk);
        return r;
}

static int key_check_type(EVP_PKEY *pkey) {
        /* What the kernel verifies for IMA and what evmctl signs with; RSA-PSS,
         * SM2 (needs a distinguishing id) and EdDSA keys are not. */
        switch (EVP_PKEY_get_base_id(pkey)) {
        case EVP_PKEY_RSA:
        case EVP_PKEY_EC:
                return 0;
        default:
                return -EOPNOTSUPP;
        }
}

/* A growing array of keys built by one add call, merged only on success. */
typedef struct KeyList {
        Key *keys;
        size_t n, alloc;
} KeyList;

static void key_list_done(KeyList *l) {
        keys_free(l->keys, l->n);
        *l = (KeyList) {};
}

/* Takes pkey in all cases. keyid NULL: compute it from the key. */
static int key_list_add(KeyList *l, EVP_PKEY *pkey, const uint32_t *keyid) {
        uint32_t id = 0;
        int r;

        r = key_check_type(pkey);
        if (r >= 0 && keyid)
                id = *keyid;
        else if (r >= 0)
                r = keyid_from_pkey(pkey, &id);
        if (r >= 0 && l->n == l->alloc) {
                size_t na = l->alloc ? 2 * l->alloc : 4;
                Key *k = reallocarray(l->keys, na, sizeof(Key));
                if (k) {
                        l->keys = k;
                        l->alloc = na;
                } else
                        r = -ENOMEM;
        }
        if (r < 0) {
                EVP_PKEY_free(pkey);
                return r;
        }
        l->keys[l->n++] = (Key) { .keyid = id, .pkey = pkey };
        return 0;
}

static int key_list_add_x509(KeyList *l, X509 *x) {
        const ASN1_OCTET_STRING *skid = X509_get0_subject_key_id(x);
        EVP_PKEY *pkey = X509_get_pubkey(x);
        uint32_t id;

        if (!pkey)
                return -EBADMSG;
        /* The kernel finds a certificate by its SKID ("id:" partial match on
         * the tail), so that, not the computed hash, is the key id. */
        if (skid && ASN1_STRING_length(skid) >= 4) {
                id = be32(ASN1_STRING_get0_data(skid) + ASN1_STRING_length(skid) - 4);
                return key_list_add(l, pkey, &id);
        }
        return key_list_add(l, pkey, NULL);
}

static int key_list_add_der(KeyList *l, const uint8_t *data, size_t size, bool cert) {
        const unsigned char *p = data;
        int r;

        if (size > LONG_MAX)
                return -EBADMSG;
        if (cert) {
                X509 *x = d2i_X509(NULL, &p, (long) size);
                if (!x)
                        return -EBADMSG;
                r = p == data + size ? key_list_add_x509(l, x) : -EBADMSG;
                X509_free(x);
                return r;
        }
        EVP_PKEY *pkey = d2i_PUBKEY(NULL, &p, (long) size);
        if (!pkey)
                return -EBADMSG;
        if (p != data + size) {
                EVP_PKEY_free(pkey);
                return -EBADMSG;
        }
        return key_list_add(l, pkey, NULL);
}

static int key_list_add_pem(KeyList *l, BIO *bio) {
        size_t before = l->n;
        int r = 0;

        for (;;) {
                char *name = NULL, *header = NULL;
                unsigned char *der = NULL;
                long len = 0;

                if (PEM_read_bio(bio, &name, &header, &der, &len) != 1) {
                        /* The end of the input is a PEM_R_NO_START_LINE "error". */
                        unsigned long e = ERR_peek_last_error();
                        if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
                                ERR_clear_error();
                        else
                                r = -EBADMSG;
                        break;
                }
                if (strcmp(name, "PUBLIC KEY") == 0)
                        r = key_list_add_der(l, der, (size_t) len, false);
                else if (strcmp(name, "CERTIFICATE") == 0)
                        r = key_list_add_der(l, der, (size_t) len, true);
                OPENSSL_free(name);
                OPENSSL_free(header);
                OPENSSL_free(der);
                if (r < 0)
                        break;
        }
        ERR_clear_error();
        if (r < 0)
                return r;
        return l->n > before ? (int) (l->n - before) : -ENOKEY;
}

static bool looks_like_pem(const uint8_t *data, size_t size) {
        return memmem(data, size, "-----BEGIN ", 11) != NULL;
}

static int key_list_add_data(KeyList *l, const uint8_t *data, size_t size) {
        int r;

        if (size == 0 || size > INT_MAX)
                return -EBADMSG;
        if (looks_like_pem(data, size)) {
                BIO *bio = BIO_new_mem_buf(data, (int) size);
                if (!bio)
                        return -ENOMEM;
                r = key_list_add_pem(l, bio);
                BIO_free(bio);
                return r;
        }
        /* DER: a SubjectPublicKeyInfo, else a certificate. */
        r = key_list_add_der(l, data, size, false);
        if (r == -EBADMSG)
                r = key_list_add_der(l, data, size, true);
        ERR_clear_error();
        return r < 0 ? r : 1;
}

static int keyring_merge(IverKeyring *kr, KeyList *l) {
        if (l->n == 0)
                return 0;
        Key *k = reallocarray(kr->keys, kr->n_keys + l->n, sizeof(Key));
        if (!k)
                return -ENOMEM;
        memcpy(k + kr->n_keys, l->keys, l->n * sizeof(Key));
        kr->keys = k;
        kr->n_keys += l->n;
        free(l->keys);
        *l = (KeyList) {};
        return 0;
}

int iver_keyring_add_key_data(IverKeyring *kr, const uint8_t *data, size_t size) {
        _cleanup_(key_list_done) KeyList l = {};
        int r, n;

        if (!kr || (!data && size > 0))
                return -EINVAL;
        n = key_list_add_data(&l, data, size);
        if (n < 0)
                return n;
        r = keyring_merge(kr, &l);
        return r < 0 ? r : n;
}

int iver_keyring_add_pem_file(IverKeyring *kr, const char *path) {
        _cleanup_(key_list_done) KeyList l = {};
        int r, n;

        if (!kr || !path)
                return -EINVAL;
        /* Never blocks (a FIFO) and never follows a symlink: lib/fileio.h. */
        _cleanup_free_ char *buf = NULL;
        size_t len;
        r = iver_read_file(path, IVER_KEY_FILE_MAX, &buf, &len);
        if (r < 0)
                return r;
        BIO *bio = BIO_new_mem_buf(buf, (int) len);
        if (!bio)
                return -ENOMEM;
        n = key_list_add_pem(&l, bio);
        BIO_free(bio);
        if (n < 0)
                return n;
        r = keyring_merge(kr, &l);
        return r < 0 ? r : n;
}

/* ---- kernel keyrings ---- */

static int kernel_keyring_resolve(const char *name, key_serial_t *ret) {
        static const struct {
                const char *name;
                key_serial_t spec;
        } specials[] = {
                { "@t", KEY_SPEC_THREAD_KEYRING },  { "@p", KEY_SPEC_PROCESS_KEYRING },
                { "@s", KEY_SPEC_SESSION_KEYRING }, { "@u", KEY_SPEC_USER_KEYRING },
                { "@us", KEY_SPEC_USER_SESSION_KEYRING }, { "@g", KEY_SPEC_GROUP_KEYRING },
        };
        key_serial_t id = -1;
        char *end;

        if (!name || !*name)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(specials); i++)
                if (strcmp(name, specials[i].name) == 0) {
                        /* Resolve now: a special id means another keyring in
                         * another thread or process. */
                        id = keyctl_get_keyring_ID(specials[i].spec, 0);
                        if (id < 0)
                                return errno == ENOKEY ? -ENOKEY : negative_errno();
                        *ret = id;
                        return 0;
                }
        errno = 0;
        long v = strtol(name, &end, 10);
        if (*end == 0 && errno == 0 && v > 0 && v <= INT32_MAX)
                id = (key_serial_t) v;
        else {
                if (strncmp(name, "%keyring:", 9) == 0)
                        name += 9;
                if (!*name)
                        return -EINVAL;
                id = find_key_by_type_and_desc("keyring", name, 0);
                if (id < 0)
                        return errno == ENOKEY || errno == ENOENT || errno == EKEYREVOKED || errno == EKEYEXPIRED
                                       ? -ENOKEY
                                       : negative_errno();
        }
        /* Make sure it exists and is a keyring. */
        char *desc = NULL;
        if (keyctl_describe_alloc(id, &desc) < 0)
                return errno == ENOKEY || errno == EKEYREVOKED || errno == EKEYEXPIRED ? -ENOKEY : negative_errno();
        bool is_keyring = strncmp(desc, "keyring;", 8) == 0;
        free(desc);
        if (!is_keyring)
                return -ENOTDIR;
        *ret = id;
        return 0;
}

int iver_keyring_add_kernel(IverKeyring *kr, const char *name) {
        _cleanup_(key_list_done) KeyList l = {};
        _cleanup_free_ key_serial_t *ids = NULL;
        key_serial_t ring;
        int r, n_asym = 0;
        long size;

        if (!kr)
                return -EINVAL;
        r = kernel_keyring_resolve(name, &ring);
        if (r < 0)
                return r;
        size = keyctl_read_alloc(ring, (void **) &ids);
        if (size < 0)
                return negative_errno();
        for (size_t i = 0; i < (size_t) size / sizeof(key_serial_t); i++) {
                _cleanup_free_ char *desc = NULL;
                _cleanup_free_ void *payload = NULL;

                if (keyctl_describe_alloc(ids[i], &desc) < 0) {
                        /* Unlinked or expired between the read and now. */
                        if (errno == ENOKEY || errno == EKEYREVOKED || errno == EKEYEXPIRED)
                                continue;
                        return negative_errno();
                }
                if (strncmp(desc, "asymmetric;", 11) == 0) {
                        /* Fail now rather than on every file: a key we may
                         * not search (not possessed, no user 's' permission,
                         * like the kernel's own .ima keys) can never verify. */
                        struct keyctl_pkey_query q;
                        if (keyctl_pkey_query(ids[i], "", &q) < 0) {
                                if (errno == EACCES)
                                        return -EACCES;
                                continue;  /* gone since, or not a key we can use */
                        }
                        n_asym++;
                        continue;
                }
                if (strncmp(desc, "user;", 5) != 0)
                        continue;  /* nested keyrings and other types are not ours */
                long plen = keyctl_read_alloc(ids[i], &payload);
                if (plen < 0) {
                        if (errno == ENOKEY || errno == EKEYREVOKED || errno == EKEYEXPIRED)
                                continue;
                        return negative_errno();
                }
                r = key_list_add_data(&l, payload, (size_t) plen);
                if (r == -ENOMEM)
                        return r;
                /* Not a public key (the keyring may be @u, shared with
                 * other users of 'user' keys): skipped, it cannot vouch
                 * for anything. */
        }

        bool known = false;
        for (size_t i = 0; i < kr->n_kernel; i++)
                known = known || kr->kernel[i] == ring;
        if (!known) {
                key_serial_t *k = reallocarray(kr->kernel, kr->n_kernel + 1, sizeof(key_serial_t));
                if (!k)
                        return -ENOMEM;
                kr->kernel = k;
        }
        size_t n_user = l.n;
        r = keyring_merge(kr, &l);
        if (r < 0)
                return r;
        if (!known)
                kr->kernel[kr->n_kernel++] = ring;
        return (int) n_user + n_asym;
}

