/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement list (write-ahead, group commit) and the per-file churn
 * limit, on the event loop; the extend cursor lives with the TPM thread, which
 * reads each entry back from the list file once it is durable. The list lives
 * in that file only: the file keeps a count and a dedup index, and the staged
 * group (≤ 1,000 entries) is all this file holds in memory. Calls go one
 * way: checker.c, verbs.c → evidence.c / evidence-tpm.c → tpm-thread.c →
 * tpm-ops.c → lib/tpm.c; the thread answers through an eventfd
 * (evidence-tpm.c).
 *
 * Group commit: entries are staged and written with one write when 1,000 are
 * staged or 25 ms after the first; the sync thread (list-sync.c) makes them
 * durable with one fdatasync for all groups written meanwhile, and only then
 * moves the TPM thread's durable end past them: no PCR ever holds an entry
 * the list on disk lacks, and a slow disk never stalls the loop. When the
 * list cannot be written the evidence is marked broken: the TPM thread
 * extends all-0xFF (no list entry) into every PCR the list uses, so no quote
 * verifies again until the operator restarts with a fresh list. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "churn.h"
#include "evidence-internal.h"
#include "kernel-ima.h"
#include "list-sync.h"
#include "iver/imalog.h"
#include "log.h"
#include "macro.h"
#include "tpm-thread.h"
#include "thread.h"

#define GROUP_USEC (25ULL * 1000ULL)
#define RELIST_USEC (5ULL * 1000000ULL)
#define CHURN_TICK_USEC (1ULL * 1000000ULL)

/* Without a TPM nothing orders the kernel's extends and ours: the list
 * starts with the kernel's entries, verbatim (and those it added while iverd
 * was stopped, at the next start). */
static int share_without_tpm(Evidence *e) {
        size_t kernel = 0, added = 0;
        const char *dir = kernel_ima_dir();
        int r = kernel_ima_continue(e->file, dir, e->pcr, &kernel, &added);
        if (r == -EOPNOTSUPP)
                return log_error_errno(r, "The kernel's IMA list in %s holds an entry of a template iverd cannot replay "
                                          "(it reads ima-ng, ima-sig, ima-buf and ima): configure another Pcr=", dir);
        if (r < 0)
                return log_error_errno(r, "Cannot continue the kernel's IMA list in %s: %m", dir);
        if (r == 0)
                return 0;
        e->kernel_entries = kernel;
        log_info("No TPM: the list continues the kernel's %zu IMA entries (%zu copied now)", kernel, added);
        return 0;
}

/* Where the kernel's IMA keeps a list in our PCR (PCR 10, Pcr=auto), the
 * list iverd serves continues the kernel's, in extend order (DESIGN.md §11):
 * the TPM thread writes it (tpm-share.c), and iverd's own write-ahead list
 * moves to the journal directory. Returns the served list (NULL: not shared)
 * in *ret_served. */
static int open_lists(Evidence *e, const IverConf *conf, IverImaFile **ret_served) {
        _cleanup_(iver_imalog_file_freep) IverImaFile *served = NULL;
        _cleanup_free_ char *journal = NULL;
        size_t truncated = 0;
        int r;

        *ret_served = NULL;
        e->kernel_dir = kernel_ima_dir();
        if (!e->tpm_none) {
                r = kernel_ima_uses(e->kernel_dir, e->pcr);
                if (r == -EOPNOTSUPP)
                        return log_error_errno(r, "The kernel's IMA list in %s holds an entry of a template iverd cannot "
                                                  "replay (it reads ima-ng, ima-sig, ima-buf and ima): configure another Pcr=",
                                               e->kernel_dir);
                if (r < 0)
                        return log_error_errno(r, "Cannot read the kernel's IMA list in %s: %m", e->kernel_dir);
                e->shared = r > 0;
        }
        if (e->shared) {
                if (asprintf(&journal, "%s/journal", conf->runtime_directory) < 0)
                        return log_error_errno(-ENOMEM, "Out of memory: %m");
                if (mkdir(journal, 0700) < 0 && errno != EEXIST)
                        return log_error_errno(-errno, "Cannot create %s: %m", journal);
                r = iver_imalog_file_open(conf->runtime_directory, &served, &truncated);
                if (r < 0)
                        return log_error_errno(r, "Cannot open the measurement list in %s: %m", conf->runtime_directory);
                if ((r = evidence_reserve_open(e, served, conf->runtime_directory)) < 0)
                        return log_error_errno(r, "Out of memory: %m");
        }
        const char *dir = journal ?: conf->runtime_directory;
        /* the one place that knows whether this run continues a list of this
         * boot (a restart, a crash): then the gap is evidence (evidence-gap.c);
         * read before the open, whose cut of a torn tail would move the mtime */
        struct stat st;
        _cleanup_free_ char *bin = NULL;
        if (asprintf(&bin, "%s/%s", dir, IVER_IMA_BINARY_FILE) < 0)
                return log_error_errno(-ENOMEM, "Out of memory: %m");
        e->continued = lstat(bin, &st) == 0 && S_ISREG(st.st_mode);
        e->list_mtime_sec = e->continued ? (int64_t) st.st_mtim.tv_sec : -1;
        r = iver_imalog_file_open(dir, &e->file, &truncated);
        if (r < 0)
                return log_error_errno(r, "Cannot open the measurement list in %s: %m", dir);
        /* before anything is written: the kernel's entries copied below too */
        if ((r = evidence_reserve_open(e, e->file, dir)) < 0)
                return log_error_errno(r, "Out of memory: %m");
        if (truncated)
                log_warning("Measurement list ended in a torn record (%zu bytes, from a crash): cut back to the last complete entry",
                            truncated);
        if (e->shared)
                log_info("PCR %u is shared with the kernel's IMA: the list in %s continues the kernel's in extend order, "
                         "every active bank is extended; iverd's write-ahead journal is %s",
                         e->pcr, conf->runtime_directory, journal);
        else if ((r = share_without_tpm(e)) < 0)
                return r;
        *ret_served = TAKE_PTR(served);
        return 0;
}

static void recheck_path(const char *path, void *userdata) {
        Evidence *e = userdata;
        /* the cache holds a version that was not listed: hash again */
        report_unlisted(e->reports, path);
        report_check(e->reports, path);
}

static int on_churn_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Evidence *e = userdata;
        (void) churn_due(e->churn, now_usec(), recheck_path, e);
        (void) sd_event_source_set_time_relative(s, CHURN_TICK_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int commit(Evidence *e);
static int on_sync(sd_event_source *s, int fd, uint32_t revents, void *userdata);

int evidence_commit(Evidence *e) {
        return commit(e);
}

static int on_commit(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) commit(userdata);
        return 0;
}

/* While the list cannot be written, measured files are marked stale and a
 * periodic rescan brings them back, so nothing measured is lost from the
 * list once it is writable again. */
static int on_relist(sd_event_source *s, uint64_t usec, void *userdata) {
        Evidence *e = userdata;
        if (!e->list_failing)
                return 0;
        report_rescan(e->reports);
        (void) sd_event_source_set_time_relative(s, RELIST_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

void evidence_scan_done(Evidence *e) {
        if (e)
                e->scan_done = true;
}

int evidence_new(sd_event *event, const Reports *reports, const IverConf *conf, Evidence **ret) {
        Evidence *e = calloc(1, sizeof(*e));
        IverImaFile *served = NULL;
        int r;

        if (!e)
                return -ENOMEM;
        e->event = event;
        e->reports = reports;
        e->staged = calloc(GROUP_MAX, sizeof(*e->staged));
        if (!e->staged || churn_new(&e->churn) < 0 || budget_new(&e->budget) < 0) {
                r = log_error_errno(-ENOMEM, "Cannot set up the measurement list: %m");
                goto fail;
        }
        /* auto: PCR 10, where Keylime and evmctl look, shared with the kernel's IMA */
        e->pcr = conf->pcr >= 0 ? (unsigned) conf->pcr : 10;
        e->tpm_none = !conf->tpm_tcti || strcmp(conf->tpm_tcti, "none") == 0;
        r = open_lists(e, conf, &served);
        if (r < 0)
                goto fail;
        if ((r = sd_event_add_time_relative(event, &e->relist, CLOCK_MONOTONIC, RELIST_USEC, 0, on_relist, e)) < 0 ||
            /* accuracy 1 ms: sd-event's default (0) lets a timer slip by up to 250 ms */
            (r = sd_event_add_time_relative(event, &e->commit, CLOCK_MONOTONIC, GROUP_USEC, 1000, on_commit, e)) < 0 ||
            (r = sd_event_add_time_relative(event, &e->churn_timer, CLOCK_MONOTONIC, CHURN_TICK_USEC, 0,
                                            on_churn_tick, e)) < 0) {
                log_error_errno(r, "Cannot set up the measurement list timers: %m");
                goto fail;
        }
        (void) sd_event_source_set_description(e->relist, "list-relist");
        (void) sd_event_source_set_description(e->commit, "list-group-commit");
        (void) sd_event_source_set_description(e->churn_timer, "list-churn-tick");
        (void) sd_event_source_set_enabled(e->relist, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(e->commit, SD_EVENT_OFF);
        if (e->tpm_none) {
                log_notice("No TPM configured: measurements go to the list only");
                goto sync;
        }
        /* lib/tpm.c sets this on connect; set it here, before any thread reads the environment */
        (void) setenv("TSS2_LOG", "all+none", 0);
        /* the kernel extends every active bank of PCR 10: so must we, or the
         * banks we leave out never replay */
        r = tpm_thread_new(conf->tpm_tcti, e->shared ? ~0u : conf->banks, e->pcr, iver_imalog_file_fd(e->file), iver_imalog_file_count(e->file),
                           iver_imalog_file_size(e->file), iver_imalog_file_pcrs(e->file), served, e->kernel_dir, &e->tpm);
        if (r >= 0)
                served = NULL;          /* the thread's */
        if (r < 0) {
                log_error_errno(r, "Cannot start the TPM thread for '%s': %m", conf->tpm_tcti);
                goto fail;
        }
        r = sd_event_add_io(event, &e->tpm_io, tpm_thread_fd(e->tpm), EPOLLIN, evidence_on_tpm, e);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the TPM thread: %m");
                goto fail;
        }
        (void) sd_event_source_set_description(e->tpm_io, "tpm-thread");
sync:
        r = list_sync_new(iver_imalog_file_fd(e->file), e->tpm, &e->sync);
        if (r >= 0)
                r = sd_event_add_io(event, &e->sync_io, list_sync_fd(e->sync), EPOLLIN, on_sync, e);
        if (r < 0) {
                log_error_errno(r, "Cannot start the measurement list's sync thread: %m");
                goto fail;
        }
        (void) sd_event_source_set_description(e->sync_io, "list-sync");
        *ret = e;
        return 0;
fail:
        iver_imalog_file_free(served);
        evidence_free(e);
        return r;
}

Evidence *evidence_free(Evidence *e) {
        if (!e)
                return NULL;
        (void) commit(e);
        /* what was written becomes durable and goes to the TPM thread first */
        sd_event_source_disable_unref(e->sync_io);
        bool stuck = (e->sync = list_sync_free(e->sync)) != NULL;
        if (stuck)
                log_warning("The list's sync thread is stuck in fdatasync: leaving it behind");
        while (e->quotes)
                evidence_answer_quote(e, e->quotes, NULL, "iverd is stopping");
        sd_event_source_disable_unref(e->tpm_io);
        /* joins the thread (one stuck in a hung TPM is left behind with its
         * own fd of the list: the process is ending) */
        if (!stuck)     /* a stuck sync thread may still hand the TPM thread work */
                e->tpm = tpm_thread_free(e->tpm);
        if (e->tpm)
                log_warning("The TPM thread is stuck in a TPM command: leaving it behind");
        sd_event_source_disable_unref(e->commit);
        sd_event_source_disable_unref(e->relist);
        sd_event_source_disable_unref(e->churn_timer);
        iver_imalog_file_free(e->file);
        for (size_t i = 0; i < e->n_staged; i++)
                iver_imalog_entry_free(e->staged[i]);
        free(e->staged);
        churn_free(e->churn);
        budget_free(e->budget);
        free(e->list_dir);
        free(e);
        return NULL;
}

bool evidence_pending(const Evidence *e) {
        if (e->n_staged > 0 || churn_pending(e->churn) || (e->sync && list_sync_pending(e->sync) > 0))
                return true;
        if (!e->tpm)
                return false;
        TpmThreadState st;
        tpm_thread_state(e->tpm, &st);
        /* extends or PCR reads the TPM refused for good: the extends wait for
         * a reconnect, not for settle */
        return st.connected && !st.desynced && !st.extends_refused && !st.reads_refused && st.extended < st.queued;
}

/* The broken-evidence value: from now on no quote verifies. */
static void evidence_break(Evidence *e, int error) {
        char detail[256];
        if (e->broken)
                return;
        e->broken = true;
        snprintf(detail, sizeof(detail), "measurement list not writable (%s): evidence marked broken", strerror(-error));
        log_error("Measurement list cannot be written (%s): %s; restart iverd with a fresh list (and a reset PCR) to recover",
                  strerror(-error), e->tpm ? "extending the broken-evidence value into the PCRs" : "no TPM to mark");
        log_audit("evidence-broken", detail, false);
        if (e->tpm)
                tpm_thread_poison(e->tpm);
}

/* The sync thread made groups durable (and handed them to the TPM thread),
 * or an fdatasync failed: then nothing written from there on reaches the PCR,
 * and the evidence is broken. */
static int on_sync(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Evidence *e = userdata;
        size_t syncs;
        int error;

        list_sync_ack(e->sync);
        list_sync_stats(e->sync, &syncs, &error);
        e->syncs = syncs;
        if (error < 0 && !e->broken)
                evidence_break(e, error);
        report_settled(e->reports);
        return 0;
}

static int commit(Evidence *e) {
        if (!e || e->n_staged == 0)
                return 0;
        (void) sd_event_source_set_enabled(e->commit, SD_EVENT_OFF);
        /* write-ahead: written here, made durable by the sync thread (one
         * fdatasync for every group written meanwhile) before any can reach
         * the PCR */
        int r = iver_imalog_file_write_many(e->file, (const IverImaEntry *const *) e->staged, e->n_staged);
        evidence_reserve_check(e);
        if (r < 0) {
                e->list_failures += e->n_staged;
                e->last_list_error = r;
                if (!e->list_failing)
                        log_error_errno(r, "Cannot append to the measurement list: %m; not extending until it works again");
                e->list_failing = true;
                evidence_break(e, r);
                for (size_t i = 0; i < e->n_staged; i++) {
                        report_unlisted(e->reports, e->staged[i]->path);
                        iver_imalog_entry_free(e->staged[i]);
                }
                e->n_staged = 0;
                memset(e->staged_set, 0, sizeof(e->staged_set));
                (void) sd_event_source_set_time_relative(e->relist, RELIST_USEC);
                (void) sd_event_source_set_enabled(e->relist, SD_EVENT_ONESHOT);
                report_settled(e->reports);
                return r;
        }
        e->commits++;
        if (e->list_failing) {
                /* The entries dropped while failing belong to files marked
                 * stale: look at them now. */
                log_notice("Measurement list writable again: re-checking what could not be listed");
                e->list_failing = false;
                report_rescan(e->reports);
        }
        /* the list lives on disk from here: the entries in memory go */
        uint32_t pcrs = 0;
        for (size_t i = 0; i < e->n_staged; i++) {
                pcrs |= e->staged[i]->pcr < IVER_IMA_PCR_MAX ? 1u << e->staged[i]->pcr : 0;
                iver_imalog_entry_free(e->staged[i]);
        }
        list_sync_submit(e->sync, e->n_staged, iver_imalog_file_size(e->file), pcrs);
        e->n_staged = 0;
        memset(e->staged_set, 0, sizeof(e->staged_set));
        report_settled(e->reports);
        return 0;
}

int evidence_flush(Evidence *e) {
        if (!e || e->n_staged == 0)
                return 0;
        if (e->n_staged >= GROUP_MAX)
                return commit(e);
        int enabled = SD_EVENT_OFF;
        (void) sd_event_source_get_enabled(e->commit, &enabled);
        if (enabled == SD_EVENT_OFF) {
                (void) sd_event_source_set_time_relative(e->commit, GROUP_USEC);
                (void) sd_event_source_set_enabled(e->commit, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* The staged group's (PCR, template digest) pairs: open addressing over
 * staged indexes + 1 (a group holds at most GROUP_MAX, the set is twice
 * that), so the dedup check of a record is one probe, not a scan. */
static size_t staged_home(const IverImaEntry *ent) {
        uint64_t h;
        memcpy(&h, ent->template_digest, sizeof(h));
        return (size_t) mix64(h ^ ent->pcr) & (STAGED_SET - 1);
}

static bool staged_find(const Evidence *e, const IverImaEntry *ent, size_t *ret_slot) {
        size_t i = staged_home(ent);
        for (; e->staged_set[i] != 0; i = (i + 1) & (STAGED_SET - 1)) {
                const IverImaEntry *s = e->staged[e->staged_set[i] - 1];
                if (s->pcr == ent->pcr &&
                    memcmp(s->template_digest, ent->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE) == 0)
                        return true;
        }
        *ret_slot = i;
        return false;
}

static bool staged_contains(const Evidence *e, const IverImaEntry *ent) {
        size_t slot;
        return !ent->violation && staged_find(e, ent, &slot);
}

static int stage(Evidence *e, IverImaEntry *ent) {
        size_t slot;
        if (e->n_staged == GROUP_MAX)
                (void) commit(e);
        if (!ent->violation && !staged_find(e, ent, &slot))
                e->staged_set[slot] = (uint16_t) (e->n_staged + 1);
        e->staged[e->n_staged++] = ent;
        return evidence_flush(e);
}

/* The owner's bucket ran dry at path: one violation names it. */
static int budget_ran_dry(Evidence *e, const char *path, uint32_t owner, const IverPolicyDecision *d, IverHashAlgo algo) {
        char why[200];
        snprintf(why, sizeof(why), "budget: uid %u's files made more than %d list entries (refilled %d an hour); "
                 "their changes are listed again at their use", owner, BUDGET_BURST, BUDGET_PER_HOUR);
        log_violation(path, why);
        return evidence_record_violation(e, path, d, algo);
}

int evidence_record(Evidence *e, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                    const uint8_t *sig, size_t sig_len, bool use) {
        IverImaEntry *ent = NULL;
        IverImaTemplate t = d && d->template_ >= 0 ? d->template_ : IVER_IMA_TEMPLATE_NG;
        unsigned pcr = d && d->pcr >= 0 ? (unsigned) d->pcr : e->pcr;
        int r = iver_imalog_entry_new(t, pcr, o->digest.algo, o->digest.bytes, o->digest.len, path, strlen(path),
                                      t == IVER_IMA_TEMPLATE_SIG ? sig : NULL, t == IVER_IMA_TEMPLATE_SIG ? sig_len : 0, 0,
                                      &ent);
        if (r < 0)
                return log_error_errno(r, "Cannot build a list entry for %s: %m", path);
        /* a list that cannot be read back lists it again: a duplicate entry
         * replays as well as any */
        if (iver_imalog_file_contains(e->file, ent) > 0 || staged_contains(e, ent)) {
                e->duplicates++;
                iver_imalog_entry_free(ent);
                return 0;
        }
        /* the initial measurement lists each file once: tracking starts after it
         * (no table entry for every file of a large tree); a use (an exec
         * waited for it) is always listed, whatever the inode's churn */
        switch (e->scan_done && !use ? churn_note(e->churn, o->id.dev, o->id.ino, path, now_usec())
                                                : CHURN_LIST) {
        case CHURN_LIST:
                break;
        case CHURN_LIMIT:
                iver_imalog_entry_free(ent);
                report_unlisted(e->reports, path);
                e->rate_limited++;
                char why[160];
                snprintf(why, sizeof(why), "churn: more than %d new versions in %llu s; not listed again until a backoff ends",
                         CHURN_MAX_VERSIONS, (unsigned long long) (CHURN_WINDOW_USEC / 1000000ULL));
                log_violation(path, why);
                return evidence_record_violation(e, path, d, o->digest.algo);
        case CHURN_SUPPRESS:
                iver_imalog_entry_free(ent);
                report_unlisted(e->reports, path);
                e->rate_limited++;
                return 0;
        }
        /* and its owner's budget (root's never runs out) */
        switch (e->scan_done && !use ? budget_take(e->budget, o->owner, now_usec()) : BUDGET_LIST) {
        case BUDGET_LIST:
                break;
        case BUDGET_LIMIT:
                iver_imalog_entry_free(ent);
                report_unlisted(e->reports, path);
                return budget_ran_dry(e, path, o->owner, d, o->digest.algo);
        case BUDGET_SUPPRESS:
                iver_imalog_entry_free(ent);
                report_unlisted(e->reports, path);
                return 0;
        }
        r = stage(e, ent);
        return r < 0 ? r : 1;
}

int evidence_record_unstable(Evidence *e, const char *path, uint32_t owner, const IverPolicyDecision *d,
                             IverHashAlgo algo) {
        int r;
        switch (e->scan_done ? budget_take(e->budget, owner, now_usec()) : BUDGET_LIST) {
        case BUDGET_LIST:
                log_violation(path, "unstable: kept changing while hashed");
                r = evidence_record_violation(e, path, d, algo);
                return r < 0 ? r : 1;
        case BUDGET_LIMIT:
                r = budget_ran_dry(e, path, owner, d, algo);
                return r < 0 ? r : 1;
        default:
                log_violation(path, "unstable: kept changing while hashed (not listed: its owner's budget)");
                return 0;
        }
}

int evidence_record_violation(Evidence *e, const char *path, const IverPolicyDecision *d, IverHashAlgo algo) {
        IverImaEntry *ent = NULL;
        IverImaTemplate t = d && d->template_ >= 0 ? d->template_ : IVER_IMA_TEMPLATE_NG;
        unsigned pcr = d && d->pcr >= 0 ? (unsigned) d->pcr : e->pcr;
        int r = iver_imalog_entry_new_violation(t, pcr, algo, path, strlen(path), 0, &ent);
        if (r < 0)
                return log_error_errno(r, "Cannot build a violation entry for %s: %m", path);
        /* never deduplicated: the kernel records every violation */
        return stage(e, ent);
}
