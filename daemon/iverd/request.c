/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Control request decoding. */
#include <errno.h>
#include <string.h>

#include "request.h"

static const struct {
        const char *name;
        VerbAccess access;
} verbs[_VERB_MAX] = {
        [VERB_STATUS] = { "status", VERB_READ },
        [VERB_STATS] = { "stats", VERB_READ },
        [VERB_LIST] = { "list", VERB_READ },
        [VERB_LOG] = { "log", VERB_READ },
        [VERB_SETTLE] = { "settle", VERB_READ },
        [VERB_REMEASURE] = { "remeasure", VERB_ROOT },
        [VERB_RESCAN] = { "rescan", VERB_ROOT },
        [VERB_RELOAD] = { "reload", VERB_ROOT },
        [VERB_QUOTE] = { "quote", VERB_ROOT },
        /* root only: it stats any path as root (inode, size, timestamps, existence) */
        [VERB_EXPLAIN] = { "explain", VERB_ROOT },
};

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
