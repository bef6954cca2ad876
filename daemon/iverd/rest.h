/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "iver/check.h"
#include "iver/policy.h"

/* Names at rest (DESIGN.md §11): a digest computed in the background after a
 * change waits here, keyed by inode (dev, ino; the generation checked), until
 * the file has come to rest under a name, and is then listed under that name.
 * At rest: for REST_SETTLE_USEC nothing changed the inode (write, rename,
 * link) and the process that last changed it made no change in a measured
 * tree either (a package manager unpacking, then renaming, is one episode).
 * A use (exec, open in open mode) lists it at once (rest_use). A rename moves
 * the entry; a name that is gone at the deadline drops it (an unlink of the
 * last name: nothing was used). Bounded: REST_MAX_USEC after the episode
 * began, it is listed under the name it has then (at its next outcome if the
 * name moved meanwhile), so a storm of writes or renames cannot hide content
 * for ever. */
#define REST_SETTLE_USEC (2ULL * 1000000ULL)
#define REST_MAX_USEC (60ULL * 1000000ULL)
/* At most this many held at once (~0.3 KiB each with the name): past it a digest is listed
 * at once, under the name it has (a storm of new files costs bounded memory). */
#define REST_HELD_MAX 65536

typedef struct Rest Rest;

typedef struct RestCallbacks {
        /* list path's digest now (o: the outcome, d: the measure rule, audit:
         * an audit rule matched, sig: security.ima for ima-sig; use: it is
         * listed because it is used) */
        void (*list)(void *userdata, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                     bool audit, const uint8_t *sig, size_t sig_len, bool use);
        /* the cache's record of inode id (this generation): *ret's digest,
         * cookie (the version the digest is of) and provisional flag; -ENOENT
         * when there is none. Held entries keep no copy of it. */
        int (*recorded)(void *userdata, const IverIdentity *id, IverCheckOutcome *ret);
        /* statx of path as the checker makes it (any length: pathfd.h) */
        int (*stat)(void *userdata, const char *path, IverStat *ret);
        /* path must be looked at again (its version moved since the digest) */
        void (*check)(void *userdata, const char *path);
        /* apply the change events queued so far (before deadlines are judged) */
        void (*sync)(void *userdata);
        /* entries were listed or dropped: settle waiters may look */
        void (*changed)(void *userdata);
} RestCallbacks;

int rest_new(sd_event *event, const RestCallbacks *cb, void *userdata, Rest **ret);
Rest *rest_free(Rest *r);

/* A background outcome (MEASURED, or a HIT whose name moved) for path under
 * the rule d: listed now (returns 0: its change is older than the settle
 * interval and nobody is changing it) or held (returns 1; the same inode's
 * earlier entry is replaced: one entry per inode, whatever names it went
 * through). An entry past its bound is listed at once. -errno. */
int rest_offer(Rest *r, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d, bool audit,
               const uint8_t *sig, size_t sig_len);
/* The inode id is being used: its held digest (if any) is listed now, under
 * the name it is held under. Returns 1 when something was listed. */
int rest_use(Rest *r, const IverIdentity *id);
/* The inode id was measured for a use and listed: a held entry is dropped. */
void rest_forget(Rest *r, const IverIdentity *id);
/* Change events (fstrack): inode (dev, ino) changed by process pid (0:
 * unknown); path: a name it has now (a rename's or link's target), or NULL.
 * ino 0: only pid was active in a measured tree. */
void rest_note_change(Rest *r, uint32_t dev, uint64_t ino, int pid, const char *path);
/* A name in a measured tree was unlinked: a file held under it that has no
 * such name any more is dropped now (nothing used it), not at its deadline. */
void rest_note_gone(Rest *r, const char *path);

/* Whether id is held. */
bool rest_holds(const Rest *r, const IverIdentity *id);
/* Each held inode (a snapshot marks them stale: not listed yet). */
void rest_foreach(const Rest *r, void (*fn)(void *userdata, const IverIdentity *id), void *userdata);

/* Entries held (settle waits for none). */
size_t rest_pending(const Rest *r);
/* explain: the held entry of id, or NULL. */
json_object *rest_explain(const Rest *r, const IverIdentity *id);
/* status: counters. */
json_object *rest_status(const Rest *r);
