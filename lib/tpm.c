/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one module that talks to tpm2-tss (ESAPI, tctildr, MU, rc decoding).
 * Everything above it sees -errno and plain bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

#include "digest-internal.h"
#include "iver/tpm.h"
#include "fileio.h"
#include "macro.h"

#define PCR_MAX 24

struct IverTpm {
        char *tcti;
        bool none;
        TSS2_TCTI_CONTEXT *tcti_ctx;
        ESYS_CONTEXT *esys;
        unsigned banks;
        ESYS_TR ak;
        TPM2B_PUBLIC *ak_public;
        uint32_t last_rc;
        char last_error[256];
};

static const TPM2_ALG_ID bank_alg[_IVER_HASH_MAX] = {
        [IVER_HASH_SHA1] = TPM2_ALG_SHA1,
        [IVER_HASH_SHA256] = TPM2_ALG_SHA256,
        [IVER_HASH_SHA384] = TPM2_ALG_SHA384,
        [IVER_HASH_SHA512] = TPM2_ALG_SHA512,
        [IVER_HASH_SM3] = 0,    /* not a bank we extend */
};

static IverHashAlgo algo_from_tpm(TPM2_ALG_ID id) {
        for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++)
                if (bank_alg[a] != 0 && bank_alg[a] == id)
                        return a;
        return _IVER_HASH_INVALID;
}

/* A TPM response code (layer TPM, or the resource manager's pass-through). */
static IverTpmErrorClass tpm_layer_class(TSS2_RC rc) {
        TSS2_RC w;

        if (rc & TPM2_RC_FMT1)
                return IVER_TPM_PERMANENT;      /* a handle, parameter or session of this command */
        if (!(rc & TPM2_RC_VER1))
                return IVER_TPM_LOST;           /* a TPM 1.2 code: not a TPM 2.0 we talk to */
        if ((rc & TPM2_RC_WARN) != TPM2_RC_WARN) {
                if (rc == TPM2_RC_INITIALIZE)
                        return IVER_TPM_LOST;   /* reset under us: connecting starts it up */
                if (rc == TPM2_RC_PCR_CHANGED)
                        return IVER_TPM_TRANSIENT;
                return IVER_TPM_PERMANENT;      /* failure mode, disabled, unknown command, reboot needed, ... */
        }
        w = rc & ~(TSS2_RC) 0x07f;
        if (w != TPM2_RC_WARN)
                return IVER_TPM_PERMANENT;
        switch (rc) {
        case TPM2_RC_RETRY:
        case TPM2_RC_YIELDED:
        case TPM2_RC_TESTING:
        case TPM2_RC_CANCELED:
        case TPM2_RC_NV_RATE:
        case TPM2_RC_NV_UNAVAILABLE:
                return IVER_TPM_TRANSIENT;
        case TPM2_RC_CONTEXT_GAP:
        case TPM2_RC_OBJECT_MEMORY:
        case TPM2_RC_SESSION_MEMORY:
        case TPM2_RC_MEMORY:
        case TPM2_RC_SESSION_HANDLES:
        case TPM2_RC_OBJECT_HANDLES:
                return IVER_TPM_LOST;           /* connecting flushes the transient objects */
        default:
                if (rc >= TPM2_RC_REFERENCE_H0 && rc <= TPM2_RC_REFERENCE_S6)
                        return IVER_TPM_LOST;   /* an object or session of ours is gone */
                /* LOCALITY (ours is fixed), LOCKOUT, NOT_USED */
                return IVER_TPM_PERMANENT;
        }
}

IverTpmErrorClass iver_tpm_rc_class(uint32_t rc) {
        TSS2_RC layer = rc & TSS2_RC_LAYER_MASK, base = rc & ~TSS2_RC_LAYER_MASK;

        if (rc == TSS2_RC_SUCCESS)
                return _IVER_TPM_ERROR_CLASS_INVALID;
        if (layer == TSS2_TPM_RC_LAYER || layer == TSS2_RESMGR_TPM_RC_LAYER)
                return tpm_layer_class(base);
        if (base == TSS2_BASE_RC_TRY_AGAIN)
                return IVER_TPM_TRANSIENT;
        if (layer == TSS2_MU_RC_LAYER || layer == TSS2_FEATURE_RC_LAYER)
                return IVER_TPM_PERMANENT;      /* the same bytes fail to decode again */
        /* TCTI, resource manager, SYS, ESAPI: I/O, no connection, a bad
         * sequence or malformed response: a fresh connection */
        return IVER_TPM_LOST;
}

IverTpmErrorClass iver_tpm_errno_class(int r) {
        if (r >= 0)
                return _IVER_TPM_ERROR_CLASS_INVALID;
        if (r == -EAGAIN)
                return IVER_TPM_TRANSIENT;
        if (r == -EREMOTEIO)
                return IVER_TPM_PERMANENT;
        return IVER_TPM_LOST;
}

const char *iver_tpm_error_class_to_string(IverTpmErrorClass c) {
        static const char *const names[_IVER_TPM_ERROR_CLASS_MAX] = {
                [IVER_TPM_TRANSIENT] = "transient",
                [IVER_TPM_LOST] = "lost",
                [IVER_TPM_PERMANENT] = "permanent",
        };
        return c >= 0 && c < _IVER_TPM_ERROR_CLASS_MAX ? names[c] : NULL;
}

/* Remember rc and map it to -errno by its class. */
static int tss_error(IverTpm *t, TSS2_RC rc, const char *what) {
        const char *s = Tss2_RC_Decode(rc);

        t->last_rc = rc;
        snprintf(t->last_error, sizeof(t->last_error), "%s: %s (0x%x)", what, s ? s : "?", (unsigned) rc);
        switch (iver_tpm_rc_class(rc)) {
        case IVER_TPM_TRANSIENT:
                return -EAGAIN;
        case IVER_TPM_PERMANENT:
                return -EREMOTEIO;
        default:
                return -ENXIO;
        }
}

/* Whether t can take a command: -ENOMEDIUM for the "none" TPM, -ENOTCONN
 * when not connected. */
static int connected(const IverTpm *t) {
        return t->none ? -ENOMEDIUM : !t->esys ? -ENOTCONN : 0;
}

int iver_tpm_new(const char *tcti, IverTpm **ret) {
        _cleanup_(iver_tpm_freep) IverTpm *t = NULL;

        if (!tcti || !*tcti)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->none = strcmp(tcti, "none") == 0;
        t->tcti = strdup(tcti);
        if (!t->tcti)
                return -ENOMEM;
        t->ak = ESYS_TR_NONE;
        *ret = TAKE_PTR(t);
        return 0;
}

void iver_tpm_disconnect(IverTpm *t) {
        if (!t)
                return;
        if (t->esys && t->ak != ESYS_TR_NONE)
                (void) Esys_FlushContext(t->esys, t->ak);
        t->ak = ESYS_TR_NONE;
        Esys_Free(t->ak_public);
        t->ak_public = NULL;
        if (t->esys)
                Esys_Finalize(&t->esys);
        if (t->tcti_ctx)
                Tss2_TctiLdr_Finalize(&t->tcti_ctx);
        t->banks = 0;
}

IverTpm *iver_tpm_free(IverTpm *t) {
        if (!t)
                return NULL;
        iver_tpm_disconnect(t);
        free(t->tcti);
        free(t);
        return NULL;
}

bool iver_tpm_is_none(const IverTpm *t) {
        return !t || t->none;
}

bool iver_tpm_is_connected(const IverTpm *t) {
        return t && t->esys;
}

unsigned iver_tpm_banks(const IverTpm *t) {
        return t && t->esys ? t->banks : 0;
}

uint32_t iver_tpm_last_rc(const IverTpm *t) {
        return t ? t->last_rc : 0;
}

const char *iver_tpm_last_error(const IverTpm *t) {
        return t && t->last_error[0] ? t->last_error : NULL;
}

static int flush_transients(IverTpm *t) {
        TPMS_CAPABILITY_DATA *cap = NULL;
        TPMI_YES_NO more;
        TSS2_RC rc;

        rc = Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_HANDLES,
                                0x80000000u /* TPM2_TRANSIENT_FIRST: its macro shifts an int into the sign bit */,
                                TPM2_MAX_CAP_HANDLES, &more, &cap);
        if (rc != TSS2_RC_SUCCESS)
                return tss_error(t, rc, "GetCapability(HANDLES)");
        for (UINT32 i = 0; i < cap->data.handles.count; i++) {
                ESYS_TR h;
                rc = Esys_TR_FromTPMPublic(t->esys, cap->data.handles.handle[i], ESYS_TR_NONE, ESYS_TR_NONE,
                                           ESYS_TR_NONE, &h);
                if (rc != TSS2_RC_SUCCESS)
                        continue;       /* gone meanwhile */
                rc = Esys_FlushContext(t->esys, h);
                if (rc != TSS2_RC_SUCCESS)
                        (void) Esys_TR_Close(t->esys, &h);
        }
        Esys_Free(cap);
        return 0;
}

static int read_banks(IverTpm *t) {
        TPMS_CAPABILITY_DATA *cap = NULL;
        TPMI_YES_NO more;
        TSS2_RC rc;
        unsigned banks = 0;

        rc = Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_PCRS, 0, 1, &more,
                                &cap);
        if (rc != TSS2_RC_SUCCESS)
                return tss_error(t, rc, "GetCapability(PCRS)");
        const TPML_PCR_SELECTION *s = &cap->data.assignedPCR;
        for (UINT32 i = 0; i < s->count; i++) {
                IverHashAlgo a = algo_from_tpm(s->pcrSelections[i].hash);
                bool any = false;
                for (unsigned j = 0; j < s->pcrSelections[i].sizeofSelect; j++)
                        any = any || s->pcrSelections[i].pcrSelect[j] != 0;
                if (a >= 0 && any)
                        banks |= IVER_TPM_BANK(a);
        }
        Esys_Free(cap);
        t->banks = banks;
        return 0;
}

int iver_tpm_connect(IverTpm *t) {
        TSS2_RC rc;
        int r;

        if (!t)
                return -EINVAL;
        if (t->none)
                return -ENOMEDIUM;
        iver_tpm_disconnect(t);
        t->last_rc = 0;
        t->last_error[0] = 0;
        (void) setenv("TSS2_LOG", "all+none", 0);

        rc = Tss2_TctiLdr_Initialize(t->tcti, &t->tcti_ctx);
        if (rc != TSS2_RC_SUCCESS) {
                t->tcti_ctx = NULL;
                tss_error(t, rc, "TCTI");
                return -ENXIO;
        }
        rc = Esys_Initialize(&t->esys, t->tcti_ctx, NULL);
        if (rc != TSS2_RC_SUCCESS) {
                t->esys = NULL;
                r = tss_error(t, rc, "Esys_Initialize");
                goto fail;
        }
        rc = Esys_Startup(t->esys, TPM2_SU_CLEAR);
        if (rc != TSS2_RC_SUCCESS && rc != TPM2_RC_INITIALIZE) {
                r = tss_error(t, rc, "Startup");
                goto fail;
        }
        r = flush_transients(t);
        if (r < 0)
                goto fail;
        r = read_banks(t);
        if (r < 0)
                goto fail;
        return 0;
fail:
        iver_tpm_disconnect(t);
        return r;
}

int iver_tpm_extend(IverTpm *t, unsigned pcr, const IverDigest *digests, size_t n_digests) {
        TPML_DIGEST_VALUES v = {};
        unsigned seen = 0;
        TSS2_RC rc;

        if (!t || pcr >= PCR_MAX || (!digests && n_digests > 0))
                return -EINVAL;
        int ready = connected(t);
        if (ready < 0)
                return ready;
        if (n_digests > TPM2_NUM_PCR_BANKS)
                return -EINVAL;
        for (size_t i = 0; i < n_digests; i++) {
                IverHashAlgo a = digests[i].algo;
                if (a < 0 || a >= _IVER_HASH_MAX || !(t->banks & IVER_TPM_BANK(a)) ||
                    (seen & IVER_TPM_BANK(a)) || digests[i].len != iver_hash_algo_size(a))
                        return -EINVAL;
                seen |= IVER_TPM_BANK(a);
                v.digests[i].hashAlg = bank_alg[a];
                memcpy((uint8_t *) &v.digests[i].digest, digests[i].bytes, digests[i].len);
        }
        if (seen == 0)
                return -EINVAL;
        v.count = n_digests;
        rc = Esys_PCR_Extend(t->esys, ESYS_TR_PCR0 + pcr, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &v);
        if (rc != TSS2_RC_SUCCESS)
                return tss_error(t, rc, "PCR_Extend");
        return 0;
}

int iver_tpm_reset_count(IverTpm *t, uint64_t *ret) {
        TPMS_TIME_INFO *ti = NULL;
        if (!t)
                return -EINVAL;
        int ready = connected(t);
        if (ready < 0)
                return ready;
        TSS2_RC rc = Esys_ReadClock(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &ti);
        if (rc != TSS2_RC_SUCCESS)
                return tss_error(t, rc, "ReadClock");
        *ret = (uint64_t) ti->clockInfo.resetCount << 32 | ti->clockInfo.restartCount;
        Esys_Free(ti);
        return 0;
}

int iver_tpm_pcr_read(IverTpm *t, unsigned pcr, IverHashAlgo bank, IverDigest *ret) {
        TPML_PCR_SELECTION sel = { .count = 1 };
        TPML_PCR_SELECTION *out = NULL;
        TPML_DIGEST *values = NULL;
        UINT32 counter;
        TSS2_RC rc;
        int r = 0;

        if (!t || pcr >= PCR_MAX || bank < 0 || bank >= _IVER_HASH_MAX || bank_alg[bank] == 0)
                return -EINVAL;
        int ready = connected(t);
        if (ready < 0)
                return ready;
        sel.pcrSelections[0].hash = bank_alg[bank];
        sel.pcrSelections[0].sizeofSelect = 3;
        sel.pcrSelections[0].pcrSelect[pcr / 8] = 1u << (pcr % 8);
        rc = Esys_PCR_Read(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &sel, &counter, &out, &values);
        if (rc != TSS2_RC_SUCCESS)
                return tss_error(t, rc, "PCR_Read");
        if (values->count != 1 || values->digests[0].size != iver_hash_algo_size(bank))
                r = -ENOENT;    /* bank not active */
        else {
                *ret = (IverDigest) { .algo = bank, .len = values->digests[0].size };
                memcpy(ret->bytes, values->digests[0].buffer, ret->len);
        }
        Esys_Free(out);
        Esys_Free(values);
        return r;
}

int iver_tpm_ak_load(IverTpm *t) {
        TPM2B_SENSITIVE_CREATE sensitive = {};
        TPM2B_PUBLIC in = {
                .publicArea = {
                        .type = TPM2_ALG_ECC,
                        .nameAlg = TPM2_ALG_SHA256,
                        .objectAttributes = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT |
                                            TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
                                            TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
                                            TPMA_OBJECT_NODA, /* an empty-auth key: lockout after unorderly shutdowns must not stop quotes */
                        .parameters.eccDetail = {
                                .symmetric.algorithm = TPM2_ALG_NULL,
                                .scheme = { .scheme = TPM2_ALG_ECDSA, .details.ecdsa.hashAlg = TPM2_ALG_SHA256 },
                                .curveID = TPM2_ECC_NIST_P256,
                                .kdf.scheme = TPM2_ALG_NULL,
                        },
                },
        };
        TPM2B_DATA outside = {};
        TPML_PCR_SELECTION creation_pcr = {};
        TSS2_RC rc;

        if (!t)
                return -EINVAL;
        int ready = connected(t);
        if (ready < 0)
                return ready;
        if (t->ak != ESYS_TR_NONE)
                return 0;
        rc = Esys_CreatePrimary(t->esys, ESYS_TR_RH_ENDORSEMENT, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                &sensitive, &in, &outside, &creation_pcr, &t->ak, &t->ak_public, NULL, NULL, NULL);
        if (rc != TSS2_RC_SUCCESS) {
                t->ak = ESYS_TR_NONE;
                t->ak_public = NULL;
                return tss_error(t, rc, "CreatePrimary(AK)");
        }
        return 0;
}

static int ecc_public_to_pem(const TPMS_ECC_POINT *q, char **ret, size_t *ret_len) {
        uint8_t point[1 + 2 * 32] = { 0x04 };
        OSSL_PARAM_BLD *bld = NULL;
        OSSL_PARAM *params = NULL;
        EVP_PKEY_CTX *ctx = NULL;
        EVP_PKEY *pkey = NULL;
        BIO *bio = NULL;
        int r = -EIO;

        if (q->x.size > 32 || q->y.size > 32)
                return -EBADMSG;
        /* left-pad x and y to the field size */
        memcpy(point + 1 + 32 - q->x.size, q->x.buffer, q->x.size);
        memcpy(point + 1 + 64 - q->y.size, q->y.buffer, q->y.size);

        bld = OSSL_PARAM_BLD_new();
        if (!bld || !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
            !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point)))
                goto out;
        params = OSSL_PARAM_BLD_to_param(bld);
        ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
        if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
            EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
                goto out;
        bio = BIO_new(BIO_s_mem());
        if (!bio || PEM_write_bio_PUBKEY(bio, pkey) != 1)
                goto out;
        char *data;
        long n = BIO_get_mem_data(bio, &data);
        char *s = malloc(n + 1);
        if (!s) {
                r = -ENOMEM;
                goto out;
        }
        memcpy(s, data, n);
        s[n] = 0;
        *ret = s;
        if (ret_len)
                *ret_len = n;
        r = 0;
out:
        BIO_free(bio);
        EVP_PKEY_free(pkey);
        EVP_PKEY_CTX_free(ctx);
        OSSL_PARAM_free(params);
        OSSL_PARAM_BLD_free(bld);
        return r;
}

int iver_tpm_ak_pem(IverTpm *t, char **ret) {
        int r = iver_tpm_ak_load(t);
        if (r < 0)
                return r;
        return ecc_public_to_pem(&t->ak_public->publicArea.unique.ecc, ret, NULL);
}

IverTpmQuote *iver_tpm_quote_free(IverTpmQuote *q) {
        if (!q)
                return NULL;
        free(q->msg);
        free(q->sig);
        free(q->pcrs);
        free(q->ak_pem);
        free(q);
        return NULL;
}

/* Read the selected PCRs in selection order and hash them with SHA-256 (the AK's name alg). */
static int read_selection(IverTpm *t, uint32_t pcr_mask, unsigned bank_mask, uint8_t **ret, size_t *ret_len) {
        size_t size = 0;
        int r;

        for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++)
                if (bank_mask & IVER_TPM_BANK(a))
                        size += iver_hash_algo_size(a) * __builtin_popcount(pcr_mask);
        _cleanup_free_ uint8_t *buf = malloc(size ? size : 1);
        if (!buf)
                return -ENOMEM;
        uint8_t *p = buf;
        for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++) {
                if (!(bank_mask & IVER_TPM_BANK(a)))
                        continue;
                for (unsigned pcr = 0; pcr < PCR_MAX; pcr++) {
                        if (!(pcr_mask & (1u << pcr)))
                                continue;
                        IverDigest d;
                        r = iver_tpm_pcr_read(t, pcr, a, &d);
                        if (r < 0)
                                return r;
                        memcpy(p, d.bytes, d.len);
                        p += d.len;
                }
        }
        *ret = TAKE_PTR(buf);
        *ret_len = size;
        return 0;
}

/* The PCR selection the quote signs, and its text form ("sha256:10,11+sha1:10") into ret_text. */
static void quote_selection(uint32_t pcr_mask, unsigned bank_mask, TPML_PCR_SELECTION *ret_sel, char *ret_text) {
        char *s = ret_text;

        for (IverHashAlgo a = 0; a < _IVER_HASH_MAX; a++) {
                if (!(bank_mask & IVER_TPM_BANK(a)))
                        continue;
                TPMS_PCR_SELECTION *ps = &ret_sel->pcrSelections[ret_sel->count++];
                ps->hash = bank_alg[a];
                ps->sizeofSelect = 3;
                ps->pcrSelect[0] = pcr_mask & 0xff;
                ps->pcrSelect[1] = (pcr_mask >> 8) & 0xff;
                ps->pcrSelect[2] = (pcr_mask >> 16) & 0xff;
                s += sprintf(s, "%s%s:", s == ret_text ? "" : "+", iver_hash_algo_to_string(a));
                bool first = true;
                for (unsigned pcr = 0; pcr < PCR_MAX; pcr++)
                        if (pcr_mask & (1u << pcr)) {
                                s += sprintf(s, first ? "%u" : ",%u", pcr);
                                first = false;
                        }
        }
}

/* The TPM lost its transient objects (restarted, or a resource manager flushed them) while our
 * connection lived on: forget the stale AK and make it again. */
static int ak_reload(IverTpm *t) {
        (void) Esys_TR_Close(t->esys, &t->ak);
        t->ak = ESYS_TR_NONE;
        Esys_Free(t->ak_public);
        t->ak_public = NULL;
        return iver_tpm_ak_load(t);
}

/* Keep the attestation and its marshalled signature in q, replacing an earlier attempt's, and
 * parse the attestation into ret_parsed. Takes (and frees) attest and sig. */
static int quote_keep(IverTpm *t, IverTpmQuote *q, TPM2B_ATTEST *attest, TPMT_SIGNATURE *sig,
                      TPMS_ATTEST *ret_parsed) {
        size_t off = 0;
        TSS2_RC rc, rc2;

        free(q->msg);
        free(q->sig);
        free(q->pcrs);
        q->pcrs = NULL;
        q->msg = malloc(attest->size);
        q->sig = malloc(sizeof(TPMT_SIGNATURE));
        if (q->msg) {
                memcpy(q->msg, attest->attestationData, attest->size);
                q->msg_len = attest->size;
        }
        rc = q->sig ? Tss2_MU_TPMT_SIGNATURE_Marshal(sig, q->sig, sizeof(TPMT_SIGNATURE), &off) : 0;
        q->sig_len = off;
        rc2 = Tss2_MU_TPMS_ATTEST_Unmarshal(attest->attestationData, attest->size, NULL, ret_parsed);
        Esys_Free(attest);
        Esys_Free(sig);
        if (!q->msg || !q->sig)
                return -ENOMEM;
        if (rc != TSS2_RC_SUCCESS)
                return tss_error(t, rc, "TPMT_SIGNATURE_Marshal");
        if (rc2 != TSS2_RC_SUCCESS)
                return tss_error(t, rc2, "TPMS_ATTEST_Unmarshal");
        return 0;
}

/* Read the quoted PCRs into q and say whether they hash to the digest the quote signed:
 * 1 yes, 0 no (an extend came between), < 0 error. */
static int quote_matches(IverTpm *t, IverTpmQuote *q, uint32_t pcr_mask, unsigned bank_mask,
                         const TPMS_ATTEST *parsed) {
        uint8_t h[32];
        int r;

        r = read_selection(t, pcr_mask, bank_mask, &q->pcrs, &q->pcrs_len);
        if (r < 0)
                return r;
        if (EVP_Digest(q->pcrs, q->pcrs_len, h, NULL, EVP_sha256(), NULL) != 1)
                return -EIO;
        const TPM2B_DIGEST *qd = &parsed->attested.quote.pcrDigest;
        return qd->size == sizeof(h) && memcmp(qd->buffer, h, sizeof(h)) == 0;
}

int iver_tpm_quote(IverTpm *t, uint32_t pcr_mask, unsigned bank_mask, const uint8_t *nonce, size_t nonce_len,
                   IverTpmQuote **ret) {
        TPML_PCR_SELECTION sel = {};
        TPMT_SIG_SCHEME scheme = { .scheme = TPM2_ALG_NULL };
        TPM2B_DATA qualifying = {};
        int r;

        if (!t || pcr_mask == 0 || pcr_mask >= (1u << PCR_MAX) || nonce_len > sizeof(qualifying.buffer) ||
            (!nonce && nonce_len > 0))
                return -EINVAL;
        r = iver_tpm_ak_load(t);
        if (r < 0)
                return r;
        if (bank_mask == 0)
                bank_mask = t->banks;
        if ((bank_mask & ~t->banks) != 0 || bank_mask == 0)
                return -EINVAL;

        _cleanup_(iver_tpm_quote_freep) IverTpmQuote *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        quote_selection(pcr_mask, bank_mask, &sel, q->selection);
        qualifying.size = nonce_len;
        if (nonce_len > 0)
                memcpy(qualifying.buffer, nonce, nonce_len);

        /* An extend between the quote and the reads would make the values
         * disagree with the quoted digest: try again. */
        for (unsigned attempt = 0;; attempt++) {
                TPM2B_ATTEST *attest = NULL;
                TPMT_SIGNATURE *sig = NULL;
                TPMS_ATTEST parsed;
                TSS2_RC rc;

                rc = Esys_Quote(t->esys, t->ak, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &qualifying,
                                &scheme, &sel, &attest, &sig);
                if ((rc & 0xfff) == (TPM2_RC_REFERENCE_H0 & 0xfff) && attempt == 0) {
                        /* A stale AK: make it again and retry, once. */
                        r = ak_reload(t);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (rc != TSS2_RC_SUCCESS)
                        return tss_error(t, rc, "Quote");
                r = quote_keep(t, q, attest, sig, &parsed);
                if (r < 0)
                        return r;
                r = quote_matches(t, q, pcr_mask, bank_mask, &parsed);
                if (r < 0)
                        return r;
                if (r > 0)
                        break;
                if (attempt >= 4)
                        return -EAGAIN;
        }

        r = ecc_public_to_pem(&t->ak_public->publicArea.unique.ecc, &q->ak_pem, &q->ak_pem_len);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(q);
        return 0;
}

static int write_file(int dir_fd, const char *name, const void *buf, size_t n) {
        return iver_write_file_atomic_at(dir_fd, name, buf, n, 0644, 0);
}

int iver_tpm_quote_write(const IverTpmQuote *q, const char *dir) {
        int r;

        if (!q || !dir)
                return -EINVAL;
        _cleanup_close_ int dir_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (dir_fd < 0)
                return negative_errno();
        r = write_file(dir_fd, IVER_QUOTE_MSG_FILE, q->msg, q->msg_len);
        if (r >= 0)
                r = write_file(dir_fd, IVER_QUOTE_SIG_FILE, q->sig, q->sig_len);
        if (r >= 0)
                r = write_file(dir_fd, IVER_QUOTE_PCRS_FILE, q->pcrs, q->pcrs_len);
        if (r >= 0)
                r = write_file(dir_fd, IVER_QUOTE_AK_FILE, q->ak_pem, q->ak_pem_len);
        return r;
}
