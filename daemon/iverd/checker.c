/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The check pipeline on the event loop: queued path → statx, policy,
 * cache lookup (hits end here) → worker pool → finish: cache, ledger,
 * measurement list, journal, audit, appraisal verdicts, re-checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checker.h"
#include "evidence.h"
#include "fstrack.h"
#include "log.h"
#include "manager.h"
#include "recheck.h"

#define DISPATCH_BATCH 4096

static void handle_outcome(Manager *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                           const uint8_t *sig, size_t sig_len) {
        if (o->result == IVER_CHECK_MEASURED && o->provisional) {
                /* open writers: look again (close-write comes before the lease can be had) */
                log_debug("Measured %s provisionally (open writers); will re-check", path);
                recheck_add(m->recheck, path);
                return;
        }
        if (o->result != IVER_CHECK_UNSTABLE)
                recheck_remove(m->recheck, path);
        switch (o->result) {
        case IVER_CHECK_MEASURED:
                if (!d || d->action != IVER_ACTION_MEASURE)
                        break; /* appraised only */
                m->measurements++;
                log_measurement(path, o);
                if (m->evidence)
                        (void) evidence_record(m->evidence, path, o, d, sig, sig_len);
                break;
        case IVER_CHECK_UNSTABLE:
                m->violations++;
                log_violation(path, "unstable: kept changing while hashed");
                recheck_add(m->recheck, path);
                break;
        case IVER_CHECK_ERROR:
                if (o->error == -ENOENT || o->error == -ENOTDIR)
                        break; /* vanished: forgotten */
                m->errors++;
                log_warning_errno(o->error, "Cannot measure %s: %m", path);
                break;
        case IVER_CHECK_NOT_REGULAR:
                m->not_regular++;
                break;
        default:
                break;
        }
}

/* After the statx: policy, cache lookup, and (if may_submit) the hand-off
 * to a worker. Returns true when the check finished here (hit, not
 * measured), false when it needs hashing (submitted, or not if !may_submit). */
static bool check_observed(Manager *m, const char *path, const IverStat *st, bool may_submit) {
        IverCheckOutcome o;
        IverPending p;
        int r;

        if (!S_ISREG(st->mode)) {
                iver_check_forget(m->ctx, path);
                return true;
        }
        IverCookieTable *t = iver_context_cookies(m->ctx);
        (void) iver_cookie_table_source(t, st->dev, AT_FDCWD, path);
        IverFileAttr attr = {
                .fs_magic = iver_cookie_table_fs_magic(t, st->dev),
                .owner = st->uid,
                .subject_uid = IVER_UID_UNKNOWN,
                .mode = st->mode,
                .size = st->size,
        };
        IverPolicyDecision d, a;
        bool measure = iver_policy_match(m->policy, IVER_CLASS_MEASURE, path, strlen(path), &attr, &d) >= 0 &&
                       d.matched && d.action == IVER_ACTION_MEASURE;
        bool appraise = iver_policy_match(m->policy, IVER_CLASS_APPRAISE, path, strlen(path), &attr, &a) >= 0 &&
                        a.matched && a.action == IVER_ACTION_APPRAISE;
        if (!measure && !appraise) {
                iver_check_forget(m->ctx, path); /* the policy may have changed */
                return true;
        }
        /* an appraise rule's hash= names the algorithm its signatures use */
        IverHashAlgo algo = appraise && a.hash >= 0 ? a.hash : measure && d.hash >= 0 ? d.hash : m->conf.hash;
        r = iver_check_begin_stat(m->ctx, AT_FDCWD, path, st, algo, &p, &o);
        if (r <= 0) {
                if (o.idx != IVER_CACHE_NONE)
                        iver_cache_set_mark(iver_context_cache(m->ctx), o.idx); /* seen by this scan */
                handle_outcome(m, path, &o, measure ? &d : NULL, NULL, 0);
                return true;
        }
        if (!may_submit)
                return false;
        Job *j = calloc(1, sizeof(*j));
        if (!j) {
                m->errors++;
                return true;
        }
        j->path = path;
        j->pending = p;
        j->opt = iver_check_measure_options(m->ctx, &p);
        j->keyring = appraise ? m->keyring : NULL;
        workers_submit(m->workers, j);
        return false;
}

/* Check one queued path on the loop thread. Returns true when finished here
 * (hit, not measured, error), false when handed to a worker. */
static bool check_path(Manager *m, const char *path) {
        IverStat st;
        int r = iver_context_stat(m->ctx, AT_FDCWD, path, &st);
        if (r < 0) {
                if (r == -ENOENT || r == -ENOTDIR) {
                        iver_check_forget(m->ctx, path);
                        recheck_remove(m->recheck, path);
                } else {
                        m->errors++;
                        log_warning_errno(r, "Cannot stat %s: %m", path);
                }
                return true;
        }
        return check_observed(m, path, &st, true);
}

bool checker_scan_file(Manager *m, int dirfd, const char *name, const char *path) {
        IverStat st;
        /* relative to the open directory: no walk of the whole path */
        if (iver_context_stat(m->ctx, dirfd, name, &st) < 0)
                return false; /* the queued check reports it */
        return check_observed(m, path, &st, false);
}

int checker_dispatch(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        const char *path;
        fstrack_sync(m->fstrack); /* events before these checks' statx flag the entries they replace */
        for (unsigned n = 0; n < DISPATCH_BATCH && queue_inflight(m->queue) < m->max_inflight; n++) {
                path = queue_pop(m->queue);
                if (!path)
                        break;
                if (check_path(m, path))
                        queue_done(m->queue, path);
        }
        if (queue_queued(m->queue) > 0 && queue_inflight(m->queue) < m->max_inflight)
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        manager_maybe_settled(m);
        return 0;
}

/* The appraisal verdict of a finished job: counted; anything but valid is
 * a violation (journal, audit, flag on the entry for list --violations). */
static void handle_appraisal(Manager *m, const Job *j, const IverCheckOutcome *o) {
        if (!j->keyring || o->result != IVER_CHECK_MEASURED || o->provisional)
                return;
        if (j->appraise_r == -ESTALE) {
                recheck_add(m->recheck, j->path); /* changed under us: look again */
                return;
        }
        if (j->appraise_r < 0) {
                m->errors++;
                log_warning_errno(j->appraise_r, "Cannot appraise %s: %m", j->path);
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

int checker_workers_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        for (Job *j = workers_take_done(m->workers), *next; j; j = next) {
                next = j->next;
                IverCheckOutcome o;
                (void) iver_check_finish(m->ctx, j->path, &j->pending, j->r, &j->m, &o);
                /* the decision is re-made: the policy may have been reloaded meanwhile */
                IverPolicyDecision d = { .pcr = IVER_POLICY_PCR_UNSET, .hash = _IVER_HASH_INVALID,
                                         .template_ = _IVER_IMA_TEMPLATE_INVALID };
                IverFileAttr attr = { .owner = j->m.st.uid, .subject_uid = IVER_UID_UNKNOWN, .mode = j->m.st.mode,
                                      .size = j->m.st.size,
                                      .fs_magic = iver_cookie_table_fs_magic(iver_context_cookies(m->ctx), j->m.st.dev) };
                bool measure = iver_policy_match(m->policy, IVER_CLASS_MEASURE, j->path, strlen(j->path), &attr, &d) >= 0 &&
                               d.matched && d.action == IVER_ACTION_MEASURE;
                if (o.idx != IVER_CACHE_NONE)
                        iver_cache_set_mark(iver_context_cache(m->ctx), o.idx);
                handle_outcome(m, j->path, &o, measure ? &d : NULL, j->sig, j->sig_len);
                handle_appraisal(m, j, &o);
                queue_done(m->queue, j->path);
                job_free(j);
        }
        (void) evidence_flush(m->evidence);
        (void) sd_event_source_set_enabled(m->dispatch_source, SD_EVENT_ONESHOT);
        manager_maybe_settled(m);
        return 0;
}

