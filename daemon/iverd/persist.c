/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Boot-scoped snapshots of cache and ledger in the state directory. The
 * HMAC key is in root's user keyring (@u): it survives daemon restarts and
 * dies with the boot, so a snapshot from a previous boot can never verify
 * (the disk may have been changed offline, and its PCR is gone anyway).
 *
 * A snapshot is also bound to the measurement list it was written next to
 * (the list file's identity and first record go into the boot id it
 * carries): a cached file
 * is one whose entry is in the list, so with a fresh list (the recovery from
 * broken evidence) the snapshot is discarded and every file listed again,
 * never left out of the new list because it was cached. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "evidence.h"
#include "iver/snapshot.h"
#include "fileio.h"
#include "log.h"
#include "persist.h"
#include "rest.h"
#include "thread.h"

#define SNAPSHOT_FILE "cache.snap"
#define SAVE_JOIN_USEC (10ULL * 1000000ULL) /* at exit: a save's fsync on a hung disk is left behind */

struct Persist {
        sd_event *event;
        IverContext *ctx;
        Evidence *evidence;
        Rest *rest;
        char *path;                     /* the snapshot in the state directory */
        bool enabled;                   /* a boot key exists */
        uint64_t checks;                /* ledger checks at the last snapshot */
        uint64_t interval_usec;
        sd_event_source *timer;
        /* the save in flight: its fsync and rename on a thread of its own */
        pthread_t thread;
        IverSnapshotWrite *pending;     /* the thread's */
        bool running;
        int done, result;               /* set by the thread (atomic) */
};

/* The boot key's description in @u. IVERD_TEST_SNAPSHOT_KEY names another
 * one: the key is one per boot for the whole host, so a test that removes or
 * replaces it (to play a reboot or a forger) would make every other iverd
 * running then discard its next snapshot; such a test uses a key of its own. */
static const char *key_desc(void) {
        const char *e = getenv("IVERD_TEST_SNAPSHOT_KEY");
        return e && *e ? e : IVER_SNAPSHOT_KEY_DESC;
}

/* The id a snapshot is bound to: the boot's, mixed with the identity of the
 * list file: its device and inode, and its first record's PCR and template
 * digest (the list is append-only, so its first record never changes; a
 * fresh list is empty when iverd starts, even if its inode number was
 * reused). */
static int scope_id(Persist *p, uint8_t ret[16]) {
        uint8_t buf[16 + 2 * sizeof(uint64_t) + 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE] = {}, md[EVP_MAX_MD_SIZE];
        struct stat st;
        int r = iver_boot_id(buf);
        if (r < 0)
                return r;
        int fd = p->evidence ? evidence_list_fd(p->evidence) : -EBADF;
        if (fd < 0 || fstat(fd, &st) < 0) {
                memcpy(ret, buf, 16);
                return 0;
        }
        uint64_t id[2] = { (uint64_t) st.st_dev, (uint64_t) st.st_ino };
        memcpy(buf + 16, id, sizeof(id));
        /* an empty list leaves the first record's bytes zero */
        size_t got;
        r = iver_pread_full(fd, buf + 16 + sizeof(id), 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE, 0, &got);
        if (r < 0)
                return r;
        if (EVP_Digest(buf, sizeof(buf), md, NULL, EVP_sha256(), NULL) != 1)
                return -EIO;
        memcpy(ret, md, 16);
        return 0;
}

static void discard(const char *path, const char *why) {
        log_warning("Discarding snapshot %s: %s; every file will be re-measured", path, why);
        log_audit("snapshot-discard", why, false);
        (void) unlink(path);
}

/* Entries of files deleted (or replaced by a file of another type) while
 * iverd was down: no event and no walk will ever visit them again. The type
 * is the entry's own: a measured symlink (its target's digest) is kept while
 * a symlink is there, or every restart would hash all of them again. */
static size_t forget_gone(IverCache *c) {
        size_t gone = 0;
        char name[IVER_CACHE_PATH_MAX];
        for (size_t i = iver_cache_size(c); i-- > 0;) {
                struct stat pst;
                IverEntry e;
                iver_cache_get(c, (uint32_t) i, &e);
                (void) iver_cache_path(c, (uint32_t) i, name, sizeof(name));
                if (lstat(name, &pst) < 0 ? errno == ENOENT || errno == ENOTDIR
                                          : (pst.st_mode & S_IFMT) != (e.mode & S_IFMT) ||
                                                    (!S_ISREG(pst.st_mode) && !S_ISLNK(pst.st_mode))) {
                        iver_cache_remove(c, (uint32_t) i);
                        gone++;
                }
        }
        return gone;
}

void persist_load(Persist *p, int64_t *ret_mtime_sec) {
        uint8_t key[IVER_SNAPSHOT_KEY_SIZE], boot[16];
        const char *path = p->path;
        *ret_mtime_sec = -1;
        /* the state directory exists and was checked (rundir_prepare) */
        struct stat st;
        bool exists = stat(path, &st) == 0;
        int r = scope_id(p, boot);
        if (r < 0) {
                log_warning_errno(r, "Cannot read the boot id: %m; snapshots disabled");
                goto out;
        }
        r = iver_bootkey_get(key_desc(), 0, key);
        if (r == -ENOKEY) {
                if (exists)
                        discard(path, "no snapshot key in the kernel keyring: written in another boot");
                r = iver_bootkey_get(key_desc(), 1, key);
                if (r < 0)
                        log_warning_errno(r, "Cannot create the snapshot key in the kernel keyring: %m; snapshots disabled");
                else
                        p->enabled = true;
                goto out;
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot read the snapshot key from the kernel keyring: %m; snapshots disabled");
                goto out;
        }
        p->enabled = true;
        if (!exists)
                goto out;

        IverCache *c = NULL;
        IverLedgerCounters counters;
        IverSnapshotError err = IVER_SNAPSHOT_OK;
        uint64_t t0 = (uint64_t) iver_monotonic_ns();
        r = iver_cache_new(&c);
        if (r >= 0)
                r = iver_snapshot_read(path, boot, key, c, &counters, &err);
        if (r < 0) {
                iver_cache_free(c);
                discard(path, r != -EBADMSG                      ? strerror(-r)
                              : err == IVER_SNAPSHOT_OTHER_BOOT ? "written in another boot or next to another measurement list"
                                                                : iver_snapshot_error_to_string(err));
                goto out;
        }
        size_t gone = forget_gone(c);
        if (gone)
                log_info("Forgot %zu cached measurements of files gone since the snapshot", gone);
        size_t n = iver_cache_size(c);
        iver_context_adopt(p->ctx, c, &counters);
        p->checks = counters.checks;
        *ret_mtime_sec = (int64_t) st.st_mtim.tv_sec;
        log_info("Restored %zu cached measurements and the ledger from %s in %.1f ms", n, path,
                 ((double) iver_monotonic_ns() - (double) t0) / 1e6);
out:
        memset(key, 0, sizeof(key));
}

/* A held digest (rest.h) is not in the list: the snapshot must not say it
 * is on record, or a restart would never list it. */
static void mark_held(void *userdata, const IverIdentity *id) {
        Persist *p = userdata;
        IverCache *c = iver_context_cache(p->ctx);
        uint32_t idx = iver_cache_find_inode(c, id->dev, id->ino);
        if (idx != IVER_CACHE_NONE)
                iver_cache_update_flags(c, idx, IVER_ENTRY_STALE, 0);
}

/* The save before: joined, its failure logged (the next save is made
 * whatever the ledger says). wait: as long as it takes (bounded), else only
 * if it is done. Returns whether none is in flight now. */
static bool reap(Persist *p, bool wait) {
        if (!p->running)
                return true;
        if (!wait && !__atomic_load_n(&p->done, __ATOMIC_ACQUIRE))
                return false;
        p->running = false;
        if (thread_join(p->thread, SAVE_JOIN_USEC) < 0) {
                log_warning("Snapshot %s: its fsync did not end within %llu s; left behind", p->path,
                            (unsigned long long) (SAVE_JOIN_USEC / 1000000ULL));
                return true;
        }
        int r = __atomic_load_n(&p->result, __ATOMIC_ACQUIRE);
        if (r < 0) {
                log_warning_errno(r, "Cannot write snapshot %s: %m", p->path);
                p->checks = 0;
        }
        return true;
}

static void *commit_thread(void *arg) {
        Persist *p = arg;
        IverSnapshotWrite *w = p->pending;
        __atomic_store_n(&p->result, iver_snapshot_commit(w), __ATOMIC_RELEASE);
        __atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
        return NULL;
}

/* Encode the snapshot into a new temporary on this thread (the cache is the
 * loop's); sync: fsync and rename here too, else on a thread. */
static int save(Persist *p, bool sync) {
        uint8_t key[IVER_SNAPSHOT_KEY_SIZE], boot[16];
        const IverLedgerCounters *k = iver_ledger_counters(iver_context_ledger(p->ctx));
        if (!reap(p, sync) || !p->enabled || (k->checks == p->checks && p->checks != 0))
                return 0;
        /* what the cache holds is in the list file before the snapshot says so */
        (void) evidence_commit(p->evidence);
        rest_foreach(p->rest, mark_held, p);
        IverSnapshotWrite *w = NULL;
        int r = scope_id(p, boot);
        if (r >= 0)
                r = iver_bootkey_get(key_desc(), 1, key);
        if (r >= 0)
                r = iver_snapshot_write_begin(p->path, iver_context_cache(p->ctx), k, boot, key, &w);
        memset(key, 0, sizeof(key));
        if (r >= 0 && !sync) {
                p->pending = w;
                p->done = 0;
                r = thread_start(&p->thread, commit_thread, p);
                if (r >= 0) {
                        p->running = true;
                        p->checks = k->checks;
                        return 0;
                }
        }
        if (r >= 0)
                r = iver_snapshot_commit(w); /* at exit, or no thread */
        if (r < 0)
                return log_warning_errno(r, "Cannot write snapshot %s: %m", p->path);
        p->checks = k->checks;
        return 0;
}

int persist_save(Persist *p) {
        return p ? save(p, true) : 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Persist *p = userdata;
        (void) save(p, false);
        /* the heartbeat the next run's gap starts from after a crash */
        evidence_mark_alive(p->evidence);
        (void) sd_event_source_set_time_relative(s, p->interval_usec);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

int persist_start_timer(Persist *p, uint64_t interval_usec) {
        p->interval_usec = interval_usec;
        int r = sd_event_add_time_relative(p->event, &p->timer, CLOCK_MONOTONIC, interval_usec, 0, on_timer, p);
        if (r >= 0)
                (void) sd_event_source_set_description(p->timer, "snapshot");
        return r;
}

int persist_new(sd_event *event, IverContext *ctx, const char *state_dir, Evidence *evidence, Rest *rest,
                Persist **ret) {
        Persist *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (Persist) { .event = event, .ctx = ctx, .evidence = evidence, .rest = rest };
        if (asprintf(&p->path, "%s/%s", state_dir, SNAPSHOT_FILE) < 0) {
                free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

Persist *persist_free(Persist *p) {
        if (!p)
                return NULL;
        (void) reap(p, true);
        sd_event_source_disable_unref(p->timer);
        free(p->path);
        free(p);
        return NULL;
}
