/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The verbs' handlers outside verbs.c, and what they share. */
#pragma once
#include <json-c/json.h>

typedef struct House House;
typedef struct Conn Conn;

static inline json_object *ok_reply(void) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "ok", json_object_new_boolean(1));
        return o;
}

/* verbs-evidence.c. log: {"list_bytes", "list_entries"} with a read-only fd
 * on the binary list (SCM_RIGHTS); NULL once answered, or an error reply. */
json_object *verb_log(House *m, Conn *c, json_object *req);
/* o with the list's "list_bytes" and "list_entries", *ret_fd a read-only fd
 * on the served list (whole records up to list_bytes); an error reply (o
 * freed, *ret_fd -1) when the list cannot be opened. */
json_object *verb_list_reply(House *m, json_object *o, int *ret_fd);
/* quote {"nonce": HEX, "banks": [...]}: NULL (answered later, with the
 * list's fd as log) or an error reply. */
json_object *verb_quote(House *m, Conn *c, json_object *req);
/* verbs-list.c. list {"prefix", "violations"}: the cache, streamed (NULL). */
json_object *verb_list(House *m, Conn *c, json_object *req);
