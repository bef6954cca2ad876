/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The hit rule: whether a check re-hashes, and why — one function for the
 * check itself and for explain. With write attestation (kernel IMA's
 * last-writer rule) a moved cookie of an unwritten file is metadata-only. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-internal.h"
#include "macro.h"

static const char *const reason_names[_IVER_REASON_MAX] = {
        [IVER_REASON_HIT] = "hit",
        [IVER_REASON_METADATA_ONLY] = "metadata-only",
        [IVER_REASON_NEW] = "new",
        [IVER_REASON_IDENTITY] = "identity",
        [IVER_REASON_NOT_TRUSTED] = "not-trusted",
        [IVER_REASON_ALGORITHM] = "algorithm",
        [IVER_REASON_SIZE] = "size",
        [IVER_REASON_WRITTEN] = "written",
        [IVER_REASON_UNATTESTED] = "unattested",
        [IVER_REASON_WRITERS] = "writers",
        [IVER_REASON_SIGNATURE] = "signature",
};

const char *iver_check_reason_to_string(IverCheckReason r) {
        return r >= 0 && r < _IVER_REASON_MAX ? reason_names[r] : NULL;
}

void iver_context_set_attest(IverContext *ctx, iver_attest_fn fn, void *userdata) {
        ctx->attest = fn;
        ctx->attest_userdata = userdata;
}
/* Whether a read lease can be had on this very file now: refused while any
 * fd is open for writing or a writable shared mapping exists (even with its
 * fd closed). Cheap (open, fcntl, fcntl, close): only on the cookie-moved
 * path. */
static bool lease_free(int dirfd, const char *path, const IverStat *st) {
        int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
        _cleanup_close_ int fd = openat(dirfd, path, flags | O_NOATIME);
        if (fd < 0 && errno == EPERM)
                fd = openat(dirfd, path, flags);
        if (fd < 0)
                return false;
        struct stat now;
        if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode) || (uint64_t) now.st_ino != st->ino)
                return false; /* replaced meanwhile: let the hash find out */
        if (fcntl(fd, F_SETLEASE, F_RDLCK) < 0)
                return false; /* EAGAIN: writers; EACCES/EINVAL: cannot tell */
        (void) fcntl(fd, F_SETLEASE, F_UNLCK);
        return true;
}

/* Why a moved cookie with no write flag, continuous coverage, same size and
 * identity and a free lease means unchanged content (checked against each
 * way content changes; tests/integration/itest-fsops.c with fsops-*.c,
 * test-lastwriter.sh):
 *  - write, pwrite, writev, O_DIRECT, truncate/ftruncate (size or not),
 *    fallocate (extend, punch hole, zero range), copy_file_range,
 *    FICLONE/FICLONERANGE, splice: the kernel reports FAN_MODIFY for the
 *    inode, whatever path, hard link, bind mount or mount namespace was used;
 *  - io_uring writes, writes of a loop device backed by the file and any
 *    other writer: the writer holds a writable fd, so no lease until it is
 *    closed, and its close reports FAN_CLOSE_WRITE;
 *  - stores through a MAP_SHARED mapping report nothing: the mapping refuses
 *    the lease while it exists (even with its fd closed), and the last
 *    reference going (munmap) reports FAN_CLOSE_WRITE — after the stores.
 *    The flag is set by any write event since the measurement, also one
 *    that came before the cookie moved;
 *  - the lease is probed before the attest hook drains the queue: once no
 *    writer holds the file every write it made has queued its event;
 *  - lost events (overflow), a daemon restart and an unmarked filesystem
 *    count as writes to everything there (the daemon flags the entries).
 * Without the hook (no whole-filesystem tracking) every cookie move re-hashes. */
#define UNTRUSTED_FLAGS (IVER_ENTRY_PROVISIONAL | IVER_ENTRY_RACY | IVER_ENTRY_UNSTABLE | IVER_ENTRY_STALE)

int iver_check_entry_reason(const IverEntry *e, const IverCookie *now, IverHashAlgo algo) {
        if ((e->flags & (IVER_ENTRY_MEASURED | UNTRUSTED_FLAGS)) != IVER_ENTRY_MEASURED)
                return IVER_REASON_NOT_TRUSTED;
        if (e->digest.algo != algo)
                return IVER_REASON_ALGORITHM;
        IverCookie old = { .source = e->source, .ctime = e->ctime, .mtime = e->mtime, .size = e->size,
                           .version = e->version };
        return iver_cookie_equal(&old, now) ? IVER_REASON_HIT : -ESTALE;
}

bool iver_check_rule(IverContext *ctx, int dirfd, const char *path, const IverStat *st, IverCookieSource source,
                     IverHashAlgo algo, unsigned flags, IverCheckReason *ret_reason, uint32_t *ret_idx, bool *ret_same) {
        IverCookie cookie = iver_cookie_from_stat(source, st);
        IverEntry e;
        bool same;
        uint32_t idx = iver_check_find_prev(ctx, st, path, &same, &e);
        IverCheckReason reason;
        int r;

        *ret_idx = idx;
        *ret_same = same;
        if (idx == IVER_CACHE_NONE)
                reason = IVER_REASON_NEW;
        else if (!same)
                reason = IVER_REASON_IDENTITY;
        else if ((r = iver_check_entry_reason(&e, &cookie, algo)) >= 0)
                reason = r;
        else {
                if (e.size != st->size)
                        reason = IVER_REASON_SIZE;
                else if (!st->has_btime)
                        reason = IVER_REASON_IDENTITY; /* generation unknown: cannot prove the same file */
                else if (e.flags & IVER_ENTRY_WRITTEN)
                        reason = IVER_REASON_WRITTEN;
                else if (flags & IVER_CHECK_SIGNATURE_BOUND)
                        reason = IVER_REASON_SIGNATURE;
                else if (!ctx->attest)
                        reason = IVER_REASON_UNATTESTED;
                /* the lease first: once no writer holds the file, every write
                 * it made has queued its event; the hook then drains them */
                else if (!lease_free(dirfd, path, st))
                        reason = IVER_REASON_WRITERS;
                else if (ctx->attest(ctx->attest_userdata, st) <= 0)
                        reason = IVER_REASON_UNATTESTED;
                else {
                        /* the drained events may have flagged (or moved) entries */
                        idx = iver_check_find_prev(ctx, st, path, &same, &e);
                        *ret_idx = idx;
                        *ret_same = same;
                        if (idx == IVER_CACHE_NONE || !same)
                                reason = IVER_REASON_NEW;
                        else if (e.flags & (IVER_ENTRY_WRITTEN | UNTRUSTED_FLAGS))
                                reason = IVER_REASON_WRITTEN;
                        else
                                reason = IVER_REASON_METADATA_ONLY;
                }
        }
        *ret_reason = reason;
        return reason != IVER_REASON_HIT && reason != IVER_REASON_METADATA_ONLY;
}
