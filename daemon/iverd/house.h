/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The house: the components the manager owns and wires, and the counters the
 * check pipeline reports into, as the rooms below the manager see them (the
 * checker, checker.c; the control verbs, verbs*.c). The manager embeds it
 * (its first member) and alone creates, swaps and frees what it points to; a
 * room reads it, reports through reports (check, settled) and asks the manager
 * for anything else through ops. So no room includes manager.h. */
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "iver/appraise.h"
#include "iver/check.h"
#include "conf.h"
#include "generation.h"
#include "queue.h"
#include "report.h"
#include "workers.h"

typedef struct Walk Walk;
typedef struct Watch Watch;
typedef struct FsTrack FsTrack;
typedef struct Control Control;
typedef struct Evidence Evidence;
typedef struct OnAccess OnAccess;
typedef struct Recheck Recheck;
typedef struct Rest Rest;
typedef struct Vanished Vanished;

/* Progress of the scan in progress (or of the last one when none runs). */
typedef struct ScanProgress {
        bool active, initial;
        uint64_t seen;          /* regular files the walk found */
        uint64_t done;          /* of them, checked (seen less queued and hashing) */
        uint64_t estimate;      /* estimated total files (0: unknown) */
        uint64_t measured;      /* new measurements during the scan */
        uint64_t bytes;         /* bytes hashed during the scan */
        uint64_t errors, violations;
        double seconds;         /* since the scan started */
        double rate;            /* files checked per second */
        double eta;             /* seconds left (-1: unknown) */
} ScanProgress;

/* What the verbs ask of the manager (manager.h says what each does). */
typedef struct HouseOps {
        int (*rescan)(void *userdata);
        int (*reload)(void *userdata, char **ret_error);
        bool (*settled)(const void *userdata);
        void (*scan_progress)(const void *userdata, ScanProgress *ret);
} HouseOps;

typedef struct House {
        const HouseOps *ops;
        void *userdata;                 /* the manager, for ops */
        const Reports *reports;         /* check (queue a path), settled */
        IverConf conf;                  /* conf.hash: as at start; the one in force is gen->hash */
        Generation *gen;                /* policy, appraisal keys, hash algorithm in force (never NULL
                                         * once manager_new() returned); jobs in flight hold theirs */
        IverContext *ctx;
        Queue *queue;
        Workers *workers;
        unsigned max_inflight;
        Walk *walk;
        Watch *watch;
        FsTrack *fstrack;               /* whole-filesystem change tracking (fanotify; watch is the fallback) */
        Control *control;
        Evidence *evidence;             /* measurement list + TPM; never NULL once manager_new() returned
                                         * (no TPM is the "none" TPM, not a missing Evidence) */
        OnAccess *onaccess;             /* fanotify triggers (NULL: OnAccess=none) */
        Recheck *recheck;               /* provisional files to look at again */
        Rest *rest;                     /* digests held until their names come to rest */
        Vanished *vanished;             /* names found gone, forgotten after the checks queued with them */
        sd_event_source *dispatch_source;

        /* counters for status */
        bool initial_scan_done;
        uint64_t scans;
        uint64_t errors, not_regular, violations, measurements;
        uint64_t unmeasurable;          /* directories/files that could not be opened at all */
        uint64_t peak_queued;
        uint64_t appraisals[_IVER_APPRAISAL_MAX];
} House;

static inline void house_queue(const House *h, const char *path) {
        report_check(h->reports, path);
}
static inline void house_maybe_settled(const House *h) {
        report_settled(h->reports);
}
static inline int house_rescan(House *h) {
        return h->ops->rescan(h->userdata);
}
static inline int house_reload(House *h, char **ret_error) {
        return h->ops->reload(h->userdata, ret_error);
}
static inline bool house_settled(const House *h) {
        return h->ops->settled(h->userdata);
}
static inline void house_scan_progress(const House *h, ScanProgress *ret) {
        h->ops->scan_progress(h->userdata, ret);
}
