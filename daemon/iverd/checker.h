/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "onaccess.h"
#include "iver/check.h"
#include "iver/policy.h"
#include "generation.h"

#include "house.h"

/* Defer source: take queued paths while workers have room; hits and files
 * the policy does not measure finish here, misses go to the pool. */
int checker_dispatch(sd_event_source *s, void *userdata);
/* The policy's say on one file under generation g, for a use by
 * subject_uid (IVER_UID_UNKNOWN: no use): iver_check_decide() on st's
 * attributes (the one decision, for checks and explain). False: neither
 * measured nor appraised, or a pseudo filesystem's file (proc, sysfs…: never
 * hashed, whatever the policy says; lib/pseudofs.h). */
bool checker_decide(House *m, const Generation *g, const char *path, const IverStat *st, uint32_t subject_uid,
                    IverDecision *ret);
/* The walker's fast path for a file a scan found (full path path), with the
 * walk's statx of it relative to its open directory (st, taken at st_at,
 * iver_now_ns): the cache lookup; a miss goes to a worker at once on that
 * statx (a queue node in flight, so events meanwhile coalesce into it).
 * Returns true when done (the usual unchanged file) or handed over; false
 * when the file must go through the queue. */
bool checker_scan_observed(House *m, const char *path, const IverStat *st, int64_t st_at);
/* The same for a regular file the walk found by name (dev: its directory's,
 * ino: the directory entry's), before any statx: under a policy that
 * decides by path alone, a file to be measured that nothing is on record for
 * goes to a worker at once, whose own statx of the open file is the
 * observation (iver_check_begin_unseen). Returns false when the file needs
 * the walk's statx (checker_scan_observed) instead. */
bool checker_scan_named(House *m, const char *path, uint32_t dev, uint64_t ino);
/* Whether the pool takes more small files now (the in-flight window). */
bool checker_has_room(const House *m);
/* Whether it is at most half full: the walk resumes then, to hand over many
 * files per wake-up rather than a few. */
bool checker_window_low(const House *m);
/* Worker eventfd: finish the jobs the pool has done. */
int checker_workers_done(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* On-access: the file open as fd (named path) is about to be executed
 * (exec) or opened by process pid (its real uid is the subject of uid= rules). Executed while open for write (no read lease: a writer,
 * or a writable shared mapping): an open_writers violation entry and a
 * (provisional) measurement the exec waits for. Opened while open for write
 * (open mode, or a func=open rule): the open waits for a provisional
 * measurement of what the file holds now (bounded: it may be the writer's
 * own open, which the event does not tell), listed with an open_writers
 * entry. The name decided and listed is the one iverd holds for the inode
 * (use_name in checker.c), not the one the event fd shows. path may be NULL: then an
 * exec whose content is on record returns 0 and anything else -EAGAIN (ask
 * again with the name: the cache-hit path costs no readlink).
 * Returns 0 when its current content is on record, or the policy does not
 * measure or appraise it (answer now); 1 when a measurement was submitted
 * ahead of other work (answer at onaccess_job_done(waiter)); -errno when the
 * file cannot be looked at (answer now). */
int checker_use(House *m, int fd, const char *path, bool exec, int pid, uint64_t waiter, CheckerUse *ret);
/* Whether a use (exec, or open) of the version st of a file is answered
 * from the record with nothing to do: on record unchanged under the one
 * decision, no held entry to list, writes to it tracked by the change
 * tracker's group (onaccess-fast.c publishes such uses to its thread). */
bool checker_use_cached(House *m, const IverStat *st, bool exec);
/* Whether the change cookie of the filesystem dev shows every change in the
 * next statx (the inode version, multigrain ctime): then a cached use needs
 * no look at the tracker's queue. */
bool checker_version_exact(House *m, uint32_t dev);
/* The list entries staged so far are committed (a use goes on). */
void checker_uses_commit(House *m);
/* The change tracker's fanotify group, or -1. */
int checker_track_fd(House *m);
/* A violation: counted, journal + audit (cause what), and a violation entry
 * in the list when d (a measure rule) is given. */
void checker_violation(House *m, const char *path, const IverPolicyDecision *d, IverHashAlgo algo, const char *what);
/* On-access measurements in flight (settle and reload count them). */
unsigned checker_use_jobs(void);
/* Whether a regular file directly in dir may be measured or appraised (a
 * policy probe with a neutral file): on-access marks only such filesystems. */
bool checker_dir_measured(House *m, const char *dir);
/* A use allowed without a check (on-access could not hold it): a
 * violation entry (cause what) under the name iverd holds for the inode
 * (dev, ino; 0: unknown), else path, else "unchecked:exec|open"; none when
 * the file is known and no rule measures or appraises it. */
void checker_unchecked_use(House *m, const char *path, uint32_t dev, uint64_t ino, bool exec, const char *what);
/* A digest held until its name came to rest (rest.h) is listed now under
 * path (use: because it is used): the callback of rest.c. */
void checker_rested(House *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
                    const uint8_t *sig, size_t sig_len, bool use);
