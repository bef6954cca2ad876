/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>

#include "control.h"
#include "request.h"

#include "house.h"

/* The verbs (verbs.c, verbs-evidence.c, verbs-list.c): the manager's answers
 * to the control socket. A handler either returns a reply object (sent at
 * once) or NULL once it has answered itself (conn_reply_fd,
 * conn_reply_stream) or parked the connection. */
json_object *verb_run(VerbId v, House *m, Conn *c, json_object *req);
