/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "iver/appraise.h"
#include "iver/conf.h"
#include "iver/policy.h"
#include "manager.h"

/* Config file (o->config, else /etc/iverd/iverd.conf if present) with the
 * command-line overrides applied. On error *ret_error says FILE:LINE:COLUMN. */
int settings_load_conf(const Overrides *o, IverConf *ret, char **ret_error);
/* The policy from o->policy or the default locations, whole or not at all. */
int settings_load_policy(const Overrides *o, IverPolicy **ret, char **ret_source, char **ret_error);
/* Appraisal keys from Keys= and Keyring=; keys that fail to load are logged
 * and skipped. NULL only on OOM. */
IverKeyring *settings_load_keyring(const IverConf *c);
