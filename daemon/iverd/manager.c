/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The manager: owns the event loop, the cache (through the context), the
 * policy, the queue and the worker pool. Only this thread touches them. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "checker.h"
#include "control.h"
#include "evidence.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "onaccess.h"
#include "persist.h"
#include "recheck.h"
#include "settings.h"
#include "walk.h"
#include "watch.h"

#define SNAPSHOT_INTERVAL_USEC (60ULL * 1000000ULL)

/* ---- checks ---- */

bool manager_dir_wanted(const Manager *m, const char *dir) {
        size_t len = strlen(dir);
        return iver_policy_may_match_below(m->policy, IVER_CLASS_MEASURE, dir, len) ||
               iver_policy_may_match_below(m->policy, IVER_CLASS_APPRAISE, dir, len);
}

/* The cache follows inodes: after a directory is moved its files would hit
 * their entries under the new name and keep the old paths for ever (the new
 * names never listed). Forget everything below the old name; the walk of the
 * new name measures the files there anew. O(cache) per moved directory. */
void manager_forget_below(Manager *m, const char *dir) {
        IverCache *cache = iver_context_cache(m->ctx);
        size_t dlen = strlen(dir);
        unsigned n = 0;
        /* backwards: a removal moves the last entry (already seen) into the hole */
        for (size_t i = iver_cache_size(cache); i-- > 0;) {
                size_t len;
                const char *p = iver_cache_path(cache, (uint32_t) i, &len);
                if (len > dlen && p[dlen] == '/' && memcmp(p, dir, dlen) == 0) {
                        iver_cache_remove(cache, (uint32_t) i);
                        n++;
                }
        }
        if (n > 0)
                log_debug("Directory %s moved away: forgot %u cached files below it", dir, n);
}

void manager_queue(Manager *m, const char *path) {
        int r = queue_push(m->queue, path);
        if (r < 0) {
                log_error_errno(r, "Cannot queue %s: %m (it will be checked at the next rescan)", path);
                return;
        }
        size_t q = queue_queued(m->queue);
        if (q > m->peak_queued)
                m->peak_queued = q;
        (void) sd_event_source_set_enabled(m->dispatch_source, SD_EVENT_ONESHOT);
}

/* ---- scans, status, settle ---- */

int manager_rescan(Manager *m) {
        m->scans++;
        /* mark and sweep: what this scan does not see again was deleted while
         * no event told us (rescan-only directories, lost events) */
        iver_cache_clear_marks(iver_context_cache(m->ctx));
        m->sweep_pending = true;
        return walk_add(m->walk, "/");
}

/* After a full scan settled: check every cached path the scan did not see;
 * a deleted file's check fails with ENOENT and drops it. */
static void sweep(Manager *m) {
        IverCache *c = iver_context_cache(m->ctx);
        size_t n = 0;
        m->sweep_pending = false;
        for (uint32_t i = 0; i < iver_cache_size(c); i++)
                if (!iver_cache_has_mark(c, i)) {
                        manager_queue(m, iver_cache_path(c, i, NULL));
                        n++;
                }
        if (n > 0)
                log_debug("Scan did not see %zu cached files: checking them", n);
}

bool manager_settled(const Manager *m) {
        return queue_queued(m->queue) == 0 && queue_inflight(m->queue) == 0 && checker_use_jobs() == 0 && !walk_busy(m->walk) &&
               !recheck_pending_soon(m->recheck) && !(m->evidence && evidence_pending(m->evidence));
}

static void send_status(Manager *m) {
        uint64_t seen = walk_files_seen(m->walk);
        if (!m->initial_scan_done) {
                if (m->scan_estimate)
                        sd_notifyf(0, "STATUS=Initial scan: scanned %'llu / ~%'llu files, %zu queued",
                                   (unsigned long long) seen, (unsigned long long) m->scan_estimate,
                                   queue_queued(m->queue));
                else
                        sd_notifyf(0, "STATUS=Initial scan: scanned %llu files, %zu queued", (unsigned long long) seen,
                                   queue_queued(m->queue));
        } else
                sd_notifyf(0, "STATUS=Watching %u directories, %zu files cached, %llu measurements",
                           watch_count(m->watch), iver_cache_size(iver_context_cache(m->ctx)),
                           (unsigned long long) m->measurements);
}

void manager_maybe_settled(Manager *m) {
        if (!manager_settled(m))
                return;
        if (m->sweep_pending) {
                sweep(m);
                if (!manager_settled(m))
                        return;
        }
        if (!m->initial_scan_done) {
                m->initial_scan_done = true;
                m->scan_estimate = walk_files_seen(m->walk);
                log_info("Initial scan done: %llu files seen, %zu cached", (unsigned long long) m->scan_estimate,
                         iver_cache_size(iver_context_cache(m->ctx)));
                send_status(m);
        }
        control_settled(m->control);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        send_status(m);
        uint64_t wd = 0;
        if (sd_watchdog_enabled(0, &wd) > 0)
                sd_notify(0, "WATCHDOG=1");
        (void) sd_event_source_set_time_relative(s, 1000000);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        (void) manager_rescan(m);
        (void) sd_event_source_set_time_relative(s, m->conf.rescan_interval_usec);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
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
         * running values; the rest switch now */
        m->conf.hash = conf.hash;
        m->conf.rescan_interval_usec = conf.rescan_interval_usec;
        if (queue_inflight(m->queue) == 0 && checker_use_jobs() == 0) {
                /* jobs in flight point at the keyring: swap it only when none are */
                IverKeyring *kr = settings_load_keyring(&conf);
                if (kr) {
                        iver_keyring_free(m->keyring);
                        m->keyring = kr;
                }
        } else
                log_notice("Appraisal keys not reloaded while files are being hashed; reload again to pick them up");
        iver_conf_done(&conf);
        iver_policy_free(m->policy);
        m->policy = p;
        free(m->policy_source);
        m->policy_source = source;
        log_reload(true, m->policy_source ?: "");
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

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int manager_new(const Overrides *o, Manager **ret) {
        Manager *m = calloc(1, sizeof(*m));
        char *err = NULL;
        int r;

        if (!m)
                return -ENOMEM;
        m->overrides = *o;
        m->gid_stats = UINT64_MAX;
        r = settings_load_conf(o, &m->conf, &err);
        if (r < 0) {
                log_error("Failed to load configuration: %s", err ?: strerror(-r));
                free(err);
                free(m);
                return r;
        }
        r = settings_load_policy(o, &m->policy, &m->policy_source, &err);
        if (r < 0) {
                log_error("Failed to load policy: %s", err ?: strerror(-r));
                free(err);
                goto fail;
        }
        m->keyring = settings_load_keyring(&m->conf);
        if (!m->keyring) {
                r = -ENOMEM;
                goto fail;
        }
        const char *group = getenv("IVERD_STATS_GROUP");
        if (group && *group) {
                struct group *g = getgrnam(group);
                if (g)
                        m->gid_stats = g->gr_gid;
                else
                        log_warning("Stats group '%s' does not exist; only root may read stats", group);
        }

        IverContextOptions co = {
                .version_mode = m->conf.version_source,
                .algo = m->conf.hash,
        };
        r = iver_context_new(&co, &m->ctx);
        if (r < 0)
                goto fail;
        r = sd_event_default(&m->event);
        if (r < 0)
                goto fail;
        persist_load(m);
        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        (void) iver_measure_prepare_signals();
        if ((r = sd_event_add_signal(m->event, NULL, SIGTERM, on_exit_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGINT, on_exit_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m)) < 0)
                goto fail;

        r = queue_new(&m->queue);
        if (r < 0)
                goto fail;
        unsigned n = m->conf.workers ?: (unsigned) sysconf(_SC_NPROCESSORS_ONLN);
        r = workers_new(n, &m->workers);
        if (r < 0)
                goto fail;
        m->max_inflight = 2 * workers_count(m->workers);
        r = sd_event_add_io(m->event, &m->worker_source, workers_eventfd(m->workers), EPOLLIN, checker_workers_done, m);
        if (r < 0)
                goto fail;
        r = sd_event_add_defer(m->event, &m->dispatch_source, checker_dispatch, m);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_enabled(m->dispatch_source, SD_EVENT_OFF);
        if ((r = walk_new(m, &m->walk)) < 0 || (r = watch_new(m, &m->watch)) < 0 ||
            (r = recheck_new(m, &m->recheck)) < 0)
                goto fail;
        if (m->conf.on_access != IVER_ON_ACCESS_NONE) {
                r = onaccess_new(m, m->conf.on_access, m->conf.on_access_timeout_usec, &m->onaccess);
                if (r < 0) {
                        /* no fanotify permission events here (kernel, container, missing CAP_SYS_ADMIN) */
                        log_notice_errno(r, "On-access checks unavailable (%m): OnAccess=%s falls back to none",
                                         iver_on_access_to_string(m->conf.on_access));
                        m->conf.on_access = IVER_ON_ACCESS_NONE;
                }
        }

        r = mkdir_p(m->conf.runtime_directory, 0755);
        if (r < 0) {
                log_error_errno(r, "Cannot create runtime directory %s: %m", m->conf.runtime_directory);
                goto fail;
        }
        r = evidence_new(m, &m->conf, &m->evidence);
        if (r < 0)
                goto fail;
        r = control_new(m, m->conf.socket_path, &m->control);
        if (r < 0)
                goto fail;
        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        control_free(m->control);
        /* uses held for measurement are allowed before anything else goes */
        m->onaccess = onaccess_free(m->onaccess);
        /* workers first: they may still be hashing paths the queue owns */
        workers_free(m->workers);
        evidence_free(m->evidence);
        recheck_free(m->recheck);
        walk_free(m->walk);
        watch_free(m->watch);
        sd_event_source_disable_unref(m->worker_source);
        sd_event_source_disable_unref(m->dispatch_source);
        sd_event_source_disable_unref(m->rescan_timer);
        sd_event_source_disable_unref(m->status_timer);
        sd_event_source_disable_unref(m->snapshot_timer);
        queue_free(m->queue);
        iver_context_free(m->ctx);
        iver_policy_free(m->policy);
        free(m->policy_source);
        iver_keyring_free(m->keyring);
        iver_conf_done(&m->conf);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

int manager_start(Manager *m) {
        /* a restored snapshot tells roughly how many files the scan will see */
        m->scan_estimate = iver_cache_size(iver_context_cache(m->ctx));
        int r = manager_rescan(m);
        if (r < 0)
                return log_error_errno(r, "Cannot start the initial scan: %m");
        r = sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC, 1000000, 0, on_status_timer, m);
        if (r < 0)
                return r;
        if (m->conf.rescan_interval_usec > 0) {
                r = sd_event_add_time_relative(m->event, &m->rescan_timer, CLOCK_MONOTONIC,
                                               m->conf.rescan_interval_usec, 0, on_rescan_timer, m);
                if (r < 0)
                        return r;
        }
        r = persist_start_timer(m, SNAPSHOT_INTERVAL_USEC);
        if (r < 0)
                return r;
        /* ready: the control socket is up and the initial scan is queued */
        send_status(m);
        sd_notify(0, "READY=1");
        log_info("Started: policy %s, socket %s, %u workers", m->policy_source, control_path(m->control),
                 workers_count(m->workers));
        return 0;
}

int manager_run(Manager *m) {
        int r = sd_event_loop(m->event);
        (void) persist_save(m);
        return r;
}
