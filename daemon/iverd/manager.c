/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The manager: owns the event loop, the cache (through the context), the
 * policy, the queue and the worker pool. Only this thread touches them. This
 * file: what the components report, reload, set-up and the loop; the scans,
 * status and settle are manager-scan.c's. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "appraisal.h"
#include "checker.h"
#include "control.h"
#include "evidence.h"
#include "fstrack.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "manager-internal.h"
#include "mounts.h"
#include "onaccess.h"
#include "pathfd.h"
#include "persist.h"
#include "rundir.h"
#include "recheck.h"
#include "rest.h"
#include "vanished.h"
#include "settings.h"
#include "thread.h"
#include "verbs.h"
#include "walk.h"
#include "watch.h"

#define SNAPSHOT_INTERVAL_USEC (60ULL * 1000000ULL)

/* What the rooms below see of the manager (house.h): its first member. */
static House *house_of(void *userdata) {
        Manager *m = userdata;
        return &m->h;
}

/* ---- what the components report (report.h) ---- */

static void on_report_check(void *userdata, const char *path) {
        manager_queue(userdata, path);
}

static void on_report_written(void *userdata, const char *path) {
        Manager *m = userdata;
        if (recheck_scheduled(m->h.recheck, path))
                return; /* its next try comes, and its writer's close is a check */
        manager_queue(m, path);
}

static void on_report_rescan(void *userdata) {
        (void) manager_rescan(userdata);
}

static bool on_report_dir_wanted(void *userdata, const char *dir) {
        return manager_dir_wanted(userdata, dir);
}

static DirFiles on_report_dir_files(void *userdata, const char *dir) {
        const Manager *m = userdata;
        const IverPolicy *p = m->h.gen->policy;
        size_t len = strlen(dir);
        if (iver_policy_may_match_children(p, IVER_CLASS_MEASURE, dir, len) ||
            iver_policy_may_match_children(p, IVER_CLASS_APPRAISE, dir, len))
                return DIR_FILES_ALL;
        return iver_policy_may_match_child(p, IVER_CLASS_MEASURE, dir, len) ||
                               iver_policy_may_match_child(p, IVER_CLASS_APPRAISE, dir, len)
                       ? DIR_FILES_SOME
                       : DIR_FILES_NONE;
}

static bool on_report_file_wanted(void *userdata, const char *path) {
        const Manager *m = userdata;
        const IverPolicy *p = m->h.gen->policy;
        size_t len = strlen(path);
        return iver_policy_may_match_path(p, IVER_CLASS_MEASURE, path, len) ||
               iver_policy_may_match_path(p, IVER_CLASS_APPRAISE, path, len);
}

static void on_report_new_dir(void *userdata, const char *dir) {
        Manager *m = userdata;
        if (manager_dir_wanted(m, dir))
                (void) walk_add(m->h.walk, dir);
}

/* A mount at dir appeared or left: what is visible there changed. */
static void on_report_changed_below(void *userdata, const char *dir) {
        Manager *m = userdata;
        if (!manager_dir_wanted(m, dir))
                return;
        log_info("What is visible at %s changed (a mount, an overlay layer): rescanning it", dir);
        (void) walk_add(m->h.walk, dir);
        /* cached files below it may be hidden or gone now: check each (ENOENT drops it) */
        IverCache *c = iver_context_cache(m->h.ctx);
        size_t len = strlen(dir);
        bool root = strcmp(dir, "/") == 0;
        char p[IVER_CACHE_PATH_MAX];
        for (uint32_t i = 0; i < iver_cache_size(c); i++) {
                size_t plen = iver_cache_path(c, i, p, sizeof(p));
                if (root || (plen > len && p[len] == '/' && memcmp(p, dir, len) == 0))
                        manager_queue(m, p); /* the queue keeps its own copy */
        }
}

static void on_report_forget_below(void *userdata, const char *dir) {
        manager_forget_below(userdata, dir);
}

static void on_report_settled(void *userdata) {
        manager_maybe_settled(userdata);
}

static bool on_report_dir_entered(void *userdata, int dirfd, const char *dir) {
        Manager *m = userdata;
        bool covered = watch_add_fd(m->h.watch, dirfd, dir);
        onaccess_add(m->h.onaccess, dir);
        return covered;
}

static bool on_report_file_found(void *userdata, const char *path, const IverStat *st, int64_t st_at) {
        return checker_scan_observed(house_of(userdata), path, st, st_at);
}

static bool on_report_names_suffice(void *userdata, const char *dir) {
        Manager *m = userdata;
        return m->h.gen->by_path && !iver_cache_has_dir(iver_context_cache(m->h.ctx), dir, strlen(dir));
}

static bool on_report_file_named(void *userdata, const char *path, uint32_t dev, uint64_t ino) {
        return checker_scan_named(house_of(userdata), path, dev, ino);
}

static bool on_report_has_room(void *userdata, bool refill) {
        return refill ? checker_window_low(house_of(userdata)) : checker_has_room(house_of(userdata));
}

static void on_report_unmeasurable(void *userdata, const char *path, int error) {
        manager_unmeasurable(userdata, path, error);
}

static void on_report_unlisted(void *userdata, const char *path) {
        Manager *m = userdata;
        iver_check_invalidate(m->h.ctx, path);
}

static void reports_init(Manager *m) {
        m->reports = (Reports) {
                .userdata = m,
                .check = on_report_check,
                .written = on_report_written,
                .rescan = on_report_rescan,
                .dir_wanted = on_report_dir_wanted,
                .dir_files = on_report_dir_files,
                .file_wanted = on_report_file_wanted,
                .new_dir = on_report_new_dir,
                .changed_below = on_report_changed_below,
                .forget_below = on_report_forget_below,
                .settled = on_report_settled,
                .dir_entered = on_report_dir_entered,
                .file_found = on_report_file_found,
                .names_suffice = on_report_names_suffice,
                .file_named = on_report_file_named,
                .has_room = on_report_has_room,
                .unmeasurable = on_report_unmeasurable,
                .unlisted = on_report_unlisted,
        };
}

/* ---- checks ---- */

bool manager_dir_wanted(const Manager *m, const char *dir) {
        size_t len = strlen(dir);
        return iver_policy_may_match_below(m->h.gen->policy, IVER_CLASS_MEASURE, dir, len) ||
               iver_policy_may_match_below(m->h.gen->policy, IVER_CLASS_APPRAISE, dir, len);
}

/* The cache follows inodes: after a directory is moved its files would hit
 * their entries under the new name and keep the old paths for ever (the new
 * names never listed). Forget everything below the old name; the walk of the
 * new name measures the files there anew. O(cache) per moved directory. */
void manager_forget_below(Manager *m, const char *dir) {
        IverCache *cache = iver_context_cache(m->h.ctx);
        size_t dlen = strlen(dir);
        unsigned n = 0;
        char p[IVER_CACHE_PATH_MAX];
        /* backwards: a removal moves the last entry (already seen) into the hole */
        for (size_t i = iver_cache_size(cache); i-- > 0;) {
                size_t len = iver_cache_path(cache, (uint32_t) i, p, sizeof(p));
                if (len > dlen && p[dlen] == '/' && memcmp(p, dir, dlen) == 0) {
                        iver_cache_remove(cache, (uint32_t) i);
                        n++;
                }
        }
        if (n > 0)
                log_debug("Directory %s moved away: forgot %u cached files below it", dir, n);
}

void manager_unmeasurable(Manager *m, const char *path, int error) {
        if (m->h.unmeasurable++ == 0)
                log_warning_errno(error, "Cannot measure %s: %m (counted as unmeasurable in status; further ones are logged at debug level)",
                                  path);
        else
                log_debug("Cannot measure %s: %s", path, strerror(-error));
}

void manager_queue(Manager *m, const char *path) {
        int r = queue_push(m->h.queue, path);
        if (r < 0) {
                log_error_errno(r, "Cannot queue %s: %m (it will be checked at the next rescan)", path);
                return;
        }
        size_t q = queue_queued(m->h.queue);
        if (q > m->h.peak_queued)
                m->h.peak_queued = q;
        (void) sd_event_source_set_enabled(m->h.dispatch_source, SD_EVENT_ONESHOT);
}

/* ---- reload ---- */

int manager_reload(Manager *m, char **ret_error) {
        IverConf conf;
        IverPolicy *p = NULL;
        char *err = NULL, *source = NULL;
        int r;

        sd_notify(0, "RELOADING=1");
        r = settings_load_conf(&m->overrides, &conf, &err);
        if (r >= 0) {
                r = settings_load_policy(&m->overrides, &p, &source, &err);
                if (r < 0)
                        iver_conf_done(&conf);
        }
        if (r < 0) {
                log_reload(false, err ?: strerror(-r));
                if (ret_error)
                        *ret_error = err;
                else
                        free(err);
                sd_notify(0, "READY=1");
                return r;
        }
        /* settings that need a restart (socket, directories, TPM) keep their
         * running values; the rest switch now. Jobs in flight keep the
         * generation they were dispatched under; the rescan re-checks under
         * the new one. */
        IverKeyring *kr = settings_load_keyring(&conf);
        Generation *g = NULL;
        r = kr ? generation_new(m->h.gen->number + 1, p, kr, conf.hash, source, &g) : -ENOMEM;
        if (r >= 0)
                m->h.conf.rescan_interval_usec = conf.rescan_interval_usec;
        iver_conf_done(&conf);
        if (r < 0) {
                if (!kr) {
                        iver_policy_free(p);
                        free(source);
                }
                log_reload(false, strerror(-r));
                if (ret_error)
                        *ret_error = strdup(strerror(-r));
                sd_notify(0, "READY=1");
                return r;
        }
        generation_unref(m->h.gen);
        m->h.gen = g;
        fstrack_policy_changed(m->h.fstrack);
        char detail[4200];
        snprintf(detail, sizeof(detail), "%s (generation %" PRIu64 ")", m->h.gen->source ?: "", m->h.gen->number);
        log_reload(true, detail);
        (void) manager_rescan(m);
        sd_notify(0, "READY=1");
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload(userdata, NULL);
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        sd_notify(0, "STOPPING=1");
        log_info("Received %s, stopping", strsignal((int) si->ssi_signo));
        return sd_event_exit(m->event, 0);
}

/* ---- lifecycle ---- */

static void rest_list(void *userdata, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                      bool audit, const uint8_t *sig, size_t sig_len, bool use) {
        checker_rested(house_of(userdata), path, o, d, audit, sig, sig_len, use);
}

static int rest_recorded(void *userdata, const IverIdentity *id, IverCheckOutcome *ret) {
        Manager *m = userdata;
        IverCache *c = iver_context_cache(m->h.ctx);
        uint32_t idx = iver_cache_find_inode(c, id->dev, id->ino);
        if (idx == IVER_CACHE_NONE)
                return -ENOENT;
        IverEntry en;
        iver_cache_get(c, idx, &en);
        if (en.id.gen != id->gen || (en.flags & (IVER_ENTRY_MEASURED | IVER_ENTRY_UNSTABLE)) != IVER_ENTRY_MEASURED)
                return -ENOENT;
        *ret = (IverCheckOutcome) {
                .result = IVER_CHECK_MEASURED,
                .provisional = en.flags & IVER_ENTRY_PROVISIONAL,
                .digest = en.digest,
                .cookie = iver_cache_cookie(c, idx),
                .id = en.id,
                .idx = idx,
        };
        return 0;
}

static int rest_stat(void *userdata, const char *path, IverStat *ret) {
        Manager *m = userdata;
        return path_context_stat(m->h.ctx, path, ret);
}

static void rest_check(void *userdata, const char *path) {
        manager_queue(userdata, path);
}

static void rest_sync(void *userdata) {
        Manager *m = userdata;
        fstrack_sync(m->h.fstrack);
}

static void rest_changed(void *userdata) {
        Manager *m = userdata;
        (void) evidence_flush(m->h.evidence);
        manager_maybe_settled(m);
}

static json_object *control_run(void *userdata, VerbId verb, Conn *c, json_object *req) {
        return verb_run(verb, house_of(userdata), c, req);
}

static bool control_settled_now(void *userdata) {
        return manager_settled(userdata);
}

static int rest_setup(Manager *m) {
        static const RestCallbacks cb = {
                .list = rest_list,
                .recorded = rest_recorded,
                .stat = rest_stat,
                .check = rest_check,
                .sync = rest_sync,
                .changed = rest_changed,
        };
        return rest_new(m->event, &cb, m, &m->h.rest);
}

/* Every failure is logged once: here, or by the component that decided
 * (settings_* hand their message back; rundir_prepare, evidence_new,
 * control_new log theirs). `ex` is the exit status of the
 * step in progress. */
/* Configuration, policy, appraisal keys, the stats group. *ex: the exit
 * status of the step that failed. */
static int setup_settings(Manager *m, const Overrides *o, IverdExit *ex) {
        _cleanup_free_ char *err = NULL;
        *ex = IVERD_EXIT_CONFIG;
        int r = settings_load_conf(o, &m->h.conf, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to load configuration: %s", err ?: strerror(-r));
        IverPolicy *policy = NULL;
        char *source = NULL;
        r = settings_load_policy(o, &policy, &source, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to load policy: %s", err ?: strerror(-r));
        *ex = IVERD_EXIT_FAILURE;
        IverKeyring *kr = settings_load_keyring(&m->h.conf);
        r = kr ? generation_new(1, policy, kr, m->h.conf.hash, source, &m->h.gen) : -ENOMEM;
        if (r < 0) {
                if (!kr) {
                        iver_policy_free(policy);
                        free(source);
                }
                return log_error_errno(r, "Cannot set up the appraisal keys: %m");
        }
        const char *group = getenv("IVERD_STATS_GROUP");
        if (group && *group) {
                struct group *g = getgrnam(group);
                if (g)
                        m->gid_stats = g->gr_gid;
                else
                        log_warning("Stats group '%s' does not exist; only root may read stats", group);
        }
        return 0;
}

/* A signal the loop owns for its lifetime (floating: freed with the loop), named. */
static int add_signal(Manager *m, int sig, sd_event_signal_handler_t handler, const char *description) {
        sd_event_source *s = NULL;
        int r = sd_event_add_signal(m->event, &s, sig, handler, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s, description);
        r = sd_event_source_set_floating(s, true);
        sd_event_source_unref(s);
        return r;
}

/* The check context, the event loop and its signals, the directories. */
static int setup_loop(Manager *m, IverdExit *ex) {
        IverContextOptions co = {
                .version_mode = m->h.conf.version_source,
                .algo = m->h.conf.hash,
        };
        int r = iver_context_new(&co, &m->h.ctx);
        if (r < 0)
                return log_error_errno(r, "Cannot create the check context: %m");
        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        /* created if missing; refused if another user could plant files in them */
        *ex = IVERD_EXIT_DIRECTORY;
        if ((r = rundir_prepare(m->h.conf.runtime_directory, 0755, "runtime")) < 0 ||
            (r = rundir_prepare(m->h.conf.state_directory, 0700, "state")) < 0)
                return r; /* logged there */
        *ex = IVERD_EXIT_FAILURE;
        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        (void) iver_measure_prepare_signals();
        if ((r = add_signal(m, SIGTERM, on_exit_signal, "signal-term")) < 0 ||
            (r = add_signal(m, SIGINT, on_exit_signal, "signal-int")) < 0 ||
            (r = add_signal(m, SIGHUP, on_sighup, "signal-hup")) < 0)
                return log_error_errno(r, "Cannot watch signals: %m");
        return 0;
}

/* On-access reports its uses to the checker. */
static int oa_use(void *m, int fd, const char *path, bool exec, int pid, uint64_t waiter, CheckerUse *ret) {
        return checker_use(m, fd, path, exec, pid, waiter, ret);
}
static bool oa_use_cached(void *m, const IverStat *st, bool exec) {
        return checker_use_cached(m, st, exec);
}
static bool oa_version_exact(void *m, uint32_t dev) {
        return checker_version_exact(m, dev);
}
static void oa_uses_commit(void *m) {
        checker_uses_commit(m);
}
static int oa_track_fd(void *m) {
        return checker_track_fd(m);
}
static void oa_violation(void *m, const char *path, const IverPolicyDecision *d, IverHashAlgo algo, const char *what) {
        checker_violation(m, path, d, algo, what);
}
static void oa_unchecked_use(void *m, const char *path, uint32_t dev, uint64_t ino, bool exec, const char *what) {
        checker_unchecked_use(m, path, dev, ino, exec, what);
}
static bool oa_dir_measured(void *m, const char *dir) {
        return checker_dir_measured(m, dir);
}

static const OnAccessOps onaccess_ops = {
        .use = oa_use,
        .use_cached = oa_use_cached,
        .version_exact = oa_version_exact,
        .uses_commit = oa_uses_commit,
        .track_fd = oa_track_fd,
        .violation = oa_violation,
        .unchecked_use = oa_unchecked_use,
        .dir_measured = oa_dir_measured,
};

/* The queue, the hashing threads, change tracking, the walk, on-access. */
static int setup_checks(Manager *m) {
        int r = queue_new(&m->h.queue);
        if (r < 0)
                return log_error_errno(r, "Cannot create the check queue: %m");
        unsigned n = m->h.conf.workers ?: (unsigned) sysconf(_SC_NPROCESSORS_ONLN);
        r = workers_new(n, appraisal_run, &m->h.workers);
        if (r < 0)
                return log_error_errno(r, "Cannot start %u hashing threads: %m", n);
        /* small files handed to the pool at a time: enough for batched
         * hand-offs, and for the workers to go on through a time slice the
         * loop is not scheduled in (~2 ms of small files; the walk refills it
         * from half full: checker_window_low). ~180 KiB of jobs a worker:
         * 512 a worker was no faster (200,000 small files, interleaved:
         * tmpfs 3.00 / 2.97 s, cold ext4 9.81 / 9.78 s) and held 0.5 MiB
         * more at the daemon's peak; 128 was 7 % slower on tmpfs. */
        m->h.max_inflight = 256 * workers_count(m->h.workers);
        r = sd_event_add_io(m->event, &m->worker_source, workers_eventfd(m->h.workers), EPOLLIN, checker_workers_done, &m->h);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the hashing threads: %m");
        (void) sd_event_source_set_description(m->worker_source, "workers-done");
        r = sd_event_add_defer(m->event, &m->h.dispatch_source, checker_dispatch, &m->h);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the check dispatcher: %m");
        (void) sd_event_source_set_description(m->h.dispatch_source, "check-dispatch");
        (void) sd_event_source_set_enabled(m->h.dispatch_source, SD_EVENT_OFF);
        if ((r = rest_setup(m)) < 0 || (r = fstrack_new(m->event, m->h.ctx, m->h.rest, &m->reports, &m->h.fstrack)) < 0 ||
            (r = mounts_new(m->event, m->h.fstrack, &m->reports, &m->mounts)) < 0 ||
            (r = watch_new(m->event, m->h.ctx, m->h.fstrack, &m->reports, &m->h.watch)) < 0 ||
            (r = walk_new(m->event, m->h.ctx, m->h.workers, &m->reports, &m->h.walk)) < 0 ||
            (r = recheck_new(m->event, &m->reports, &m->h.recheck)) < 0 || (r = vanished_new(&m->h.vanished)) < 0)
                /* these log only what they carry on without (no fanotify, no mountinfo) */
                return log_error_errno(r, "Cannot set up change tracking and the directory walk: %m");
        if (m->h.conf.on_access != IVER_ON_ACCESS_NONE) {
                OnAccessOps ops = onaccess_ops;
                ops.userdata = &m->h; /* the checker's (oa_*) */
                r = onaccess_new(m->event, &ops, m->h.conf.on_access, iver_policy_wants_opens(m->h.gen->policy),
                                 m->h.conf.on_access_timeout_usec, &m->h.onaccess);
                if (r < 0) {
                        /* no fanotify permission events here (kernel, container, missing CAP_SYS_ADMIN) */
                        log_notice_errno(r, "On-access checks unavailable (%m): OnAccess=%s falls back to none",
                                         iver_on_access_to_string(m->h.conf.on_access));
                        m->h.conf.on_access = IVER_ON_ACCESS_NONE;
                }
        }
        return 0;
}

/* The list (and the TPM), the snapshot bound to it, a restart's gap entry,
 * then the control socket. */
static int setup_evidence(Manager *m, IverdExit *ex) {
        *ex = IVERD_EXIT_EVIDENCE;
        int r = evidence_new(m->event, &m->reports, &m->h.conf, &m->h.evidence);
        if (r < 0)
                return r; /* logged there */
        /* bound to the list just opened */
        int64_t snapshot_sec;
        r = persist_new(m->event, m->h.ctx, m->h.conf.state_directory, m->h.evidence, m->h.rest, &m->persist);
        if (r < 0)
                return log_error_errno(r, "Cannot set up snapshots: %m");
        persist_load(m->persist, &snapshot_sec);
        /* a list continued from an earlier run of this boot: the gap first */
        r = evidence_record_gap(m->h.evidence, snapshot_sec, m->h.conf.hash);
        if (r < 0)
                return r; /* logged there */
        *ex = IVERD_EXIT_DIRECTORY;
        ControlHandler h = { .userdata = m, .run = control_run, .settled = control_settled_now };
        return control_new(m->event, m->h.conf.socket_path, m->gid_stats, &h, &m->h.control); /* logged there */
}

static int house_op_rescan(void *userdata) {
        return manager_rescan(userdata);
}
static int house_op_reload(void *userdata, char **ret_error) {
        return manager_reload(userdata, ret_error);
}
static bool house_op_settled(const void *userdata) {
        return manager_settled(userdata);
}
static void house_op_scan_progress(const void *userdata, ScanProgress *ret) {
        manager_scan_progress(userdata, ret);
}

static const HouseOps house_ops = {
        .rescan = house_op_rescan,
        .reload = house_op_reload,
        .settled = house_op_settled,
        .scan_progress = house_op_scan_progress,
};

int manager_new(const Overrides *o, Manager **ret, IverdExit *ret_exit) {
        _cleanup_(manager_freep) Manager *m = NULL;
        IverdExit ex = IVERD_EXIT_FAILURE;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m) {
                r = log_error_errno(-ENOMEM, "Cannot allocate the manager: %m");
                goto fail;
        }
        m->overrides = *o;
        m->gid_stats = UINT64_MAX;
        reports_init(m);
        m->h.ops = &house_ops;
        m->h.userdata = m;
        m->h.reports = &m->reports;
        if ((r = setup_settings(m, o, &ex)) < 0 || (r = setup_loop(m, &ex)) < 0 ||
            (ex = IVERD_EXIT_FAILURE, r = setup_checks(m)) < 0 || (r = setup_evidence(m, &ex)) < 0)
                goto fail;
        *ret = TAKE_PTR(m);
        return 0;
fail:
        if (ret_exit)
                *ret_exit = ex;
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        control_free(m->h.control);
        /* uses held for measurement are allowed before anything else goes */
        m->h.onaccess = onaccess_free(m->h.onaccess);
        /* workers first: they may still be hashing paths the queue owns */
        workers_free(m->h.workers);
        persist_free(m->persist); /* a save in flight ends first: it wrote next to the list */
        evidence_free(m->h.evidence);
        recheck_free(m->h.recheck);
        vanished_free(m->h.vanished);
        rest_free(m->h.rest);
        walk_free(m->h.walk);
        watch_free(m->h.watch);
        mounts_free(m->mounts);
        fstrack_free(m->h.fstrack);
        sd_event_source_disable_unref(m->worker_source);
        sd_event_source_disable_unref(m->h.dispatch_source);
        sd_event_source_disable_unref(m->rescan_timer);
        sd_event_source_disable_unref(m->status_timer);
        queue_free(m->h.queue);
        iver_context_free(m->h.ctx);
        generation_unref(m->h.gen);
        iver_conf_done(&m->h.conf);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

int manager_start(Manager *m) {
        /* a restored snapshot tells roughly how many files the scan will see */
        m->scan_estimate = iver_cache_size(iver_context_cache(m->h.ctx));
        int r = manager_rescan(m);
        if (r < 0)
                return log_error_errno(r, "Cannot start the initial scan: %m");
        worker_health_init(&m->health, now_usec());
        r = manager_scan_timers(m);
        if (r < 0)
                return r;
        r = persist_start_timer(m->persist, SNAPSHOT_INTERVAL_USEC);
        if (r < 0)
                return log_error_errno(r, "Cannot start the snapshot timer: %m");
        /* ready: the control socket is up and the initial scan is queued */
        manager_send_status(m);
        sd_notify(0, "READY=1");
        log_info("Started: policy %s, socket %s, %u workers", m->h.gen->source, control_path(m->h.control),
                 workers_count(m->h.workers));
        return 0;
}

/* sd_event_loop(), with the on-access thread told when the loop runs a
 * callback (our code runs nowhere else: no prepare callbacks): what was
 * published after one holds until the next (onaccess-fast.c). */
static int run_loop(Manager *m) {
        sd_event *e = m->event;
        int r, code = 0;
        while (sd_event_get_state(e) != SD_EVENT_FINISHED) {
                r = sd_event_prepare(e);
                if (r == 0)
                        r = sd_event_wait(e, UINT64_MAX);
                if (r > 0) {
                        onaccess_loop_busy(m->h.onaccess);
                        r = sd_event_dispatch(e);
                        onaccess_loop_idle(m->h.onaccess);
                }
                if (r < 0)
                        return r;
        }
        return sd_event_get_exit_code(e, &code) < 0 ? 0 : code;
}

int manager_run(Manager *m) {
        int r = run_loop(m);
        onaccess_loop_busy(m->h.onaccess); /* (its thread is stopped by now) */
        (void) persist_save(m->persist);
        /* the loop ended: nothing is watched from here (the next gap's start) */
        evidence_mark_alive(m->h.evidence);
        return r;
}
