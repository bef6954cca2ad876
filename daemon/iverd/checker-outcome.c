/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a check's outcome leads to (checker-internal.h): listed now, held
 * until its name comes to rest (rest.h), listed under a rename's or another
 * hard link's name without a hash, re-checked (provisional, unstable,
 * transient errors), counted; violations. */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "checker-internal.h"
#include "evidence.h"
#include "log.h"
#include "recheck.h"
#include "rest.h"

void checker_violation(House *m, const char *path, const IverPolicyDecision *d, IverHashAlgo algo, const char *what) {
        m->violations++;
        log_violation(path, what);
        if (m->evidence && d) {
                (void) evidence_record_violation(m->evidence, path, d, algo);
                (void) evidence_commit(m->evidence); /* listed now, not with the next group */
        }
}

static void list_now(House *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
                     const uint8_t *sig, size_t sig_len, bool use);

/* A held digest is not listed yet: a use lists it at once (checker_use
 * asks rest.c on every path that finds the content on record), and a
 * snapshot marks it stale (persist.c), so a restart measures it again. */
static void hold(House *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
                 const uint8_t *sig, size_t sig_len) {
        if (rest_offer(m->rest, path, o, d, audit, sig, sig_len) < 0) /* no memory to hold it: listed now */
                list_now(m, path, o, d, audit, sig, sig_len, false);
}

/* A hit after a cookie move proven unwritten: a rename (the entry took the
 * new name, o->renamed) or a new link of a listed file is listed under its
 * new name once that has come to rest, or now when it is used by that name. */
static void offer_renamed(House *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                          bool audit, bool use) {
        char p[IVER_CACHE_PATH_MAX];
        if (o->idx == IVER_CACHE_NONE)
                return;
        size_t n = iver_cache_path(iver_context_cache(m->ctx), o->idx, p, sizeof(p));
        if (!o->renamed && n > 0 && n < sizeof(p) && strcmp(p, path) == 0)
                return; /* same name: listed already (chmod, chown, xattr) */
        if (use)
                list_now(m, path, o, d, audit, NULL, 0, true);
        else
                hold(m, path, o, d, audit, NULL, 0);
}

void checker_rested(House *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
                    const uint8_t *sig, size_t sig_len, bool use) {
        list_now(m, path, o, d, audit, sig, sig_len, use);
}

static void list_now(House *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
                     const uint8_t *sig, size_t sig_len, bool use) {
        m->measurements++;
        /* "Measured" in the journal (and audit) only for what the list
         * takes: not for a version it has (the same name and content), nor
         * one held back by the churn limit or the owner's budget */
        if (evidence_record(m->evidence, path, o, d, sig, sig_len, use) > 0)
                log_measurement(path, o, audit);
}

/* A hit through another hard-link name of the inode (the cache keeps one
 * entry, with one name, per inode): the inode is not hashed again, but this
 * name is listed under its own name like any measured name, once (the list's
 * dedup by template digest makes a name already listed cost one lookup). */
static void list_other_name(House *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                            bool audit, bool use) {
        uint8_t sig[2048];
        ssize_t n = 0;
        if (d->template_ == IVER_IMA_TEMPLATE_SIG) { /* the inode's signature, as a worker reads it */
                n = lgetxattr(path, "security.ima", sig, sizeof(sig));
                if (n < 0 || !iver_appraise_xattr_is_signature(sig, (size_t) n))
                        n = 0;
        }
        if (evidence_record(m->evidence, path, o, d, n > 0 ? sig : NULL, (size_t) n, use) > 0) {
                m->measurements++;
                log_measurement(path, o, audit);
        }
}

void checker_outcome(House *m, const char *path, const IverCheckOutcome *o, const IverDecision *dec,
                     const uint8_t *sig, size_t sig_len, unsigned how) {
        const IverPolicyDecision *d = dec->measure ? &dec->d : NULL;
        bool use = how & OUTCOME_USE, last_try = how & OUTCOME_LAST_TRY;
        /* A provisional result (no read lease: open writers) may be of no
         * version the writer meant (a write in progress). Kernel IMA measures a
         * file at its use, not while it is written, and records open_writers
         * when a use meets a writer: so a provisional digest is listed when a
         * use waited for it, or when the file stayed open for write through
         * every re-check (~5 s: a writer holding it, as in a hold-open swap);
         * otherwise it is looked at again when the writer is done, and only
         * the version it closed with is listed. A listed provisional digest is
         * followed by an open_writers violation entry: a verifier sees which
         * digests were measured while a writer held the file. Only the last
         * try's own result ends its episode: one from a check begun before
         * it (still deferring to writers) that comes back while it is
         * hashed leaves its mark to it. */
        bool retry = o->result == IVER_CHECK_ERROR && recheck_retry(m->recheck, path, o->error);
        bool list_unstable = false;
        if (o->result == IVER_CHECK_MEASURED && o->provisional) {
                if (!use && !(last_try && recheck_take_final(m->recheck, path))) {
                        (void) recheck_add(m->recheck, path);
                        return; /* a write in progress: its end is measured */
                }
                (void) recheck_add(m->recheck, path); /* a new episode, until it measures stably */
        } else if (o->result == IVER_CHECK_DEFERRED)
                (void) recheck_add(m->recheck, path); /* until the writer is done, or its last try */
        else if (o->result == IVER_CHECK_UNSTABLE)
                /* a new episode follows; the first last try found unstable
                 * is listed (below) */
                list_unstable = last_try && recheck_unstable_final(m->recheck, path);
        else if (!retry)
                recheck_remove(m->recheck, path);
        switch (o->result) {
        case IVER_CHECK_HIT:
                if (use && rest_use(m->rest, &o->id) > 0)
                        break; /* a held digest, listed now: it is used */
                if (d && d->action == IVER_ACTION_MEASURE && rest_holds(m->rest, &o->id)) {
                        if (o->other_name)
                                /* another name of a held inode that has several:
                                 * listed now under its own. Held, it would take
                                 * the held entry (one per inode) from a name that
                                 * still holds the file, never to be listed; that
                                 * name waits for its rest */
                                list_other_name(m, path, o, d, dec->audit, use);
                        else
                                hold(m, path, o, d, dec->audit, NULL, 0); /* the held entry follows name and cookie */
                } else if (o->metadata_only && d && d->action == IVER_ACTION_MEASURE)
                        offer_renamed(m, path, o, d, dec->audit, use);
                else if (o->other_name && d && d->action == IVER_ACTION_MEASURE)
                        list_other_name(m, path, o, d, dec->audit, use);
                break;
        case IVER_CHECK_MEASURED:
                if (!d || d->action != IVER_ACTION_MEASURE)
                        break; /* appraised only */
                if (!use && !o->provisional && !(o->other_name && rest_holds(m->rest, &o->id))) {
                        /* listed once its name has come to rest (rest.h); another
                         * name of a held inode is listed now (as a hit's, above) */
                        hold(m, path, o, d, dec->audit, sig, sig_len);
                        break;
                }
                if (use)
                        rest_forget(m->rest, &o->id); /* listed now, under the name it is used by */
                m->measurements++;
                if (evidence_record(m->evidence, path, o, d, sig, sig_len, use) <= 0)
                        break;
                log_measurement(path, o, dec->audit);
                if (o->provisional)
                        checker_violation(m, path, d, o->digest.algo,
                                          use ? "open_writers: used while open for write"
                                              : "open_writers: measured while open for write");
                break;
        case IVER_CHECK_UNSTABLE:
                /* No digest: the list's last entry for the name, if any, is
                 * of an older version. Once its re-checks have found it
                 * changing through their last try, a verifier is told, as
                 * kernel IMA tells of a file read while written: a violation
                 * entry, once for as long as it stays unstable (recheck.h) */
                m->violations++;
                if (list_unstable && m->evidence && d && d->action == IVER_ACTION_MEASURE) {
                        if (evidence_record_unstable(m->evidence, path, o->owner, d, dec->algo) > 0)
                                (void) evidence_commit(m->evidence);
                } else
                        log_violation(path, "unstable: kept changing while hashed");
                recheck_add(m->recheck, path);
                break;
        case IVER_CHECK_ERROR:
                if (o->error == -ENOENT || o->error == -ENOTDIR)
                        break; /* vanished: forgotten */
                m->errors++;
                log_file_warning_errno(o->error, "Cannot measure %s: %m%s", path, retry ? " (will retry)" : "");
                break;
        case IVER_CHECK_NOT_REGULAR:
                m->not_regular++;
                break;
        default:
                break;
        }
}

