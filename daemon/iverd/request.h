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

/* The verbs' arguments, declared once (request.c): a field's shape. */
typedef enum FieldType {
        FIELD_STRING,
        FIELD_PATH,     /* a string: an absolute path without NUL bytes */
        FIELD_PATHS,    /* an array of FIELD_PATH */
        FIELD_STRINGS,  /* an array of strings */
        FIELD_INT,
        FIELD_NUMBER,   /* an integer or a double */
        FIELD_BOOL,
} FieldType;

/* Check req's arguments against verb's schema: every field declared with
 * its type, every required field present. 0, or -EBADMSG with a message for
 * the peer in err. Checked after the access check: a peer that may not use
 * the verb learns nothing of its arguments. */
int request_check(VerbId verb, json_object *req, char *err, size_t errsz);
