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

#include "control.h"
#include "evidence.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "onaccess.h"
#include "recheck.h"
#include "persist.h"
#include "walk.h"
#include "watch.h"

#define DISPATCH_BATCH 4096
#define SNAPSHOT_INTERVAL_USEC (60ULL * 1000000ULL)

static int on_dispatch(sd_event_source *s, void *userdata);

/* ---- configuration and policy ---- */

static int load_conf(const Overrides *o, IverConf *ret, char **ret_error) {
        IverConf c;
        IverConfError err = {};
        int r = iver_conf_init(&c);
        if (r < 0)
                return r;
        const char *path = o->config ?: IVER_CONF_FILE;
        r = iver_conf_load_file(&c, path, o->config ? 0 : IVER_CONF_LOAD_MISSING_OK, &err);
        if (r < 0) {
                if (err.message)
                        (void) iver_conf_error_format(&err, ret_error);
                else if (asprintf(ret_error, "%s: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                iver_conf_error_done(&err);
                iver_conf_done(&c);
                return r;
        }
#define OVERRIDE(field, value)                  \
        do {                                    \
                char *_v = strdup(value);       \
                if (!_v)                        \
                        goto oom;               \
                free(c.field);                  \
                c.field = _v;                   \
        } while (0)
        if (o->socket)
                OVERRIDE(socket_path, o->socket);
        if (o->runtime_dir) {
                OVERRIDE(runtime_directory, o->runtime_dir);
                if (!o->socket) {
                        free(c.socket_path);
                        if (asprintf(&c.socket_path, "%s/iverd.sock", o->runtime_dir) < 0) {
                                c.socket_path = NULL;
                                goto oom;
                        }
                }
        }
        if (o->state_dir)
                OVERRIDE(state_directory, o->state_dir);
        if (o->tpm) {
                free(c.tpm_tcti);
                c.tpm_tcti = NULL;
                if (strcmp(o->tpm, "none") != 0)
                        OVERRIDE(tpm_tcti, o->tpm);
        }
#undef OVERRIDE
        if (o->pcr != -2)
                c.pcr = o->pcr;
        if (o->version_source >= 0)
                c.version_source = o->version_source;
        if (o->workers > 0)
                c.workers = (unsigned) o->workers;
        if (o->on_access >= 0)
                c.on_access = o->on_access;
        *ret = c;
        return 0;
oom:
        iver_conf_done(&c);
        return -ENOMEM;
}

/* Appraisal keys from Keys= and Keyring=; a key that cannot be loaded is
 * reported and skipped (its files appraise as unknown-key). */
static IverKeyring *load_keyring(const IverConf *c) {
        IverKeyring *kr = NULL;
        if (iver_keyring_new(&kr) < 0)
                return NULL;
        if (c->appraise_keys) {
                char *copy = strdup(c->appraise_keys), *save = NULL;
                for (char *t = copy ? strtok_r(copy, " \t", &save) : NULL; t; t = strtok_r(NULL, " \t", &save)) {
                        int r = iver_keyring_add_pem_file(kr, t);
                        if (r < 0)
                                log_warning_errno(r, "Cannot load appraisal key %s: %m", t);
                }
                free(copy);
        }
        if (c->appraise_keyring) {
                int r = iver_keyring_add_kernel(kr, c->appraise_keyring);
                if (r < 0)
                        log_warning_errno(r, "Cannot use kernel keyring %s for appraisal: %m", c->appraise_keyring);
        }
        return kr;
}

static int load_policy(const Overrides *o, IverPolicy **ret, char **ret_source, char **ret_error) {
        IverPolicyDiags diags = {};
        IverPolicy *p = NULL;
        int r;

        if (o->policy) {
                const char *paths[] = { o->policy };
                r = iver_policy_load(paths, 1, 0, &diags, &p);
        } else
                r = iver_policy_load_default(&diags, &p);
        if (r < 0) {
                *ret_error = NULL;
                if (diags.n_items > 0)
                        (void) iver_policy_diag_format(&diags.items[0], ret_error);
                if (!*ret_error && asprintf(ret_error, "%s: %s", o->policy ?: IVER_POLICY_FILE, strerror(-r)) < 0)
                        *ret_error = NULL;
                iver_policy_diags_done(&diags);
                return r;
        }
        iver_policy_diags_done(&diags);
        *ret_source = strdup(o->policy ?: IVER_POLICY_FILE " + " IVER_POLICY_DROPIN_DIR);
        *ret = p;
        return 0;
}

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

static void handle_outcome(Manager *m, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                           const uint8_t *sig, size_t sig_len) {
        if (o->result == IVER_CHECK_MEASURED && o->provisional) {
                /* open writers: look again (close-write comes before the lease can be had) */
                log_debug("Measured %s provisionally (open writers); will re-check", path);
                recheck_add(m->recheck, path);
                return;
        }
        if (o->result != IVER_CHECK_UNSTABLE)
                recheck_remove(m->recheck, path);
        switch (o->result) {
        case IVER_CHECK_MEASURED:
                if (!d || d->action != IVER_ACTION_MEASURE)
                        break; /* appraised only */
                m->measurements++;
                log_measurement(path, o);
                if (m->evidence)
                        (void) evidence_record(m->evidence, path, o, d, sig, sig_len);
                break;
        case IVER_CHECK_UNSTABLE:
                m->violations++;
                log_violation(path, "unstable: kept changing while hashed");
                recheck_add(m->recheck, path);
                break;
        case IVER_CHECK_ERROR:
                if (o->error == -ENOENT || o->error == -ENOTDIR)
                        break; /* vanished: forgotten */
                m->errors++;
                log_warning_errno(o->error, "Cannot measure %s: %m", path);
                break;
        case IVER_CHECK_NOT_REGULAR:
                m->not_regular++;
                break;
        default:
                break;
        }
}

/* Check one path on the loop thread. Returns true when finished here (hit,
 * not measured, error), false when handed to a worker. */
static bool check_path(Manager *m, const char *path) {
        IverStat st;
        IverCheckOutcome o;
        IverPending p;
        int r = iver_context_stat(m->ctx, AT_FDCWD, path, &st);
        if (r < 0) {
                if (r == -ENOENT || r == -ENOTDIR) {
                        iver_check_forget(m->ctx, path);
                        recheck_remove(m->recheck, path);
                } else {
                        m->errors++;
                        log_warning_errno(r, "Cannot stat %s: %m", path);
                }
                return true;
        }
        if (!S_ISREG(st.mode)) {
                iver_check_forget(m->ctx, path);
                return true;
        }
        IverCookieTable *t = iver_context_cookies(m->ctx);
        (void) iver_cookie_table_source(t, st.dev, AT_FDCWD, path);
        IverFileAttr attr = {
                .fs_magic = iver_cookie_table_fs_magic(t, st.dev),
                .owner = st.uid,
                .subject_uid = IVER_UID_UNKNOWN,
                .mode = st.mode,
                .size = st.size,
        };
        IverPolicyDecision d, a;
        bool measure = iver_policy_match(m->policy, IVER_CLASS_MEASURE, path, strlen(path), &attr, &d) >= 0 &&
                       d.matched && d.action == IVER_ACTION_MEASURE;
        bool appraise = iver_policy_match(m->policy, IVER_CLASS_APPRAISE, path, strlen(path), &attr, &a) >= 0 &&
                        a.matched && a.action == IVER_ACTION_APPRAISE;
        if (!measure && !appraise) {
                iver_check_forget(m->ctx, path); /* the policy may have changed */
                return true;
        }
        /* an appraise rule's hash= names the algorithm its signatures use */
        IverHashAlgo algo = appraise && a.hash >= 0 ? a.hash : measure && d.hash >= 0 ? d.hash : m->conf.hash;
        r = iver_check_begin_stat(m->ctx, AT_FDCWD, path, &st, algo, &p, &o);
        if (r <= 0) {
                handle_outcome(m, path, &o, measure ? &d : NULL, NULL, 0);
                return true;
        }
        Job *j = calloc(1, sizeof(*j));
        if (!j) {
                m->errors++;
                return true;
        }
        j->path = path;
        j->pending = p;
        j->opt = iver_check_measure_options(m->ctx, &p);
        j->keyring = appraise ? m->keyring : NULL;
        workers_submit(m->workers, j);
        return false;
}

static int on_dispatch(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        const char *path;
        for (unsigned n = 0; n < DISPATCH_BATCH && queue_inflight(m->queue) < m->max_inflight; n++) {
                path = queue_pop(m->queue);
                if (!path)
                        break;
                if (check_path(m, path))
                        queue_done(m->queue, path);
        }
        if (queue_queued(m->queue) > 0 && queue_inflight(m->queue) < m->max_inflight)
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        manager_maybe_settled(m);
        return 0;
}

/* The appraisal verdict of a finished job: counted; anything but valid is
 * a violation (journal, audit, flag on the entry for list --violations). */
static void handle_appraisal(Manager *m, const Job *j, const IverCheckOutcome *o) {
        if (!j->keyring || o->result != IVER_CHECK_MEASURED || o->provisional)
                return;
        if (j->appraise_r == -ESTALE) {
                recheck_add(m->recheck, j->path); /* changed under us: look again */
                return;
        }
        if (j->appraise_r < 0) {
                m->errors++;
                log_warning_errno(j->appraise_r, "Cannot appraise %s: %m", j->path);
                return;
        }
        IverAppraisalResult res = j->appraisal.result;
        m->appraisals[res]++;
        IverCache *c = iver_context_cache(m->ctx);
        if (res == IVER_APPRAISAL_VALID) {
                if (o->idx != IVER_CACHE_NONE)
                        iver_cache_update_flags(c, o->idx, 0, IVER_ENTRY_VIOLATION);
                return;
        }
        m->violations++;
        if (o->idx != IVER_CACHE_NONE)
                iver_cache_update_flags(c, o->idx, IVER_ENTRY_VIOLATION, 0);
        char what[256];
        snprintf(what, sizeof(what), "appraisal %s: %s", iver_appraisal_result_to_string(res), j->appraisal.reason);
        log_violation(j->path, what);
}

static int on_workers(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        for (Job *j = workers_take_done(m->workers), *next; j; j = next) {
                next = j->next;
                IverCheckOutcome o;
                (void) iver_check_finish(m->ctx, j->path, &j->pending, j->r, &j->m, &o);
                /* the decision is re-made: the policy may have been reloaded meanwhile */
                IverPolicyDecision d = { .pcr = IVER_POLICY_PCR_UNSET, .hash = _IVER_HASH_INVALID,
                                         .template_ = _IVER_IMA_TEMPLATE_INVALID };
                IverFileAttr attr = { .owner = j->m.st.uid, .subject_uid = IVER_UID_UNKNOWN, .mode = j->m.st.mode,
                                      .size = j->m.st.size,
                                      .fs_magic = iver_cookie_table_fs_magic(iver_context_cookies(m->ctx), j->m.st.dev) };
                bool measure = iver_policy_match(m->policy, IVER_CLASS_MEASURE, j->path, strlen(j->path), &attr, &d) >= 0 &&
                               d.matched && d.action == IVER_ACTION_MEASURE;
                handle_outcome(m, j->path, &o, measure ? &d : NULL, j->sig, j->sig_len);
                handle_appraisal(m, j, &o);
                queue_done(m->queue, j->path);
                job_free(j);
        }
        (void) evidence_flush(m->evidence);
        (void) sd_event_source_set_enabled(m->dispatch_source, SD_EVENT_ONESHOT);
        manager_maybe_settled(m);
        return 0;
}

/* ---- scans, status, settle ---- */

int manager_rescan(Manager *m) {
        m->scans++;
        return walk_add(m->walk, "/");
}

bool manager_settled(const Manager *m) {
        return queue_queued(m->queue) == 0 && queue_inflight(m->queue) == 0 && !walk_busy(m->walk) &&
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
        r = load_conf(&m->overrides, &conf, &err);
        if (r >= 0) {
                r = load_policy(&m->overrides, &p, &source, &err);
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
        if (queue_inflight(m->queue) == 0) {
                /* jobs in flight point at the keyring: swap it only when none are */
                IverKeyring *kr = load_keyring(&conf);
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
        r = load_conf(o, &m->conf, &err);
        if (r < 0) {
                log_error("Failed to load configuration: %s", err ?: strerror(-r));
                free(err);
                free(m);
                return r;
        }
        r = load_policy(o, &m->policy, &m->policy_source, &err);
        if (r < 0) {
                log_error("Failed to load policy: %s", err ?: strerror(-r));
                free(err);
                goto fail;
        }
        m->keyring = load_keyring(&m->conf);
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
        r = sd_event_add_io(m->event, &m->worker_source, workers_eventfd(m->workers), EPOLLIN, on_workers, m);
        if (r < 0)
                goto fail;
        r = sd_event_add_defer(m->event, &m->dispatch_source, on_dispatch, m);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_enabled(m->dispatch_source, SD_EVENT_OFF);
        if ((r = walk_new(m, &m->walk)) < 0 || (r = watch_new(m, &m->watch)) < 0 ||
            (r = recheck_new(m, &m->recheck)) < 0)
                goto fail;
        if (m->conf.on_access != IVER_ON_ACCESS_NONE) {
                r = onaccess_new(m, m->conf.on_access, &m->onaccess);
                if (r < 0)
                        goto fail;
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
        /* workers first: they may still be hashing paths the queue owns */
        workers_free(m->workers);
        evidence_free(m->evidence);
        onaccess_free(m->onaccess);
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
