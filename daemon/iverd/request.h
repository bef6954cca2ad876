/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stddef.h>

/* The control protocol's request decoder: one JSON object a line,
 * {"verb": NAME, …arguments}. Pure (no daemon state), so it can be fuzzed. */

typedef enum VerbId {
        VERB_STATUS,
        VERB_STATS,
        VERB_LIST,
        VERB_LOG,
        VERB_SETTLE,
        VERB_REMEASURE,
        VERB_RESCAN,
        VERB_RELOAD,
        VERB_QUOTE,
        VERB_EXPLAIN,
        _VERB_MAX,
        _VERB_INVALID = -22,
} VerbId;

typedef enum VerbAccess {
        VERB_READ,   /* root and the stats group */
        VERB_ROOT,   /* root only */
} VerbAccess;

#define REQUEST_MAX (64 * 1024)

const char *verb_name(VerbId v);
VerbAccess verb_access(VerbId v);

/* Decode one request line (without its '\n'). On success *ret_request is
 * the object (caller puts it) and *ret_verb the verb; on failure
 * *ret_error is a message for the peer (static string) and -EBADMSG or
 * -ENOENT (unknown verb) is returned. */
int request_parse(const char *line, size_t len, json_object **ret_request, VerbId *ret_verb, const char **ret_error);
