/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iver/digest.h"

/* The TPM, through tpm2-tss ESAPI and a TCTI string. lib/tpm.c is the only
 * module that talks to tpm2-tss; no TSS type or return code leaves it.
 *
 * Every call blocks until the TPM answers (tens of µs on swtpm, milliseconds
 * on hardware, seconds or never on a stalled one): the daemon calls these only
 * from its TPM thread (daemon/iverd/tpm-thread.c), never from the event loop.
 * An IverTpm is used by one thread at a time. Errors are -errno; a TSS
 * return code becomes one by its class (iver_tpm_rc_class):
 *   -EAGAIN     transient: send the same command again shortly
 *   -ENXIO      lost: the TPM cannot be reached or the connection's state is
 *               gone; disconnect and connect again later
 *   -EREMOTEIO  permanent: the TPM refused this command; it fails again
 *   -ENOMEDIUM  the TCTI is "none"
 *   -ENOTCONN   not connected
 *   -EINVAL, -ENOMEM, -ENOENT, -EIO: the caller's arguments, memory, a bank
 *               not active, a local failure (as each call says)
 * After a failure, iver_tpm_last_rc() and iver_tpm_last_error() give the TSS
 * return code and its Tss2_RC_Decode() text. */

typedef struct IverTpm IverTpm;

/* What a failed TPM command asks of the caller (tpm2-tools' tool_rc idea). */
typedef enum IverTpmErrorClass {
        IVER_TPM_TRANSIENT,     /* RETRY, YIELDED, TESTING, NV rate, TCTI try-again: the same command, shortly */
        IVER_TPM_LOST,          /* TCTI I/O, no connection, a TPM not started, transient objects or
                                 * sessions gone or exhausted, an ESAPI/SYS failure: reconnect */
        IVER_TPM_PERMANENT,     /* the TPM refused the command itself (format-one errors, locality,
                                 * lockout, failure mode, disabled command), or its answer cannot be
                                 * unmarshalled: the same command fails again */
        _IVER_TPM_ERROR_CLASS_MAX,
        _IVER_TPM_ERROR_CLASS_INVALID = -EINVAL,
} IverTpmErrorClass;

/* The class of a TSS2_RC (any layer); _IVER_TPM_ERROR_CLASS_INVALID for success. */
IverTpmErrorClass iver_tpm_rc_class(uint32_t rc);
/* The class of a -errno from the calls below: -EAGAIN transient, -EREMOTEIO
 * permanent, anything else lost (reconnecting is what to do when in doubt);
 * _IVER_TPM_ERROR_CLASS_INVALID for r >= 0. */
IverTpmErrorClass iver_tpm_errno_class(int r);
const char *iver_tpm_error_class_to_string(IverTpmErrorClass c);

/* Bitmask of 1u << IverHashAlgo. */
#define IVER_TPM_BANK(a) (1u << (a))

/* Set up for tcti ("device:/dev/tpmrm0", "swtpm:path=/run/s.sock",
 * "swtpm:host=127.0.0.1,port=2321", "mssim:…", or "none": list only). No I/O. */
int iver_tpm_new(const char *tcti, IverTpm **ret);
IverTpm *iver_tpm_free(IverTpm *t);
static inline void iver_tpm_freep(IverTpm **t) {
        if (*t)
                *t = iver_tpm_free(*t);
}

bool iver_tpm_is_none(const IverTpm *t);
bool iver_tpm_is_connected(const IverTpm *t);

/* Connect: load the TCTI, TPM2_Startup(CLEAR) (an already started TPM is
 * fine), flush stale transient objects (swtpm has no resource manager and
 * only 3 slots), and read which of the sha1/sha256/sha384/sha512 banks are
 * active. Sets TSS2_LOG=all+none unless TSS2_LOG is set. Reconnects if
 * already connected. */
int iver_tpm_connect(IverTpm *t);
/* Drop the connection (flushing the attestation key). */
void iver_tpm_disconnect(IverTpm *t);

/* Active banks among sha1/sha256/sha384/sha512 (IVER_TPM_BANK mask); 0 when
 * not connected. */
unsigned iver_tpm_banks(const IverTpm *t);

/* TPM2_PCR_Extend of pcr with one digest a bank, all in one command. digests
 * must hold one digest for each of one or more active banks, no bank twice
 * (-EINVAL otherwise); banks not given are left alone (Banks=). */
int iver_tpm_extend(IverTpm *t, unsigned pcr, const IverDigest *digests, size_t n_digests);

/* TPM2_PCR_Read of one PCR in one bank. */
int iver_tpm_pcr_read(IverTpm *t, unsigned pcr, IverHashAlgo bank, IverDigest *ret);
/* The TPM's reset and restart counts (TPM2_ReadClock: clockInfo.resetCount
 * << 32 | restartCount): they move when the TPM was reset or restarted, its
 * PCRs with it (a virtual TPM restarted under a running host). */
int iver_tpm_reset_count(IverTpm *t, uint64_t *ret);

/* A quote as the files tpm2_checkquote reads. */
typedef struct IverTpmQuote {
        uint8_t *msg;           /* quote.msg: TPM2B_ATTEST.attestationData (marshalled TPMS_ATTEST) */
        size_t msg_len;
        uint8_t *sig;           /* quote.sig: marshalled TPMT_SIGNATURE */
        size_t sig_len;
        uint8_t *pcrs;          /* pcrs.out: PCR values concatenated in selection order */
        size_t pcrs_len;        /* ("values" format: banks in IverHashAlgo order, PCRs ascending) */
        char *ak_pem;           /* ak.pub.pem: the attestation key's public key */
        size_t ak_pem_len;
        char selection[128];    /* the selection as tpm2_checkquote -l wants it: "sha1:16+sha256:16" */
} IverTpmQuote;

/* Create the attestation key if not yet loaded: a restricted signing ECC
 * NIST P-256 ECDSA-SHA256 key, symmetric NULL, as a primary in the
 * endorsement hierarchy, so the same key comes back on every start. */
int iver_tpm_ak_load(IverTpm *t);
/* The AK's public key in PEM (SubjectPublicKeyInfo). */
int iver_tpm_ak_pem(IverTpm *t, char **ret);

/* TPM2_Quote with the AK over pcr_mask (bit N = PCR N, N < 24) in the banks of
 * bank_mask (0: all active banks), with nonce as qualifying data (≤ 64 bytes).
 * The PCR values are read after the quote and checked against its digest
 * (retried if an extend slipped in between). */
int iver_tpm_quote(IverTpm *t, uint32_t pcr_mask, unsigned bank_mask, const uint8_t *nonce, size_t nonce_len,
                   IverTpmQuote **ret);
IverTpmQuote *iver_tpm_quote_free(IverTpmQuote *q);
static inline void iver_tpm_quote_freep(IverTpmQuote **q) {
        if (*q)
                *q = iver_tpm_quote_free(*q);
}
/* Write quote.msg, quote.sig, pcrs.out and ak.pub.pem into dir (existing). */
int iver_tpm_quote_write(const IverTpmQuote *q, const char *dir);

/* The bundle's file names, as iverctl quote writes them and
 * iver_quote_verify_dir reads them (one place for both). */
#define IVER_QUOTE_MSG_FILE "quote.msg"
#define IVER_QUOTE_SIG_FILE "quote.sig"
#define IVER_QUOTE_PCRS_FILE "pcrs.out"
#define IVER_QUOTE_AK_FILE "ak.pub.pem"
#define IVER_QUOTE_LIST_FILE "measurements.bin"
#define IVER_QUOTE_NONCE_FILE "nonce"

/* The TSS return code of the last failure (0 if none) and its decoded text. */
uint32_t iver_tpm_last_rc(const IverTpm *t);
const char *iver_tpm_last_error(const IverTpm *t);

/* ---- lib/quote-verify.c: with OpenSSL alone, no TPM ---- */

enum {
        IVER_QUOTE_BAD_FORMAT    = 1 << 0, /* quote.msg / quote.sig / pcrs.out / AK unreadable or malformed */
        IVER_QUOTE_BAD_SIGNATURE = 1 << 1, /* signature over quote.msg does not verify with the AK */
        IVER_QUOTE_BAD_NONCE     = 1 << 2, /* extraData differs from the nonce */
        IVER_QUOTE_BAD_PCRS      = 1 << 3, /* pcrDigest differs from the hash of pcrs.out */
        IVER_QUOTE_BAD_LIST      = 1 << 4, /* measurements.bin unreadable or corrupt */
        IVER_QUOTE_BAD_REPLAY    = 1 << 5, /* no prefix of the list replays to the quoted PCRs */
};

typedef struct IverQuoteReport {
        unsigned failed;                /* IVER_QUOTE_BAD_* bits; 0 = verified */
        uint32_t pcr_mask;              /* the quoted selection */
        unsigned bank_mask;
        size_t list_entries;            /* entries in the list */
        size_t matched_prefix;          /* entries the quoted PCRs hold (if replay passed) */
        unsigned padded_banks;          /* banks (IVER_TPM_BANK bits) whose PCRs hold the kernel's
                                         * padded SHA-1 form (iver_imalog_entry_padded_digest) */
        char message[256];              /* the first failure, human readable */
} IverQuoteReport;

/* Verify a quote from its parts: ak_pem (PEM public key), msg (TPMS_ATTEST),
 * sig (TPMT_SIGNATURE: ECDSA or RSASSA), pcrs (values in the quote's
 * selection order) and a list (may be NULL: replay not checked). Every check
 * runs; returns 0 with *ret filled (ret->failed == 0: all passed), or -errno
 * only when the check itself could not run (out of memory). */
int iver_quote_verify(const char *ak_pem, size_t ak_pem_len,
                      const uint8_t *msg, size_t msg_len,
                      const uint8_t *sig, size_t sig_len,
                      const uint8_t *pcrs, size_t pcrs_len,
                      const uint8_t *nonce, size_t nonce_len,
                      const uint8_t *list, size_t list_len,
                      IverQuoteReport *ret);
/* The same over a directory written by `iverctl quote`: quote.msg,
 * quote.sig, pcrs.out, measurements.bin and ak.pub.pem (or ak_pem_path if
 * not NULL). A missing file counts as a failure, not an error. */
int iver_quote_verify_dir(const char *dir, const char *ak_pem_path, const uint8_t *nonce, size_t nonce_len,
                          IverQuoteReport *ret);
