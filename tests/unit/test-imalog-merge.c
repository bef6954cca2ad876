/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placing iverd's extends among the kernel's (lib/imalog-merge.c): the order
 * found is the one that was extended, a value no order gives is -ENOENT.
 * Randomised: the seed is printed and taken from IVER_TEST_SEED. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iver/imalog.h"
#include "check-run.h"

#define PCR 10

static IverImaEntry *mk(const char *name, uint8_t fill) {
        uint8_t d[32];
        IverImaEntry *e = NULL;
        memset(d, fill, sizeof(d));
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, PCR, IVER_HASH_SHA256, d, 32, name, strlen(name), NULL,
                                               0, 0, &e),
                         0);
        return e;
}

static IverDigest zero(IverHashAlgo bank) {
        return (IverDigest) { .algo = bank, .len = iver_hash_algo_size(bank) };
}

START_TEST(test_prefix) {
        IverImaEntry *k[3] = { mk("/k0", 1), mk("/k1", 2), mk("/k2", 3) };
        IverDigest s = zero(IVER_HASH_SHA256), v = s;
        size_t n = 99;

        ck_assert_int_eq(iver_imalog_place_prefix(&s, (const IverImaEntry *const *) k, 3, PCR, &v, &n), 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_eq(iver_imalog_extend_value(&v, k[0], PCR), 0);
        ck_assert_int_eq(iver_imalog_extend_value(&v, k[1], PCR), 0);
        ck_assert_int_eq(iver_imalog_place_prefix(&s, (const IverImaEntry *const *) k, 3, PCR, &v, &n), 0);
        ck_assert_uint_eq(n, 2);
        /* an extend no entry explains */
        IverImaEntry *x = mk("/rogue", 9);
        ck_assert_int_eq(iver_imalog_extend_value(&v, x, PCR), 0);
        ck_assert_int_eq(iver_imalog_place_prefix(&s, (const IverImaEntry *const *) k, 3, PCR, &v, &n), -ENOENT);
        /* an entry of another PCR moves nothing */
        IverDigest w = s;
        ck_assert_int_eq(iver_imalog_extend_value(&w, k[0], 11), 0);
        ck_assert_mem_eq(w.bytes, s.bytes, 32);
        iver_imalog_entry_free(x);
        for (int i = 0; i < 3; i++)
                iver_imalog_entry_free(k[i]);
}
END_TEST

START_TEST(test_place_random) {
        const char *env = getenv("IVER_TEST_SEED");
        unsigned seed = env ? (unsigned) strtoul(env, NULL, 0) : (unsigned) time(NULL);
        printf("test-imalog-merge: seed %u (IVER_TEST_SEED)\n", seed);
        srand(seed);
        for (int round = 0; round < 300; round++) {
                IverImaEntry *k[8], *e;
                size_t m = (size_t) rand() % 8, j = m ? (size_t) rand() % (m + 1) : 0;
                size_t through = j + (m - j ? (size_t) rand() % (m - j + 1) : 0);
                IverHashAlgo bank = round % 2 ? IVER_HASH_SHA1 : IVER_HASH_SHA384;
                char name[64];
                IverDigest start = zero(bank), v;

                /* a start value that is not zero: earlier entries */
                IverImaEntry *pre = mk("/boot_aggregate", 0x42);
                ck_assert_int_eq(iver_imalog_extend_value(&start, pre, PCR), 0);
                iver_imalog_entry_free(pre);
                for (size_t i = 0; i < m; i++) {
                        snprintf(name, sizeof(name), "/k%zu.%d", i, round);
                        k[i] = mk(name, (uint8_t) i);
                }
                e = mk("/iverd", 0xee);
                v = start;
                for (size_t i = 0; i < j; i++)
                        ck_assert_int_eq(iver_imalog_extend_value(&v, k[i], PCR), 0);
                ck_assert_int_eq(iver_imalog_extend_value(&v, e, PCR), 0);
                for (size_t i = j; i < through; i++)
                        ck_assert_int_eq(iver_imalog_extend_value(&v, k[i], PCR), 0);

                size_t gj = 99, gt = 99;
                ck_assert_int_eq(iver_imalog_place_entry(&start, e, (const IverImaEntry *const *) k, m, PCR, &v, &gj, &gt), 0);
                ck_assert_uint_eq(gj, j);
                ck_assert_uint_eq(gt, through);
                /* the value without iverd's extend: no placement of e explains it */
                if (m > 0) {
                        IverDigest w = start;
                        for (size_t i = 0; i < m; i++)
                                ck_assert_int_eq(iver_imalog_extend_value(&w, k[i], PCR), 0);
                        ck_assert_int_eq(iver_imalog_place_entry(&start, e, (const IverImaEntry *const *) k, m, PCR, &w, &gj,
                                                                 &gt),
                                         -ENOENT);
                }
                for (size_t i = 0; i < m; i++)
                        iver_imalog_entry_free(k[i]);
                iver_imalog_entry_free(e);
        }
}
END_TEST

/* iverd's entry byte-identical to the kernel's next one (both measured the
 * same file the same way): either order is the same list. */
START_TEST(test_place_identical) {
        IverImaEntry *k[2] = { mk("/same", 5), mk("/k1", 6) }, *e = mk("/same", 5);
        IverDigest s = zero(IVER_HASH_SHA256), v = s;
        size_t j, t;
        ck_assert_int_eq(iver_imalog_extend_value(&v, k[0], PCR), 0);
        ck_assert_int_eq(iver_imalog_extend_value(&v, e, PCR), 0);
        ck_assert_int_eq(iver_imalog_place_entry(&s, e, (const IverImaEntry *const *) k, 2, PCR, &v, &j, &t), 0);
        ck_assert_uint_eq(j, 0);
        ck_assert_uint_eq(t, 1);
        for (int i = 0; i < 2; i++)
                iver_imalog_entry_free(k[i]);
        iver_imalog_entry_free(e);
}
END_TEST

static Suite *merge_suite(void) {
        Suite *s = suite_create("imalog-merge");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_prefix);
        tcase_add_test(tc, test_place_random);
        tcase_add_test(tc, test_place_identical);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return iver_run_suite(merge_suite());
}
