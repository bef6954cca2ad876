/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The check pipeline on the event loop: queued path → statx (the walk's:
 * made on a worker, walk.c), policy, cache lookup (hits end here) → worker
 * pool (hashing on that statx) → finish: cache, appraisal verdicts, and the
 * outcome's consequences (checker-outcome.c: list, hold, re-check); the uses
 * on-access waits on (checker_use). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "checker.h"
#include "checker-internal.h"
#include "evidence.h"
#include "fstrack.h"
#include "log.h"
#include "macro.h"
#include "house.h"
#include "onaccess.h"
#include "pathfd.h"
#include "recheck.h"
#include "rest.h"
#include "vanished.h"
#include "walk.h"
#include "workers-io.h"

#define DISPATCH_BATCH 4096
#define DONE_ROUNDS 8 /* takes of finished jobs in one wake-up of the loop */

static unsigned use_jobs; /* on-access jobs in flight (the loop thread only) */

unsigned checker_use_jobs(void) {
        return use_jobs;
}

/* The attributes of st that rules look at (fstype=, fowner=, uid=, mode=,
 * size), for a use (func; IVER_FUNC_NONE: none): func= and mask= rules say
 * which uses they check (an open, as fanotify shows it, is a read: the
 * opener's access mode is not in the event). */
static IverFileAttr file_attr_use(House *m, const char *path, const IverStat *st, uint32_t subject_uid,
                                  IverPolicyFunc func) {
        IverCookieTable *t = iver_context_cookies(m->ctx);
        if (path)
                (void) iver_cookie_table_source(t, st->dev, AT_FDCWD, path);
        return (IverFileAttr) {
                .fs_magic = iver_cookie_table_fs_magic(t, st->dev),
                .owner = st->uid,
                .subject_uid = subject_uid,
                .mode = st->mode,
                .size = st->size,
                .func = (uint8_t) func,
                .open_default = m->conf.on_access == IVER_ON_ACCESS_OPEN,
                .mask = func == IVER_FUNC_EXEC ? IVER_MAY_EXEC : func == IVER_FUNC_OPEN ? IVER_MAY_READ : 0,
        };
}

static IverFileAttr file_attr(House *m, const char *path, const IverStat *st, uint32_t subject_uid) {
        return file_attr_use(m, path, st, subject_uid, IVER_FUNC_NONE);
}

bool checker_decide(House *m, const Generation *g, const char *path, const IverStat *st, uint32_t subject_uid,
                    IverDecision *ret) {
        IverFileAttr attr = file_attr(m, path, st, subject_uid);
        iver_check_decide(g->policy, path, &attr, g->hash, ret);
        return ret->measure || ret->appraise;
}

/* A job carries what was decided at dispatch and the generation it was
 * decided under, to its finish: a reload meanwhile changes neither. */
static void job_decided(House *m, Job *j, const IverDecision *dec) {
        j->gen = generation_ref(m->gen);
        j->dec = *dec;
}

/* A check begun (p) goes to a worker. walked: path is the walk's
 * (check_observed). */
static bool hand_over(House *m, const char *path, const IverDecision *dec, const IverPending *p, int64_t st_at,
                      bool walked) {
        if (walked) {
                const char *owned;
                int r = queue_push_inflight(m->queue, path, &owned);
                if (r < 0)
                        return false; /* the caller queues it, or says why it cannot */
                if (r == 0)
                        return true;  /* a check of path is pending: it looks again */
                path = owned;
        }
        Job *j = calloc(1, sizeof(*j));
        if (!j) {
                m->errors++;
                if (walked)
                        queue_done(m->queue, path);
                return true;
        }
        j->path = path;
        job_decided(m, j, dec);
        j->pending = *p;
        j->stat_at = st_at;
        j->opt = iver_check_measure_options(m->ctx, p);
        /* security.ima read from the fd it hashes: appraised, or listed (ima-sig) */
        j->opt.read_ima_xattr = dec->flags & IVER_CHECK_SIGNATURE_BOUND;
        /* a file open for write is looked at when its writer is done (its
         * close, or the re-checks), not read now: a provisional digest would
         * be listed only at the last re-check (checker_outcome) */
        j->opt.defer_writers = !recheck_is_final(m->recheck, path);
        (void) workers_submit_or_follow(m->workers, j); /* another name of an inode being hashed: not again */
        return walked;
}

/* After the statx: policy, cache lookup, and the hand-off to a worker.
 * path is the queue's (dispatch), or the walker's own (walked): then a miss
 * takes a queue node in flight here and starts at once, on the walker's
 * statx (no second look at dispatch). Returns true when the check finished
 * here (hit, not measured) or, walked, was handed to a worker or joined a
 * pending check of path; false when the queue must take it (dispatch: in a
 * worker's hands). */
static bool check_observed(House *m, const char *path, const IverStat *st, int64_t st_at, bool walked) {
        IverCheckOutcome o;
        IverPending p;
        int r;

        if (!S_ISREG(st->mode) && !S_ISLNK(st->mode)) { /* symlinks: measured by their target */
                iver_check_forget(m->ctx, path);
                return true;
        }
        IverDecision dec;
        if (!checker_decide(m, m->gen, path, st, IVER_UID_UNKNOWN, &dec)) {
                iver_check_forget(m->ctx, path); /* the policy may have changed */
                return true;
        }
        onaccess_add_file(m->onaccess, st->dev, path);
        /* a queued check's statx was made just now (check_path), a walk's earlier */
        unsigned flags = dec.flags | (walked ? 0 : IVER_CHECK_OBSERVED_NOW);
        r = iver_check_begin_stat(m->ctx, AT_FDCWD, path, st, dec.algo, flags, &p, &o);
        if (r <= 0) {
                if (o.idx != IVER_CACHE_NONE)
                        iver_cache_set_mark(iver_context_cache(m->ctx), o.idx); /* seen by this scan */
                checker_outcome(m, path, &o, &dec, NULL, 0, 0);
                return true;
        }
        if (S_ISLNK(st->mode)) { /* a readlink and a hash of its target: done here */
                IverMeasurement lm;
                IverMeasureOptions lo = iver_check_measure_options(m->ctx, &p);
                r = workers_measure_link(path, &lo, &lm); /* under a writer too (no defer_writers) */
                (void) iver_check_finish(m->ctx, path, &p, r, &lm, &o);
                if (o.idx != IVER_CACHE_NONE)
                        iver_cache_set_mark(iver_context_cache(m->ctx), o.idx);
                checker_outcome(m, path, &o, &dec, NULL, 0, recheck_is_final(m->recheck, path) ? OUTCOME_LAST_TRY : 0);
                return true;
        }
        return hand_over(m, path, &dec, &p, st_at, walked);
}

/* The name a use of the file st (seen as path through the event fd's link)
 * is decided and listed under: the path iverd holds for its inode (an alias
 * through a bind mount or another mount namespace is its canonical file);
 * else path if it names this very inode in iverd's mount namespace; else a
 * marked name that can never be a measured one ("alias:DEV:INO:path", not
 * absolute): a name seen through another namespace never borrows the
 * measured name that iverd's namespace gives another inode. */
static const char *use_name(House *m, const IverStat *st, const char *path, char *buf, size_t n) {
        IverCache *c = iver_context_cache(m->ctx);
        uint32_t idx = iver_cache_find_inode(c, st->dev, st->ino);
        if (idx != IVER_CACHE_NONE) {
                IverEntry e;
                iver_cache_get(c, idx, &e);
                if ((!st->has_btime || e.id.gen == st->gen) && iver_cache_path(c, idx, buf, n) < n && buf[0] == '/')
                        return buf;
        }
        struct stat here;
        if (stat(path, &here) == 0 && ((major(here.st_dev) << 20) | (minor(here.st_dev) & 0xfffffU)) == st->dev && (uint64_t) here.st_ino == st->ino)
                return path;
        snprintf(buf, n, "alias:%u:%" PRIu64 ":%s", st->dev, st->ino, path);
        return buf;
}

void checker_unchecked_use(House *m, const char *path, uint32_t dev, uint64_t ino, bool exec, const char *what) {
        static const IverPolicyDecision any = {
                .matched = true, .action = IVER_ACTION_MEASURE, .pcr = IVER_POLICY_PCR_UNSET,
                .hash = _IVER_HASH_INVALID, .template_ = _IVER_IMA_TEMPLATE_INVALID,
        };
        char buf[PATH_MAX + 64];
        IverStat st;
        IverDecision dec;
        if (path && dev != 0 && path_context_stat(m->ctx, path, &st) >= 0 && st.dev == dev && st.ino == ino) {
                /* this name is the inode's here (use_name gives it or the
                 * canonical one): what the policy says */
                path = use_name(m, &st, path, buf, sizeof(buf));
                if (!checker_decide(m, m->gen, path, &st, IVER_UID_UNKNOWN, &dec))
                        return; /* a file no rule measures or appraises */
                checker_violation(m, path, dec.measure ? &dec.d : &any, dec.algo, what);
                return;
        }
        if (path && dev != 0) {
                IverStat id = { .dev = dev, .ino = ino };
                path = use_name(m, &id, path, buf, sizeof(buf));
        } else if (!path) {
                snprintf(buf, sizeof(buf), "unchecked:%s", exec ? "exec" : "open");
                path = buf;
        }
        checker_violation(m, path, &any, m->gen->hash, what);
}

bool checker_dir_measured(House *m, const char *dir) {
        char probe[PATH_MAX + 16];
        struct statfs sf;
        snprintf(probe, sizeof(probe), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, "iverd-probe");
        IverFileAttr attr = { .fs_magic = statfs(dir, &sf) == 0 ? (uint64_t) sf.f_type : 0, .owner = 0,
                              .subject_uid = IVER_UID_UNKNOWN, .mode = S_IFREG | 0755, .size = 1 };
        IverDecision dec;
        iver_check_decide(m->gen->policy, probe, &attr, m->gen->hash, &dec);
        return dec.measure || dec.appraise;
}

/* Whether someone else has fd's file open for write (or mapped writable and
 * shared): then no read lease can be had. Unknown (no lease support) → false. */
static bool open_for_write(int fd) {
        if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
                (void) fcntl(fd, F_SETLEASE, F_UNLCK);
                return false;
        }
        return errno == EAGAIN;
}

/* The real uid of process pid (uid= rules), or IVER_UID_UNKNOWN. */
static uint32_t process_uid(int pid) {
        char p[64], buf[2048];
        snprintf(p, sizeof(p), "/proc/%d/status", pid);
        int fd = pid > 0 ? open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
        if (fd < 0)
                return IVER_UID_UNKNOWN;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return IVER_UID_UNKNOWN;
        buf[n] = 0;
        const char *u = strstr(buf, "\nUid:");
        unsigned long uid;
        if (!u || sscanf(u + 5, "%lu", &uid) != 1 || uid >= IVER_UID_UNKNOWN)
                return IVER_UID_UNKNOWN;
        return (uint32_t) uid;
}

/* A use's fast path: the content of st's inode is on record unchanged,
 * hashed with the algorithm the policy asks for, decided for this use under
 * the name it was measured under (no readlink of the fd: the cache knows the
 * name). Not when a rule looks at the user (uid=): its decision needs the
 * process. */
static bool on_record(House *m, const IverStat *st, bool exec) {
        IverCache *c = iver_context_cache(m->ctx);
        uint32_t idx = S_ISREG(st->mode) ? iver_cache_find_inode(c, st->dev, st->ino) : IVER_CACHE_NONE;
        char p[IVER_CACHE_PATH_MAX];
        IverDecision dec;
        if (idx == IVER_CACHE_NONE || iver_policy_uses_subject(m->gen->policy) ||
            iver_cache_path(c, idx, p, sizeof(p)) >= sizeof(p))
                return false;
        IverFileAttr attr = file_attr_use(m, NULL, st, IVER_UID_UNKNOWN, exec ? IVER_FUNC_EXEC : IVER_FUNC_OPEN);
        iver_check_decide(m->gen->policy, p, &attr, m->gen->hash, &dec);
        return iver_check_peek(m->ctx, st, dec.algo);
}

bool checker_use_cached(House *m, const IverStat *st, bool exec) {
        IverIdentity id = iver_stat_identity(st);
        /* writes to it are seen by the tracker's group (the thread looks at
         * its queue), its digest is on record, and not held back from the list */
        return fstrack_tracks(m->fstrack, st->dev) && on_record(m, st, exec) && !rest_holds(m->rest, &id);
}

bool checker_version_exact(House *m, uint32_t dev) {
        IverCookieSource s = iver_cookie_table_peek(iver_context_cookies(m->ctx), dev);
        /* a change after a statx always shows in the next one: the proven
         * inode version, or multigrain ctime (a queried ctime is never reused) */
        return s == IVER_COOKIE_STATX_VERSION || s == IVER_COOKIE_CTIME;
}

void checker_uses_commit(House *m) {
        (void) evidence_commit(m->evidence);
}

int checker_track_fd(House *m) {
        return fstrack_fd(m->fstrack);
}

/* kernel IMA's open_writers: what is used (run, or read by an interpreter)
 * may not be what any digest on record says; measure it (provisionally) now
 * and hold the use for it: the provisional digest is listed, followed by an
 * open_writers entry (handle_outcome). An open may be the writer's own (the
 * event does not say): it waits for one hash, bounded. */
static void use_open_writers(House *m, const char *path, bool exec, const IverPolicyDecision *d, IverHashAlgo algo) {
        if (exec) {
                (void) recheck_add(m->recheck, path); /* one violation for this episode */
                checker_violation(m, path, d, algo, "open_writers: executed while open for write");
        }
        iver_check_invalidate(m->ctx, path);
}

/* Hash the used file on a worker, ahead of queued checks; the use waits for it
 * (waiter). Returns 1, or -ENOMEM with the path queued for an ordinary check. */
static int use_submit(House *m, int fd, const char *path, uint64_t waiter, const IverDecision *dec,
                      const IverPending *p) {
        Job *j = calloc(1, sizeof(*j));
        char *copy = strdup(path);
        int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (!j || !copy || dup < 0) {
                free(j);
                free(copy);
                if (dup >= 0)
                        close(dup);
                house_queue(m, path);
                return -ENOMEM;
        }
        j->path = copy;
        job_decided(m, j, dec);
        j->by_fd = true;
        j->fd = dup; /* the very file being used, whatever the path names by now */
        j->waiter = waiter;
        j->pending = *p;
        j->opt = iver_check_measure_options(m->ctx, p);
        /* security.ima read from the fd it hashes: appraised, or listed (ima-sig) */
        j->opt.read_ima_xattr = dec->flags & IVER_CHECK_SIGNATURE_BOUND;
        use_jobs++;
        workers_submit_first(m->workers, j);
        return 1;
}

int checker_use(House *m, int fd, const char *path, bool exec, int pid, uint64_t waiter, CheckerUse *u) {
        IverStat st;
        IverPending p;
        IverCheckOutcome o;
        IverDecision dec;
        int r = iver_context_stat_fd(m->ctx, fd, &st);
        if (r < 0)
                return r;
        fstrack_sync_use(m->fstrack); /* a close before this use flags the entry first */
        /* the usual use: this inode's content is on record unchanged (a file
         * open for write cannot be executed: ETXTBSY; an open of one goes on
         * below, to open_writers; a miss hashes under a read lease, and
         * without one its provisional result is a violation) */
        if (on_record(m, &st, exec) && (exec || !open_for_write(fd))) {
                /* on record: its entry may still wait for its name to come to
                 * rest (listed now: it is used) or for the group commit */
                IverIdentity id = iver_stat_identity(&st);
                (void) rest_use(m->rest, &id);
                (void) evidence_commit(m->evidence);
                onaccess_fast_offer(m->onaccess, &st); /* the next such use: the reading thread's */
                return 0;
        }
        if (!path)
                return -EAGAIN; /* the caller looks up the name and asks again */
        char name[IVER_CACHE_PATH_MAX];
        const char *seen = path;
        path = use_name(m, &st, path, name, sizeof(name));
        /* a marked name is decided as the name the user saw: what it claims
         * to be is measured, under a name that cannot pass for it */
        uint32_t subject = process_uid(pid);
        if (!S_ISREG(st.mode))
                return 0;
        IverFileAttr attr = file_attr_use(m, path[0] == '/' ? path : NULL, &st, subject, exec ? IVER_FUNC_EXEC : IVER_FUNC_OPEN);
        iver_check_decide(m->gen->policy, path[0] == '/' ? path : seen, &attr, m->gen->hash, &dec);
        if (!dec.measure && !dec.appraise)
                return 0;
        *u = (CheckerUse) { .d = dec.d, .measure = dec.measure, .algo = dec.algo };
        const IverPolicyDecision *d = u->measure ? &u->d : NULL;
        if (open_for_write(fd) && path[0] == '/')
                use_open_writers(m, path, exec, d, u->algo);
        r = iver_check_begin_stat(m->ctx, AT_FDCWD, path, &st, dec.algo, dec.flags | IVER_CHECK_USE, &p, &o);
        if (r <= 0) {
                checker_outcome(m, path, &o, &dec, NULL, 0, OUTCOME_USE);
                (void) evidence_commit(m->evidence); /* the use goes on: what it runs is on disk */
                return 0;
        }
        return use_submit(m, fd, path, waiter, &dec, &p);
}

/* Check one queued path on the loop thread. Returns true when finished here
 * (hit, not measured, error), false when handed to a worker. */
static bool check_path(House *m, const char *path) {
        IverStat st;
        int64_t at = iver_now_ns();
        int r = path_context_stat(m->ctx, path, &st);
        if (r < 0) {
                if (r == -ENOENT || r == -ENOTDIR) {
                        vanished_add(m->vanished, m->ctx, path); /* a rename's new name may take it */
                        recheck_remove(m->recheck, path);
                } else {
                        m->errors++;
                        log_file_warning_errno(r, "Cannot stat %s: %m", path);
                }
                return true;
        }
        return check_observed(m, path, &st, at, false);
}

bool checker_scan_observed(House *m, const char *path, const IverStat *st, int64_t st_at) {
        return check_observed(m, path, st, st_at, true);
}

bool checker_scan_named(House *m, const char *path, uint32_t dev, uint64_t ino) {
        if (!m->gen->by_path)
                return false; /* reloaded since the walk read the directory */
        if (!iver_check_unseen_fs(m->ctx, dev))
                return false; /* (begin_unseen's answer, before the decision is paid for) */
        /* what the decision looks at: the path, and the filesystem (the
         * directory's; a file mounted over another is re-decided on the
         * version hashed, job_hashed_version) */
        IverStat st = { .dev = dev, .ino = ino, .mode = S_IFREG, .nlink = 1, .uid = IVER_UID_UNKNOWN };
        IverDecision dec;
        IverPending p;
        /* not measured by its path: decided on its statx (the file may be
         * on another filesystem than its directory) */
        if (!checker_decide(m, m->gen, path, &st, IVER_UID_UNKNOWN, &dec) ||
            iver_check_begin_unseen(m->ctx, path, dev, ino, dec.algo, &p) <= 0)
                return false;
        onaccess_add_file(m->onaccess, dev, path);
        return hand_over(m, path, &dec, &p, 0, true);
}

bool checker_has_room(const House *m) {
        return workers_light(m->workers) < m->max_inflight;
}

bool checker_window_low(const House *m) {
        return workers_light(m->workers) <= m->max_inflight / 2;
}

int checker_dispatch(sd_event_source *s, void *userdata) {
        House *m = userdata;
        const char *path;
        /* events before these checks' statx flag the entries they replace
         * (nothing to dispatch: no statx, no read) */
        if (queue_queued(m->queue) > 0 && workers_light(m->workers) < m->max_inflight)
                fstrack_sync(m->fstrack);
        for (unsigned n = 0; n < DISPATCH_BATCH && workers_light(m->workers) < m->max_inflight; n++) {
                path = queue_pop(m->queue);
                if (!path)
                        break;
                if (check_path(m, path))
                        queue_done(m->queue, path);
        }
        if (queue_queued(m->queue) == 0)
                vanished_flush(m->vanished, m->ctx);
        workers_flush(m->workers);
        (void) evidence_flush(m->evidence); /* what finished here (symlinks) */
        if (queue_queued(m->queue) > 0 && workers_light(m->workers) < m->max_inflight)
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        house_maybe_settled(m);
        return 0;
}

/* The appraisal verdict of a finished job: counted; anything but valid is
 * a violation (journal, audit, flag on the entry for list --violations). */
static void handle_appraisal(House *m, const Job *j, const IverCheckOutcome *o) {
        if (!j->dec.appraise || o->result != IVER_CHECK_MEASURED || o->provisional)
                return;
        if (j->appraise_r == -ESTALE) {
                recheck_add(m->recheck, j->path); /* changed under us: look again */
                return;
        }
        if (j->appraise_r < 0) {
                m->errors++;
                log_file_warning_errno(j->appraise_r, "Cannot appraise %s: %m", j->path);
                return;
        }
        IverAppraisalResult res = j->appraisal.result;
        m->appraisals[res]++;
        IverCache *c = iver_context_cache(m->ctx);
        if (res == IVER_APPRAISAL_VALID) {
                if (o->idx != IVER_CACHE_NONE)
                        iver_cache_update_flags(c, o->idx, 0, IVER_ENTRY_VIOLATION);
                return;
        }
        m->violations++;
        if (o->idx != IVER_CACHE_NONE)
                iver_cache_update_flags(c, o->idx, IVER_ENTRY_VIOLATION, 0);
        char what[256];
        snprintf(what, sizeof(what), "appraisal %s: %s", iver_appraisal_result_to_string(res), j->appraisal.reason);
        log_violation(j->path, what);
}

/* The decisions were made on the attributes of the dispatch's statx. When
 * the version hashed has other ones (owner, mode, size, filesystem: it
 * changed in between), they are made again for it, under the job's own
 * generation. Rare: one compare otherwise. */
static void job_hashed_version(House *m, Job *j, const IverCheckOutcome *o) {
        if (o->result != IVER_CHECK_MEASURED)
                return;
        const IverStat *st = &j->m.st;
        const IverFileAttr *was = &j->dec.attr;
        if (st->uid == was->owner && st->mode == was->mode && st->size == was->size && st->dev == j->pending.st.dev)
                return;
        if (j->pending.unseen && j->gen->by_path && st->dev == j->pending.st.dev) {
                /* decided on its path and filesystem alone: that stands */
                j->dec.attr.owner = st->uid;
                j->dec.attr.mode = st->mode;
                j->dec.attr.size = st->size;
                return;
        }
        IverFileAttr attr = file_attr_use(m, NULL, st, was->subject_uid, was->func);
        IverDecision dec;
        iver_check_decide(j->gen->policy, j->path, &attr, j->gen->hash, &dec);
        /* what was hashed and appraised stays as it was done (algorithm,
         * appraisal on the worker); whether and how it is listed follows
         * the version hashed */
        j->dec.attr = dec.attr;
        j->dec.pseudo = dec.pseudo;
        j->dec.measure = dec.measure;
        j->dec.d = dec.d;
        j->dec.audit = dec.audit;
}

/* A name that followed a job of its inode (workers_submit_or_follow), after
 * that job's finish: checked again on its own observation, now mostly a hit
 * on the digest just recorded (listed under this name); hashed after all when
 * the entry cannot vouch for it (the leader failed, was provisional, or the
 * inode changed). */
static void follower_done(House *m, Job *f) {
        IverPending p;
        IverCheckOutcome o;
        if (f->pending.unseen) { /* found by name: checked now on a statx of its own */
                if (check_path(m, f->path))
                        queue_done(m->queue, f->path);
                job_free(f);
                return;
        }
        int r = iver_check_begin_stat(m->ctx, AT_FDCWD, f->path, &f->pending.st, f->pending.algo, f->dec.flags, &p,
                                      &o);
        if (r > 0) {
                IverMeasureOptions was = f->opt;
                f->pending = p;
                f->opt = iver_check_measure_options(m->ctx, &p);
                f->opt.read_ima_xattr = was.read_ima_xattr;
                f->opt.defer_writers = was.defer_writers;
                (void) workers_submit_or_follow(m->workers, f);
                return;
        }
        if (o.idx != IVER_CACHE_NONE)
                iver_cache_set_mark(iver_context_cache(m->ctx), o.idx);
        checker_outcome(m, f->path, &o, &f->dec, NULL, 0, 0);
        queue_done(m->queue, f->path);
        job_free(f);
}

/* Record what a list of finished jobs found; *uses: one was an on-access job
 * (a use waits for its entry). */
static void finish_jobs(House *m, Job *list, bool *uses) {
        for (Job *j = list, *next; j; j = next) {
                next = j->next;
                if (j->stat) { /* the walk's statx batch */
                        walk_stat_done(m->walk, j->stat);
                        job_free(j);
                        continue;
                }
                if (j->dir) { /* a directory the walk had read */
                        DirRead *d = TAKE_PTR(j->dir);
                        job_free(j);
                        walk_dir_done(m->walk, d);
                        continue;
                }
                IverCheckOutcome o;
                (void) iver_check_finish(m->ctx, j->path, &j->pending, j->r, &j->m, &o);
                /* An event came while it was hashed: a write after the statx
                 * that closed the measurement flagged the old entry, and the
                 * record just replaced it. Keep the flag, so the re-check that
                 * follows re-hashes if the cookie moved instead of taking the
                 * move as metadata-only (the last-writer rule). */
                if (!j->by_fd && o.idx != IVER_CACHE_NONE && queue_dirty(m->queue, j->path))
                        iver_cache_update_flags(iver_context_cache(m->ctx), o.idx, IVER_ENTRY_WRITTEN, 0);
                workers_finished(m->workers, j);
                /* judged under the generation it was dispatched under (a reload
                 * meanwhile applies from the next check on) */
                job_hashed_version(m, j, &o);
                if (o.idx != IVER_CACHE_NONE)
                        iver_cache_set_mark(iver_context_cache(m->ctx), o.idx);
                checker_outcome(m, j->path, &o, &j->dec, j->sig, j->sig_len,
                                j->by_fd ? OUTCOME_USE : j->opt.defer_writers ? 0 : OUTCOME_LAST_TRY);
                handle_appraisal(m, j, &o);
                if (j->by_fd) {
                        *uses = true;
                        /* a use waits: what it runs changed throughout hashing */
                        if (o.result == IVER_CHECK_UNSTABLE && j->dec.measure && m->evidence)
                                (void) evidence_record_violation(m->evidence, j->path, &j->dec.d, j->pending.algo);
                        onaccess_job_done(m->onaccess, j->waiter);
                        close(j->fd);
                        free((char *) j->path);
                        use_jobs--;
                } else
                        queue_done(m->queue, j->path);
                for (Job *f; (f = j->followers);) {
                        j->followers = f->next;
                        f->next = NULL;
                        follower_done(m, f);
                }
                job_free(j);
        }
}

int checker_workers_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        House *m = userdata;
        bool uses = false;
        unsigned rounds = 0;
        workers_ack(m->workers);
        /* what finishes while these are recorded is taken in the same wake-up,
         * up to DONE_ROUNDS times (then the eventfd brings the loop back after
         * other events); a use waiting for its entry ends the rounds */
        for (Job *list; (list = workers_take_done(m->workers));) {
                finish_jobs(m, list, &uses);
                workers_flush(m->workers); /* what the statx batches found to hash */
                if (uses || ++rounds == DONE_ROUNDS) {
                        workers_rewake(m->workers);
                        break;
                }
        }
        /* a use waits for its entry on disk: no group commit delay for it */
        (void) (uses ? evidence_commit(m->evidence) : evidence_flush(m->evidence));
        onaccess_flushed(m->onaccess); /* after the commit: the entry is in the list file */
        if (queue_queued(m->queue) > 0) /* (else nothing for a dispatch to do: no loop iteration for it) */
                (void) sd_event_source_set_enabled(m->dispatch_source, SD_EVENT_ONESHOT);
        walk_resume(m->walk);
        house_maybe_settled(m);
        return 0;
}

