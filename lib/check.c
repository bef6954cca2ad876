/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One check of one path: the hit path is one statx and one lookup; a miss
 * hashes version-stably and records the digest under the observation it was
 * computed under. The ledger judges every check three ways. */
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iver/check.h"
#include "check-internal.h"
#include "macro.h"
#include "pseudofs.h"



static const char *const result_names[_IVER_CHECK_MAX] = {
        [IVER_CHECK_HIT] = "hit",
        [IVER_CHECK_MEASURED] = "measured",
        [IVER_CHECK_UNSTABLE] = "unstable",
        [IVER_CHECK_NOT_REGULAR] = "not-regular",
        [IVER_CHECK_ERROR] = "error",
        [IVER_CHECK_DEFERRED] = "deferred",
};

const char *iver_check_result_to_string(IverCheckResult r) {
        return r >= 0 && r < _IVER_CHECK_MAX ? result_names[r] : NULL;
}

int iver_context_new(const IverContextOptions *opt, IverContext **ret) {
        IverContext *ctx = calloc(1, sizeof(*ctx));
        int r;

        if (!ctx)
                return -ENOMEM;
        ctx->opt = *opt;
        if (ctx->opt.algo < 0 || ctx->opt.algo >= _IVER_HASH_MAX)
                ctx->opt.algo = IVER_HASH_SHA256;
        r = iver_cache_new(&ctx->cache);
        if (r >= 0)
                r = iver_ledger_new(opt->top_n, &ctx->ledger);
        if (r >= 0)
                r = iver_cookie_table_new(opt->version_mode, opt->statx, opt->kernel, &ctx->cookies);
        if (r < 0) {
                iver_context_free(ctx);
                return r;
        }
        ctx->opt.kernel = NULL; /* copied into the cookie table; don't keep the caller's pointer */
        *ret = ctx;
        return 0;
}

IverContext *iver_context_free(IverContext *ctx) {
        if (!ctx)
                return NULL;
        iver_cache_free(ctx->cache);
        iver_ledger_free(ctx->ledger);
        iver_cookie_table_free(ctx->cookies);
        free(ctx);
        return NULL;
}

IverCache *iver_context_cache(IverContext *ctx) {
        return ctx->cache;
}

void iver_context_adopt(IverContext *ctx, IverCache *cache, const IverLedgerCounters *counters) {
        iver_cache_free(ctx->cache);
        ctx->cache = cache;
        iver_ledger_set_counters(ctx->ledger, counters);
}

IverLedger *iver_context_ledger(IverContext *ctx) {
        return ctx->ledger;
}

IverCookieTable *iver_context_cookies(IverContext *ctx) {
        return ctx->cookies;
}

iver_statx_fn iver_context_statx(const IverContext *ctx) {
        return ctx->opt.statx;
}

void iver_check_invalidate(IverContext *ctx, const char *path) {
        uint32_t idx = iver_cache_find_path(ctx->cache, path, strlen(path));
        if (idx != IVER_CACHE_NONE)
                iver_cache_update_flags(ctx->cache, idx, IVER_ENTRY_STALE, 0);
}

void iver_check_forget(IverContext *ctx, const char *path) {
        uint32_t idx = iver_cache_find_path(ctx->cache, path, strlen(path));
        if (idx != IVER_CACHE_NONE)
                iver_cache_remove(ctx->cache, idx);
}

/* The previous observation the heuristics compare against: this inode when
 * it is the same file (any path: hard links and renames keep their entry),
 * else whatever was recorded at this path (rename-over, delete+create).
 * *ret_same tells whether it is this very file; *ret_entry gets a copy. */
uint32_t iver_check_find_prev(const IverContext *ctx, const IverStat *st, const char *path, bool *ret_same,
                              IverEntry *ret_entry) {
        uint32_t idx = iver_cache_find_inode(ctx->cache, st->dev, st->ino);
        if (idx != IVER_CACHE_NONE) {
                iver_cache_get(ctx->cache, idx, ret_entry);
                /* without btime the generation is only checked when hashing */
                if (ret_entry->id.gen == st->gen || !st->has_btime) {
                        *ret_same = true;
                        return idx;
                }
        }
        *ret_same = false;
        idx = iver_cache_find_path(ctx->cache, path, strlen(path));
        if (idx != IVER_CACHE_NONE)
                iver_cache_get(ctx->cache, idx, ret_entry);
        return idx;
}

IverCookieSource iver_check_cookie_source(IverContext *ctx, int dirfd, const char *path, IverStat *st) {
        IverCookieSource s = iver_cookie_table_peek(ctx->cookies, st->dev);
        if (s >= 0)
                return s;
        bool had_version = iver_cookie_table_wants_version(ctx->cookies);
        s = iver_cookie_table_source(ctx->cookies, st->dev, dirfd, path);
        if (s == IVER_COOKIE_STATX_VERSION && !had_version) {
                IverStat again;
                if (iver_stat(ctx->opt.statx, dirfd, path, true, &again) >= 0)
                        *st = again;
        }
        return s;
}

/* A metadata-only hit through a name the entry does not hold, of an inode
 * with one link: the file was renamed (its ctime moved), and its entry
 * takes the new name, so that forgetting the old name later (the check of a
 * name found gone, or a new file there) leaves it, and nothing is hashed
 * again. Whoever held the new name lost it (a rename-over). Hard links keep
 * the entry's one name (other_name). Returns the entry's index. */
static uint32_t follow_rename(IverContext *ctx, uint32_t idx, const char *path, const IverStat *st,
                              bool *ret_renamed) {
        if (st->nlink != 1 || path[0] != '/')
                return idx;
        size_t len = strlen(path);
        uint32_t holder = iver_cache_find_path(ctx->cache, path, len);
        if (holder == idx)
                return idx;
        IverEntry e;
        uint32_t moved = idx;
        iver_cache_get(ctx->cache, idx, &e);
        if (iver_cache_put_found(ctx->cache, &e, path, len, holder, idx, &moved) < 0)
                return iver_cache_find_inode(ctx->cache, st->dev, st->ino); /* keeps its old name */
        *ret_renamed = true;
        return moved;
}

/* Everything but the digest bytes: zeroing those costs more than the lookup. */
static void outcome_reset(IverCheckOutcome *out) {
        out->result = IVER_CHECK_ERROR;
        out->error = 0;
        out->verdict = (IverVerdict) {};
        out->measure_status = _IVER_MEASURE_INVALID;
        out->provisional = out->digest_changed = false;
        out->digest.algo = _IVER_HASH_INVALID;
        out->digest.len = 0;
        out->metadata_only = false;
        out->renamed = false;
        out->other_name = false;
        out->reason = _IVER_REASON_INVALID;
        out->cookie = (IverCookie) { .source = _IVER_COOKIE_INVALID };
        out->id = (IverIdentity) {};
        out->idx = IVER_CACHE_NONE;
        out->bytes_hashed = 0;
}

int iver_context_stat(IverContext *ctx, int dirfd, const char *path, IverStat *ret) {
        return iver_stat(ctx->opt.statx, dirfd, path, iver_cookie_table_wants_version(ctx->cookies), ret);
}

int iver_context_stat_fd(IverContext *ctx, int fd, IverStat *ret) {
        return iver_stat_fd(ctx->opt.statx, fd, iver_cookie_table_wants_version(ctx->cookies), ret);
}

int iver_check_begin(IverContext *ctx, int dirfd, const char *path, IverHashAlgo algo, IverPending *pending,
                     IverCheckOutcome *out) {
        IverStat st;
        int r = iver_context_stat(ctx, dirfd, path, &st);
        if (r < 0) {
                outcome_reset(out);
                if (r == -ENOENT || r == -ENOTDIR)
                        iver_check_forget(ctx, path);
                out->error = r;
                return r;
        }
        return iver_check_begin_stat(ctx, dirfd, path, &st, algo, 0, pending, out);
}

int iver_check_begin_stat(IverContext *ctx, int dirfd, const char *path, const IverStat *observed, IverHashAlgo algo,
                          unsigned flags, IverPending *pending, IverCheckOutcome *out) {
        IverStat st = *observed;

        if (algo < 0 || algo >= _IVER_HASH_MAX)
                algo = ctx->opt.algo;
        outcome_reset(out);
        out->id = iver_stat_identity(&st);
        out->owner = st.uid;
        if (!S_ISREG(st.mode) && !S_ISLNK(st.mode)) { /* a symlink is measured by its target (iver_measure_link) */
                iver_check_forget(ctx, path);
                out->result = IVER_CHECK_NOT_REGULAR;
                return 0;
        }

        IverCookieSource source = iver_check_cookie_source(ctx, dirfd, path, &st);
        IverCookie cookie = iver_cookie_from_stat(source, &st);
        IverCheckReason reason;
        uint32_t idx;
        bool same;
        bool rehash = iver_check_rule(ctx, dirfd, path, &st, source, algo, flags, &reason, &idx, &same);

        out->cookie = cookie;
        out->reason = reason;
        if (!rehash) {
                IverEntry e;
                uint32_t sa, sm;
                iver_cache_get(ctx->cache, idx, &e);
                IverVerdict v = iver_ledger_judge(true, e.shadow_atime, e.shadow_mtime, false, &st, &sa, &sm);
                if (reason == IVER_REASON_METADATA_ONLY) {
                        /* kernel IMA's last-writer rule: nobody wrote it, the digest stands */
                        iver_cache_set_cookie(ctx->cache, idx, &cookie);
                        v.metadata_only = true;
                        idx = follow_rename(ctx, idx, path, &st, &out->renamed);
                }
                else if ((e.flags & IVER_ENTRY_WRITTEN) && (flags & IVER_CHECK_OBSERVED_NOW))
                        /* the writes flagged came before the measurement */
                        iver_cache_update_flags(ctx->cache, idx, 0, IVER_ENTRY_WRITTEN);
                iver_cache_touch(ctx->cache, idx, sa, sm, &st);
                iver_ledger_account(ctx->ledger, &v, st.size, 0, 0, 0, path);
                out->result = IVER_CHECK_HIT;
                out->metadata_only = reason == IVER_REASON_METADATA_ONLY;
                /* one entry per inode, under one of its names: a hard link's
                 * other name hits without a hash (the inode's content is on
                 * record), and the caller lists it under its own name. Only
                 * for nlink > 1: the lookup by path costs on every hit. */
                out->other_name = st.nlink > 1 && iver_cache_find_path(ctx->cache, path, strlen(path)) != idx;
                out->verdict = v;
                out->digest = e.digest;
                out->idx = idx;
                return 0;
        }

        *pending = (IverPending) {
                .st = st,
                .source = source,
                .idx = idx,
                .same_file = same,
                .iverd_rehash = true,
                .use = flags & IVER_CHECK_USE,
                .algo = algo,
                .reason = reason,
        };
        return 1;
}

bool iver_check_unseen_fs(IverContext *ctx, uint32_t dev) {
        /* a first look at the filesystem, or one whose files are looked at first: no */
        return iver_cookie_table_peek(ctx->cookies, dev) >= 0 &&
               iver_lease_proves_fs(iver_cookie_table_fs_magic(ctx->cookies, dev));
}

int iver_check_begin_unseen(IverContext *ctx, const char *path, uint32_t dev, uint64_t ino, IverHashAlgo algo,
                            IverPending *pending) {
        if (!iver_check_unseen_fs(ctx, dev))
                return 0;
        IverCookieSource source = iver_cookie_table_peek(ctx->cookies, dev);
        if (iver_cache_find_inode(ctx->cache, dev, ino) != IVER_CACHE_NONE)
                return 0; /* on record: the hit rule needs its statx */
        if (algo < 0 || algo >= _IVER_HASH_MAX)
                algo = ctx->opt.algo;
        /* another inode recorded under this name is replaced (finish) */
        uint32_t idx = iver_cache_find_path(ctx->cache, path, strlen(path));
        *pending = (IverPending) {
                .st = { .dev = dev, .ino = ino, .mode = S_IFREG, .nlink = 1, .uid = IVER_UID_UNKNOWN },
                .source = source,
                .idx = idx,
                .iverd_rehash = true,
                .algo = algo,
                .reason = idx == IVER_CACHE_NONE ? IVER_REASON_NEW : IVER_REASON_IDENTITY,
                .unseen = true,
        };
        return 1;
}

bool iver_check_peek(const IverContext *ctx, const IverStat *st, IverHashAlgo algo) {
        if (!S_ISREG(st->mode))
                return false;
        IverCookieSource source = iver_cookie_table_peek(ctx->cookies, st->dev);
        if (source < 0)
                return false;
        uint32_t idx = iver_cache_find_inode(ctx->cache, st->dev, st->ino);
        if (idx == IVER_CACHE_NONE)
                return false;
        IverEntry e;
        iver_cache_get(ctx->cache, idx, &e);
        if (e.id.gen != st->gen && st->has_btime)
                return false;
        IverCookie cookie = iver_cookie_from_stat(source, st);
        return iver_check_entry_reason(&e, &cookie, algo) == IVER_REASON_HIT;
}

IverMeasureOptions iver_check_measure_options(const IverContext *ctx, const IverPending *pending) {
        /* the cookie table knows each filesystem's type once: no fstatfs a file */
        uint64_t magic = iver_cookie_table_fs_magic(ctx->cookies, pending->st.dev);
        return (IverMeasureOptions) {
                .algo = pending->algo,
                .source = pending->source,
                .statx = ctx->opt.statx,
                .getversion = (int8_t) iver_cookie_table_getversion(ctx->cookies, pending->st.dev),
                .fs_dev_checked = magic != 0 && !iver_fs_is_pseudo(magic, NULL),
                .fs_dev = pending->st.dev,
                .lease_proves = iver_lease_proves_fs(magic),
                .read_ahead = magic != 0 && !iver_fs_is_pseudo(magic, NULL) && magic != TMPFS_MAGIC &&
                              magic != RAMFS_MAGIC,
        };
}

/* The measurement failed: vanished, forgotten; unreadable, what is on record no longer describes
 * the file (it changed, or begin would not have asked). */
static int finish_failed(IverContext *ctx, const char *path, int r, IverCheckOutcome *out) {
        if (r == -ENOENT || r == -ENOTDIR)
                iver_check_forget(ctx, path);
        else
                iver_check_invalidate(ctx, path);
        out->result = IVER_CHECK_ERROR;
        out->error = r;
        return r;
}

/* Entries may have moved since begin (the loop ran other finishes): look the previous observation
 * up again, for the file we hashed. iver_check_find_prev(), keeping both lookups for the put. */
static uint32_t finish_find_prev(const IverContext *ctx, const IverStat *st, const char *path, size_t path_len,
                                 IverEntry *ret_old, uint32_t *ret_by_inode, uint32_t *ret_by_path) {
        uint32_t by_inode = iver_cache_find_inode(ctx->cache, st->dev, st->ino);
        uint32_t by_path = iver_cache_find_path(ctx->cache, path, path_len);
        uint32_t prev = by_path;
        if (by_inode != IVER_CACHE_NONE) {
                iver_cache_get(ctx->cache, by_inode, ret_old);
                if (ret_old->id.gen == st->gen || !st->has_btime)
                        prev = by_inode;
        }
        if (prev != by_inode && by_path != IVER_CACHE_NONE)
                iver_cache_get(ctx->cache, by_path, ret_old);
        *ret_by_inode = by_inode;
        *ret_by_path = by_path;
        return prev;
}

/* Whether the name no longer holds the file hashed (st): renamed away, or
 * replaced, while it was hashed. A relative name cannot be told (false). */
static bool name_moved_on(IverContext *ctx, const char *path, const IverStat *st) {
        IverStat now;
        if (path[0] != '/')
                return false;
        int r = iver_context_stat(ctx, AT_FDCWD, path, &now);
        if (r < 0)
                return r == -ENOENT || r == -ENOTDIR;
        return now.dev != st->dev || now.ino != st->ino || (now.has_btime && st->has_btime && now.gen != st->gen);
}

/* The cache entry that records this measurement. */
static IverEntry finish_entry(const IverPending *pending, const IverMeasurement *m, const IverCookie *cookie,
                              uint32_t shadow_atime, uint32_t shadow_mtime) {
        const IverStat *st = &m->st;
        IverEntry e = {
                .id = iver_stat_identity(st),
                .source = pending->source,
                .version = cookie->version,
                .size = st->size,
                .mtime = st->mtime,
                .ctime = st->ctime,
                .mode = st->mode,
                .shadow_atime = shadow_atime,
                .shadow_mtime = shadow_mtime,
                .digest = m->digest,
        };
        if (m->status == IVER_MEASURE_STABLE || m->status == IVER_MEASURE_PROVISIONAL) {
                e.flags = IVER_ENTRY_MEASURED;
                if (m->status == IVER_MEASURE_PROVISIONAL)
                        e.flags |= IVER_ENTRY_PROVISIONAL;
                if (iver_cookie_is_racy(cookie, m->started_at, IVER_COARSE_GRANULARITY_NS))
                        e.flags |= IVER_ENTRY_RACY;
        } else
                e.flags = IVER_ENTRY_UNSTABLE;
        return e;
}

int iver_check_finish(IverContext *ctx, const char *path, const IverPending *pending, int r, const IverMeasurement *m,
                      IverCheckOutcome *out) {
        *out = (IverCheckOutcome) { .idx = IVER_CACHE_NONE, .id = iver_stat_identity(&pending->st),
                                    .owner = pending->st.uid, .reason = pending->reason };

        if (r < 0)
                return finish_failed(ctx, path, r, out);
        if (m->status == IVER_MEASURE_NOT_REGULAR) {
                iver_check_forget(ctx, path);
                out->result = IVER_CHECK_NOT_REGULAR;
                return 0;
        }
        if (m->status == IVER_MEASURE_WRITERS) {
                /* nothing learnt: what is on record stays as begin found it */
                out->result = IVER_CHECK_DEFERRED;
                return 0;
        }

        const IverStat *st = &m->st;
        size_t path_len = strlen(path);
        IverEntry old = { .digest.algo = _IVER_HASH_INVALID };
        uint32_t by_inode, by_path;
        uint32_t prev = finish_find_prev(ctx, st, path, path_len, &old, &by_inode, &by_path);

        uint32_t sa, sm;
        IverVerdict v = iver_ledger_judge(prev != IVER_CACHE_NONE, old.shadow_atime, old.shadow_mtime, true, st, &sa,
                                          &sm);
        int changed = -1;
        bool have_digest = m->status == IVER_MEASURE_STABLE || m->status == IVER_MEASURE_PROVISIONAL;
        if (have_digest && (old.flags & IVER_ENTRY_MEASURED) && old.digest.algo == m->digest.algo)
                changed = !iver_digest_equal(&old.digest, &m->digest);

        /* Two checks of one inode by two names, the old name's hash came back
         * last: the entry keeps the name that holds the file (one statx, only
         * when the inode's entry holds another name). */
        if (!pending->use && prev == by_inode && by_inode != IVER_CACHE_NONE && by_inode != by_path &&
            name_moved_on(ctx, path, st)) {
                iver_ledger_account(ctx->ledger, &v, st->size, changed, m->bytes_hashed, (uint64_t) m->cpu_ns, path);
                out->result = IVER_CHECK_ERROR;
                out->error = -ENOENT;
                out->bytes_hashed = m->bytes_hashed;
                return -ENOENT;
        }

        IverCookie cookie = iver_cookie_from_stat(pending->source, st);
        IverEntry e = finish_entry(pending, m, &cookie, sa, sm);
        uint32_t idx;
        r = iver_cache_put_found(ctx->cache, &e, path, path_len, by_path, by_inode, &idx);
        if (r < 0) {
                out->result = IVER_CHECK_ERROR;
                out->error = r;
                return r;
        }
        iver_ledger_account(ctx->ledger, &v, st->size, changed, m->bytes_hashed, (uint64_t) m->cpu_ns, path);
        if (m->status == IVER_MEASURE_PROVISIONAL)
                iver_ledger_count_provisional(ctx->ledger);
        if (m->status == IVER_MEASURE_UNSTABLE)
                iver_ledger_count_unstable(ctx->ledger);

        *out = (IverCheckOutcome) {
                .result = have_digest ? IVER_CHECK_MEASURED : IVER_CHECK_UNSTABLE,
                .verdict = v,
                .measure_status = m->status,
                .provisional = m->status == IVER_MEASURE_PROVISIONAL,
                .digest_changed = changed > 0,
                .digest = m->digest,
                .cookie = cookie,
                .id = e.id,
                .owner = st->uid, /* of the version hashed */
                .idx = idx,
                .bytes_hashed = m->bytes_hashed,
                .reason = pending->reason,
                .other_name = st->nlink > 1 && by_inode != IVER_CACHE_NONE && prev == by_inode && by_inode != by_path,
        };
        return 0;
}

int iver_check(IverContext *ctx, int dirfd, const char *path, IverCheckOutcome *out) {
        IverPending p;
        IverMeasurement m;
        int r = iver_check_begin(ctx, dirfd, path, _IVER_HASH_INVALID, &p, out);
        if (r <= 0)
                return r;
        IverMeasureOptions o = iver_check_measure_options(ctx, &p);
        r = S_ISLNK(p.st.mode) ? iver_measure_link(dirfd, path, &o, &m) : iver_measure(dirfd, path, &o, &m);
        return iver_check_finish(ctx, path, &p, r, &m, out);
}
