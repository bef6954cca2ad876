/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared by the appraisal tests (test-appraise.c, test-appraise-keyring.c):
 * a scratch dir with RSA, EC and Ed25519 keys made by the openssl CLI, files
 * in it signed by `evmctl sign --imasig`, and one appraisal of such a file. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "iver/appraise.h"

static char dir[] = "/tmp/test-appraise-XXXXXX";

static inline int run(const char *fmt, ...) {
        char cmd[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        int st = system(cmd);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline char *path_of(const char *name) {
        static char buf[8][512];
        static int i;
        char *p = buf[i++ % 8];
        snprintf(p, 512, "%s/%s", dir, name);
        return p;
}

static inline void write_file(const char *name, const char *content) {
        FILE *f = fopen(path_of(name), "we");
        ck_assert_ptr_nonnull(f);
        fputs(content, f);
        ck_assert_int_eq(fclose(f), 0);
}

static inline IverDigest digest_of(const char *name, IverHashAlgo algo) {
        IverDigest d = { .algo = algo };
        unsigned char buf[65536];
        unsigned len = 0;
        FILE *f = fopen(path_of(name), "re");
        ck_assert_ptr_nonnull(f);
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        EVP_MD *md = EVP_MD_fetch(NULL, iver_hash_algo_to_string(algo), NULL);
        ck_assert_ptr_nonnull(md);
        ck_assert_int_eq(EVP_Digest(buf, n, d.bytes, &len, md, NULL), 1);
        EVP_MD_free(md);
        d.len = (uint8_t) len;
        return d;
}

/* The command the brief and README give: sign --imasig writes security.ima
 * (and security.evm; --uuid with no value: no filesystem UUID in the EVM
 * signature, which evmctl cannot read for an overlay/virtual root). */
static inline void sign(const char *name, const char *key, const char *algo) {
        ck_assert_int_eq(run("evmctl sign --imasig --uuid --key %s -a %s %s >/dev/null 2>&1", path_of(key), algo,
                             path_of(name)),
                         0);
}

static inline IverAppraisal appraise(const IverKeyring *kr, const char *name, IverHashAlgo algo) {
        IverDigest d = digest_of(name, algo);
        IverAppraisal a = {};
        int fd = open(path_of(name), O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(iver_appraise_fd(kr, fd, &d, &a, NULL, NULL), 0);
        close(fd);
        return a;
}

static inline void report(const char *key, const char *what, const IverAppraisal *a) {
        printf("matrix %-4s %-36s -> %-11s (%s)\n", key, what, iver_appraisal_result_to_string(a->result),
               a->reason);
        fflush(stdout);
}

static inline int setup_keys(void) {
        /* RSA 2048 and EC P-256 signing keys, a second RSA key for "another
         * key", X.509 certificates (openssl's default SKID) and DER copies. */
        return run("(cd %s && "
                   "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa.pem && "
                   "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec.pem && "
                   "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out other.pem && "
                   "openssl genpkey -algorithm ED25519 -out ed.pem && "
                   "for k in rsa ec ed; do "
                   "  openssl pkey -in $k.pem -pubout -out $k-pub.pem && "
                   "  openssl pkey -in $k.pem -pubout -outform DER -out $k-pub.der || exit 1; "
                   "done && "
                   "for k in rsa ec; do "
                   "  openssl req -new -x509 -key $k.pem -subj /CN=iverd-test-$k -days 2 -out $k-cert.pem && "
                   "  openssl x509 -in $k-cert.pem -outform DER -out $k-cert.der || exit 1; "
                   "done) >/dev/null 2>&1",
                   dir);
}

/* Root, the tools, and a scratch dir with the test keys that has security.*
 * xattrs: 0 to go on, else the exit status (77: truly missing). */
static inline int appraise_setup(const char *prog) {
        if (geteuid() != 0) {
                fprintf(stderr, "%s needs root (security.ima, the kernel keyring): skipped\n", prog);
                return 77;
        }
        if (run("{ command -v evmctl && command -v openssl && command -v keyctl; } >/dev/null") != 0) {
                fprintf(stderr, "evmctl, openssl or keyctl missing: skipped\n");
                return 77;
        }
        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return EXIT_FAILURE;
        }
        if (setup_keys() != 0) {
                fprintf(stderr, "could not make test keys in %s\n", dir);
                run("rm -rf %s", dir);
                return EXIT_FAILURE;
        }
        /* No ck_assert outside a test: plain calls. */
        int fd = open(path_of("probe"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd >= 0)
                close(fd);
        if (setxattr(path_of("probe"), IVER_IMA_XATTR_NAME, "\x04", 1, 0) < 0 && errno == ENOTSUP) {
                fprintf(stderr, "%s has no security.* xattrs: skipped\n", dir);
                run("rm -rf %s", dir);
                return 77;
        }
        return 0;
}

static inline void appraise_teardown(void) {
        run("rm -rf %s", dir);
}
