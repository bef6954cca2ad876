/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Building the daemon's settings: configuration file plus command-line
 * overrides, the policy, the appraisal keys. Each is built whole, so reload
 * can swap it in or keep the running one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "settings.h"

int settings_load_conf(const Overrides *o, IverConf *ret, char **ret_error) {
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
IverKeyring *settings_load_keyring(const IverConf *c) {
        IverKeyring *kr = NULL;
        if (iver_keyring_new(&kr) < 0)
                return NULL;
        if (c->appraise_keys) {
                char *copy = strdup(c->appraise_keys), *save = NULL;
                if (!copy)
                        return iver_keyring_free(kr); /* OOM: not "no keys" */
                for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                        int r = iver_keyring_add_pem_file(kr, t);
                        if (r < 0)
                                log_warning("Cannot load appraisal key %s: %s", t, iver_file_strerror(r));
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

int settings_load_policy(const Overrides *o, IverPolicy **ret, char **ret_source, char **ret_error) {
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
        for (size_t i = 0; i < diags.n_items; i++) {
                char *msg = NULL;
                if (diags.items[i].level == IVER_DIAG_WARNING && iver_policy_diag_format(&diags.items[i], &msg) >= 0)
                        log_warning("Policy: %s", msg);
                free(msg);
        }
        iver_policy_diags_done(&diags);
        *ret_source = strdup(o->policy ?: IVER_POLICY_FILE " + " IVER_POLICY_DROPIN_DIR);
        *ret = p;
        return 0;
}

