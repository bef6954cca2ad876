/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File names in IMA list entries: weird names through the binary and ASCII
 * forms, the kernel form (what becomes '_' and what is kept), and the
 * forgery of issue 13 (a name holding a newline and a list line). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "iver/imalog.h"
#include "imalog-fixtures.h"
#include "check-run.h"
START_TEST(test_weird_names_roundtrip) {
        uint8_t digest[48], buf[1024];

        memset(digest, 0x5a, sizeof(digest));
        for (IverImaTemplate t = 0; t < IVER_IMA_TEMPLATE_IMA; t++) /* "ima" is SHA-1 only */
                for (size_t i = 0; i < sizeof(weird) / sizeof(weird[0]); i++) {
                        IverImaEntry *e = NULL, *x = NULL;
                        char *line = NULL;
                        int n;

                        ck_assert_int_eq(iver_imalog_entry_new(t, 23, IVER_HASH_SHA384, digest, 48, weird[i].s,
                                                               weird[i].n, NULL, 0, IVER_IMA_NAME_RAW, &e), 0);
                        ck_assert_uint_eq(e->path_len, weird[i].n);
                        ck_assert_mem_eq(e->path, weird[i].s, weird[i].n);

                        n = iver_imalog_entry_to_binary(e, buf, sizeof(buf));
                        ck_assert_int_gt(n, 0);
                        ck_assert_int_eq(iver_imalog_entry_from_binary(buf, n, &x), n);
                        ck_assert_uint_eq(x->path_len, weird[i].n);
                        ck_assert_mem_eq(x->path, weird[i].s, weird[i].n);
                        ck_assert_int_eq(x->template, t);
                        ck_assert_uint_eq(x->pcr, 23);
                        ck_assert_int_eq(x->algo, IVER_HASH_SHA384);
                        ck_assert_mem_eq(x->template_digest, e->template_digest, 20);
                        iver_imalog_entry_free(x);
                        x = NULL;

                        /* ASCII: printed raw like the kernel; '\n' cannot come back */
                        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, NULL), 0);
                        n = iver_imalog_entry_from_ascii(line, strlen(line), &x);
                        if (weird[i].ascii_ok) {
                                ck_assert_int_eq(n, 0);
                                ck_assert_uint_eq(x->path_len, weird[i].n);
                                ck_assert_mem_eq(x->path, weird[i].s, weird[i].n);
                                ck_assert_mem_eq(x->template_digest, e->template_digest, 20);
                        } else {
                                IverImaLog *l = NULL;
                                size_t used;
                                ck_assert_int_lt(n, 0);
                                ck_assert_int_eq(iver_imalog_new(&l), 0);
                                ck_assert_int_eq(iver_imalog_parse_ascii(l, line, strlen(line), &used), -EBADMSG);
                                iver_imalog_free(l);
                        }
                        free(line);
                        iver_imalog_entry_free(x);
                        iver_imalog_entry_free(e);
                }
}
END_TEST

/* The kernel form: what becomes '_' and what is kept. */
static const struct { const char *in, *out; } kform[] = {
        { "/a b c", "/a_b_c" },                                 /* the kernel's own rule */
        { "/t\tn\nr\rz", "/t_n_r_z" },
        { "/esc\x1b[31mred", "/esc_[31mred" },
        { "/del\x7f" "x", "/del_x" },
        { "/bad\xff\xfe\x80", "/bad___" },
        { "/over\xc0\xaf", "/over__" },                         /* overlong '/' */
        { "/surr\xed\xa0\x80", "/surr___" },                    /* U+D800 */
        { "/cut\xe2\x82", "/cut__" },                           /* truncated sequence */
        { "/caf\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80", "/caf\xc3\xa9_\xe2\x82\xac\xf0\x9f\x98\x80" }, /* é € 😀 kept */
        { "/nel\xc2\x85" "c1\xc2\x9b" "x", "/nel__c1__x" },     /* U+0085, U+009B (CSI) */
        { "/ls\xe2\x80\xa8" "ps\xe2\x80\xa9" "nb\xc2\xa0", "/ls___ps___nb__" },
        { "/bidi\xe2\x80\xae" "txt", "/bidi___txt" },           /* U+202E */
        { "/ideo\xe3\x80\x80" "x", "/ideo___x" },               /* U+3000 */
        { "/usr/bin/plain-name_1.2", "/usr/bin/plain-name_1.2" },
};

START_TEST(test_kernel_form) {
        uint8_t digest[32] = { 7 };

        for (size_t i = 0; i < sizeof(kform) / sizeof(kform[0]); i++) {
                size_t n = strlen(kform[i].in);
                char buf[64];
                ck_assert_uint_eq(strlen(kform[i].out), n);
                memcpy(buf, kform[i].in, n + 1);
                iver_imalog_name_kernel_form(buf, n);
                ck_assert_str_eq(buf, kform[i].out);
                ck_assert(iver_imalog_name_is_kernel_form(buf, n));
                ck_assert(iver_imalog_name_is_kernel_form(kform[i].in, n) == (strcmp(kform[i].in, kform[i].out) == 0));

                for (IverImaTemplate t = 0; t < IVER_IMA_TEMPLATE_IMA; t++) {
                        IverImaEntry *e = NULL, *x = NULL, *raw = NULL;
                        char *line = NULL;
                        size_t len;
                        uint8_t bin[256], h[20];

                        /* default: the kernel form, in the template data itself */
                        ck_assert_int_eq(iver_imalog_entry_new(t, 10, IVER_HASH_SHA256, digest, 32, kform[i].in, n,
                                                               NULL, 0, 0, &e), 0);
                        ck_assert_str_eq(e->path, kform[i].out);
                        ck_assert(iver_imalog_entry_names(e, kform[i].in, n));
                        ck_assert(iver_imalog_entry_names(e, kform[i].out, n));
                        ck_assert(!iver_imalog_entry_names(e, kform[i].in, n - 1));
                        /* the template digest is over the stored (kernel form) name */
                        ck_assert_int_eq(iver_imalog_entry_new(t, 10, IVER_HASH_SHA256, digest, 32, kform[i].out, n,
                                                               NULL, 0, IVER_IMA_NAME_RAW, &raw), 0);
                        ck_assert_mem_eq(raw->template_digest, e->template_digest, 20);
                        EVP_Digest(e->template_data, e->template_data_len, h, NULL, EVP_sha1(), NULL);
                        ck_assert_mem_eq(h, e->template_digest, 20);
                        iver_imalog_entry_free(raw);

                        /* ASCII: one line, split by a line-based reader */
                        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, &len), 0);
                        ck_assert_ptr_eq(memchr(line, '\n', len), line + len - 1);
                        for (size_t k = 0; k + 1 < len; k++)
                                ck_assert(line[k] != '\r' && line[k] != '\t' && (uint8_t) line[k] >= 0x20 &&
                                          line[k] != 0x7f);
                        ck_assert_int_eq(iver_imalog_entry_from_ascii(line, len, &x), 0);
                        ck_assert_str_eq(x->path, kform[i].out);
                        ck_assert_mem_eq(x->template_digest, e->template_digest, 20);
                        x = iver_imalog_entry_free(x);
                        /* binary agrees */
                        int b = iver_imalog_entry_to_binary(e, bin, sizeof(bin));
                        ck_assert_int_gt(b, 0);
                        ck_assert_int_eq(iver_imalog_entry_from_binary(bin, b, &x), b);
                        ck_assert_str_eq(x->path, kform[i].out);
                        iver_imalog_entry_free(x);
                        free(line);
                        iver_imalog_entry_free(e);
                }
        }
}
END_TEST

/* The forgery of issue 13: a directory name holding "\n" and a well-formed
 * list line. In the kernel form it stays inside one line, and that line's
 * template digest covers the whole name. */
START_TEST(test_kernel_form_no_forgery) {
        uint8_t digest[32], fd[32];
        memset(digest, 0x11, sizeof(digest));
        memset(fd, 0xdd, sizeof(fd));
        IverImaEntry *forged = NULL, *e = NULL;
        char *fl = NULL, *line = NULL, path[512];
        IverImaLog *l = NULL;
        size_t used, len;

        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA256, fd, 32, "/usr/sbin/sshd", 14,
                                               NULL, 0, 0, &forged), 0);
        ck_assert_int_eq(iver_imalog_entry_to_ascii(forged, &fl, NULL), 0);
        fl[strlen(fl) - 1] = 0;
        snprintf(path, sizeof(path), "/tree/a\n%s/file", fl);
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA256, digest, 32, path,
                                               strlen(path), NULL, 0, 0, &e), 0);
        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, &len), 0);
        ck_assert_ptr_eq(memchr(line, '\n', len), line + len - 1);
        ck_assert_int_eq(iver_imalog_new(&l), 0);
        ck_assert_int_eq(iver_imalog_parse_ascii(l, line, len, &used), 0);
        ck_assert_uint_eq(used, len);
        ck_assert_uint_eq(iver_imalog_size(l), 1);
        ck_assert_ptr_null(strstr(iver_imalog_get(l, 0)->path, " /usr/sbin/sshd"));
        ck_assert_mem_eq(iver_imalog_get(l, 0)->digest, digest, 32);
        iver_imalog_free(l);
        free(line);
        free(fl);
        iver_imalog_entry_free(e);
        iver_imalog_entry_free(forged);
}
END_TEST
START_TEST(test_gap_name) {
        char buf[IVER_IMA_GAP_NAME_MAX];
        int64_t a = 7, b = 7;

        ck_assert_int_eq(iver_imalog_gap_name(1700000000, 1700000042, buf), 0);
        ck_assert_str_eq(buf, "iverd-gap:1700000000-1700000042");
        ck_assert_int_eq(iver_imalog_gap_parse(buf, strlen(buf), &a, &b), 1);
        ck_assert(a == 1700000000 && b == 1700000042);
        ck_assert_int_eq(iver_imalog_gap_name(-1, 1700000042, buf), 0);
        ck_assert_str_eq(buf, "iverd-gap:unknown-1700000042");
        ck_assert_int_eq(iver_imalog_gap_parse(buf, strlen(buf), &a, &b), 1);
        ck_assert(a == -1 && b == 1700000042);
        ck_assert_int_eq(iver_imalog_gap_name(5, 4, buf), -EINVAL);
        ck_assert_int_eq(iver_imalog_gap_name(0, -1, buf), -EINVAL);
        /* not gap names: a path, a prefix alone, junk, reversed, signs, leading zeros, trailing bytes */
        static const char *const no[] = { "/iverd-gap:1-2", "iverd-gap:", "iverd-gap:1", "iverd-gap:2-1",
                                          "iverd-gap:+1-2", "iverd-gap:01-2", "iverd-gap:1-2x", "iverd-gap:1-2 ",
                                          "iverd-gap:unknownx-2", "iverd-gap:1--2", "iverd-gap:99999999999999-1" };
        a = b = 7;
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                ck_assert_msg(iver_imalog_gap_parse(no[i], strlen(no[i]), &a, &b) == 0, "%s", no[i]);
        ck_assert(a == 7 && b == 7);
        /* the length bounds the name: a NUL-free prefix of a longer buffer */
        ck_assert_int_eq(iver_imalog_gap_parse("iverd-gap:1-23", 13, &a, &b), 1);
        ck_assert(a == 1 && b == 2);
}
END_TEST
static Suite *imalog_names_suite(void) {
        Suite *s = suite_create("imalog-names");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_weird_names_roundtrip);
        tcase_add_test(tc, test_kernel_form);
        tcase_add_test(tc, test_kernel_form_no_forgery);
        tcase_add_test(tc, test_gap_name);
        tcase_set_timeout(tc, 120);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return iver_run_suite(imalog_names_suite());
}
