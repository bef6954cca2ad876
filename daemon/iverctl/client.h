/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The control socket path: --socket, else $IVERD_SOCKET, else the default. */
extern const char *arg_socket;

/* Send one request, wait for the reply (timeout_sec 0: 30 s). Returns 0 and
 * the parsed reply, or an IverctlExit after printing why. A reply with
 * "ok": false is printed and turned into IVERCTL_EXIT_DAEMON. req NULL (a
 * request that could not be built) is out of memory: IVERCTL_EXIT_FAILURE. */
int call(json_object *req, double timeout_sec, json_object **ret);
/* The same for a reply that carries a file descriptor (log, quote): *ret_fd
 * is the caller's; a reply without one is IVERCTL_EXIT_DAEMON. */
int call_fd(json_object *req, double timeout_sec, json_object **ret, int *ret_fd);
/* The list's length in a reply that passed it (log, quote): "list_bytes".
 * 0, or an IverctlExit after printing why. */
int reply_list_bytes(json_object *r, const char *who, uint64_t *ret);
/* The measurement list a reply passed (log, quote): the first "list_bytes"
 * bytes of fd in a new buffer. 0, or an IverctlExit after printing why. */
int reply_list(json_object *r, int fd, const char *who, uint8_t **ret, size_t *ret_len);
/* Decode the base64 the daemon sends binary data in; *ret is malloc'd. */
int base64_decode(const char *in, uint8_t **ret, size_t *ret_len);
/* Convenience: {"verb": verb}; NULL when out of memory (call() says so). */
json_object *request(const char *verb);

/* Out of memory: print so once and return the exit status (IVERCTL_EXIT_FAILURE). */
int oom(void);
/* Building JSON that we own: add value under key to *obj / append it to the
 * array *arr, taking ownership of value. If value is NULL (its allocation
 * failed), *obj is NULL (an earlier step failed) or the add fails, value and
 * *obj are put and *obj becomes NULL, so a chain of adds needs one check at
 * its end (or none before call()). Not for containers borrowed from another
 * object. Returns false on failure. */
bool json_add(json_object **obj, const char *key, json_object *value);
bool json_append(json_object **arr, json_object *value);
