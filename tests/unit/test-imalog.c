/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IMA list entries: known answers against real kernel lines, hand-built
 * bytes, weird names, dedup, violations, replay, torn-list recovery. */
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
#include "check-run.h"

/* Real kernel output. LKML ("ima: digest cache" series, ima-ng, PCR 11):
 *   11 50b5a68bea0776a84eef6725f17ce474756e51c0 ima-ng sha256:15e1efee…d3884f0 /root/cat
 * Keylime's test data (ima-sig from a 5.4 kernel; note the trailing space
 * the kernel prints for an empty sig field). */
static const char KERNEL_NG[] =
        "11 50b5a68bea0776a84eef6725f17ce474756e51c0 ima-ng "
        "sha256:15e1efee080fe54f5d7404af7e913de01671e745ce55215d89f3d6521d3884f0 /root/cat\n";
static const char KERNEL_SIG[] =
        "10 0c8a706a75a5689c1e168f0a573a3cbec33061b5 ima-sig "
        "sha256:e4cb9f5709c88376b5fc3743cd88e76b9aae8f3d992d845678de5215edb31216 boot_aggregate \n"
        "10 5426cf3031a43f5bfca183d79950698a95a728f6 ima-sig "
        "sha256:f1125b940480d20ad841d26d5ea253edc0704b5ec1548c891edf212cb1a9365e "
        "/lib/modules/5.4.48-openpower1/kernel/drivers/usb/common/usb-common.ko \n";

static void unhex(const char *s, uint8_t *out) {
        size_t n = strlen(s) / 2;
        for (size_t i = 0; i < n; i++)
                ck_assert_int_eq(sscanf(s + 2 * i, "%2hhx", &out[i]), 1);
}

static void tohex(const uint8_t *b, size_t n, char *out) {
        for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", b[i]);
}

static size_t le32(uint8_t *p, uint32_t v) {
        p[0] = v;
        p[1] = v >> 8;
        p[2] = v >> 16;
        p[3] = v >> 24;
        return 4;
}

/* template_data built by hand, independently of lib/imalog.c. */
static size_t hand_template_data(uint8_t *out, const char *algo, const uint8_t *digest, size_t dlen,
                                 const char *path, size_t plen, bool sig_field, const uint8_t *sig, size_t slen) {
        size_t o = 0, alen = strlen(algo);
        o += le32(out + o, alen + 2 + dlen);
        memcpy(out + o, algo, alen);
        o += alen;
        out[o++] = ':';
        out[o++] = 0;
        memcpy(out + o, digest, dlen);
        o += dlen;
        o += le32(out + o, plen + 1);
        memcpy(out + o, path, plen);
        o += plen;
        out[o++] = 0;
        if (sig_field) {
                o += le32(out + o, slen);
                if (slen)
                        memcpy(out + o, sig, slen);
                o += slen;
        }
        return o;
}

static void md(const char *name, const uint8_t *d, size_t n, uint8_t *out) {
        ck_assert_int_eq(EVP_Digest(d, n, out, NULL, EVP_get_digestbyname(name), NULL), 1);
}

START_TEST(test_kat_ima_ng) {
        uint8_t digest[32], td[256], want_tdig[20], bin[512], got_bin[512];
        IverImaEntry *e = NULL;
        char *line = NULL;
        size_t n, tl, ln;

        unhex("15e1efee080fe54f5d7404af7e913de01671e745ce55215d89f3d6521d3884f0", digest);
        tl = hand_template_data(td, "sha256", digest, 32, "/root/cat", 9, false, NULL, 0);
        ck_assert_uint_eq(tl, 4 + 8 + 32 + 4 + 10);

        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, 11, IVER_HASH_SHA256, digest, 32, "/root/cat", 9,
                                               NULL, 0, 0, &e), 0);
        ck_assert_uint_eq(e->template_data_len, tl);
        ck_assert_mem_eq(e->template_data, td, tl);
        /* SHA-1 over template_data, and the kernel's value for this line */
        md("SHA1", td, tl, want_tdig);
        ck_assert_mem_eq(e->template_digest, want_tdig, 20);
        unhex("50b5a68bea0776a84eef6725f17ce474756e51c0", want_tdig);
        ck_assert_mem_eq(e->template_digest, want_tdig, 20);
        ck_assert(!e->violation);

        /* binary record by hand */
        n = 0;
        n += le32(bin + n, 11);
        memcpy(bin + n, want_tdig, 20);
        n += 20;
        n += le32(bin + n, 6);
        memcpy(bin + n, "ima-ng", 6);
        n += 6;
        n += le32(bin + n, tl);
        memcpy(bin + n, td, tl);
        n += tl;
        ck_assert_uint_eq(iver_imalog_entry_binary_size(e), n);
        ck_assert_int_eq(iver_imalog_entry_to_binary(e, got_bin, sizeof(got_bin)), (int) n);
        ck_assert_mem_eq(got_bin, bin, n);
        ck_assert_int_eq(iver_imalog_entry_to_binary(e, got_bin, n - 1), -ENOBUFS);

        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, &ln), 0);
        ck_assert_str_eq(line, KERNEL_NG);
        ck_assert_uint_eq(ln, strlen(KERNEL_NG));
        free(line);

        /* per-bank digests: H_bank(template_data) */
        IverDigest d;
        uint8_t h[64];
        const struct { IverHashAlgo a; const char *name; size_t n; } banks[] = {
                { IVER_HASH_SHA1, "SHA1", 20 }, { IVER_HASH_SHA256, "SHA256", 32 },
                { IVER_HASH_SHA384, "SHA384", 48 }, { IVER_HASH_SHA512, "SHA512", 64 },
        };
        for (size_t i = 0; i < 4; i++) {
                ck_assert_int_eq(iver_imalog_entry_bank_digest(e, banks[i].a, &d), 0);
                md(banks[i].name, td, tl, h);
                ck_assert_uint_eq(d.len, banks[i].n);
                ck_assert_mem_eq(d.bytes, h, banks[i].n);
        }
        iver_imalog_entry_free(e);
}
END_TEST

START_TEST(test_kat_ascii_parse_kernel_lines) {
        IverImaLog *l = NULL;
        size_t used = 0;
        char *line = NULL;

        ck_assert_int_eq(iver_imalog_new(&l), 0);
        ck_assert_int_eq(iver_imalog_parse_ascii(l, KERNEL_NG, strlen(KERNEL_NG), &used), 0);
        ck_assert_uint_eq(used, strlen(KERNEL_NG));
        ck_assert_int_eq(iver_imalog_parse_ascii(l, KERNEL_SIG, strlen(KERNEL_SIG), &used), 0);
        ck_assert_uint_eq(used, strlen(KERNEL_SIG));
        ck_assert_uint_eq(iver_imalog_size(l), 3);

        const IverImaEntry *e = iver_imalog_get(l, 1);
        ck_assert_int_eq(e->template, IVER_IMA_TEMPLATE_SIG);
        ck_assert_uint_eq(e->pcr, 10);
        ck_assert_str_eq(e->path, "boot_aggregate");
        ck_assert_ptr_null(e->sig);
        ck_assert_uint_eq(e->sig_len, 0);
        /* re-encoding gives the kernel's bytes back, trailing space included */
        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, NULL), 0);
        ck_assert_int_eq(strncmp(line, KERNEL_SIG, strlen(line)), 0);
        free(line);

        /* a wrong template digest is rejected */
        char bad[sizeof(KERNEL_NG)];
        memcpy(bad, KERNEL_NG, sizeof(bad));
        bad[3] = bad[3] == '5' ? '6' : '5';
        IverImaEntry *x = NULL;
        ck_assert_int_eq(iver_imalog_entry_from_ascii(bad, strlen(bad), &x), -EBADMSG);
        ck_assert_ptr_null(x);
        /* the PCR printed with %2d: " 9 …" */
        IverImaEntry *y = NULL;
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, 9, IVER_HASH_SHA1,
                                               (const uint8_t *) "01234567890123456789", 20, "/x", 2, NULL, 0, 0, &y), 0);
        ck_assert_int_eq(iver_imalog_entry_to_ascii(y, &line, NULL), 0);
        ck_assert(strncmp(line, " 9 ", 3) == 0);
        ck_assert_ptr_nonnull(strstr(line, " ima-ng sha1:3031"));
        ck_assert_int_eq(iver_imalog_entry_from_ascii(line, strlen(line), &x), 0);
        ck_assert_mem_eq(x->template_digest, y->template_digest, 20);
        ck_assert_uint_eq(x->pcr, 9);
        free(line);
        iver_imalog_entry_free(x);
        iver_imalog_entry_free(y);

        /* an unfinished last line is not consumed */
        size_t cut = strlen(KERNEL_SIG) - 5;
        IverImaLog *l2 = NULL;
        ck_assert_int_eq(iver_imalog_new(&l2), 0);
        ck_assert_int_eq(iver_imalog_parse_ascii(l2, KERNEL_SIG, cut, &used), 0);
        ck_assert_uint_eq(iver_imalog_size(l2), 1);
        ck_assert_uint_eq(used, strchr(KERNEL_SIG, '\n') + 1 - KERNEL_SIG);
        iver_imalog_free(l2);
        iver_imalog_free(l);
}
END_TEST

START_TEST(test_ima_sig_with_signature) {
        uint8_t digest[32], sig[40], td[256];
        IverImaEntry *e = NULL, *x = NULL;
        char *line = NULL;

        memset(digest, 0xab, sizeof(digest));
        sig[0] = 0x03;  /* EVM_IMA_XATTR_DIGSIG, v2 */
        sig[1] = 0x02;
        for (size_t i = 2; i < sizeof(sig); i++)
                sig[i] = (uint8_t) i;
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_SIG, 10, IVER_HASH_SHA256, digest, 32, "/bin/a b", 8,
                                               sig, sizeof(sig), IVER_IMA_NAME_RAW, &e), 0); /* a raw name: read back by the last space */
        size_t tl = hand_template_data(td, "sha256", digest, 32, "/bin/a b", 8, true, sig, sizeof(sig));
        ck_assert_uint_eq(e->template_data_len, tl);
        ck_assert_mem_eq(e->template_data, td, tl);
        ck_assert_uint_eq(e->sig_len, sizeof(sig));

        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, NULL), 0);
        char hexsig[2 * sizeof(sig) + 1];
        tohex(sig, sizeof(sig), hexsig);
        ck_assert_ptr_nonnull(strstr(line, "/bin/a b 030202"));
        ck_assert_ptr_nonnull(strstr(line, hexsig));
        ck_assert_int_eq(iver_imalog_entry_from_ascii(line, strlen(line), &x), 0);
        ck_assert_str_eq(x->path, "/bin/a b");
        ck_assert_uint_eq(x->sig_len, sizeof(sig));
        ck_assert_mem_eq(x->sig, sig, sizeof(sig));
        ck_assert_mem_eq(x->template_digest, e->template_digest, 20);
        free(line);
        iver_imalog_entry_free(x);
        iver_imalog_entry_free(e);

        /* a hash-type security.ima (0x04 IMA_XATTR_DIGEST_NG) is not a signature: empty field */
        sig[0] = 0x04;
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_SIG, 10, IVER_HASH_SHA256, digest, 32, "/bin/a", 6,
                                               sig, sizeof(sig), 0, &e), 0);
        ck_assert_uint_eq(e->sig_len, 0);
        tl = hand_template_data(td, "sha256", digest, 32, "/bin/a", 6, true, NULL, 0);
        ck_assert_mem_eq(e->template_data, td, tl);
        iver_imalog_entry_free(e);

        /* wrong digest length */
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA256, digest, 20, "/x", 2, NULL,
                                               0, 0, &e), -EINVAL);
        /* NUL inside a path */
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA256, digest, 32, "a\0b", 3, NULL,
                                               0, 0, &e), -EINVAL);
}
END_TEST

static const struct { const char *s; size_t n; bool ascii_ok; } weird[] = {
        { "/tmp/with space", 15, true },
        { " leading and trailing ", 22, true },
        { "/tmp/new\nline", 13, false },
        { "/tmp/\xff\xfe\x80not-utf8", 16, true },
        { "/tmp/tab\there", 13, true },
        { "", 0, true },
        { "/tmp/x 0302abcd", 15, true },     /* looks like a signature after the space */
        { "/tmp/ends-in-space ", 19, true },
};

START_TEST(test_weird_names_roundtrip) {
        uint8_t digest[48], buf[1024];

        memset(digest, 0x5a, sizeof(digest));
        for (IverImaTemplate t = 0; t < _IVER_IMA_TEMPLATE_MAX; t++)
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

                for (IverImaTemplate t = 0; t < _IVER_IMA_TEMPLATE_MAX; t++) {
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

static IverImaEntry *mk(uint32_t pcr, uint8_t fill, const char *path) {
        uint8_t d[32];
        IverImaEntry *e = NULL;
        memset(d, fill, sizeof(d));
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, pcr, IVER_HASH_SHA256, d, 32, path, strlen(path),
                                               NULL, 0, 0, &e), 0);
        return e;
}

START_TEST(test_violation) {
        IverImaEntry *v = NULL, *x = NULL;
        uint8_t zero[20] = {}, buf[256], td[256], z32[32] = {};
        IverDigest d;
        char *line = NULL;

        ck_assert_int_eq(iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, 10, IVER_HASH_SHA256, "/etc/passwd",
                                                         11, 0, &v), 0);
        ck_assert(v->violation);
        ck_assert_mem_eq(v->template_digest, zero, 20);
        size_t tl = hand_template_data(td, "sha256", z32, 32, "/etc/passwd", 11, false, NULL, 0);
        ck_assert_mem_eq(v->template_data, td, tl);
        ck_assert_int_eq(iver_imalog_entry_bank_digest(v, IVER_HASH_SHA256, &d), 0);
        for (size_t i = 0; i < 32; i++)
                ck_assert_uint_eq(d.bytes[i], 0xff);
        ck_assert_int_eq(iver_imalog_entry_bank_digest(v, IVER_HASH_SHA1, &d), 0);
        ck_assert_uint_eq(d.len, 20);
        ck_assert_uint_eq(d.bytes[19], 0xff);

        int n = iver_imalog_entry_to_binary(v, buf, sizeof(buf));
        ck_assert_int_eq(iver_imalog_entry_from_binary(buf, n, &x), n);
        ck_assert(x->violation);
        iver_imalog_entry_free(x);
        ck_assert_int_eq(iver_imalog_entry_to_ascii(v, &line, NULL), 0);
        ck_assert_str_eq(line, "10 0000000000000000000000000000000000000000 ima-ng "
                               "sha256:0000000000000000000000000000000000000000000000000000000000000000 /etc/passwd\n");
        ck_assert_int_eq(iver_imalog_entry_from_ascii(line, strlen(line), &x), 0);
        ck_assert(x->violation);
        ck_assert_mem_eq(x->template_data, v->template_data, tl);
        free(line);
        iver_imalog_entry_free(x);
        iver_imalog_entry_free(v);
}
END_TEST

START_TEST(test_binary_decoder_rejects) {
        IverImaEntry *e = mk(10, 0x33, "/usr/bin/x"), *x = NULL;
        uint8_t buf[256];
        int n = iver_imalog_entry_to_binary(e, buf, sizeof(buf));

        /* every truncation asks for more bytes */
        for (int k = 0; k < n; k++)
                ck_assert_int_eq(iver_imalog_entry_from_binary(buf, k, &x), -ENODATA);
        /* every flipped byte outside the PCR index (not covered by the digest) is caught */
        for (int k = 4; k < n; k++) {
                buf[k] ^= 0x01;
                int r = iver_imalog_entry_from_binary(buf, n, &x);
                ck_assert_msg(r < 0, "flip at %d accepted", k);
                buf[k] ^= 0x01;
        }
        ck_assert_ptr_null(x);
        /* the legacy "ima" template and unknown ones */
        memcpy(buf + 28, "ima-xx", 6);
        ck_assert_int_eq(iver_imalog_entry_from_binary(buf, n, &x), -EOPNOTSUPP);
        iver_imalog_entry_free(e);
}
END_TEST

static void extend(const char *name, uint8_t *pcr, size_t n, const uint8_t *d) {
        uint8_t buf[128];
        memcpy(buf, pcr, n);
        memcpy(buf + n, d, n);
        md(name, buf, 2 * n, pcr);
}

START_TEST(test_replay_prefix) {
        IverImaLog *l = NULL;
        uint8_t p1[20] = {}, p256[32] = {}, h[64];
        IverDigest vals[12][2];
        size_t prefix;

        ck_assert_int_eq(iver_imalog_new(&l), 0);
        for (unsigned i = 0; i < 10; i++) {
                IverImaEntry *e;
                char p[16];
                snprintf(p, sizeof(p), "/r/%u", i);
                if (i == 4)
                        ck_assert_int_eq(iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, 16, IVER_HASH_SHA256,
                                                                         p, strlen(p), 0, &e), 0);
                else
                        e = mk(i == 7 ? 10 : 16, i, p);        /* entry 7 goes to another PCR */
                ck_assert_int_eq(iver_imalog_push(l, e), 0);
        }
        /* expected values by hand; vals[k] = after the first k entries */
        for (unsigned k = 0; k <= 10; k++) {
                if (k > 0) {
                        const IverImaEntry *e = iver_imalog_get(l, k - 1);
                        if (e->pcr == 16) {
                                if (e->violation) {
                                        memset(h, 0xff, 64);
                                        extend("SHA1", p1, 20, h);
                                        extend("SHA256", p256, 32, h);
                                } else {
                                        md("SHA1", e->template_data, e->template_data_len, h);
                                        extend("SHA1", p1, 20, h);
                                        md("SHA256", e->template_data, e->template_data_len, h);
                                        extend("SHA256", p256, 32, h);
                                }
                        }
                }
                vals[k][0] = (IverDigest) { .algo = IVER_HASH_SHA1, .len = 20 };
                memcpy(vals[k][0].bytes, p1, 20);
                vals[k][1] = (IverDigest) { .algo = IVER_HASH_SHA256, .len = 32 };
                memcpy(vals[k][1].bytes, p256, 32);
        }
        IverDigest got;
        ck_assert_int_eq(iver_imalog_replay(l, SIZE_MAX, 16, IVER_HASH_SHA256, &got), 0);
        ck_assert_mem_eq(got.bytes, vals[10][1].bytes, 32);
        ck_assert_int_eq(iver_imalog_replay(l, 3, 16, IVER_HASH_SHA1, &got), 0);
        ck_assert_mem_eq(got.bytes, vals[3][0].bytes, 20);

        for (unsigned k = 0; k <= 10; k++) {
                ck_assert_int_eq(iver_imalog_match_prefix(l, 16, vals[k], 2, &prefix), 0);
                /* entry 7 (PCR 10) does not move PCR 16: nothing says it was
                 * extended, so the prefix after entry 6 ends before it */
                ck_assert_uint_eq(prefix, k == 8 ? 7 : k);
        }
        /* banks that disagree: no prefix */
        IverDigest mixed[2] = { vals[3][0], vals[5][1] };
        ck_assert_int_eq(iver_imalog_match_prefix(l, 16, mixed, 2, &prefix), -ENOENT);
        vals[11][0] = vals[10][0];
        vals[11][0].bytes[0] ^= 1;
        ck_assert_int_eq(iver_imalog_match_prefix(l, 16, &vals[11][0], 1, &prefix), -ENOENT);
        iver_imalog_free(l);
}
END_TEST

static char *mkdir_tmp(void) {
        char *d = strdup("/tmp/test-imalog.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d));
        return d;
}

static void rm_tmp(char *d) {
        char p[512];
        const char *names[] = { IVER_IMA_BINARY_FILE, IVER_IMA_ASCII_FILE, "saved.bin", "saved.txt" };
        for (size_t i = 0; i < 4; i++) {
                snprintf(p, sizeof(p), "%s/%s", d, names[i]);
                (void) unlink(p);
        }
        ck_assert_int_eq(rmdir(d), 0);
        free(d);
}

static off_t file_size(const char *dir, const char *name) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        ck_assert_int_eq(stat(p, &st), 0);
        return st.st_size;
}

static unsigned count_lines(const char *dir, const char *name) {
        char p[512];
        unsigned n = 0;
        int c;
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        FILE *f = fopen(p, "re");
        ck_assert_ptr_nonnull(f);
        while ((c = fgetc(f)) != EOF)
                n += c == '\n';
        fclose(f);
        return n;
}

/* Open the live list in dir and read what it holds back whole (*l). */
static int open_list(const char *dir, IverImaFile **f, IverImaLog **l, size_t *trunc) {
        char p[512];
        int r = iver_imalog_file_open(dir, f, trunc);
        if (r < 0)
                return r;
        snprintf(p, sizeof(p), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        ck_assert_int_eq(iver_imalog_load(p, l), 0);
        ck_assert_uint_eq(iver_imalog_size(*l), iver_imalog_file_count(*f));
        return 0;
}

START_TEST(test_file_torn_tail) {
        char *dir = mkdir_tmp(), p[512];
        IverImaFile *f = NULL;
        IverImaLog *l = NULL;
        size_t trunc = 99;
        off_t sizes[6];

        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 0);
        ck_assert_uint_eq(iver_imalog_size(l), 0);
        sizes[0] = 0;
        for (unsigned i = 0; i < 5; i++) {
                char path[32];
                snprintf(path, sizeof(path), "/torn/%u name", i);
                IverImaEntry *e = mk(16, i, path);
                ck_assert_int_eq(iver_imalog_file_append(f, e), 0);
                ck_assert_int_eq(iver_imalog_push(l, e), 0);
                sizes[i + 1] = (off_t) iver_imalog_file_size(f);
        }
        ck_assert_int_eq(iver_imalog_file_ascii_error(f), 0);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), sizes[5]);
        ck_assert_uint_eq(count_lines(dir, IVER_IMA_ASCII_FILE), 5);
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* the last record torn in the middle */
        snprintf(p, sizeof(p), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        ck_assert_int_eq(truncate(p, sizes[5] - 7), 0);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, sizes[5] - 7 - sizes[4]);
        ck_assert_uint_eq(iver_imalog_size(l), 4);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), sizes[4]);
        ck_assert_uint_eq(count_lines(dir, IVER_IMA_ASCII_FILE), 4);
        ck_assert_str_eq(iver_imalog_get(l, 3)->path, "/torn/3_name"); /* kernel form */
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* a tail of zeros (size grew, data never landed), and a tail of 3 bytes */
        int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        uint8_t zeros[100] = {};
        ck_assert_int_eq(write(fd, zeros, sizeof(zeros)), (ssize_t) sizeof(zeros));
        close(fd);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 100);
        ck_assert_uint_eq(iver_imalog_size(l), 4);
        iver_imalog_free(l);
        IverImaEntry *e = mk(16, 0x77, "/after");
        ck_assert_int_eq(iver_imalog_file_append(f, e), 0);
        iver_imalog_entry_free(e);
        iver_imalog_file_free(f);
        ck_assert_int_eq(truncate(p, file_size(dir, IVER_IMA_BINARY_FILE) + 3), 0);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 3);
        ck_assert_uint_eq(iver_imalog_size(l), 5);
        ck_assert_str_eq(iver_imalog_get(l, 4)->path, "/after");
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* the last record complete in length but its data garbled (the write
         * landed partly): not a record, cut; the one before stays */
        off_t full = file_size(dir, IVER_IMA_BINARY_FILE);
        e = mk(16, 0x78, "/garbled");
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_int_eq(iver_imalog_file_append(f, e), 0);
        iver_imalog_entry_free(e);
        iver_imalog_file_free(f);
        iver_imalog_free(l);
        off_t garbled = file_size(dir, IVER_IMA_BINARY_FILE);
        fd = open(p, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(pwrite(fd, zeros, 20, full + 40), 20);
        close(fd);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, garbled - full);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), full);
        ck_assert_uint_eq(iver_imalog_size(l), 5);
        ck_assert_str_eq(iver_imalog_get(l, 4)->path, "/after");
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* a burst in one write + one fdatasync */
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        IverImaEntry *burst[3] = { mk(16, 0x81, "/b1"), mk(16, 0x82, "/b2"), mk(16, 0x83, "/b 3") };
        ck_assert_int_eq(iver_imalog_file_append_many(f, (const IverImaEntry *const *) burst, 3), 0);
        ck_assert_int_eq(iver_imalog_file_append_many(f, NULL, 0), 0);
        for (size_t i = 0; i < 3; i++)
                iver_imalog_entry_free(burst[i]);
        iver_imalog_file_free(f);
        iver_imalog_free(l);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 0);
        ck_assert_uint_eq(iver_imalog_size(l), 8);
        ck_assert_str_eq(iver_imalog_get(l, 7)->path, "/b_3");
        ck_assert_uint_eq(count_lines(dir, IVER_IMA_ASCII_FILE), 8);
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* a corrupt record that is not a torn tail: refused, nothing cut */
        off_t before = file_size(dir, IVER_IMA_BINARY_FILE);
        fd = open(p, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        uint8_t byte;
        ck_assert_int_eq(pread(fd, &byte, 1, sizes[1] + 40), 1);
        byte ^= 0x20;
        ck_assert_int_eq(pwrite(fd, &byte, 1, sizes[1] + 40), 1);
        close(fd);
        l = NULL;
        f = NULL;
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), -EBADMSG);
        ck_assert_ptr_null(f);
        ck_assert_ptr_null(l);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), before);
        rm_tmp(dir);
}
END_TEST

START_TEST(test_load_save) {
        char *dir = mkdir_tmp(), pb[512], pa[512];
        IverImaLog *l = NULL, *lb = NULL, *la = NULL;

        ck_assert_int_eq(iver_imalog_new(&l), 0);
        for (size_t i = 0; i < sizeof(weird) / sizeof(weird[0]); i++) {
                if (!weird[i].ascii_ok)
                        continue;
                IverImaEntry *e = NULL;
                uint8_t d[20];
                memset(d, (int) i, sizeof(d));
                ck_assert_int_eq(iver_imalog_entry_new(i % 2 ? IVER_IMA_TEMPLATE_SIG : IVER_IMA_TEMPLATE_NG, 16,
                                                       IVER_HASH_SHA1, d, 20, weird[i].s, weird[i].n, NULL, 0, 0, &e), 0);
                ck_assert_int_eq(iver_imalog_push(l, e), 0);
        }
        snprintf(pb, sizeof(pb), "%s/saved.bin", dir);
        snprintf(pa, sizeof(pa), "%s/saved.txt", dir);
        ck_assert_int_eq(iver_imalog_save(l, pb, IVER_IMA_FORMAT_BINARY), 0);
        ck_assert_int_eq(iver_imalog_save(l, pa, IVER_IMA_FORMAT_ASCII), 0);
        ck_assert_int_eq(iver_imalog_load(pb, &lb), 0);
        ck_assert_int_eq(iver_imalog_load(pa, &la), 0);
        ck_assert_uint_eq(iver_imalog_size(lb), iver_imalog_size(l));
        ck_assert_uint_eq(iver_imalog_size(la), iver_imalog_size(l));
        for (size_t i = 0; i < iver_imalog_size(l); i++) {
                const IverImaEntry *a = iver_imalog_get(l, i), *b = iver_imalog_get(lb, i), *c = iver_imalog_get(la, i);
                ck_assert_uint_eq(a->template_data_len, b->template_data_len);
                ck_assert_mem_eq(a->template_data, b->template_data, a->template_data_len);
                ck_assert_uint_eq(a->template_data_len, c->template_data_len);
                ck_assert_mem_eq(a->template_data, c->template_data, a->template_data_len);
                ck_assert_int_eq(a->template, c->template);
        }
        /* strict load: a torn tail is an error */
        ck_assert_int_eq(truncate(pb, 10), 0);
        IverImaLog *lt = NULL;
        ck_assert_int_eq(iver_imalog_load(pb, &lt), -EBADMSG);
        ck_assert_ptr_null(lt);
        ck_assert_int_eq(iver_imalog_format_detect((const uint8_t *) "10 ab", 5), IVER_IMA_FORMAT_ASCII);
        ck_assert_int_eq(iver_imalog_format_detect((const uint8_t *) " 9 ab", 5), IVER_IMA_FORMAT_ASCII);
        ck_assert_int_eq(iver_imalog_format_detect((const uint8_t *) "\x0a\0\0\0", 4), IVER_IMA_FORMAT_BINARY);
        iver_imalog_free(l);
        iver_imalog_free(la);
        iver_imalog_free(lb);
        rm_tmp(dir);
}
END_TEST

/* A cheap fuzz pass (ASan/UBSan in CI): random mutations of valid records and
 * lines through both decoders must never crash, and whatever they accept must
 * re-encode to what they were given. */
START_TEST(test_decoder_mutations) {
        uint8_t sig[20] = { 0x03, 0x02 };
        IverImaEntry *e = NULL;
        uint8_t bin[512], mut[512];
        char *line = NULL, lmut[512];
        unsigned seed = 12345;

        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_SIG, 10, IVER_HASH_SHA1, sig, 20, "/a b\xff", 5,
                                               sig, sizeof(sig), IVER_IMA_NAME_RAW, &e), 0);
        int n = iver_imalog_entry_to_binary(e, bin, sizeof(bin));
        ck_assert_int_eq(iver_imalog_entry_to_ascii(e, &line, NULL), 0);
        size_t ln = strlen(line);

        for (unsigned round = 0; round < 200000; round++) {
                IverImaEntry *x = NULL;
                unsigned k = 1 + rand_r(&seed) % 4;
                memcpy(mut, bin, n);
                memcpy(lmut, line, ln);
                for (unsigned j = 0; j < k; j++) {
                        mut[rand_r(&seed) % n] = rand_r(&seed);
                        lmut[rand_r(&seed) % ln] = "0123456789abcdef :\n\0x"[rand_r(&seed) % 21];
                }
                size_t cut = rand_r(&seed) % 8 == 0 ? (size_t) (rand_r(&seed) % n) : (size_t) n;
                int r = iver_imalog_entry_from_binary(mut, cut, &x);
                if (r >= 0) {
                        uint8_t back[512];
                        ck_assert_int_eq(iver_imalog_entry_to_binary(x, back, sizeof(back)), r);
                        ck_assert_mem_eq(back, mut, r);
                        x = iver_imalog_entry_free(x);
                }
                r = iver_imalog_entry_from_ascii(lmut, ln, &x);
                if (r >= 0)
                        x = iver_imalog_entry_free(x);
        }
        free(line);
        iver_imalog_entry_free(e);
}
END_TEST

static Suite *imalog_suite(void) {
        Suite *s = suite_create("imalog");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_kat_ima_ng);
        tcase_add_test(tc, test_kat_ascii_parse_kernel_lines);
        tcase_add_test(tc, test_ima_sig_with_signature);
        tcase_add_test(tc, test_weird_names_roundtrip);
        tcase_add_test(tc, test_kernel_form);
        tcase_add_test(tc, test_kernel_form_no_forgery);
        tcase_add_test(tc, test_violation);
        tcase_add_test(tc, test_binary_decoder_rejects);
        tcase_add_test(tc, test_replay_prefix);
        tcase_add_test(tc, test_file_torn_tail);
        tcase_add_test(tc, test_load_save);
        tcase_add_test(tc, test_decoder_mutations);
        tcase_set_timeout(tc, 120);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return iver_run_suite(imalog_suite());
}
