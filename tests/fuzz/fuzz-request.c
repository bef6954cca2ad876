/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the control protocol's request decoder
 * (daemon/iverd/request.c: request_parse), which sees bytes from any
 * client allowed to connect to the control socket. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* the daemon hands over a line without its '\n', not NUL-terminated:
         * copy into an exact-size buffer so ASan sees any over-read */
        char *line = malloc(size ? size : 1);
        if (!line)
                return 0;
        memcpy(line, data, size);
        json_object *req = NULL;
        VerbId verb = _VERB_INVALID;
        const char *err = NULL;
        int r = request_parse(line, size, &req, &verb, &err);
        if (r == 0) {
                if (!req || verb < 0 || verb >= _VERB_MAX || !verb_name(verb))
                        abort();
                (void) verb_access(verb);
                /* every verb's arguments against its schema */
                char why[256];
                why[0] = 0;
                if (request_check(verb, req, why, sizeof(why)) < 0 && !why[0])
                        abort();
                /* what the verbs do with their arguments: read and print them */
                json_object_object_foreach(req, key, val) {
                        (void) key;
                        (void) json_object_get_string(val);
                        (void) json_object_get_int64(val);
                        (void) json_object_get_boolean(val);
                }
                (void) json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
                json_object_put(req);
        } else {
                if (!err || (r != -EBADMSG && r != -ENOENT && r != -ENOMEM))
                        abort();
        }
        free(line);
        return 0;
}
