/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Control request decoding. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "request.h"

typedef struct FieldSpec {
        const char *name;
        FieldType type;
        bool required;
} FieldSpec;

/* Each verb: its name, who may use it, and its arguments (NULL-terminated). */
static const struct {
        const char *name;
        VerbAccess access;
        const FieldSpec *fields;
} verbs[_VERB_MAX] = {
        [VERB_STATUS] = { "status", VERB_READ, (const FieldSpec[]) { {} } },
        [VERB_STATS] = { "stats", VERB_READ, (const FieldSpec[]) { { "top", FIELD_INT, false }, {} } },
        [VERB_LIST] = { "list", VERB_READ,
                        (const FieldSpec[]) { { "prefix", FIELD_STRING, false }, { "violations", FIELD_BOOL, false }, {} } },
        [VERB_LOG] = { "log", VERB_READ, (const FieldSpec[]) { {} } },
        [VERB_SETTLE] = { "settle", VERB_READ, (const FieldSpec[]) { { "timeout", FIELD_NUMBER, false }, {} } },
        [VERB_REMEASURE] = { "remeasure", VERB_ROOT, (const FieldSpec[]) { { "paths", FIELD_PATHS, true }, {} } },
        [VERB_RESCAN] = { "rescan", VERB_ROOT, (const FieldSpec[]) { {} } },
        [VERB_RELOAD] = { "reload", VERB_ROOT, (const FieldSpec[]) { {} } },
        [VERB_QUOTE] = { "quote", VERB_ROOT,
                         (const FieldSpec[]) { { "nonce", FIELD_STRING, true }, { "banks", FIELD_STRINGS, false }, {} } },
        /* root only: it stats any path as root (inode, size, timestamps, existence) */
        [VERB_EXPLAIN] = { "explain", VERB_ROOT, (const FieldSpec[]) { { "path", FIELD_PATH, true }, {} } },
};

static const char *const field_type_names[] = {
        [FIELD_STRING] = "a string",
        [FIELD_PATH] = "an absolute path without NUL bytes",
        [FIELD_PATHS] = "an array of absolute paths without NUL bytes",
        [FIELD_STRINGS] = "an array of strings",
        [FIELD_INT] = "an integer",
        [FIELD_NUMBER] = "a number",
        [FIELD_BOOL] = "true or false",
};

static bool is_path(json_object *v) {
        return json_object_is_type(v, json_type_string) && json_object_get_string(v)[0] == '/' &&
               strlen(json_object_get_string(v)) == (size_t) json_object_get_string_len(v);
}

static bool field_ok(FieldType t, json_object *v) {
        switch (t) {
        case FIELD_STRING:
                return json_object_is_type(v, json_type_string);
        case FIELD_PATH:
                return is_path(v);
        case FIELD_PATHS:
        case FIELD_STRINGS:
                if (!json_object_is_type(v, json_type_array))
                        return false;
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        json_object *e = json_object_array_get_idx(v, i);
                        if (t == FIELD_PATHS ? !is_path(e) : !json_object_is_type(e, json_type_string))
                                return false;
                }
                return true;
        case FIELD_INT:
                return json_object_is_type(v, json_type_int);
        case FIELD_NUMBER:
                return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
        case FIELD_BOOL:
                return json_object_is_type(v, json_type_boolean);
        }
        return false;
}

int request_check(VerbId verb, json_object *req, char *err, size_t errsz) {
        const FieldSpec *fields = verbs[verb].fields;
        json_object_object_foreach(req, key, val) {
                if (strcmp(key, "verb") == 0)
                        continue;
                const FieldSpec *f = fields;
                while (f->name && strcmp(f->name, key) != 0)
                        f++;
                if (!f->name) {
                        snprintf(err, errsz, "'%s' takes no \"%.64s\"", verbs[verb].name, key);
                        return -EBADMSG;
                }
                if (!field_ok(f->type, val)) {
                        snprintf(err, errsz, "'%s': \"%s\" must be %s", verbs[verb].name, f->name,
                                 field_type_names[f->type]);
                        return -EBADMSG;
                }
        }
        for (const FieldSpec *f = fields; f->name; f++)
                if (f->required && !json_object_object_get_ex(req, f->name, NULL)) {
                        snprintf(err, errsz, "'%s' needs \"%s\": %s", verbs[verb].name, f->name,
                                 field_type_names[f->type]);
                        return -EBADMSG;
                }
        return 0;
}

const char *verb_name(VerbId v) {
        return v >= 0 && v < _VERB_MAX ? verbs[v].name : NULL;
}

VerbAccess verb_access(VerbId v) {
        return v >= 0 && v < _VERB_MAX ? verbs[v].access : VERB_ROOT;
}

int request_parse(const char *line, size_t len, json_object **ret_request, VerbId *ret_verb, const char **ret_error) {
        if (len > REQUEST_MAX) {
                *ret_error = "request too large";
                return -EBADMSG;
        }
        if (memchr(line, 0, len)) {
                *ret_error = "malformed request: NUL byte";
                return -EBADMSG;
        }
        json_tokener *tok = json_tokener_new_ex(32);
        if (!tok) {
                *ret_error = "out of memory";
                return -ENOMEM;
        }
        json_object *req = json_tokener_parse_ex(tok, line, (int) len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        /* trailing bytes after the object are not allowed either */
        size_t used = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!req || jerr != json_tokener_success || used != len || !json_object_is_type(req, json_type_object)) {
                json_object_put(req);
                *ret_error = "malformed request: expected one JSON object with a \"verb\" string";
                return -EBADMSG;
        }
        json_object *v;
        if (!json_object_object_get_ex(req, "verb", &v) || !json_object_is_type(v, json_type_string)) {
                json_object_put(req);
                *ret_error = "malformed request: no \"verb\" string";
                return -EBADMSG;
        }
        const char *name = json_object_get_string(v);
        for (int i = 0; i < _VERB_MAX; i++)
                if (strcmp(name, verbs[i].name) == 0) {
                        *ret_request = req;
                        *ret_verb = (VerbId) i;
                        return 0;
                }
        json_object_put(req);
        *ret_error = "unknown verb";
        return -ENOENT;
}
