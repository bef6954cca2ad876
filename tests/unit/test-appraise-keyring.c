/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where appraisal keys come from: PEM files (bundles all or nothing, keys
 * IMA does not use refused) and DER buffers, and the real kernel keyring
 * (keyctl: a 'user' key with a DER public key, an 'asymmetric' X.509
 * certificate), each used to appraise files signed by `evmctl sign --imasig`.
 * Needs root (security.* xattrs, the user keyring of uid 0), openssl, evmctl
 * and keyctl: exit 77 only when one of those is truly missing. */
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

#include "iver/appraise.h"
#include "appraise-fixtures.h"
#include "check-run.h"
/* Per process: other build trees may run this test at the same time. */
static char ring[64];

START_TEST(test_pem_files) {
        IverKeyring *kr = NULL;
        uint32_t a = 0, b = 0;

        ck_assert_int_eq(iver_keyring_new(&kr), 0);
        ck_assert_int_eq(iver_keyring_add_pem_file(kr, path_of("does-not-exist.pem")), -ENOENT);
        /* A private key alone is no public key: we do not derive one. */
        ck_assert_int_eq(iver_keyring_add_pem_file(kr, path_of("rsa.pem")), -ENOKEY);
        write_file("garbage.pem", "-----BEGIN PUBLIC KEY-----\nnot base64 !!\n-----END PUBLIC KEY-----\n");
        ck_assert_int_lt(iver_keyring_add_pem_file(kr, path_of("garbage.pem")), 0);
        write_file("empty.pem", "");
        ck_assert_int_eq(iver_keyring_add_pem_file(kr, path_of("empty.pem")), -ENOKEY);
        ck_assert_uint_eq(iver_keyring_size(kr), 0);
        /* Ed25519: not a key type IMA signatures use. */
        ck_assert_int_eq(iver_keyring_add_pem_file(kr, path_of("ed-pub.pem")), -EOPNOTSUPP);
        /* A bundle: two blocks, all or nothing. */
        ck_assert_int_eq(run("cat %s %s > %s", path_of("rsa-pub.pem"), path_of("ec-cert.pem"), path_of("bundle.pem")),
                         0);
        ck_assert_int_eq(iver_keyring_add_pem_file(kr, path_of("bundle.pem")), 2);
        ck_assert_int_eq(run("cat %s %s > %s", path_of("rsa-pub.pem"), path_of("ed-pub.pem"), path_of("mixed.pem")),
                         0);
        ck_assert_int_eq(iver_keyring_add_pem_file(kr, path_of("mixed.pem")), -EOPNOTSUPP);
        ck_assert_uint_eq(iver_keyring_size(kr), 2);
        ck_assert_int_eq(iver_keyring_get_keyid(kr, 0, &a), 0);
        ck_assert_int_eq(iver_keyring_get_keyid(kr, 1, &b), 0);
        ck_assert_uint_ne(a, b);
        /* DER through the buffer API. */
        FILE *fp = fopen(path_of("rsa-pub.der"), "re");
        ck_assert_ptr_nonnull(fp);
        uint8_t der[2048];
        size_t n = fread(der, 1, sizeof der, fp);
        fclose(fp);
        ck_assert_int_eq(iver_keyring_add_key_data(kr, der, n), 1);
        ck_assert_int_eq(iver_keyring_add_key_data(kr, der, n - 1), -EBADMSG);
        ck_assert_uint_eq(iver_keyring_size(kr), 3);
        iver_keyring_free(kr);
}
END_TEST

static void kernel_cleanup(void) {
        /* Revoked first: an unlinked keyring lingers (and is still listed in
         * /proc/keys, where lookups by name find it) until the kernel's
         * garbage collector runs. */
        run("while id=$(keyctl search @u keyring %s 2>/dev/null); do "
            "keyctl revoke $id; keyctl unlink $id @u >/dev/null; done",
            ring);
}

static IverKeyring *kernel_keyring(const char *name) {
        IverKeyring *kr = NULL;
        ck_assert_int_eq(iver_keyring_new(&kr), 0);
        int r = iver_keyring_add_kernel(kr, name);
        ck_assert_int_ge(r, 0);
        return kr;
}

/* A dedicated keyring linked into root's user keyring holds a 'user' key
 * with a DER public key (EC) and an 'asymmetric' X.509 certificate (RSA,
 * verified by the kernel). */
START_TEST(test_kernel_keyring) {
        IverAppraisal a;
        IverKeyring *kr;
        int r;

        kernel_cleanup();
        ck_assert_int_eq(run("keyctl newring %s @u >%s", ring, path_of("ring.id")), 0);
        ck_assert_int_eq(run("keyctl padd user iverd-test-key %%keyring:%s < %s >/dev/null", ring,
                             path_of("ec-pub.der")),
                         0);
        /* Something that is not a key in the same keyring is skipped. */
        ck_assert_int_eq(run("echo hello | keyctl padd user iverd-test-junk %%keyring:%s >/dev/null", ring),
                         0);

        write_file("k-rsa", "kernel rsa\n");
        write_file("k-ec", "kernel ec\n");
        sign("k-rsa", "rsa.pem", "sha256");
        sign("k-ec", "ec.pem", "sha256");

        kr = kernel_keyring(ring);
        ck_assert_uint_eq(iver_keyring_size(kr), 1);
        ck_assert_uint_eq(iver_keyring_kernel_size(kr), 1);
        a = appraise(kr, "k-ec", IVER_HASH_SHA256);
        report("ec", "kernel keyring, user key (DER)", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_VALID);
        ck_assert(!a.kernel_key);
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        report("rsa", "kernel keyring, no such key yet", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_UNKNOWN_KEY);

        /* An asymmetric key added after the keyring was loaded is found: the
         * lookup is made at appraisal, in the kernel. */
        r = run("keyctl padd asymmetric '' %%keyring:%s < %s >/dev/null", ring, path_of("rsa-cert.der"));
        ck_assert_int_eq(r, 0);
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        report("rsa", "kernel keyring, asymmetric key", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_VALID);
        ck_assert(a.kernel_key);
        iver_keyring_free(kr);

        /* By serial and by special name resolve to the same keyring. */
        char serial[32] = "";
        FILE *fp = fopen(path_of("ring.id"), "re");
        ck_assert_ptr_nonnull(fp);
        ck_assert_ptr_nonnull(fgets(serial, sizeof serial, fp));
        fclose(fp);
        serial[strcspn(serial, "\n")] = 0;
        kr = kernel_keyring(serial);
        ck_assert_uint_eq(iver_keyring_size(kr), 1);
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_VALID);

        write_file("k-rsa", "kernel rsa, modified\n");
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        report("rsa", "kernel keyring, content modified", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_FAIL);
        sign("k-rsa", "other.pem", "sha256");
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        report("rsa", "kernel keyring, another key", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_UNKNOWN_KEY);
        sign("k-rsa", "rsa.pem", "sha512");
        a = appraise(kr, "k-rsa", IVER_HASH_SHA512);
        report("rsa", "kernel keyring, sha512", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_VALID);
        ck_assert(a.kernel_key);
        ck_assert_int_eq(removexattr(path_of("k-rsa"), IVER_IMA_XATTR_NAME), 0);
        a = appraise(kr, "k-rsa", IVER_HASH_SHA512);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_MISSING);
        iver_keyring_free(kr);

        char pct[80];
        snprintf(pct, sizeof pct, "%%keyring:%s", ring);
        kr = kernel_keyring(pct);
        ck_assert_uint_eq(iver_keyring_size(kr), 1);
        iver_keyring_free(kr);

        /* The keys taken out of the keyring, then the keyring revoked:
         * unknown key, not an error. (Merely unlinking it leaves it, until
         * the kernel collects it, a keyring we no longer possess: EACCES.) */
        sign("k-rsa", "rsa.pem", "sha256");
        kr = kernel_keyring(ring);
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_VALID);
        ck_assert_int_eq(run("keyctl clear %%keyring:%s", ring), 0);
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        report("rsa", "kernel keyring cleared", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_UNKNOWN_KEY);
        ck_assert_int_eq(run("keyctl revoke %s", serial), 0);
        a = appraise(kr, "k-rsa", IVER_HASH_SHA256);
        report("rsa", "kernel keyring revoked", &a);
        ck_assert_int_eq(a.result, IVER_APPRAISAL_UNKNOWN_KEY);
        iver_keyring_free(kr);
        ck_assert_int_eq(run("keyctl unlink %s @u >/dev/null", serial), 0);
        kernel_cleanup();

        /* An asymmetric key we may not search (user view+read only, as the
         * kernel's .ima keys, and here no possessor rights either): refused
         * when loading, not per file. */
        ck_assert_int_eq(run("keyctl newring %s @u >/dev/null && "
                             "k=$(keyctl padd asymmetric '' %%keyring:%s < %s) && "
                             "keyctl setperm $k 0x00030000",
                             ring, ring, path_of("rsa-cert.der")),
                         0);
        ck_assert_int_eq(iver_keyring_new(&kr), 0);
        ck_assert_int_eq(iver_keyring_add_kernel(kr, ring), -EACCES);
        ck_assert_uint_eq(iver_keyring_kernel_size(kr), 0);
        iver_keyring_free(kr);
        kernel_cleanup();

        ck_assert_int_eq(iver_keyring_new(&kr), 0);
        ck_assert_int_eq(iver_keyring_add_kernel(kr, ring), -ENOKEY);
        ck_assert_int_eq(iver_keyring_add_kernel(kr, ""), -EINVAL);
        ck_assert_uint_eq(iver_keyring_kernel_size(kr), 0);
        iver_keyring_free(kr);
}
END_TEST
int main(void) {
        int r = appraise_setup("test-appraise-keyring");
        if (r != 0)
                return r;
        snprintf(ring, sizeof ring, "iverd-test-appraise-%d", (int) getpid());

        Suite *s = suite_create("appraise-keyring");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_pem_files);
        tcase_add_test(tc, test_kernel_keyring);
        suite_add_tcase(s, tc);
        r = iver_run_suite(s);
        kernel_cleanup();
        appraise_teardown();
        return r;
}
