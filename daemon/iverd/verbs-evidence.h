/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>

typedef struct Manager Manager;
typedef struct Conn Conn;

/* log {"format": "binary"|…}: the list, base64 binary or ASCII lines. */
json_object *verb_log(Manager *m, Conn *c, json_object *req);
/* quote {"nonce": HEX, "banks": [...]}: NULL (answered later) or an error reply. */
json_object *verb_quote(Manager *m, Conn *c, json_object *req);
