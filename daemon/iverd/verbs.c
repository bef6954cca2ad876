/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Control verbs: build replies from the manager's state. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "checker.h"
#include "control.h"
#include "evidence.h"
#include "fstrack.h"
#include "log.h"
#include "house.h"
#include "onaccess.h"
#include "rest.h"
#include "recheck.h"
#include "verbs-internal.h"
#include "verbs.h"
#include "walk.h"
#include "watch.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))
#define U64(x) json_object_new_uint64((uint64_t) (x))

static json_object *verb_status(House *m, Conn *c, json_object *req) {
        json_object *o = ok_reply(), *vs = json_object_new_array();
        IverCookieTable *t = iver_context_cookies(m->ctx);
        uint32_t dev;
        IverCookieSource src;
        uint64_t magic;
        for (unsigned i = 0; iver_cookie_table_get(t, i, &dev, &src, &magic); i++) {
                json_object *e = json_object_new_object();
                char d[32];
                snprintf(d, sizeof(d), "%u:%u", dev >> 20, dev & 0xfffff);
                ADD(e, "dev", json_object_new_string(d));
                const char *fs = iver_fstype_to_name(magic);
                ADD(e, "fstype", fs ? json_object_new_string(fs) : NULL);
                ADD(e, "source", json_object_new_string(iver_cookie_source_to_string(src)));
                json_object_array_add(vs, e);
        }
        ADD(o, "version_sources", vs);
        ADD(o, "tracking", fstrack_status(m->fstrack));
        ADD(o, "tracking_events", U64(fstrack_events(m->fstrack)));
        ADD(o, "tracking_overflows", U64(fstrack_overflows(m->fstrack)));
        ADD(o, "tracking_pauses", U64(fstrack_pauses(m->fstrack)));
        ADD(o, "watches", U64(watch_count(m->watch)));
        ADD(o, "unwatched_dirs", U64(watch_failed(m->watch)));
        ADD(o, "inotify_budget", json_object_new_int64(watch_budget(m->watch)));
        ADD(o, "inotify_overflows", U64(watch_overflows(m->watch)));
        ADD(o, "inotify_events", U64(watch_events(m->watch)));
        ADD(o, "inotify_pauses", U64(watch_pauses(m->watch)));
        ADD(o, "on_access", json_object_new_string(iver_on_access_to_string(m->conf.on_access)));
        ADD(o, "fanotify_marks", U64(onaccess_marks(m->onaccess)));
        ADD(o, "fanotify_events", U64(onaccess_events(m->onaccess)));
        onaccess_status(m->onaccess, o);
        ADD(o, "violation_log_suppressed", U64(log_violations_suppressed()));
        ADD(o, "pending", U64(queue_queued(m->queue) + queue_inflight(m->queue)));
        ADD(o, "queued", U64(queue_queued(m->queue)));
        ADD(o, "hashing", U64(queue_inflight(m->queue)));
        ADD(o, "peak_queued", U64(m->peak_queued));
        ADD(o, "provisional_rechecks", U64(recheck_count(m->recheck)));
        ADD(o, "names_at_rest", rest_status(m->rest));
        ADD(o, "coalesced_events", U64(queue_coalesced(m->queue)));
        ADD(o, "scanning", json_object_new_boolean(walk_busy(m->walk)));
        ADD(o, "initial_scan_done", json_object_new_boolean(m->initial_scan_done));
        ADD(o, "scans", U64(m->scans));
        ADD(o, "cached_files", U64(iver_cache_size(iver_context_cache(m->ctx))));
        ADD(o, "workers", U64(workers_count(m->workers)));
        ADD(o, "errors", U64(m->errors));
        ADD(o, "unmeasurable", U64(m->unmeasurable));
        ADD(o, "violations", U64(m->violations));
        ScanProgress sp;
        house_scan_progress(m, &sp);
        ADD(o, "settled", json_object_new_boolean(house_settled(m)));
        ADD(o, "scan_active", json_object_new_boolean(sp.active));
        ADD(o, "scan_files_seen", U64(sp.seen));
        ADD(o, "scan_files_done", U64(sp.done));
        ADD(o, "scan_files_estimate", U64(sp.estimate));
        ADD(o, "scan_bytes_hashed", U64(sp.bytes));
        ADD(o, "scan_files_per_sec", U64((uint64_t) sp.rate));
        ADD(o, "scan_seconds", json_object_new_double(sp.seconds));
        ADD(o, "scan_eta_sec", sp.eta >= 0 ? U64((uint64_t) (sp.eta + 0.5)) : NULL);
        ADD(o, "journal_dropped", U64(log_dropped()));
        ADD(o, "log_suppressed", U64(log_suppressed()));
        ADD(o, "policy", json_object_new_string(m->gen->source ?: ""));
        ADD(o, "policy_generation", U64(m->gen->number));
        ADD(o, "socket", json_object_new_string(control_path(m->control)));
        unsigned conns;
        uint64_t refused, requests_refused;
        control_counters(m->control, &conns, &refused, &requests_refused);
        ADD(o, "connections", U64(conns));
        ADD(o, "connections_refused", U64(refused));
        ADD(o, "requests_refused", U64(requests_refused));
        evidence_status(m->evidence, o);
        return o;
}

static json_object *verb_stats(House *m, Conn *c, json_object *req) {
        const IverLedgerCounters *k = iver_ledger_counters(iver_context_ledger(m->ctx));
        json_object *o = ok_reply(), *s = json_object_new_object();
        size_t nf;
        const IverLedgerField *fields = iver_ledger_fields(&nf);
        for (size_t i = 0; i < nf; i++)
                ADD(s, fields[i].name, U64(iver_ledger_field_value(k, &fields[i])));
        ADD(s, "violations", U64(m->violations));
        for (int i = 0; i < _IVER_APPRAISAL_MAX; i++) {
                char key[64];
                snprintf(key, sizeof(key), "appraisal_%s", iver_appraisal_result_to_string((IverAppraisalResult) i));
                for (char *q = key; *q; q++)
                        if (*q == '-')
                                *q = '_';
                ADD(s, key, U64(m->appraisals[i]));
        }
        ADD(s, "top_paths_dropped", U64(iver_ledger_paths_dropped(iver_context_ledger(m->ctx))));
        ADD(o, "stats", s);
        json_object *v;
        int top = 10;
        if (json_object_object_get_ex(req, "top", &v))
                top = json_object_get_int(v);
        if (top < 0 || top > 64)
                return (json_object_put(o), reply_error("top must be 0..64"));
        IverLedgerTop rows[64];
        unsigned n = iver_ledger_top(iver_context_ledger(m->ctx), rows, (unsigned) top);
        json_object *a = json_object_new_array();
        for (unsigned i = 0; i < n; i++) {
                json_object *r = json_object_new_object();
                ADD(r, "path", json_object_new_string(rows[i].path));
                ADD(r, "remeasured", U64(rows[i].remeasured));
                ADD(r, "avoided_vs_atime", U64(rows[i].avoided_vs_atime));
                ADD(r, "bytes_hashed", U64(rows[i].bytes_hashed));
                json_object_array_add(a, r);
        }
        ADD(o, "top", a);
        return o;
}

static json_object *verb_remeasure(House *m, Conn *c, json_object *req) {
        json_object *paths; /* absolute paths without NUL bytes (request.c) */
        (void) json_object_object_get_ex(req, "paths", &paths);
        size_t n = json_object_array_length(paths);
        for (size_t i = 0; i < n; i++)
                house_queue(m, json_object_get_string(json_object_array_get_idx(paths, i)));
        json_object *o = ok_reply();
        ADD(o, "queued", U64(n));
        return o;
}

static json_object *verb_rescan(House *m, Conn *c, json_object *req) {
        int r = house_rescan(m);
        if (r < 0)
                return reply_error("rescan failed: %s", strerror(-r));
        return ok_reply();
}

static json_object *verb_settle(House *m, Conn *c, json_object *req) {
        json_object *v;
        double timeout = 60;
        if (json_object_object_get_ex(req, "timeout", &v))
                timeout = json_object_get_double(v);
        if (!(timeout > 0 && timeout <= 86400))
                return reply_error("timeout must be in (0, 86400] seconds");
        if (house_settled(m)) {
                json_object *o = ok_reply();
                ADD(o, "settled", json_object_new_boolean(1));
                return o;
        }
        if (conn_wait_settled(c, (uint64_t) (timeout * 1e6)) < 0)
                return reply_error("cannot wait");
        return NULL;
}

static json_object *verb_reload(House *m, Conn *c, json_object *req) {
        char *err = NULL;
        int r = house_reload(m, &err);
        if (r < 0) {
                json_object *o = reply_error("%s", err ?: strerror(-r));
                free(err);
                return o;
        }
        return ok_reply();
}

static json_object *cookie_json(const IverCookie *c) {
        json_object *o = json_object_new_object();
        ADD(o, "source", json_object_new_string(iver_cookie_source_to_string(c->source) ?: "?"));
        ADD(o, "ctime_ns", json_object_new_int64(c->ctime));
        ADD(o, "mtime_ns", json_object_new_int64(c->mtime));
        ADD(o, "size", U64(c->size));
        if (c->source == IVER_COOKIE_STATX_VERSION)
                ADD(o, "version", U64(c->version));
        return o;
}

/* explain: the decision for the file as the checker makes it. */
static json_object *explain_policy(House *m, const IverDecision *dec) {
        json_object *pol = json_object_new_object();
        if (dec->pseudo) {
                ADD(pol, "refused", json_object_new_string("pseudo filesystem: never hashed"));
                return pol;
        }
        ADD(pol, "action", json_object_new_string(iver_policy_action_to_string(dec->d.action)));
        ADD(pol, "matched", json_object_new_boolean(dec->d.matched));
        if (dec->d.matched) {
                char where[4200];
                snprintf(where, sizeof(where), "%s:%u", dec->d.file, dec->d.line);
                ADD(pol, "rule", json_object_new_string(where));
                char *text = NULL;
                if (iver_policy_rule_format(m->gen->policy, dec->d.rule, &text) >= 0)
                        ADD(pol, "text", json_object_new_string(text));
                free(text);
        }
        ADD(pol, "appraise", json_object_new_boolean(dec->appraise));
        ADD(pol, "hash", json_object_new_string(iver_hash_algo_to_string(dec->algo) ?: "?"));
        return pol;
}

/* explain: the file as it is now (identity, a held digest, cookie, policy). */
static void explain_now(House *m, json_object *o, const IverStat *st, IverCookieSource src, const IverDecision *dec) {
        json_object *id = json_object_new_object();
        char d[32];
        snprintf(d, sizeof(d), "%u:%u", st->dev >> 20, st->dev & 0xfffff);
        ADD(id, "dev", json_object_new_string(d));
        ADD(id, "ino", U64(st->ino));
        ADD(id, "generation", U64(st->gen));
        ADD(o, "identity", id);
        IverIdentity ident = iver_stat_identity(st);
        json_object *held = rest_explain(m->rest, &ident);
        if (held)
                ADD(o, "pending", held); /* measured, listed when its name comes to rest */
        ADD(o, "regular", json_object_new_boolean(S_ISREG(st->mode)));
        IverCookie now = iver_cookie_from_stat(src, st);
        ADD(o, "cookie_now", cookie_json(&now));
        ADD(o, "policy", explain_policy(m, dec));
}

static json_object *explain_flags(uint32_t bits) {
        static const struct { uint32_t bit; const char *name, *why; } fl[] = {
                { IVER_ENTRY_PROVISIONAL, "provisional", "hashed while a writer held it open (no read lease): re-checked when it closes" },
                { IVER_ENTRY_RACY, "racy", "coarse ctime within one tick of the measurement: not trusted" },
                { IVER_ENTRY_UNSTABLE, "unstable", "kept changing while hashed: no digest recorded" },
                { IVER_ENTRY_STALE, "stale", "a writer closed it since: the next check re-hashes" },
                { IVER_ENTRY_VIOLATION, "violation", "a violation was recorded" },
                { IVER_ENTRY_WRITTEN, "written", "a write was seen (or could not be ruled out) since: a cookie move re-hashes" },
        };
        json_object *flags = json_object_new_array();
        for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
                if (bits & fl[i].bit) {
                        json_object *f = json_object_new_object();
                        ADD(f, "flag", json_object_new_string(fl[i].name));
                        ADD(f, "why", json_object_new_string(fl[i].why));
                        json_object_array_add(flags, f);
                }
        return flags;
}

/* explain: what iverd and each heuristic would do at the next check, by the
 * library's own hit rule (lease probe and attestation included). */
static json_object *explain_next_check(House *m, const char *path, const IverStat *st, IverCookieSource src,
                                       const IverDecision *dec, const IverEntry *e) {
        IverCheckReason why;
        uint32_t cmp;
        bool same_id;
        bool rehash = iver_check_rule(m->ctx, AT_FDCWD, path, st, src, dec->algo, dec->flags, &why, &cmp, &same_id);
        json_object *w = json_object_new_object();
        ADD(w, "iverd", json_object_new_string(rehash ? "re-hash" : why == IVER_REASON_METADATA_ONLY ? "metadata-only" : "hit"));
        ADD(w, "reason", json_object_new_string(iver_check_reason_to_string(why)));
        ADD(w, "atime_heuristic", json_object_new_string(iver_shadow_atime(st) != e->shadow_atime ? "re-hash" : "skip"));
        ADD(w, "mtime_heuristic", json_object_new_string(iver_shadow_mtime(st) != e->shadow_mtime ? "re-hash" : "skip"));
        ADD(w, "same_identity", json_object_new_boolean(same_id));
        return w;
}

/* explain: the cache's record of path (st: NULL when it cannot be stat'ed). */
static void explain_record(House *m, json_object *o, const char *path, const IverStat *st, IverCookieSource src,
                           const IverDecision *dec) {
        IverCache *cache = iver_context_cache(m->ctx);
        uint32_t idx = iver_cache_find_path(cache, path, strlen(path));
        if (idx == IVER_CACHE_NONE)
                return;
        IverEntry e;
        char hex[2 * IVER_DIGEST_MAX + 1], dg[2 * IVER_DIGEST_MAX + 16];
        iver_cache_get(cache, idx, &e);
        json_object *last = json_object_new_object();
        IverCookie old = iver_cache_cookie(cache, idx);
        ADD(last, "cookie", cookie_json(&old));
        if (e.flags & IVER_ENTRY_MEASURED) {
                snprintf(dg, sizeof(dg), "%s:%s", iver_hash_algo_to_string(e.digest.algo), iver_digest_to_hex(&e.digest, hex));
                ADD(last, "digest", json_object_new_string(dg));
        }
        ADD(last, "flags", explain_flags(e.flags));
        ADD(o, "last_measurement", last);
        if (st)
                ADD(o, "next_check", explain_next_check(m, path, st, src, dec, &e));
        ADD(o, "attestation", fstrack_explain(m->fstrack, st, e.id.dev, e.id.ino));
}

/* Everything about one file: the deciding rule, identity, cookies now and at
 * the last measurement, what each heuristic would do now, list entries. */
static json_object *verb_explain(House *m, Conn *c, json_object *req) {
        json_object *v; /* an absolute path (request.c) */
        (void) json_object_object_get_ex(req, "path", &v);
        const char *path = json_object_get_string(v);
        json_object *o = ok_reply();
        ADD(o, "path", json_object_new_string(path));

        IverStat st;
        int r = iver_context_stat(m->ctx, AT_FDCWD, path, &st);
        if (r < 0)
                ADD(o, "stat_error", json_object_new_string(strerror(-r)));
        IverCookieSource src = r >= 0 ? iver_check_cookie_source(m->ctx, AT_FDCWD, path, &st) : _IVER_COOKIE_INVALID;
        /* the checker's own decision, shown as it is made */
        IverDecision dec = { .algo = m->gen->hash };
        if (r >= 0) {
                (void) checker_decide(m, m->gen, path, &st, IVER_UID_UNKNOWN, &dec);
                explain_now(m, o, &st, src, &dec);
        }
        explain_record(m, o, path, r >= 0 ? &st : NULL, src, &dec);
        /* the list entries of path: iverctl reads them from the list's fd,
         * so a list of any length costs the loop nothing */
        uint64_t extended;
        if (evidence_list_extended(m->evidence, &extended) >= 0)
                ADD(o, "list_extended", json_object_new_uint64(extended));
        int fd = -1;
        o = verb_list_reply(m, o, &fd);
        if (fd < 0)
                return o;
        conn_reply_fd(c, o, fd);
        return NULL;
}

typedef json_object *(*verb_fn)(House *m, Conn *c, json_object *req);

static const verb_fn handlers[_VERB_MAX] = {
        [VERB_STATUS] = verb_status,
        [VERB_STATS] = verb_stats,
        [VERB_LIST] = verb_list,
        [VERB_LOG] = verb_log,
        [VERB_SETTLE] = verb_settle,
        [VERB_REMEASURE] = verb_remeasure,
        [VERB_RESCAN] = verb_rescan,
        [VERB_RELOAD] = verb_reload,
        [VERB_QUOTE] = verb_quote,
        [VERB_EXPLAIN] = verb_explain,
};

json_object *verb_run(VerbId v, House *m, Conn *c, json_object *req) {
        return handlers[v](m, c, req);
}
