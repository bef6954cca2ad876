/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "iver/appraise.h"
#include "conf.h"
#include <stdbool.h>

#include "iver/policy.h"

/* Command-line settings that override the config file (NULL / -1: not given). */
typedef struct Overrides {
        const char *config;
        const char *policy;
        const char *socket;
        const char *runtime_dir;
        const char *state_dir;
        const char *tpm;
        int pcr;
        int version_source;
        int workers;
        int on_access;
        bool verbose;
} Overrides;

/* Config file (o->config, else IVER_CONF_FILE — iverd.conf under the
 * sysconfdir iverd was built for — if present) with the command-line
 * overrides applied. Does not log: on error *ret_error (malloc'ed, may be NULL on OOM) says
 * FILE:LINE:COLUMN and what is wrong. */
int settings_load_conf(const Overrides *o, IverConf *ret, char **ret_error);
/* The policy from o->policy or the default locations, whole or not at all.
 * Errors as for settings_load_conf(); warnings about the policy are logged. */
int settings_load_policy(const Overrides *o, IverPolicy **ret, char **ret_source, char **ret_error);
/* Appraisal keys from Keys= and Keyring=; keys that fail to load are logged
 * and skipped. NULL only on OOM. */
IverKeyring *settings_load_keyring(const IverConf *c);
