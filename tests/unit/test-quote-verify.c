/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/quote-verify.c without a TPM: quotes built here as a TPM builds them
 * (TPMS_ATTEST, TPMT_SIGNATURE ECDSA-SHA256 over it with an OpenSSL P-256
 * key), then each part spoiled in turn: every failure gets its bit, a good
 * quote over several PCRs replays to exactly the point of the list it holds. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "iver/imalog.h"
#include "iver/tpm.h"

typedef struct Buf {
        uint8_t b[8192];
        size_t n;
} Buf;

static void put(Buf *b, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
                b->b[b->n++] = (uint8_t) (v >> (8 * (n - 1 - i)));
}
static void put2b(Buf *b, const void *p, size_t n) {
        put(b, n, 2);
        memcpy(b->b + b->n, p, n);
        b->n += n;
}

static EVP_PKEY *key;
static char pem[1024];
static size_t pem_len;
static IverImaLog *list;
static uint8_t list_bin[65536];
static size_t list_len;

/* A list: entries on PCRs 16 and 10, interleaved. */
static const uint32_t pcr_of[] = { 16, 16, 10, 16, 10, 10, 16 };
#define N_ENTRIES (sizeof(pcr_of) / sizeof(pcr_of[0]))

static void setup(void) {
        key = EVP_EC_gen("P-256");
        ck_assert_ptr_nonnull(key);
        BIO *bio = BIO_new(BIO_s_mem());
        ck_assert_int_eq(PEM_write_bio_PUBKEY(bio, key), 1);
        pem_len = (size_t) BIO_read(bio, pem, sizeof(pem));
        BIO_free(bio);
        ck_assert_int_eq(iver_imalog_new(&list), 0);
        list_len = 0;
        for (unsigned i = 0; i < N_ENTRIES; i++) {
                IverImaEntry *e = NULL;
                uint8_t d[32];
                char p[32];
                memset(d, (int) i + 7, sizeof(d));
                snprintf(p, sizeof(p), "/q/%u", i);
                ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, pcr_of[i], IVER_HASH_SHA256, d, 32, p,
                                                       strlen(p), NULL, 0, 0, &e), 0);
                int w = iver_imalog_entry_to_binary(e, list_bin + list_len, sizeof(list_bin) - list_len);
                ck_assert_int_gt(w, 0);
                list_len += (size_t) w;
                ck_assert_int_eq(iver_imalog_push(list, e), 0);
        }
}

static void teardown(void) {
        EVP_PKEY_free(key);
        iver_imalog_free(list);
}

typedef struct Quote {
        Buf msg, sig, pcrs;
} Quote;

/* A quote of pcrs (mask) in sha1+sha256 holding the first k entries. */
static void make_quote(Quote *q, uint32_t mask, size_t k, const uint8_t *nonce, size_t nonce_len) {
        static const struct { uint16_t alg; IverHashAlgo a; } banks[] = { { 0x0004, IVER_HASH_SHA1 }, { 0x000b, IVER_HASH_SHA256 } };
        memset(q, 0, sizeof(*q));
        for (size_t b = 0; b < 2; b++)
                for (unsigned p = 0; p < 24; p++)
                        if (mask & (1u << p)) {
                                IverDigest v;
                                ck_assert_int_eq(iver_imalog_replay(list, k, p, banks[b].a, &v), 0);
                                memcpy(q->pcrs.b + q->pcrs.n, v.bytes, v.len);
                                q->pcrs.n += v.len;
                        }
        uint8_t pd[32];
        ck_assert_int_eq(EVP_Digest(q->pcrs.b, q->pcrs.n, pd, NULL, EVP_sha256(), NULL), 1);
        Buf *m = &q->msg;
        put(m, 0xff544347u, 4);
        put(m, 0x8018, 2);
        put2b(m, "\0\x0bsigner-name-of-34-bytes-0123456789", 34);
        put2b(m, nonce, nonce_len);
        put(m, 123456789, 8);   /* clock */
        put(m, 1, 4);           /* resetCount */
        put(m, 2, 4);           /* restartCount */
        put(m, 1, 1);           /* safe */
        put(m, 0x2020, 8);      /* firmwareVersion */
        put(m, 2, 4);
        for (size_t b = 0; b < 2; b++) {
                put(m, banks[b].alg, 2);
                put(m, 3, 1);
                put(m, mask & 0xff, 1);
                put(m, (mask >> 8) & 0xff, 1);
                put(m, (mask >> 16) & 0xff, 1);
        }
        put2b(m, pd, 32);

        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        uint8_t der[128];
        size_t der_len = sizeof(der);
        ck_assert_int_eq(EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
        ck_assert_int_eq(EVP_DigestSign(ctx, der, &der_len, m->b, m->n), 1);
        EVP_MD_CTX_free(ctx);
        const uint8_t *p = der;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long) der_len);
        ck_assert_ptr_nonnull(es);
        uint8_t r[32], s[32];
        ck_assert_int_eq(BN_bn2binpad(ECDSA_SIG_get0_r(es), r, 32), 32);
        ck_assert_int_eq(BN_bn2binpad(ECDSA_SIG_get0_s(es), s, 32), 32);
        ECDSA_SIG_free(es);
        put(&q->sig, 0x0018, 2);
        put(&q->sig, 0x000b, 2);
        put2b(&q->sig, r, 32);
        put2b(&q->sig, s, 32);
}

static const uint8_t nonce[] = { 0xde, 0xad, 0xbe, 0xef };

static IverQuoteReport verify(const Quote *q, const uint8_t *l, size_t ll) {
        IverQuoteReport rep;
        ck_assert_int_eq(iver_quote_verify(pem, pem_len, q->msg.b, q->msg.n, q->sig.b, q->sig.n, q->pcrs.b, q->pcrs.n,
                                           nonce, sizeof(nonce), l, ll, &rep), 0);
        return rep;
}

START_TEST(test_good_every_prefix) {
        /* both PCRs quoted: verified at every point, the prefix exact */
        for (size_t k = 0; k <= N_ENTRIES; k++) {
                Quote q;
                make_quote(&q, (1u << 16) | (1u << 10), k, nonce, sizeof(nonce));
                IverQuoteReport rep = verify(&q, list_bin, list_len);
                ck_assert_msg(rep.failed == 0, "k=%zu: %s", k, rep.message);
                ck_assert_uint_eq(rep.list_entries, N_ENTRIES);
                ck_assert_uint_eq(rep.matched_prefix, k);
                ck_assert_uint_eq(rep.pcr_mask, (1u << 16) | (1u << 10));
                ck_assert_uint_eq(rep.bank_mask, IVER_TPM_BANK(IVER_HASH_SHA1) | IVER_TPM_BANK(IVER_HASH_SHA256));
        }
        /* no list: replay not checked, the rest verified */
        Quote q;
        make_quote(&q, 1u << 16, 2, nonce, sizeof(nonce));
        IverQuoteReport rep = verify(&q, NULL, 0);
        ck_assert_uint_eq(rep.failed, 0);
}
END_TEST

START_TEST(test_unquoted_pcr) {
        /* the list extends PCR 10 too, the quote covers only 16: proves nothing */
        Quote q;
        make_quote(&q, 1u << 16, N_ENTRIES, nonce, sizeof(nonce));
        IverQuoteReport rep = verify(&q, list_bin, list_len);
        ck_assert_uint_eq(rep.failed, IVER_QUOTE_BAD_REPLAY);
        ck_assert_ptr_nonnull(strstr(rep.message, "PCR 10"));
}
END_TEST

START_TEST(test_spoiled) {
        Quote q;
        IverQuoteReport rep;
        uint32_t mask = (1u << 16) | (1u << 10);

        /* another nonce */
        make_quote(&q, mask, 3, (const uint8_t *) "\1\2", 2);
        rep = verify(&q, list_bin, list_len);
        ck_assert_uint_eq(rep.failed, IVER_QUOTE_BAD_NONCE);

        /* a PCR value changed: the digest in the signed message no longer matches */
        make_quote(&q, mask, 3, nonce, sizeof(nonce));
        q.pcrs.b[5] ^= 1;
        rep = verify(&q, list_bin, list_len);
        ck_assert(rep.failed & IVER_QUOTE_BAD_PCRS);
        ck_assert(!(rep.failed & IVER_QUOTE_BAD_SIGNATURE));

        /* the message changed after signing */
        make_quote(&q, mask, 3, nonce, sizeof(nonce));
        q.msg.b[20] ^= 1;
        rep = verify(&q, list_bin, list_len);
        ck_assert(rep.failed & IVER_QUOTE_BAD_SIGNATURE);

        /* truncated message */
        make_quote(&q, mask, 3, nonce, sizeof(nonce));
        q.msg.n -= 5;
        rep = verify(&q, list_bin, list_len);
        ck_assert(rep.failed & IVER_QUOTE_BAD_FORMAT);

        /* another key */
        make_quote(&q, mask, 3, nonce, sizeof(nonce));
        EVP_PKEY *other = EVP_EC_gen("P-256");
        char opem[1024];
        BIO *bio = BIO_new(BIO_s_mem());
        PEM_write_bio_PUBKEY(bio, other);
        size_t olen = (size_t) BIO_read(bio, opem, sizeof(opem));
        BIO_free(bio);
        EVP_PKEY_free(other);
        ck_assert_int_eq(iver_quote_verify(opem, olen, q.msg.b, q.msg.n, q.sig.b, q.sig.n, q.pcrs.b, q.pcrs.n, nonce,
                                           sizeof(nonce), list_bin, list_len, &rep), 0);
        ck_assert(rep.failed & IVER_QUOTE_BAD_SIGNATURE);

        /* a list that is not the one the PCRs hold: an entry changed */
        make_quote(&q, mask, N_ENTRIES, nonce, sizeof(nonce));
        uint8_t bad[sizeof(list_bin)];
        memcpy(bad, list_bin, list_len);
        bad[list_len - 3] ^= 1;
        rep = verify(&q, bad, list_len);
        ck_assert(rep.failed & (IVER_QUOTE_BAD_LIST | IVER_QUOTE_BAD_REPLAY));

        /* a torn list */
        rep = verify(&q, list_bin, list_len - 1);
        ck_assert(rep.failed & IVER_QUOTE_BAD_LIST);

        /* a list missing its last entry, the PCRs holding it: no prefix */
        size_t shorter = list_len - iver_imalog_entry_binary_size(iver_imalog_get(list, N_ENTRIES - 1));
        rep = verify(&q, list_bin, shorter);
        ck_assert_uint_eq(rep.failed, IVER_QUOTE_BAD_REPLAY);

        /* garbage signature and AK */
        make_quote(&q, mask, 3, nonce, sizeof(nonce));
        q.sig.b[0] = 0x77;
        rep = verify(&q, list_bin, list_len);
        ck_assert(rep.failed & IVER_QUOTE_BAD_FORMAT);
        ck_assert_int_eq(iver_quote_verify("junk", 4, q.msg.b, q.msg.n, q.sig.b, q.sig.n, q.pcrs.b, q.pcrs.n, nonce,
                                           sizeof(nonce), list_bin, list_len, &rep), 0);
        ck_assert(rep.failed & IVER_QUOTE_BAD_FORMAT);
        ck_assert(rep.message[0] != 0);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("quote-verify");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_good_every_prefix);
        tcase_add_test(tc, test_unquoted_pcr);
        tcase_add_test(tc, test_spoiled);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(suite());
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
