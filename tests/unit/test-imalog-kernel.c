/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's templates iverd reads when it continues the kernel's list in
 * PCR 10: ima-buf and the legacy SHA-1 "ima" template (binary and ASCII
 * forms, template digest and bank digests as ima_calc_field_array_hash
 * computes them), and their violations. The expected bytes are built here by
 * hand from the kernel's layout, not by the code under test. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "iver/imalog.h"
#include "check-run.h"

static void put32(uint8_t *p, uint32_t v) {
        p[0] = v & 0xff;
        p[1] = (v >> 8) & 0xff;
        p[2] = (v >> 16) & 0xff;
        p[3] = v >> 24;
}

static void hash(const EVP_MD *md, const void *d, size_t n, uint8_t *out) {
        ck_assert_int_eq(EVP_Digest(d, n, out, NULL, md, NULL), 1);
}

static void hexs(const uint8_t *b, size_t n, char *out) {
        for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", b[i]);
}

START_TEST(test_ima_template) {
        uint8_t digest[20], padded[20 + 256] = {}, th[20], h256[32], rec[128], bin[128];
        const char *name = "/usr/bin/true";
        size_t nlen = strlen(name);
        IverImaEntry *e = NULL, *x = NULL;
        IverDigest d;
        char *line = NULL, want[256], dh[41], thh[41];

        memset(digest, 0xa5, sizeof(digest));
        /* template digest: SHA-1(digest · name zero-padded to 256), no lengths */
        memcpy(padded, digest, 20);
        memcpy(padded + 20, name, nlen);
        hash(EVP_sha1(), padded, sizeof(padded), th);
        hash(EVP_sha256(), padded, sizeof(padded), h256);

        ck_assert_int_eq(iver_imalog_entry_new_ima(10, digest, name, nlen, &e), 0);
        ck_assert_int_eq(e->template, IVER_IMA_TEMPLATE_IMA);
        ck_assert_mem_eq(e->template_digest, th, 20);
        ck_assert_int_eq(e->algo, IVER_HASH_SHA1);
        ck_assert_uint_eq(e->path_len, nlen);
        ck_assert_int_eq(iver_imalog_entry_bank_digest(e, IVER_HASH_SHA256, &d), 0);
        ck_assert_mem_eq(d.bytes, h256, 32);
        ck_assert_int_eq(iver_imalog_entry_bank_digest(e, IVER_HASH_SHA1, &d), 0);
        ck_assert_mem_eq(d.bytes, th, 20);

        /* binary: pcr · tdigest · 3 "ima" · digest (no length) · u32 strlen · name */
        size_t n = 0;
        put32(rec, 10);
        memcpy(rec + 4, th, 20);
        put32(rec + 24, 3);
        memcpy(rec + 28, "ima", 3);
        memcpy(rec + 31, digest, 20);
        put32(rec + 51, nlen);
        memcpy(rec + 55, name, nlen);
        n = 55 + nlen;
        ck_assert_uint_eq(iver_imalog_entry_binary_size(e), n);
        ck_assert_int_eq(iver_imalog_entry_to_binary(e, bin, sizeof(bin)), (int) n);
        ck_assert_mem_eq(bin, rec, n);
        size_t ext = 0;
        ck_assert_int_eq(iver_imalog_entry_binary_extent(rec, n, &ext), 0);
        ck_assert_uint_eq(ext, n);
        ck_assert_int_eq(iver_imalog_entry_from_binary(rec, n, &x), (int) n);
        ck_assert_mem_eq(x->template_digest, th, 20);
        ck_assert_str_eq(x->path, name);
        x = iver_imalog_entry_free(x);
        ck_assert_int_eq(iver_imalog_entry_from_binary(rec, n - 1, &x), -ENODATA);
        rec[40] ^= 1;   /* the digest no longer matches the template digest */
        ck_assert_int_eq(iver_imalog_entry_from_binary(rec, n, &x), -EBADMSG);

        /* ASCII: the digest without "sha1:" */
        hexs(digest, 20, dh);
        hexs(th, 20, thh);
        snprintf(want, sizeof(want), "10 %s ima %s %s\n", thh, dh, name);
        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, NULL), 0);
        ck_assert_str_eq(line, want);
        ck_assert_int_eq(iver_imalog_entry_from_ascii(line, strlen(line), &x), 0);
        ck_assert_mem_eq(x->template_digest, th, 20);
        ck_assert_int_eq(x->template, IVER_IMA_TEMPLATE_IMA);
        x = iver_imalog_entry_free(x);
        free(line);
        iver_imalog_entry_free(e);

        /* a name of 256 bytes does not fit the template */
        char longname[257];
        memset(longname, 'a', 256);
        longname[256] = 0;
        ck_assert_int_lt(iver_imalog_entry_new_ima(10, digest, longname, 256, &e), 0);
}
END_TEST

START_TEST(test_ima_template_violation) {
        uint8_t rec[64] = {};
        IverImaEntry *x = NULL;
        IverDigest d;
        char *line = NULL;

        put32(rec, 10);
        put32(rec + 24, 3);
        memcpy(rec + 28, "ima", 3);
        put32(rec + 51, 2);
        memcpy(rec + 55, "/x", 2);
        ck_assert_int_eq(iver_imalog_entry_from_binary(rec, 57, &x), 57);
        ck_assert(x->violation);
        ck_assert_int_eq(iver_imalog_entry_bank_digest(x, IVER_HASH_SHA384, &d), 0);
        ck_assert_uint_eq(d.len, 48);
        ck_assert_uint_eq(d.bytes[0], 0xff);
        ck_assert_uint_eq(d.bytes[47], 0xff);
        ck_assert_int_eq(iver_imalog_entry_to_ascii(x, &line, NULL), 0);
        ck_assert_str_eq(line, "10 0000000000000000000000000000000000000000 ima 0000000000000000000000000000000000000000 /x\n");
        free(line);
        x = iver_imalog_entry_free(x);
        /* a zero template digest with a file digest is not a violation's form */
        rec[35] = 1;
        ck_assert_int_eq(iver_imalog_entry_from_binary(rec, 57, &x), -EBADMSG);
}
END_TEST

START_TEST(test_ima_buf) {
        const uint8_t buf[] = "root=/dev/vda ro";
        const size_t blen = sizeof(buf) - 1;
        uint8_t fd[32], td[256], th[20], h384[48];
        IverImaEntry *e = NULL, *x = NULL;
        IverDigest d;
        char *line = NULL, want[512], fdh[65], thh[41], bh[2 * sizeof(buf)];
        size_t n = 0;

        hash(EVP_sha256(), buf, blen, fd);
        /* d-ng · n-ng · buf, each with its u32 length */
        put32(td, 7 + 1 + 32);
        memcpy(td + 4, "sha256:", 8);
        memcpy(td + 12, fd, 32);
        n = 44;
        put32(td + n, 14);
        memcpy(td + n + 4, "kexec-cmdline", 14);
        n += 18;
        put32(td + n, blen);
        memcpy(td + n + 4, buf, blen);
        n += 4 + blen;
        hash(EVP_sha1(), td, n, th);
        hash(EVP_sha384(), td, n, h384);

        ck_assert_int_eq(iver_imalog_entry_new_buf(10, IVER_HASH_SHA256, "kexec-cmdline", 13, buf, blen, &e), 0);
        ck_assert_uint_eq(e->template_data_len, n);
        ck_assert_mem_eq(e->template_data, td, n);
        ck_assert_mem_eq(e->template_digest, th, 20);
        ck_assert_uint_eq(e->buf_len, blen);
        ck_assert_ptr_null(e->sig);
        ck_assert_int_eq(iver_imalog_entry_bank_digest(e, IVER_HASH_SHA384, &d), 0);
        ck_assert_mem_eq(d.bytes, h384, 48);

        hexs(fd, 32, fdh);
        hexs(th, 20, thh);
        hexs(buf, blen, bh);
        snprintf(want, sizeof(want), "10 %s ima-buf sha256:%s kexec-cmdline %s\n", thh, fdh, bh);
        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, NULL), 0);
        ck_assert_str_eq(line, want);
        ck_assert_int_eq(iver_imalog_entry_from_ascii(line, strlen(line), &x), 0);
        ck_assert_uint_eq(x->buf_len, blen);
        ck_assert_mem_eq(x->buf, buf, blen);
        x = iver_imalog_entry_free(x);
        free(line);

        uint8_t bin[256];
        int m = iver_imalog_entry_to_binary(e, bin, sizeof(bin));
        ck_assert_int_gt(m, 0);
        ck_assert_int_eq(iver_imalog_entry_from_binary(bin, m, &x), m);
        ck_assert_mem_eq(x->buf, buf, blen);
        ck_assert_int_eq(x->template, IVER_IMA_TEMPLATE_BUF);
        iver_imalog_entry_free(x);
        iver_imalog_entry_free(e);
}
END_TEST

/* The kernel's boot_aggregate entry (ima-sig, empty signature): parsed from
 * its ASCII line and replayed like any other. */
START_TEST(test_boot_aggregate_line) {
        uint8_t td[128], th[20], agg[32];
        IverImaEntry *e = NULL;
        char line[256], thh[41], ah[65];
        size_t n;

        memset(agg, 0x11, sizeof(agg));
        put32(td, 40);
        memcpy(td + 4, "sha256:", 8);
        memcpy(td + 12, agg, 32);
        put32(td + 44, 15);
        memcpy(td + 48, "boot_aggregate", 15);
        put32(td + 63, 0);
        n = 67;
        hash(EVP_sha1(), td, n, th);
        hexs(th, 20, thh);
        hexs(agg, 32, ah);
        snprintf(line, sizeof(line), "10 %s ima-sig sha256:%s boot_aggregate \n", thh, ah);
        ck_assert_int_eq(iver_imalog_entry_from_ascii(line, strlen(line), &e), 0);
        ck_assert_int_eq(e->template, IVER_IMA_TEMPLATE_SIG);
        ck_assert_uint_eq(e->template_data_len, n);
        ck_assert_mem_eq(e->template_data, td, n);
        iver_imalog_entry_free(e);
}
END_TEST

static Suite *imalog_kernel_suite(void) {
        Suite *s = suite_create("imalog-kernel");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_ima_template);
        tcase_add_test(tc, test_ima_template_violation);
        tcase_add_test(tc, test_ima_buf);
        tcase_add_test(tc, test_boot_aggregate_line);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return iver_run_suite(imalog_kernel_suite());
}
