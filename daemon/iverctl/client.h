/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

/* The control socket path: --socket, else $IVERD_SOCKET, else the default. */
extern const char *arg_socket;

/* Send one request, wait for the reply (timeout_sec 0: 30 s). Returns 0 and
 * the parsed reply, or an IverctlExit after printing why. A reply with
 * "ok": false is printed and turned into IVERCTL_EXIT_DAEMON. */
int call(json_object *req, double timeout_sec, json_object **ret);
/* Decode the base64 the daemon sends binary data in; *ret is malloc'd. */
int base64_decode(const char *in, uint8_t **ret, size_t *ret_len);
/* Convenience: {"verb": verb}. */
json_object *request(const char *verb);
