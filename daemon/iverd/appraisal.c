/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Signature appraisal of security.ima on the worker threads. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "appraisal.h"

#define XATTR_IMA "security.ima"
#define XATTR_MAX 8192

static int read_xattr(const char *path, uint8_t **ret, size_t *ret_len) {
        uint8_t *buf = malloc(XATTR_MAX);
        if (!buf)
                return -ENOMEM;
        ssize_t n = lgetxattr(path, XATTR_IMA, buf, XATTR_MAX);
        if (n < 0) {
                int r = errno == ENOTSUP ? -ENODATA : -errno;
                free(buf);
                return r;
        }
        *ret = buf;
        *ret_len = (size_t) n;
        return 0;
}

/* The cookie now equals the one the digest was computed under. */
static bool unchanged(const Job *j) {
        IverStat st;
        if (iver_stat(j->opt.statx, AT_FDCWD, j->path, j->opt.source == IVER_COOKIE_STATX_VERSION, &st) < 0)
                return false;
        IverCookie a = iver_cookie_from_stat(j->opt.source, &j->m.st), b = iver_cookie_from_stat(j->opt.source, &st);
        return st.ino == j->m.st.ino && st.dev == j->m.st.dev && iver_cookie_equal(&a, &b);
}

void appraisal_run(Job *j) {
        uint8_t *x = NULL;
        size_t n = 0;

        if (j->m.status != IVER_MEASURE_STABLE && j->m.status != IVER_MEASURE_PROVISIONAL) {
                j->appraise_r = -ESTALE; /* nothing to appraise against */
                return;
        }
        int r = read_xattr(j->path, &x, &n);
        if (r == -ENODATA) {
                j->appraisal = (IverAppraisal) { .result = IVER_APPRAISAL_MISSING, .reason = "no security.ima",
                                                 .algo = _IVER_HASH_INVALID };
                j->appraise_r = unchanged(j) ? 0 : -ESTALE;
                return;
        }
        if (r < 0) {
                j->appraise_r = r;
                return;
        }
        r = iver_appraise_xattr(j->keyring, x, n, &j->m.digest, &j->appraisal);
        if (r == -EOPNOTSUPP) {
                /* signed over another algorithm: measure with that one, as the kernel does */
                IverHashAlgo a = iver_appraise_xattr_hash_algo(x, n);
                IverMeasureOptions o = j->opt;
                o.algo = a;
                IverMeasurement m2;
                r = a >= 0 ? workers_measure_path(j->path, &o, &m2) : -EOPNOTSUPP;
                if (r >= 0 && (m2.status == IVER_MEASURE_STABLE || m2.status == IVER_MEASURE_PROVISIONAL)) {
                        m2.bytes_hashed += j->m.bytes_hashed;
                        m2.cpu_ns += j->m.cpu_ns;
                        j->m = m2;
                        j->opt = o;
                        r = iver_appraise_xattr(j->keyring, x, n, &j->m.digest, &j->appraisal);
                } else if (r >= 0)
                        r = -ESTALE;
        }
        if (r >= 0 && !unchanged(j))
                r = -ESTALE;
        j->appraise_r = r;
        if (r >= 0 && n > 0 && (x[0] == 0x03 || x[0] == 0x06)) {
                j->sig = x;
                j->sig_len = n;
                return;
        }
        free(x);
}
