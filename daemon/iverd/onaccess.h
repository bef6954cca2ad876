/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "conf.h"
#include "iver/policy.h"
#include "iver/stat.h"

typedef struct OnAccess OnAccess;

/* What the policy says about a used file (for a later violation entry). */
typedef struct CheckerUse {
        IverPolicyDecision d;      /* the measure rule, when measure */
        bool measure;
        IverHashAlgo algo;
} CheckerUse;

/* What on-access asks of its owner, the checker (checker.h says what each
 * does): it reports uses up and is told what to answer. */
typedef struct OnAccessOps {
        void *userdata;
        int (*use)(void *userdata, int fd, const char *path, bool exec, int pid, uint64_t waiter, CheckerUse *ret);
        bool (*use_cached)(void *userdata, const IverStat *st, bool exec);
        bool (*version_exact)(void *userdata, uint32_t dev);
        void (*uses_commit)(void *userdata);
        int (*track_fd)(void *userdata);
        void (*violation)(void *userdata, const char *path, const IverPolicyDecision *d, IverHashAlgo algo,
                          const char *what);
        void (*unchecked_use)(void *userdata, const char *path, uint32_t dev, uint64_t ino, bool exec, const char *what);
        bool (*dir_measured)(void *userdata, const char *dir);
} OnAccessOps;

/* Measured before use (OnAccess=exec|open), kernel IMA's BPRM_CHECK /
 * FILE_CHECK in user space: a fanotify permission group (FAN_CLASS_CONTENT)
 * with filesystem marks on the filesystems that hold measured directories
 * only. An exec (FAN_OPEN_EXEC_PERM; and any open, FAN_OPEN_PERM, in open
 * mode) of a measured file is held until its current content is measured and
 * listed: a cache hit is allowed at once, a miss is hashed ahead of scan work
 * and allowed when its list entry is flushed. Every wait is bounded
 * (OnAccessTimeoutSec=): past it the use is allowed anyway and a violation
 * entry ("executed before measured") is listed.
 *
 * The kernel has no timeout for permission events, so nothing here may leave
 * a use waiting on the daemon's health: the group is read by a thread that
 * never touches the cache, the list, the TPM or the journal; it answers the
 * daemon's own opens at once, a cached use itself (from the event's fd and a
 * table the loop publishes after each callback, onaccess-fast.c: no hand-off,
 * no path, no /proc read), hands every other use to the loop, and answers
 * those at their deadline whatever the loop does. On exit every pending
 * event is allowed and the group closed (the kernel allows whatever was
 * still queued). A stopped or hung process still holds uses on the marked
 * filesystems until it is killed (the unit's watchdog does that). Writes are
 * the change tracker's group (fstrack.c). */
/* rule_opens: a rule asks for open-time checks (func=open) whatever the mode. */
int onaccess_new(sd_event *event, const OnAccessOps *ops, IverOnAccess mode, bool rule_opens, uint64_t timeout_usec,
                 OnAccess **ret);
OnAccess *onaccess_free(OnAccess *o);
/* Mark the filesystem holding dir (once per filesystem) if files directly
 * in dir may be measured (the walker calls it for every directory, ancestors
 * of measured trees included: those are not marked). */
void onaccess_add(OnAccess *o, const char *dir);
/* A measured file (dev as in IverStat): its filesystem is marked if not yet. */
void onaccess_add_file(OnAccess *o, uint32_t dev, const char *path);
/* The measurement submitted for waiter (checker_use) was recorded: it is
 * allowed by onaccess_flushed(), after the list is written. */
void onaccess_job_done(OnAccess *o, uint64_t waiter);
/* The list was flushed: answer the uses whose measurement is in it. */
void onaccess_flushed(OnAccess *o);
/* The loop answered a use of st from the record: after this callback, the
 * reading thread may answer the uses (exec, open) of the same version
 * itself that are on record then (checker_use_cached). */
void onaccess_fast_offer(OnAccess *o, const IverStat *st);
/* The event loop runs a callback (every entry the thread may answer from
 * is void from now on) / is done with it (its offers are published). */
void onaccess_loop_busy(OnAccess *o);
void onaccess_loop_idle(OnAccess *o);
/* Uses waiting for a measurement (settle counts them). */
unsigned onaccess_waiting(const OnAccess *o);
unsigned onaccess_marks(const OnAccess *o);
unsigned long long onaccess_events(const OnAccess *o);
/* status: on_access_* counters. */
void onaccess_status(const OnAccess *o, json_object *obj);
