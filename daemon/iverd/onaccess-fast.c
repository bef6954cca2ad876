/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cached uses answered by the reading thread (open mode), at a bare
 * listener's cost: a statx of the event's fd, one table lookup, for an open
 * a read lease (no writer; close drops it). No path, no /proc, no policy, no
 * hand-off to the loop.
 *
 * The table is the loop's word, published between its wake-ups: an identity
 * (dev, ino, generation) with the statx a use of it was answered on, and
 * the uses (open, exec) the loop found on record unchanged for it: checked
 * again at publication, after everything the loop did since (checker_use_cached:
 * the one decision, the cache's hit rule, no held entry, writes tracked
 * without a gap), and whether its filesystem's cookie shows every change in
 * the next statx. Whatever the loop does next may change that word, so
 * every entry carries the epoch it was published in, and the loop starts a
 * new epoch (odd: busy, no entry valid) for each callback it runs
 * (manager.c's loop): the table holds while the loop sleeps. A write to the
 * file since the use the entry was published from changes what statx shows
 * (the inode version; multigrain ctime, since that statx queried it), so the
 * version compare alone sees it. Where the ctime is coarse, a write in the
 * same tick does not: a write closed before the use is an event of the
 * change tracker's group, and one the loop has not read yet (FIONREAD)
 * sends the use to the loop. A writer that still has the file open fails
 * the lease (open) or the exec (ETXTBSY). */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "onaccess-internal.h"

static size_t slot(uint32_t dev, uint64_t ino) {
        uint64_t h = (ino ^ ((uint64_t) dev << 32)) * 0x9e3779b97f4a7c15ULL;
        return (size_t) (h >> 32) & (FAST_SLOTS - 1);
}

static bool same_version(const FastEntry *e, const IverStat *st) {
        return e->dev == st->dev && e->ino == st->ino && e->gen == st->gen && e->size == st->size &&
               e->mtime == st->mtime && e->ctime == st->ctime && e->mode == st->mode &&
               e->has_ino_version == st->has_ino_version && e->ino_version == st->ino_version;
}

void onaccess_fast_offer(OnAccess *o, const IverStat *st) {
        if (!o || o->n_offers >= FAST_OFFERS)
                return;
        o->offers[o->n_offers++] = (FastOffer) { .st = *st };
}

void onaccess_loop_busy(OnAccess *o) {
        if (o)
                __atomic_store_n(&o->epoch, o->epoch | 1, __ATOMIC_SEQ_CST);
}

/* The offers of this callback, checked again now that it has done
 * everything, are published under the epoch that starts now. */
void onaccess_loop_idle(OnAccess *o) {
        if (!o)
                return;
        uint64_t next = (o->epoch | 1) + 1;
        if (o->n_offers > 0) {
                /* what it answers from is in the list file (a use goes on) */
                o->ops.uses_commit(o->ops.userdata);
                pthread_mutex_lock(&o->fast_lock);
                for (size_t i = 0; i < o->n_offers; i++) {
                        const FastOffer *f = &o->offers[i];
                        /* both uses (an exec is two events: exec, then open) */
                        uint8_t uses = (o->ops.use_cached(o->ops.userdata, &f->st, false) ? FAST_OPEN : 0) |
                                       (o->ops.use_cached(o->ops.userdata, &f->st, true) ? FAST_EXEC : 0);
                        if (uses == 0)
                                continue;
                        FastEntry *e = &o->fast[slot(f->st.dev, f->st.ino)];
                        *e = (FastEntry) { .dev = f->st.dev, .ino = f->st.ino, .gen = f->st.gen, .size = f->st.size,
                                           .mtime = f->st.mtime, .ctime = f->st.ctime, .mode = f->st.mode,
                                           .ino_version = f->st.ino_version,
                                           .has_ino_version = f->st.has_ino_version,
                                           .exact = o->ops.version_exact(o->ops.userdata, f->st.dev),
                                           .uses = uses, .epoch = next };
                        __atomic_store_n(&o->want_version, (f->st.mask & IVER_STATX_INO_VERSION) != 0,
                                         __ATOMIC_RELAXED);
                }
                pthread_mutex_unlock(&o->fast_lock);
                o->n_offers = 0;
        }
        __atomic_store_n(&o->track_fd, o->ops.track_fd(o->ops.userdata), __ATOMIC_RELAXED);
        __atomic_store_n(&o->epoch, next, __ATOMIC_SEQ_CST);
}

/* Under no lock (the reading thread). */
bool oa_fast_use(OnAccess *o, int fd, bool exec) {
        uint64_t epoch = __atomic_load_n(&o->epoch, __ATOMIC_SEQ_CST);
        int track = __atomic_load_n(&o->track_fd, __ATOMIC_RELAXED), queued = 0;
        if (epoch & 1 || track < 0)
                return false;
        IverStat st;
        if (iver_stat_fd(NULL, fd, __atomic_load_n(&o->want_version, __ATOMIC_RELAXED), &st) < 0)
                return false;
        pthread_mutex_lock(&o->fast_lock);
        const FastEntry *e = &o->fast[slot(st.dev, st.ino)];
        bool hit = e->epoch == epoch && (e->uses & (exec ? FAST_EXEC : FAST_OPEN)) && same_version(e, &st);
        bool exact = e->exact;
        pthread_mutex_unlock(&o->fast_lock);
        /* coarse ctime: a change event not read yet (a write closed just
         * before this use, in the tick of the version on record) */
        if (hit && !exact && (ioctl(track, FIONREAD, &queued) < 0 || queued > 0))
                return false;
        /* the loop still woke meanwhile (a change event read after the look above) */
        if (!hit || __atomic_load_n(&o->epoch, __ATOMIC_SEQ_CST) != epoch)
                return false;
        /* an exec of a file open for write fails (ETXTBSY); an open of one
         * goes the loop's way (open_writers). The lease ends with close. */
        return exec || fcntl(fd, F_SETLEASE, F_RDLCK) == 0;
}
