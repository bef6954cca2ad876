/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Verification of a quote bundle with OpenSSL alone: no TPM and no tpm2-tss,
 * so a verifier needs nothing but libcrypto. TPM structures are big-endian
 * (TPM 2.0 Part 2); they are parsed here with explicit lengths. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/bio.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "digest-internal.h"
#include "iver/imalog.h"
#include "iver/tpm.h"
#include "fileio.h"
#include "macro.h"

#define TPM_GENERATED_VALUE 0xff544347u
#define TPM_ST_ATTEST_QUOTE 0x8018
#define TPM_ALG_SHA1 0x0004
#define TPM_ALG_SHA256 0x000b
#define TPM_ALG_SHA384 0x000c
#define TPM_ALG_SHA512 0x000d
#define TPM_ALG_RSASSA 0x0014
#define TPM_ALG_ECDSA 0x0018
#define QUOTE_MAX_BANKS 16
#define LIST_MAX (256u << 20)

typedef struct Reader {
        const uint8_t *p, *end;
        bool bad;
} Reader;

static const uint8_t *take(Reader *r, size_t n) {
        if (r->bad || (size_t) (r->end - r->p) < n) {
                r->bad = true;
                return NULL;
        }
        const uint8_t *p = r->p;
        r->p += n;
        return p;
}

static uint32_t be(Reader *r, size_t n) {
        const uint8_t *p = take(r, n);
        uint32_t v = 0;
        for (size_t i = 0; p && i < n; i++)
                v = v << 8 | p[i];
        return v;
}

/* TPM2B: u16 size, bytes. */
static const uint8_t *tpm2b(Reader *r, size_t *ret_len) {
        size_t n = be(r, 2);
        *ret_len = n;
        return take(r, n);
}

static IverHashAlgo algo_from_tpm(uint32_t id) {
        switch (id) {
        case TPM_ALG_SHA1: return IVER_HASH_SHA1;
        case TPM_ALG_SHA256: return IVER_HASH_SHA256;
        case TPM_ALG_SHA384: return IVER_HASH_SHA384;
        case TPM_ALG_SHA512: return IVER_HASH_SHA512;
        default: return _IVER_HASH_INVALID;
        }
}

static IverHashAlgo algo_from_size(size_t n) {
        switch (n) {
        case 20: return IVER_HASH_SHA1;
        case 32: return IVER_HASH_SHA256;
        case 48: return IVER_HASH_SHA384;
        case 64: return IVER_HASH_SHA512;
        default: return _IVER_HASH_INVALID;
        }
}

typedef struct Attest {
        const uint8_t *extra;
        size_t extra_len;
        size_t n_banks;
        IverHashAlgo banks[QUOTE_MAX_BANKS];
        uint32_t pcr_mask[QUOTE_MAX_BANKS];
        const uint8_t *pcr_digest;
        size_t pcr_digest_len;
} Attest;

/* TPMS_ATTEST of type quote. */
static int parse_attest(const uint8_t *msg, size_t len, Attest *a, char *err, size_t errsz) {
        Reader r = { .p = msg, .end = msg + len };
        size_t n;

        *a = (Attest) {};
        if (be(&r, 4) != TPM_GENERATED_VALUE)
                return snprintf(err, errsz, "quote.msg: bad magic"), -EBADMSG;
        if (be(&r, 2) != TPM_ST_ATTEST_QUOTE)
                return snprintf(err, errsz, "quote.msg: not a quote"), -EBADMSG;
        (void) tpm2b(&r, &n);                   /* qualifiedSigner */
        a->extra = tpm2b(&r, &a->extra_len);    /* extraData */
        (void) take(&r, 8 + 4 + 4 + 1);         /* clockInfo */
        (void) take(&r, 8);                     /* firmwareVersion */
        uint32_t count = be(&r, 4);
        if (count == 0 || count > QUOTE_MAX_BANKS)
                return snprintf(err, errsz, "quote.msg: bad PCR selection count %u", count), -EBADMSG;
        for (uint32_t i = 0; i < count && !r.bad; i++) {
                uint32_t alg = be(&r, 2), size = be(&r, 1);
                const uint8_t *bits = take(&r, size);
                if (size > 4)
                        return snprintf(err, errsz, "quote.msg: bad sizeofSelect"), -EBADMSG;
                a->banks[i] = algo_from_tpm(alg);
                if (a->banks[i] < 0)
                        return snprintf(err, errsz, "quote.msg: unsupported PCR bank 0x%04x", alg), -EOPNOTSUPP;
                for (uint32_t j = 0; bits && j < size; j++)
                        a->pcr_mask[i] |= (uint32_t) bits[j] << (8 * j);
        }
        a->n_banks = count;
        a->pcr_digest = tpm2b(&r, &a->pcr_digest_len);
        if (r.bad || r.p != r.end)
                return snprintf(err, errsz, "quote.msg: truncated or trailing bytes"), -EBADMSG;
        return 0;
}

/* An ECDSA signature's (r, s) as the DER that OpenSSL verifies; *ret_der is the caller's. */
static int ecdsa_to_der(const uint8_t *rp, size_t rl, const uint8_t *sp, size_t sl, uint8_t **ret_der,
                        size_t *ret_len) {
        ECDSA_SIG *es = ECDSA_SIG_new();
        BIGNUM *br = BN_bin2bn(rp, rl, NULL), *bs = BN_bin2bn(sp, sl, NULL);
        uint8_t *der = NULL;
        int der_len, k = -ENOMEM;

        if (!es || !br || !bs || ECDSA_SIG_set0(es, br, bs) != 1)
                goto out;
        br = bs = NULL;
        der_len = i2d_ECDSA_SIG(es, &der);
        if (der_len <= 0)
                goto out;
        *ret_der = TAKE_PTR(der);
        *ret_len = der_len;
        k = 0;
out:
        OPENSSL_free(der);
        ECDSA_SIG_free(es);
        BN_free(br);
        BN_free(bs);
        return k;
}

/* TPMT_SIGNATURE: the hash it signs with and the bytes OpenSSL verifies (for ECDSA they are
 * DER in *ret_der, which the caller frees). */
static int parse_signature(const uint8_t *sig, size_t sig_len, IverHashAlgo *ret_hash, uint8_t **ret_der,
                           const uint8_t **ret_raw, size_t *ret_raw_len, char *err, size_t errsz) {
        Reader r = { .p = sig, .end = sig + sig_len };
        size_t raw_len = 0;
        int k;

        uint32_t alg = be(&r, 2), hash = be(&r, 2);
        IverHashAlgo h = algo_from_tpm(hash);
        if (r.bad || h < 0)
                return snprintf(err, errsz, "quote.sig: malformed or unsupported hash"), -EBADMSG;
        if (alg == TPM_ALG_ECDSA) {
                size_t rl, sl;
                const uint8_t *rp = tpm2b(&r, &rl), *sp = tpm2b(&r, &sl);
                if (r.bad || r.p != r.end)
                        return snprintf(err, errsz, "quote.sig: malformed ECDSA signature"), -EBADMSG;
                k = ecdsa_to_der(rp, rl, sp, sl, ret_der, &raw_len);
                if (k < 0)
                        return k;
                *ret_raw = *ret_der;
        } else if (alg == TPM_ALG_RSASSA) {
                const uint8_t *raw = tpm2b(&r, &raw_len);
                if (r.bad || r.p != r.end)
                        return snprintf(err, errsz, "quote.sig: malformed RSASSA signature"), -EBADMSG;
                *ret_raw = raw;
        } else
                return snprintf(err, errsz, "quote.sig: unsupported signature scheme 0x%04x", alg), -EBADMSG;
        *ret_hash = h;
        *ret_raw_len = raw_len;
        return 0;
}

/* The signature bytes checked over msg with the AK's PEM public key. */
static int verify_with_ak(const char *pem, size_t pem_len, IverHashAlgo h, const uint8_t *raw, size_t raw_len,
                          const uint8_t *msg, size_t msg_len, char *err, size_t errsz) {
        EVP_PKEY *pkey = NULL;
        EVP_MD_CTX *ctx = NULL;
        int k = -EBADMSG;

        BIO *bio = BIO_new_mem_buf(pem, (int) pem_len);
        if (bio) {
                pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
                BIO_free(bio);
        }
        if (!pkey) {
                snprintf(err, errsz, "AK: not a PEM public key");
                goto out;
        }
        ctx = EVP_MD_CTX_new();
        if (!ctx) {
                k = -ENOMEM;
                goto out;
        }
        if (EVP_DigestVerifyInit(ctx, NULL, iver_hash_algo_md(h), NULL, pkey) != 1 ||
            EVP_DigestVerify(ctx, raw, raw_len, msg, msg_len) != 1) {
                snprintf(err, errsz, "signature does not verify with the AK");
                k = -EKEYREJECTED;
                goto out;
        }
        k = 0;
out:
        EVP_MD_CTX_free(ctx);
        EVP_PKEY_free(pkey);
        return k;
}

static int verify_signature(const char *pem, size_t pem_len, const uint8_t *msg, size_t msg_len,
                            const uint8_t *sig, size_t sig_len, char *err, size_t errsz) {
        const uint8_t *raw = NULL;
        uint8_t *der = NULL;
        size_t raw_len = 0;
        IverHashAlgo h;

        int k = parse_signature(sig, sig_len, &h, &der, &raw, &raw_len, err, errsz);
        if (k >= 0)
                k = verify_with_ak(pem, pem_len, h, raw, raw_len, msg, msg_len, err, errsz);
        OPENSSL_free(der);
        return k;
}

__attribute__((format(printf, 3, 4))) static void fail(IverQuoteReport *rep, unsigned bit, const char *fmt, ...) {
        rep->failed |= bit;
        if (rep->message[0])
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rep->message, sizeof(rep->message), fmt, ap);
        va_end(ap);
}

/* pcrs.out must have one digest for every selected (bank, PCR), in order; true when it hashes
 * to the quoted PCR digest. */
static bool check_pcrs(const Attest *a, const uint8_t *pcrs, size_t pcrs_len, IverQuoteReport *rep) {
        size_t want = 0;
        for (size_t b = 0; b < a->n_banks; b++) {
                rep->bank_mask |= IVER_TPM_BANK(a->banks[b]);
                rep->pcr_mask |= a->pcr_mask[b];
                want += iver_hash_algo_size(a->banks[b]) * __builtin_popcount(a->pcr_mask[b]);
        }
        IverHashAlgo dh = algo_from_size(a->pcr_digest_len);
        uint8_t h[IVER_DIGEST_MAX];
        bool pcrs_ok = false;
        if (!pcrs || pcrs_len != want)
                fail(rep, IVER_QUOTE_BAD_PCRS, "PCR values: %zu bytes, the selection needs %zu", pcrs ? pcrs_len : 0, want);
        else if (dh < 0 || EVP_Digest(pcrs, pcrs_len, h, NULL, iver_hash_algo_md(dh), NULL) != 1 ||
                 memcmp(h, a->pcr_digest, a->pcr_digest_len) != 0)
                fail(rep, IVER_QUOTE_BAD_PCRS, "PCR values do not match the quoted PCR digest");
        else
                pcrs_ok = true;
        return pcrs_ok;
}

/* The quoted values of the IMA PCRs, read from pcrs.out in selection order. */
static size_t quoted_ima_values(const Attest *a, const uint8_t *pcrs, IverPcrValue *values, size_t max) {
        size_t nv = 0, off = 0;

        for (size_t b = 0; b < a->n_banks; b++) {
                size_t ds = iver_hash_algo_size(a->banks[b]);
                for (unsigned p = 0; p < 32; p++) {
                        if (!(a->pcr_mask[b] & (1u << p)))
                                continue;
                        if (p < IVER_IMA_PCR_MAX && nv < max) {
                                values[nv] = (IverPcrValue) {
                                        .pcr = p, .value = { .algo = a->banks[b], .len = ds } };
                                memcpy(values[nv++].value.bytes, pcrs + off, ds);
                        }
                        off += ds;
                }
        }
        return nv;
}

/* Replays a well-formed list against the trusted PCR values. */
static int check_replay(const Attest *a, const uint8_t *pcrs, const IverImaLog *l, IverQuoteReport *rep) {
        int r;

        rep->list_entries = iver_imalog_size(l);
        rep->matched_prefix = SIZE_MAX;
        /* Every PCR the list extends must be quoted, or the list proves nothing. */
        for (size_t i = 0; i < rep->list_entries; i++) {
                uint32_t p = iver_imalog_get(l, i)->pcr;
                if (p >= 32 || !(rep->pcr_mask & (1u << p))) {
                        fail(rep, IVER_QUOTE_BAD_REPLAY,
                             "list entry %zu is for PCR %u, which the quote does not cover", i, p);
                        break;
                }
        }
        if (!(rep->failed & IVER_QUOTE_BAD_REPLAY)) {
                /* One point of the list that every quoted PCR holds at once. */
                IverPcrValue values[QUOTE_MAX_BANKS * IVER_IMA_PCR_MAX];
                size_t nv = quoted_ima_values(a, pcrs, values, ELEMENTSOF(values)), prefix;
                uint64_t padded = 0;

                /* a bank the kernel had no hash for holds its padded SHA-1
                 * form (Debian's 6.1 kernel: sha384, sha512): accepted, said */
                r = nv == 0 ? -ENOENT
                            : iver_imalog_match_prefix_any_form(iver_imalog_entries(l), rep->list_entries,
                                                                values, nv, &prefix, &padded);
                for (size_t i = 0; r >= 0 && i < nv && i < 64; i++)
                        if (padded & (UINT64_C(1) << i))
                                rep->padded_banks |= IVER_TPM_BANK(values[i].value.algo);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        fail(rep, IVER_QUOTE_BAD_REPLAY,
                             "no prefix of the list (%zu entries) replays to the quoted PCRs",
                             rep->list_entries);
                else
                        rep->matched_prefix = prefix;
        }
        if (rep->matched_prefix == SIZE_MAX)
                rep->matched_prefix = 0;
        return 0;
}

/* Parses the binary measurement list and, when it and the PCR values are sound, replays it. */
static int check_list(const Attest *a, const uint8_t *pcrs, bool pcrs_ok, const uint8_t *list, size_t list_len,
                      IverQuoteReport *rep) {
        _cleanup_(iver_imalog_freep) IverImaLog *l = NULL;
        size_t used = 0;
        int r;

        r = iver_imalog_new(&l);
        if (r < 0)
                return r;
        r = iver_imalog_parse_binary(l, list, list_len, &used);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || used != list_len) {
                fail(rep, IVER_QUOTE_BAD_LIST, "measurement list corrupt at entry %zu (%s)",
                     iver_imalog_size(l), r < 0 ? strerror(-r) : "truncated");
        } else if (!pcrs_ok)
                fail(rep, IVER_QUOTE_BAD_REPLAY, "replay not checked: PCR values not trusted");
        else
                return check_replay(a, pcrs, l, rep);
        return 0;
}

int iver_quote_verify(const char *ak_pem, size_t ak_pem_len,
                      const uint8_t *msg, size_t msg_len,
                      const uint8_t *sig, size_t sig_len,
                      const uint8_t *pcrs, size_t pcrs_len,
                      const uint8_t *nonce, size_t nonce_len,
                      const uint8_t *list, size_t list_len,
                      IverQuoteReport *ret) {
        IverQuoteReport rep = {};
        char err[200] = "";
        Attest a;
        int r;

        if (!ak_pem || !msg || !sig)
                fail(&rep, IVER_QUOTE_BAD_FORMAT, "missing AK, quote.msg or quote.sig");
        else {
                r = verify_signature(ak_pem, ak_pem_len, msg, msg_len, sig, sig_len, err, sizeof(err));
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        fail(&rep, r == -EKEYREJECTED ? IVER_QUOTE_BAD_SIGNATURE : IVER_QUOTE_BAD_FORMAT, "%s", err);
        }
        if (!msg || parse_attest(msg, msg_len, &a, err, sizeof(err)) < 0) {
                fail(&rep, IVER_QUOTE_BAD_FORMAT, "%s", msg ? err : "missing quote.msg");
                *ret = rep;
                return 0;
        }

        if (a.extra_len != nonce_len || (nonce_len > 0 && memcmp(a.extra, nonce, nonce_len) != 0))
                fail(&rep, IVER_QUOTE_BAD_NONCE, "nonce mismatch: the quote was made for another nonce");

        bool pcrs_ok = check_pcrs(&a, pcrs, pcrs_len, &rep);
        if (list) {
                r = check_list(&a, pcrs, pcrs_ok, list, list_len, &rep);
                if (r < 0)
                        return r;
        }
        *ret = rep;
        return 0;
}

static int read_file_at(int dir_fd, const char *name, size_t max, uint8_t **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        size_t n = 0;

        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size > max)
                return -EFBIG;
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        int r = iver_read_full(fd, buf, (size_t) st.st_size, &n);
        if (r < 0)
                return r;
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

int iver_quote_verify_dir(const char *dir, const char *ak_pem_path, const uint8_t *nonce, size_t nonce_len,
                          IverQuoteReport *ret) {
        _cleanup_free_ uint8_t *ak = NULL, *msg = NULL, *sig = NULL, *pcrs = NULL, *list = NULL;
        size_t ak_len = 0, msg_len = 0, sig_len = 0, pcrs_len = 0, list_len = 0;
        IverQuoteReport rep;
        int r, rl;

        _cleanup_close_ int dir_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (dir_fd < 0)
                return negative_errno();
        if (ak_pem_path)
                r = read_file_at(AT_FDCWD, ak_pem_path, 1 << 16, &ak, &ak_len);
        else
                r = read_file_at(dir_fd, IVER_QUOTE_AK_FILE, 1 << 16, &ak, &ak_len);
        if (r == -ENOMEM)
                return r;
        (void) read_file_at(dir_fd, IVER_QUOTE_MSG_FILE, 1 << 16, &msg, &msg_len);
        (void) read_file_at(dir_fd, IVER_QUOTE_SIG_FILE, 1 << 16, &sig, &sig_len);
        (void) read_file_at(dir_fd, IVER_QUOTE_PCRS_FILE, 1 << 16, &pcrs, &pcrs_len);
        rl = read_file_at(dir_fd, IVER_QUOTE_LIST_FILE, LIST_MAX, &list, &list_len);

        r = iver_quote_verify((const char *) ak, ak_len, msg, msg_len, sig, sig_len, pcrs, pcrs_len, nonce,
                              nonce_len, list, list_len, &rep);
        if (r < 0)
                return r;
        if (rl < 0)
                fail(&rep, IVER_QUOTE_BAD_LIST, "%s: %s", IVER_QUOTE_LIST_FILE, strerror(-rl));
        *ret = rep;
        return 0;
}
