/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>

/* The control socket path: --socket, else $IVERD_SOCKET, else the default. */
extern const char *arg_socket;

/* Send one request, wait for the reply (timeout_sec 0: 30 s). Returns 0 and
 * the parsed reply, or an IverctlExit after printing why. A reply with
 * "ok": false is printed and turned into IVERCTL_EXIT_DAEMON. */
int call(json_object *req, double timeout_sec, json_object **ret);
/* Convenience: {"verb": verb}. */
json_object *request(const char *verb);
