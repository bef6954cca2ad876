/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Signature appraisal of security.ima on the worker threads, from the xattr
 * the measurement read on the fd it hashed (IverMeasureOptions.read_ima_xattr). */
#include <errno.h>
#include <stdlib.h>

#include "appraisal.h"
#include "macro.h"
#include "workers-io.h"

static bool has_digest(const IverMeasurement *m) {
        return m->status == IVER_MEASURE_STABLE || m->status == IVER_MEASURE_PROVISIONAL;
}

/* The verdict on j->m's xattr and digest; -EOPNOTSUPP: signed over another algorithm. */
static int verdict(Job *j) {
        if (j->m.ima_xattr_r == -ENODATA) {
                j->appraisal = (IverAppraisal) { .result = IVER_APPRAISAL_MISSING, .reason = "no security.ima",
                                                 .algo = _IVER_HASH_INVALID };
                return 0;
        }
        if (j->m.ima_xattr_r < 0)
                return j->m.ima_xattr_r;
        return iver_appraise_xattr(j->gen->keyring, j->m.ima_xattr, j->m.ima_xattr_size, &j->m.digest, &j->appraisal);
}

/* A signature over another algorithm re-measures with that one (as the
 * kernel does) and appraises that measurement's own xattr, so digest and
 * xattr stay of one version. */
static int appraise(Job *j) {
        int r = verdict(j);
        if (r != -EOPNOTSUPP)
                return r;

        IverMeasureOptions o = j->opt;
        o.algo = iver_appraise_xattr_hash_algo(j->m.ima_xattr, j->m.ima_xattr_size);
        if (o.algo < 0)
                return -EOPNOTSUPP;
        IverMeasurement m2;
        r = workers_measure_path(j->path, &o, &m2);
        if (r < 0)
                return r;
        m2.bytes_hashed += j->m.bytes_hashed;
        m2.cpu_ns += j->m.cpu_ns;
        iver_measurement_done(&j->m);
        j->m = m2;
        j->opt = o;
        if (!has_digest(&j->m))
                return -ESTALE;
        r = verdict(j);
        return r == -EOPNOTSUPP ? -ESTALE : r; /* re-signed meanwhile: look again */
}

void appraisal_run(Job *j) {
        if (j->dec.appraise) /* no digest: nothing to appraise against */
                j->appraise_r = has_digest(&j->m) ? appraise(j) : -ESTALE;
        if (has_digest(&j->m) && iver_appraise_xattr_is_signature(j->m.ima_xattr, j->m.ima_xattr_size)) {
                j->sig = TAKE_PTR(j->m.ima_xattr);
                j->sig_len = j->m.ima_xattr_size;
        }
        iver_measurement_done(&j->m);
}
