/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Appraisal of security.ima against real evmctl signatures: keys made by the
 * openssl CLI, files signed by `evmctl sign --imasig`; result names, key ids
 * against evmctl's, the valid/invalid/missing/unknown-key matrix, malformed
 * xattrs. Keys from PEM files and the kernel keyring: test-appraise-keyring.c.
 * Needs root (security.* xattrs), openssl, evmctl and keyctl: exit 77 only
 * when one of those is truly missing. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "seed.h"
#include "iver/appraise.h"
#include "appraise-fixtures.h"
#include "check-run.h"
static size_t get_xattr(const char *name, uint8_t *buf, size_t size) {
        ssize_t n = getxattr(path_of(name), IVER_IMA_XATTR_NAME, buf, size);
        ck_assert_int_gt(n, 0);
        return (size_t) n;
}

static IverKeyring *keyring_of(const char *pem) {
        IverKeyring *kr = NULL;
        ck_assert_int_eq(iver_keyring_new(&kr), 0);
        ck_assert_int_eq(iver_keyring_add_pem_file(kr, path_of(pem)), 1);
        return kr;
}

static const char *const key_names[] = { "rsa", "ec" };

START_TEST(test_names) {
        ck_assert_str_eq(iver_appraisal_result_to_string(IVER_APPRAISAL_VALID), "valid");
        ck_assert_str_eq(iver_appraisal_result_to_string(IVER_APPRAISAL_FAIL), "invalid");
        ck_assert_str_eq(iver_appraisal_result_to_string(IVER_APPRAISAL_MISSING), "missing");
        ck_assert_str_eq(iver_appraisal_result_to_string(IVER_APPRAISAL_UNKNOWN_KEY), "unknown-key");
        ck_assert_ptr_null(iver_appraisal_result_to_string(_IVER_APPRAISAL_MAX));
        ck_assert_ptr_null(iver_appraisal_result_to_string(_IVER_APPRAISAL_INVALID));
        for (int i = 0; i < _IVER_APPRAISAL_MAX; i++)
                ck_assert_int_eq(iver_appraisal_result_from_string(iver_appraisal_result_to_string(i)), i);
        ck_assert_int_eq(iver_appraisal_result_from_string("bogus"), _IVER_APPRAISAL_INVALID);
        ck_assert_int_eq(iver_appraisal_result_from_string(NULL), _IVER_APPRAISAL_INVALID);
        ck_assert_ptr_null(iver_keyring_free(NULL));
}
END_TEST

/* Our key id, computed from the public key, equals the one evmctl stored. */
START_TEST(test_keyid_known_answer) {
        const char *k = key_names[_i];
        char priv[32], pub[32], cert[32], fname[32];
        uint8_t x[1024];
        uint32_t ours = 0, cert_id = 0;

        snprintf(priv, sizeof priv, "%s.pem", k);
        snprintf(pub, sizeof pub, "%s-pub.pem", k);
        snprintf(cert, sizeof cert, "%s-cert.pem", k);
        snprintf(fname, sizeof fname, "kat-%s", k);
        write_file(fname, "known answer\n");
        sign(fname, priv, "sha256");
        size_t n = get_xattr(fname, x, sizeof x);
        ck_assert_uint_gt(n, IVER_IMA_SIG_V2_HDR_SIZE);
        ck_assert_uint_eq(x[0], 0x03);
        ck_assert_uint_eq(x[1], 2);
        ck_assert_uint_eq(x[2], 4);  /* HASH_ALGO_SHA256 */
        uint32_t evm = (uint32_t) x[3] << 24 | (uint32_t) x[4] << 16 | (uint32_t) x[5] << 8 | x[6];

        IverKeyring *kr = keyring_of(pub);
        ck_assert_uint_eq(iver_keyring_size(kr), 1);
        ck_assert_int_eq(iver_keyring_get_keyid(kr, 0, &ours), 0);
        ck_assert_int_eq(iver_keyring_get_keyid(kr, 1, &ours), -ERANGE);
        iver_keyring_free(kr);

        /* The certificate's SKID (openssl's default, RFC 5280 method 1) is
         * the id the kernel matches: the same 4 bytes. */
        kr = keyring_of(cert);
        ck_assert_int_eq(iver_keyring_get_keyid(kr, 0, &cert_id), 0);
        iver_keyring_free(kr);

        printf("keyid %-3s evmctl xattr %08x, ours from %s %08x, from %s (SKID) %08x\n", k, evm, pub, ours, cert,
               cert_id);
        fflush(stdout);
        ck_assert_uint_eq(ours, evm);
        ck_assert_uint_eq(cert_id, evm);
}
END_TEST

START_TEST(test_matrix) {
        const char *k = key_names[_i];
        char priv[32], pub[32], f[32];
        IverAppraisal a;

        snprintf(priv, sizeof priv, "%s.pem", k);
        snprintf(pub, sizeof pub, "%s-pub.pem", k);
        snprintf(f, sizeof f, "matrix-%s", k);
        IverKeyring *kr = keyring_of(pub);

        write_file(f, "#!/bin/sh\necho signed\n");
        sign(f, priv, "sha256");
        a = appraise(kr, f, IVER_HASH_SHA256);
        report(k, "signed, unchanged", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_VALID);
        ck_assert_int_eq(a.algo, IVER_HASH_SHA256);
        ck_assert(!a.kernel_key);

        /* The signature travels with the fd variant for an ima-sig entry. */
        {
                uint8_t *sig = NULL, x[1024];
                size_t sig_len = 0, n = get_xattr(f, x, sizeof x);
                IverDigest d = digest_of(f, IVER_HASH_SHA256);
                int fd = open(path_of(f), O_RDONLY | O_CLOEXEC);
                ck_assert_int_eq(iver_appraise_fd(kr, fd, &d, &a, &sig, &sig_len), 0);
                close(fd);
                ck_assert_uint_eq(sig_len, n);
                ck_assert_mem_eq(sig, x, n);
                free(sig);
        }

        /* Content changed after signing: the digest is the new content's. */
        write_file(f, "#!/bin/sh\necho tampered\n");
        a = appraise(kr, f, IVER_HASH_SHA256);
        report(k, "content modified", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_FAIL);

        ck_assert_int_eq(removexattr(path_of(f), IVER_IMA_XATTR_NAME), 0);
        a = appraise(kr, f, IVER_HASH_SHA256);
        report(k, "xattr removed", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_MISSING);
        {
                uint8_t *sig = (uint8_t *) 1;
                size_t sig_len = 1;
                IverDigest d = digest_of(f, IVER_HASH_SHA256);
                int fd = open(path_of(f), O_RDONLY | O_CLOEXEC);
                ck_assert_int_eq(iver_appraise_fd(kr, fd, &d, &a, &sig, &sig_len), 0);
                close(fd);
                ck_assert_ptr_null(sig);
                ck_assert_uint_eq(sig_len, 0);
        }

        /* A hash, not a signature (evmctl ima_hash writes type 0x04). */
        ck_assert_int_eq(run("evmctl ima_hash %s >/dev/null 2>&1", path_of(f)), 0);
        a = appraise(kr, f, IVER_HASH_SHA256);
        report(k, "xattr is a hash (0x04)", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_MISSING);

        sign(f, "other.pem", "sha256");
        a = appraise(kr, f, IVER_HASH_SHA256);
        report(k, "signed with another key", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_UNKNOWN_KEY);

        /* Signed with sha512 but hashed with sha256: the caller must re-hash
         * with the signature's algorithm. */
        sign(f, priv, "sha512");
        {
                uint8_t x[1024];
                size_t n = get_xattr(f, x, sizeof x);
                IverDigest d = digest_of(f, IVER_HASH_SHA256);
                IverAppraisal untouched = { .result = 77 };
                ck_assert_int_eq(iver_appraise_xattr(kr, x, n, &d, &untouched), -EOPNOTSUPP);
                ck_assert_int_eq(untouched.result, 77);
                ck_assert_int_eq(iver_appraise_xattr_hash_algo(x, n), IVER_HASH_SHA512);
                printf("matrix %-4s %-36s -> %-11s (%s)\n", k, "sha512 signature, sha256 digest", "-EOPNOTSUPP",
                       "re-hash with sha512");
        }
        a = appraise(kr, f, IVER_HASH_SHA512);
        report(k, "sha512 signature, re-hashed sha512", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_VALID);
        ck_assert_int_eq(a.algo, IVER_HASH_SHA512);

        /* Unknown key wins over the algorithm mismatch: no re-hash for nothing. */
        sign(f, "other.pem", "sha512");
        a = appraise(kr, f, IVER_HASH_SHA256);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_UNKNOWN_KEY);

        iver_keyring_free(kr);
}
END_TEST

static IverAppraisalResult appraise_bytes(const IverKeyring *kr, const uint8_t *x, size_t n, const IverDigest *d) {
        IverAppraisal a = {};
        ck_assert_int_eq(iver_appraise_xattr(kr, x, n, d, &a), 0);
        ck_assert_ptr_nonnull(a.reason);
        return a.result;
}

START_TEST(test_malformed) {
        const char *k = key_names[_i];
        char priv[32], pub[32], f[32];
        uint8_t good[1024], x[1100];
        IverAppraisal a;

        snprintf(priv, sizeof priv, "%s.pem", k);
        snprintf(pub, sizeof pub, "%s-pub.pem", k);
        snprintf(f, sizeof f, "bad-%s", k);
        IverKeyring *kr = keyring_of(pub);
        write_file(f, "payload\n");
        sign(f, priv, "sha256");
        size_t n = get_xattr(f, good, sizeof good);
        IverDigest d = digest_of(f, IVER_HASH_SHA256);
        ck_assert_int_eq(appraise_bytes(kr, good, n, &d), IVER_APPRAISAL_VALID);

        ck_assert_int_eq(appraise_bytes(kr, NULL, 0, &d), IVER_APPRAISAL_MISSING);
        /* Every truncation is invalid: the header's length no longer holds. */
        for (size_t len = 1; len < n; len++)
                ck_assert_int_eq(appraise_bytes(kr, good, len, &d), IVER_APPRAISAL_FAIL);
        printf("matrix %-4s %-36s -> %s\n", k, "truncated (every length 1..n-1)", "invalid");

        /* Other types: hashes and EVM values are no signature; fs-verity is
         * a signature we cannot check. */
        static const struct {
                uint8_t type;
                IverAppraisalResult expect;
        } types[] = {
                { 0x00, IVER_APPRAISAL_MISSING }, { 0x01, IVER_APPRAISAL_MISSING }, { 0x02, IVER_APPRAISAL_MISSING },
                { 0x04, IVER_APPRAISAL_MISSING }, { 0x05, IVER_APPRAISAL_MISSING }, { 0x06, IVER_APPRAISAL_FAIL },
                { 0xff, IVER_APPRAISAL_MISSING },
        };
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
                memcpy(x, good, n);
                x[0] = types[i].type;
                IverAppraisalResult r = appraise_bytes(kr, x, n, &d);
                printf("matrix %-4s type 0x%02x%-27s -> %s\n", k, types[i].type, "",
                       iver_appraisal_result_to_string(r));
                ck_assert_int_eq(r, types[i].expect);
        }

        /* Versions 1 and 3 are not v2 signatures over the file digest. */
        for (uint8_t v = 0; v < 5; v++) {
                if (v == 2)
                        continue;
                memcpy(x, good, n);
                x[1] = v;
                ck_assert_int_eq(appraise_bytes(kr, x, n, &d), IVER_APPRAISAL_FAIL);
        }
        printf("matrix %-4s %-36s -> %s\n", k, "version 0,1,3,4", "invalid");

        /* Lying lengths: sig_size +-1, 0, 0xffff, and trailing bytes. */
        static const int deltas[] = { -1, 1, -100000, 100000 };
        for (size_t i = 0; i < 4; i++) {
                memcpy(x, good, n);
                long sz = ((long) x[7] << 8 | x[8]) + deltas[i];
                sz = sz < 0 ? 0 : sz > 0xffff ? 0xffff : sz;
                x[7] = (uint8_t) (sz >> 8);
                x[8] = (uint8_t) sz;
                ck_assert_int_eq(appraise_bytes(kr, x, n, &d), IVER_APPRAISAL_FAIL);
        }
        memcpy(x, good, n);
        x[n] = 0;
        ck_assert_int_eq(appraise_bytes(kr, x, n + 1, &d), IVER_APPRAISAL_FAIL);
        printf("matrix %-4s %-36s -> %s\n", k, "lying sig_size / trailing byte", "invalid");

        /* Consistent lengths, signature cut short: does not verify. */
        memcpy(x, good, n);
        size_t cut = n - 10 - IVER_IMA_SIG_V2_HDR_SIZE;
        x[7] = (uint8_t) (cut >> 8);
        x[8] = (uint8_t) cut;
        ck_assert_int_eq(appraise_bytes(kr, x, n - 10, &d), IVER_APPRAISAL_FAIL);

        /* Every single flipped bit in the signature: invalid. */
        for (size_t i = IVER_IMA_SIG_V2_HDR_SIZE; i < n; i++) {
                memcpy(x, good, n);
                x[i] ^= 1u << (i % 8);
                ck_assert_int_eq(appraise_bytes(kr, x, n, &d), IVER_APPRAISAL_FAIL);
        }
        printf("matrix %-4s %-36s -> %s\n", k, "one bit flipped in the signature", "invalid");

        /* Key id changed: unknown. Hash algorithm byte changed. */
        memcpy(x, good, n);
        x[5] ^= 0x40;
        ck_assert_int_eq(appraise_bytes(kr, x, n, &d), IVER_APPRAISAL_UNKNOWN_KEY);
        memcpy(x, good, n);
        x[2] = 7;  /* sha224: the kernel knows it, iverd does not hash with it */
        ck_assert_int_eq(iver_appraise_xattr_hash_algo(x, n), _IVER_HASH_INVALID);
        ck_assert_int_eq(appraise_bytes(kr, x, n, &d), IVER_APPRAISAL_FAIL);
        x[2] = 0xee;
        ck_assert_int_eq(appraise_bytes(kr, x, n, &d), IVER_APPRAISAL_FAIL);
        x[2] = 2;  /* sha1 against a sha256 digest: re-hash, then it does not verify */
        ck_assert_int_eq(iver_appraise_xattr(kr, x, n, &d, &a), -EOPNOTSUPP);
        IverDigest d1 = digest_of(f, IVER_HASH_SHA1);
        ck_assert_int_eq(appraise_bytes(kr, x, n, &d1), IVER_APPRAISAL_FAIL);
        printf("matrix %-4s %-36s -> %s\n", k, "hash byte sha224 / 0xee / sha1", "invalid");

        /* Random bytes behind a valid-looking header: never a crash. */
        srand((unsigned) test_seed("appraise random bytes", 7));
        for (int round = 0; round < 2000; round++) {
                size_t len = (size_t) rand() % sizeof x;
                for (size_t i = 0; i < len; i++)
                        x[i] = (uint8_t) rand();
                if (len > 0 && round % 2)
                        x[0] = 0x03;
                if (len > 1 && round % 4 == 1)
                        x[1] = 2;
                if (len > 8 && round % 8 == 1) {
                        memcpy(x + 3, good + 3, 4);
                        x[7] = (uint8_t) ((len - 9) >> 8);
                        x[8] = (uint8_t) (len - 9);
                }
                int r = iver_appraise_xattr(kr, x, len, &d, &a);
                ck_assert(r == 0 || r == -EOPNOTSUPP);
                if (r == 0)
                        ck_assert(a.result != IVER_APPRAISAL_VALID);
        }

        /* The same through the file: a lying xattr on disk. */
        memcpy(x, good, n);
        x[8] ^= 0x01;
        ck_assert_int_eq(setxattr(path_of(f), IVER_IMA_XATTR_NAME, x, n, 0), 0);
        a = appraise(kr, f, IVER_HASH_SHA256);
        report(k, "lying length on disk", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_FAIL);
        ck_assert_int_eq(setxattr(path_of(f), IVER_IMA_XATTR_NAME, good, 5, 0), 0);
        a = appraise(kr, f, IVER_HASH_SHA256);
        report(k, "truncated header on disk", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_FAIL);

        iver_keyring_free(kr);
}
END_TEST

int main(void) {
        int r = appraise_setup("test-appraise");
        if (r != 0)
                return r;

        Suite *s = suite_create("appraise");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_names);
        tcase_add_loop_test(tc, test_keyid_known_answer, 0, 2);
        tcase_add_loop_test(tc, test_matrix, 0, 2);
        tcase_add_loop_test(tc, test_malformed, 0, 2);
        suite_add_tcase(s, tc);
        r = iver_run_suite(s);
        appraise_teardown();
        return r;
}
