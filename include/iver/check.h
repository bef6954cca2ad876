/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "iver/cache.h"
#include "iver/cookie.h"
#include "iver/ledger.h"
#include "iver/measure.h"
#include "iver/policy.h"

/* One check of one path: statx → identity + cookie → cache lookup → (hit) or
 * (version-stable hash → cache update). The ledger is updated either way.
 *
 * The check is split in three so a daemon can hash on worker threads:
 *   iver_check_begin()   event-loop thread: one statx and one lookup;
 *   iver_measure()       any thread: pure, touches no shared state;
 *   iver_check_finish()  event-loop thread: records the result.
 * iver_check() runs the three in a row. */

typedef enum IverCheckResult {
        IVER_CHECK_HIT,          /* cookie unchanged: no re-hash */
        IVER_CHECK_MEASURED,     /* (re-)hashed; digest recorded */
        IVER_CHECK_UNSTABLE,     /* changed throughout hashing; nothing recorded as measured */
        IVER_CHECK_NOT_REGULAR,  /* neither a regular file nor a symlink; never opened */
        IVER_CHECK_ERROR,        /* vanished, unreadable…: errno in the outcome */
        IVER_CHECK_DEFERRED,     /* open for write, not hashed (IverMeasureOptions.defer_writers): the cache
                                  * is unchanged; look again when the writer is done */
        _IVER_CHECK_MAX,
        _IVER_CHECK_INVALID = -22,
} IverCheckResult;

const char *iver_check_result_to_string(IverCheckResult r);

typedef struct IverContextOptions {
        IverVersionMode version_mode;
        IverHashAlgo algo;           /* default algorithm */
        iver_statx_fn statx;         /* NULL: statx(2) */
        const IverKernelInfo *kernel; /* NULL: uname() */
        unsigned top_n;              /* ledger top-N (0: 10) */
} IverContextOptions;

typedef struct IverContext IverContext;

int iver_context_new(const IverContextOptions *opt, IverContext **ret);
IverContext *iver_context_free(IverContext *ctx);

IverCache *iver_context_cache(IverContext *ctx);
/* Replace the cache (taking ownership) and the ledger's counters: a snapshot
 * restored at start. */
void iver_context_adopt(IverContext *ctx, IverCache *cache, const IverLedgerCounters *counters);
IverLedger *iver_context_ledger(IverContext *ctx);
IverCookieTable *iver_context_cookies(IverContext *ctx);
/* The statx function iver_context_stat() calls (opt.statx; NULL: statx(2)). */
iver_statx_fn iver_context_statx(const IverContext *ctx);

/* Write attestation (kernel IMA's last-writer rule). A daemon that tracks
 * writes to whole filesystems sets IVER_ENTRY_WRITTEN on an entry for every
 * write event to its inode (and on every entry of a filesystem whose event
 * stream broke: overflow, restart, fallback gap) and installs this hook. The
 * hook returns > 0 when st->dev is tracked without a gap right now and every
 * event the kernel has queued so far has been applied to the entry flags (it
 * drains its queue); 0 when writes to st->dev cannot be attested. Without a
 * hook every cookie move re-hashes. */
typedef int (*iver_attest_fn)(void *userdata, const IverStat *st);
void iver_context_set_attest(IverContext *ctx, iver_attest_fn fn, void *userdata);

/* Why a check re-hashes or not: the one hit rule (begin and explain). */
typedef enum IverCheckReason {
        IVER_REASON_HIT,            /* cookie unchanged */
        IVER_REASON_METADATA_ONLY,  /* cookie moved, size and identity same, no write since, lease free */
        IVER_REASON_NEW,            /* nothing recorded for this file or path */
        IVER_REASON_IDENTITY,       /* another inode or generation than recorded */
        IVER_REASON_NOT_TRUSTED,    /* recorded result provisional, racy, unstable or stale (writer closed) */
        IVER_REASON_ALGORITHM,      /* recorded digest uses another algorithm (a hash= rule changed) */
        IVER_REASON_SIZE,           /* cookie moved and the size changed */
        IVER_REASON_WRITTEN,        /* cookie moved and a write was seen since the measurement */
        IVER_REASON_UNATTESTED,     /* cookie moved; writes to this filesystem are not tracked without a gap */
        IVER_REASON_WRITERS,        /* cookie moved; no read lease now (open writer or writable mapping) */
        IVER_REASON_SIGNATURE,      /* cookie moved; security.ima is part of the evidence (IVER_CHECK_SIGNATURE_BOUND) */
        _IVER_REASON_MAX,
        _IVER_REASON_INVALID = -22,
} IverCheckReason;

const char *iver_check_reason_to_string(IverCheckReason r);

/* Apply the hit rule to an observation (from iver_context_stat): the
 * previous entry (by inode, else by path), and why iverd would re-hash or
 * not. On the cookie-moved path it probes a read lease (open O_RDONLY +
 * F_SETLEASE + release) and calls the attest hook. Returns true when a
 * re-hash is needed. *ret_idx: the entry compared with or IVER_CACHE_NONE;
 * *ret_same: it is this very file. */
/* flags for iver_check_rule() and iver_check_begin_stat() */
enum {
        /* The file's security.ima is part of what is recorded (an appraise
         * rule judges it, an ima-sig entry carries it). A metadata-only
         * change may be a new or removed signature, so any cookie move
         * re-hashes, as kernel IMA re-measures and re-appraises when
         * security.ima is set or removed. */
        IVER_CHECK_SIGNATURE_BOUND = 1 << 0,
        /* The observation was made now, after every change event read so
         * far (the caller's statx follows them): a hit, which proves the
         * content unchanged since its measurement's own statx, also proves
         * that the writes those events told of came before it, so the
         * entry's WRITTEN flag is cleared (a writer's close read while the
         * file was hashed keeps it, checker.c). Not for an observation
         * made earlier (a walk's statx): a write after it may have set the
         * flag. */
        IVER_CHECK_OBSERVED_NOW = 1 << 1,
        /* The observation is of an open file being used (an on-access
         * event's fd, the path its name at the use): the measurement is
         * recorded under that name, whatever became of the name while the
         * file was hashed, as kernel IMA lists a file under the name it was
         * used by. Without it, a name that no longer holds the file when its
         * hash comes back does not take the inode's record from the name
         * that does (iver_check_finish). */
        IVER_CHECK_USE = 1 << 2,
};

/* The policy's whole say on one file: the one decision checks, the
 * re-decision after hashing, directories (on-access marks), the on-access
 * fast path and explain use. */
typedef struct IverDecision {
        IverFileAttr attr;         /* what it was decided on */
        bool pseudo;               /* a pseudo filesystem's file (proc, sysfs…): never hashed,
                                    * whatever the policy says; nothing else is set */
        bool measure;              /* a measure rule matched */
        IverPolicyDecision d;      /* the measure class's answer (its rule also when it says
                                    * dont_measure); its pcr= and template= apply when measure */
        bool appraise;             /* an appraise rule matched */
        bool audit;                /* measured, and an audit rule matched */
        IverHashAlgo algo;         /* the appraise rule's hash=, else the measure rule's, else the default */
        unsigned flags;            /* IVER_CHECK_SIGNATURE_BOUND: appraised, or listed as ima-sig */
} IverDecision;

/* Decide for path (absolute) with attr under policy p; default_hash: the
 * configured hash. A file is worth a check when measure || appraise. */
void iver_check_decide(const IverPolicy *p, const char *path, const IverFileAttr *attr, IverHashAlgo default_hash,
                       IverDecision *ret);

bool iver_check_rule(IverContext *ctx, int dirfd, const char *path, const IverStat *st, IverCookieSource source,
                     IverHashAlgo algo, unsigned flags, IverCheckReason *ret_reason, uint32_t *ret_idx, bool *ret_same);
/* The cookie source the context uses for st->dev (probes the filesystem on
 * first sight; may re-stat st). */
IverCookieSource iver_check_cookie_source(IverContext *ctx, int dirfd, const char *path, IverStat *st);

/* State carried from begin to finish. */
typedef struct IverPending {
        IverStat st;                 /* observation at begin */
        IverCookieSource source;
        uint32_t idx;                /* cache entry found (by inode, else by path) or NONE */
        bool same_file;              /* idx is this very file (dev, ino, gen) */
        bool iverd_rehash;
        bool use;                    /* IVER_CHECK_USE */
        IverHashAlgo algo;
        int reason;                  /* IverCheckReason: why begin asked for a hash */
        bool unseen;                 /* iver_check_begin_unseen(): st holds dev and ino only */
} IverPending;

typedef struct IverCheckOutcome {
        IverCheckResult result;
        int error;                   /* -errno for IVER_CHECK_ERROR */
        IverVerdict verdict;
        IverMeasureStatus measure_status; /* for MEASURED/UNSTABLE */
        bool provisional;
        bool digest_changed;
        bool metadata_only;          /* HIT after a cookie move proven unwritten: new cookie recorded */
        bool renamed;                /* metadata_only through a new name of the inode's one link (a
                                      * rename): the entry now holds this name, which is not listed yet */
        bool other_name;             /* HIT through another hard-link name of the inode (the entry keeps one
                                      * name): the digest on record is this name's too, and this name may
                                      * not be listed yet; MEASURED through a name other than the one the
                                      * inode's entry had (nlink > 1): the entry takes this one */
        IverCheckReason reason;      /* begin's decision */
        IverDigest digest;           /* the digest on record (HIT and MEASURED) */
        IverCookie cookie;
        IverIdentity id;
        uint32_t owner;              /* the file's uid as observed (a daemon budgets its owners' entries) */
        uint32_t idx;                /* cache entry, or IVER_CACHE_NONE */
        uint64_t bytes_hashed;
} IverCheckOutcome;

/* Begin: returns 1 when a hash is needed (pending filled), 0 when the check
 * is complete (a hit or not-regular; out filled, ledger updated), -errno on a
 * statx failure (out filled with IVER_CHECK_ERROR; a vanished file's entry is
 * dropped). algo: IVER_HASH_* or negative for the context default. */
int iver_check_begin(IverContext *ctx, int dirfd, const char *path, IverHashAlgo algo,
                     IverPending *pending, IverCheckOutcome *out);

/* statx as the context needs it (seed-ABI bit only where a filesystem uses it). */
int iver_context_stat(IverContext *ctx, int dirfd, const char *path, IverStat *ret);
/* The same on an open file (a fanotify event's fd). */
int iver_context_stat_fd(IverContext *ctx, int fd, IverStat *ret);
/* Begin on an observation the caller already made with iver_context_stat()
 * (a daemon stats first to evaluate its policy). Same contract as begin. */
int iver_check_begin_stat(IverContext *ctx, int dirfd, const char *path, const IverStat *st, IverHashAlgo algo,
                          unsigned flags, IverPending *pending, IverCheckOutcome *out);

/* Begin on a regular file found by name with its inode number (a
 * directory's d_ino on device dev), with no statx: when nothing is on record
 * for that inode and its filesystem is known (its cookie source probed) and
 * one where a read lease proves the content (iver_lease_proves_fs), a hash
 * is needed whatever a statx would show. Returns 1 with pending filled
 * (pending.unseen: the measurement's own observation, taken from the open
 * file (iver_measure_open), is what finish records), 0 when the file needs
 * its statx and iver_check_begin_stat(). Nothing is changed either way. */
int iver_check_begin_unseen(IverContext *ctx, const char *path, uint32_t dev, uint64_t ino, IverHashAlgo algo,
                            IverPending *pending);
/* Whether a file on dev may begin unseen at all (its filesystem probed, and
 * one whose lease proves the content): begin_unseen's first test, for a
 * caller that would pay for a policy decision before it. */
bool iver_check_unseen_fs(IverContext *ctx, uint32_t dev);

/* Whether the file observed as st (an open file being used) is on record
 * unchanged: its inode's entry passes the hit rule's first steps (measured,
 * trusted, hashed with algo, the same cookie; iver_check_rule). No path, no
 * side effect (no ledger, no cache update): the fast path of a permission
 * event. false: look properly (begin). */
bool iver_check_peek(const IverContext *ctx, const IverStat *st, IverHashAlgo algo);

/* Measure options that go with a pending check. */
IverMeasureOptions iver_check_measure_options(const IverContext *ctx, const IverPending *pending);

/* Finish with the measurement (r: iver_measure's return). Records the digest
 * under the observation it was computed under, updates the ledger. A name
 * that no longer holds the file hashed, while the inode's entry holds
 * another (renamed while hashed: the check of the new name came back
 * first), records nothing: IVER_CHECK_ERROR, -ENOENT, as if it had been
 * found gone (the bytes hashed are counted). Not for IVER_CHECK_USE. */
int iver_check_finish(IverContext *ctx, const char *path, const IverPending *pending, int r,
                      const IverMeasurement *m, IverCheckOutcome *out);

/* All three steps on the calling thread. Returns 0, or -errno for errors
 * (out->result is then IVER_CHECK_ERROR). */
int iver_check(IverContext *ctx, int dirfd, const char *path, IverCheckOutcome *out);

/* A writer closed path: its next check re-hashes even if the cookie did not
 * move (stores through a shared mapping into pages already read move no
 * timestamp on tmpfs, and none until writeback elsewhere). Keeps the entry
 * (and the heuristics' shadows). */
void iver_check_invalidate(IverContext *ctx, const char *path);

/* Forget a path that disappeared (IN_DELETE): drops its entry. */
void iver_check_forget(IverContext *ctx, const char *path);
