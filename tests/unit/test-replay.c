/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/replay.c: replay of a list into PCR values (computed here by hand with
 * OpenSSL), and the search for the one point of the list the PCRs hold, over
 * several PCRs and banks: entries of PCRs not given are never counted as
 * extended when they come last. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>

#include "iver/imalog.h"

#define N 12

static IverImaEntry *mk(uint32_t pcr, unsigned i, bool violation) {
        IverImaEntry *e = NULL;
        uint8_t d[32];
        char p[32];
        memset(d, (int) i + 1, sizeof(d));
        snprintf(p, sizeof(p), "/replay/%u", i);
        if (violation)
                ck_assert_int_eq(iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, pcr, IVER_HASH_SHA256, p,
                                                                 strlen(p), 0, &e), 0);
        else
                ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, pcr, IVER_HASH_SHA256, d, 32, p, strlen(p),
                                                       NULL, 0, 0, &e), 0);
        return e;
}

/* v = H(v || H(template_data)) (or 0xFF… for a violation), by hand. */
static void step(const EVP_MD *md, const IverImaEntry *e, IverDigest *v) {
        uint8_t buf[128], d[64];
        unsigned n = (unsigned) EVP_MD_get_size(md), len;
        if (e->violation)
                memset(d, 0xff, n);
        else
                ck_assert_int_eq(EVP_Digest(e->template_data, e->template_data_len, d, &len, md, NULL), 1);
        memcpy(buf, v->bytes, n);
        memcpy(buf + n, d, n);
        ck_assert_int_eq(EVP_Digest(buf, 2 * n, v->bytes, &len, md, NULL), 1);
}

/* A list on PCRs 16 and 10: entries 0-4 PCR 16, 5 PCR 10, 6 PCR 16 (a
 * violation), 7-8 PCR 10, 9-10 PCR 16, 11 PCR 10. vals[k][pcr16/10][bank] =
 * the values after the first k entries. */
static const uint32_t pcr_of[N] = { 16, 16, 16, 16, 16, 10, 16, 10, 10, 16, 16, 10 };
static IverImaEntry *ents[N];
static IverDigest vals[N + 1][2][2];

static void setup(void) {
        IverDigest cur[2][2];
        for (int p = 0; p < 2; p++) {
                cur[p][0] = (IverDigest) { .algo = IVER_HASH_SHA1, .len = 20 };
                cur[p][1] = (IverDigest) { .algo = IVER_HASH_SHA256, .len = 32 };
        }
        memcpy(vals[0], cur, sizeof(cur));
        for (unsigned i = 0; i < N; i++) {
                ents[i] = mk(pcr_of[i], i, i == 6);
                int p = pcr_of[i] == 16 ? 0 : 1;
                step(EVP_sha1(), ents[i], &cur[p][0]);
                step(EVP_sha256(), ents[i], &cur[p][1]);
                memcpy(vals[i + 1], cur, sizeof(cur));
        }
}

static void teardown(void) {
        for (unsigned i = 0; i < N; i++)
                iver_imalog_entry_free(ents[i]);
}

START_TEST(test_replay_by_hand) {
        IverDigest got;
        for (unsigned k = 0; k <= N; k++) {
                ck_assert_int_eq(iver_imalog_replay_entries((const IverImaEntry *const *) ents, k, 16, IVER_HASH_SHA256, &got), 0);
                ck_assert_mem_eq(got.bytes, vals[k][0][1].bytes, 32);
                ck_assert_int_eq(iver_imalog_replay_entries((const IverImaEntry *const *) ents, k, 10, IVER_HASH_SHA1, &got), 0);
                ck_assert_uint_eq(got.len, 20);
                ck_assert_mem_eq(got.bytes, vals[k][1][0].bytes, 20);
        }
        /* the IverImaLog form, n past the end = all */
        IverImaLog *l = NULL;
        ck_assert_int_eq(iver_imalog_new(&l), 0);
        for (unsigned i = 0; i < N; i++)
                ck_assert_int_eq(iver_imalog_push(l, mk(pcr_of[i], i, i == 6)), 0);
        ck_assert_int_eq(iver_imalog_replay(l, SIZE_MAX, 16, IVER_HASH_SHA256, &got), 0);
        ck_assert_mem_eq(got.bytes, vals[N][0][1].bytes, 32);
        /* a bank that is not one: error */
        ck_assert_int_lt(iver_imalog_replay(l, SIZE_MAX, 16, _IVER_HASH_MAX, &got), 0);
        iver_imalog_free(l);
}
END_TEST

START_TEST(test_prefix_all_pcrs) {
        /* both PCRs, both banks: exactly k, for every k */
        for (unsigned k = 0; k <= N; k++) {
                IverPcrValue v[4] = {
                        { 16, vals[k][0][0] }, { 16, vals[k][0][1] }, { 10, vals[k][1][0] }, { 10, vals[k][1][1] },
                };
                size_t prefix = SIZE_MAX;
                ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, v, 4, &prefix), 0);
                ck_assert_uint_eq(prefix, k);
        }
}
END_TEST

START_TEST(test_prefix_other_pcr_not_counted) {
        /* PCR 16 only: entries 7-8 and 11 (PCR 10) after its last entry are not counted */
        for (unsigned k = 0; k <= N; k++) {
                IverPcrValue v[2] = { { 16, vals[k][0][0] }, { 16, vals[k][0][1] } };
                size_t prefix = SIZE_MAX, want = k;
                while (want > 0 && pcr_of[want - 1] != 16)
                        want--;
                ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, v, 2, &prefix), 0);
                ck_assert_uint_eq(prefix, want);
        }
        /* but an entry of another PCR in the middle is taken in by a later match */
        IverPcrValue v[1] = { { 16, vals[10][0][1] } };
        size_t prefix;
        ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, v, 1, &prefix), 0);
        ck_assert_uint_eq(prefix, 10);
}
END_TEST

START_TEST(test_prefix_mismatch) {
        size_t prefix;
        /* PCR 16 after 3 entries, PCR 10 after 8: no single point of the list */
        IverPcrValue v[2] = { { 16, vals[3][0][1] }, { 10, vals[8][1][1] } };
        ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, v, 2, &prefix), -ENOENT);
        /* banks that disagree */
        IverPcrValue w[2] = { { 16, vals[2][0][0] }, { 16, vals[4][0][1] } };
        ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, w, 2, &prefix), -ENOENT);
        /* a value with the broken-evidence 0xFF extended on top: no prefix */
        IverDigest x = vals[N][0][1];
        IverImaEntry *viol = mk(16, 99, true);
        step(EVP_sha256(), viol, &x);
        iver_imalog_entry_free(viol);
        IverPcrValue y[1] = { { 16, x } };
        ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, y, 1, &prefix), -ENOENT);
        /* bad arguments */
        IverPcrValue bad[1] = { { 24, vals[0][0][1] } };
        ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, bad, 1, &prefix), -EINVAL);
        ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) ents, N, y, 0, &prefix), -EINVAL);
        ck_assert_int_eq(iver_imalog_match_prefix_entries(NULL, 1, y, 1, &prefix), -EINVAL);
}
END_TEST

START_TEST(test_prefix_empty_list) {
        size_t prefix = 7;
        IverPcrValue v[1] = { { 16, vals[0][0][1] } };
        ck_assert_int_eq(iver_imalog_match_prefix_entries(NULL, 0, v, 1, &prefix), 0);
        ck_assert_uint_eq(prefix, 0);
        IverPcrValue w[1] = { { 16, vals[1][0][1] } };
        ck_assert_int_eq(iver_imalog_match_prefix_entries(NULL, 0, w, 1, &prefix), -ENOENT);
}
END_TEST

START_TEST(test_prefix_sha384_sha512) {
        IverImaEntry *e = mk(23, 1, false);
        IverDigest v384 = { .algo = IVER_HASH_SHA384, .len = 48 }, v512 = { .algo = IVER_HASH_SHA512, .len = 64 };
        step(EVP_sha384(), e, &v384);
        step(EVP_sha512(), e, &v512);
        IverPcrValue v[2] = { { 23, v384 }, { 23, v512 } };
        size_t prefix = 0;
        ck_assert_int_eq(iver_imalog_match_prefix_entries((const IverImaEntry *const *) &e, 1, v, 2, &prefix), 0);
        ck_assert_uint_eq(prefix, 1);
        iver_imalog_entry_free(e);
}
END_TEST

/* v = H(v || SHA-1(template_data) zero-padded to v's size) (0xFF… for a
 * violation), by hand: the kernel's form for a bank it has no hash for. */
static void step_padded(const EVP_MD *md, const IverImaEntry *e, IverDigest *v) {
        uint8_t buf[128] = {}, d[64] = {};
        unsigned n = (unsigned) EVP_MD_get_size(md), len;
        if (e->violation)
                memset(d, 0xff, n);
        else
                ck_assert_int_eq(EVP_Digest(e->template_data, e->template_data_len, d, &len, EVP_sha1(), NULL), 1);
        memcpy(buf, v->bytes, n);
        memcpy(buf + n, d, n);
        ck_assert_int_eq(EVP_Digest(buf, 2 * n, v->bytes, &len, md, NULL), 1);
}

/* A sha384 bank in the kernel's padded form and a sha256 bank in the real
 * one: matched (said, for the sha384 value only) when the forms are allowed,
 * not otherwise; a bank mixing the two forms never matches. */
START_TEST(test_prefix_padded_form) {
        IverImaEntry *e[3] = { mk(10, 1, false), mk(10, 2, true), mk(10, 3, false) };
        IverDigest p384 = { .algo = IVER_HASH_SHA384, .len = 48 }, r256 = { .algo = IVER_HASH_SHA256, .len = 32 };
        IverDigest mixed = p384;
        for (int i = 0; i < 3; i++) {
                step_padded(EVP_sha384(), e[i], &p384);
                step(EVP_sha256(), e[i], &r256);
                (i == 2 ? step : step_padded)(EVP_sha384(), e[i], &mixed);
        }
        IverPcrValue v[2] = { { 10, r256 }, { 10, p384 } };
        const IverImaEntry *const *ee = (const IverImaEntry *const *) e;
        size_t prefix = 0;
        uint64_t padded = 0;
        ck_assert_int_eq(iver_imalog_match_prefix_entries(ee, 3, v, 2, &prefix), -ENOENT);
        ck_assert_int_eq(iver_imalog_match_prefix_any_form(ee, 3, v, 2, &prefix, &padded), 0);
        ck_assert_uint_eq(prefix, 3);
        ck_assert_uint_eq(padded, 2);   /* values[1], the sha384 one */
        IverPcrValue m[1] = { { 10, mixed } };
        ck_assert_int_eq(iver_imalog_match_prefix_any_form(ee, 3, m, 1, &prefix, &padded), -ENOENT);
        /* the entry's own digests */
        IverDigest d;
        ck_assert_int_eq(iver_imalog_entry_padded_digest(e[0], IVER_HASH_SHA512, &d), 0);
        ck_assert_uint_eq(d.len, 64);
        for (unsigned i = 20; i < 64; i++)
                ck_assert_uint_eq(d.bytes[i], 0);
        ck_assert_int_eq(iver_imalog_entry_padded_digest(e[1], IVER_HASH_SHA512, &d), 0);
        for (unsigned i = 0; i < 64; i++)
                ck_assert_uint_eq(d.bytes[i], 0xff);
        for (int i = 0; i < 3; i++)
                iver_imalog_entry_free(e[i]);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("replay");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_replay_by_hand);
        tcase_add_test(tc, test_prefix_all_pcrs);
        tcase_add_test(tc, test_prefix_other_pcr_not_counted);
        tcase_add_test(tc, test_prefix_mismatch);
        tcase_add_test(tc, test_prefix_empty_list);
        tcase_add_test(tc, test_prefix_sha384_sha512);
        tcase_add_test(tc, test_prefix_padded_form);
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
