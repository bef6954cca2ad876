/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A symlink's measurement: the digest of its target string (as AIDE records
 * link targets), under the lstat observation it was read under. A measured
 * directory swapped for a symlink to somewhere else thus changes the evidence. */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "digest-internal.h"
#include "iver/measure.h"
#include "macro.h"

#define DEFAULT_ATTEMPTS 3U

static bool same_link(IverCookieSource source, const IverStat *a, const IverStat *b) {
        IverCookie ca = iver_cookie_from_stat(source, a), cb = iver_cookie_from_stat(source, b);
        return a->dev == b->dev && a->ino == b->ino && a->gen == b->gen && iver_cookie_equal(&ca, &cb);
}

int iver_measure_link(int dirfd, const char *path, const IverMeasureOptions *opt, IverMeasurement *ret) {
        const EVP_MD *md = iver_hash_algo_md(opt->algo);
        if (!md)
                return -EOPNOTSUPP;
        bool want_version = opt->source == IVER_COOKIE_STATX_VERSION;
        unsigned attempts = opt->max_attempts ?: DEFAULT_ATTEMPTS;
        char target[PATH_MAX];
        IverMeasurement m = { .status = IVER_MEASURE_UNSTABLE, .digest.algo = _IVER_HASH_INVALID };
        int r;

        for (m.attempts = 1; m.attempts <= attempts; m.attempts++) {
                IverStat before, after;
                m.started_at = iver_now_ns();
                r = iver_stat(opt->statx, dirfd, path, want_version, &before);
                if (r < 0)
                        return r;
                if (!S_ISLNK(before.mode)) {
                        *ret = (IverMeasurement) { .status = IVER_MEASURE_NOT_REGULAR, .st = before, .attempts = m.attempts };
                        return 0;
                }
                ssize_t n = readlinkat(dirfd, path, target, sizeof(target));
                if (n < 0)
                        return errno == EINVAL ? (*ret = (IverMeasurement) { .status = IVER_MEASURE_NOT_REGULAR,
                                                                             .st = before }, 0)
                                               : negative_errno();
                if ((size_t) n >= sizeof(target))
                        return -ENAMETOOLONG;
                r = iver_stat(opt->statx, dirfd, path, want_version, &after);
                if (r < 0)
                        return r;
                m.st = before;
                if (!same_link(opt->source, &before, &after) || (uint64_t) n != before.size)
                        continue; /* replaced while read */
                r = iver_hash_buf(opt->algo, target, (size_t) n, m.digest.bytes);
                if (r < 0)
                        return r;
                m.digest.algo = opt->algo;
                m.digest.len = (uint8_t) iver_hash_algo_size(opt->algo);
                m.bytes_hashed += (uint64_t) n;
                /* a symlink's target never changes in place: no lease needed */
                m.status = IVER_MEASURE_STABLE;
                break;
        }
        if (m.attempts > attempts)
                m.attempts = attempts;
        *ret = m;
        return 0;
}
