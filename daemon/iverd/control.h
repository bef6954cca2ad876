/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "request.h"

#include <systemd/sd-event.h>

typedef struct Control Control;
typedef struct Conn Conn;

/* What the control socket reports up to its owner (the manager). */
typedef struct ControlHandler {
        void *userdata;
        /* run verb for c's peer (its access already checked, its arguments
         * checked against the verb's schema): a reply (sent at once), or NULL
         * once it has answered itself or parked the connection */
        json_object *(*run)(void *userdata, VerbId verb, Conn *c, json_object *req);
        /* whether settle waiters may be answered now */
        bool (*settled)(void *userdata);
} ControlHandler;

/* The control socket: a unix stream socket (from socket activation or our
 * own), one JSON request a line, one JSON reply a line, then close. A reply
 * may carry a file descriptor (SCM_RIGHTS: the measurement list, read-only)
 * or be streamed (a long listing, made as the peer reads it). Peer
 * credentials are read at accept and checked for every verb. Requests over
 * 64 KiB, malformed JSON or silence for 10 s get an error or a close, never
 * a crash or a stuck loop. Connections are capped per uid and in all, and
 * fds are kept in reserve for measurement (control.c). */
int control_new(sd_event *event, const char *path, uint64_t gid_stats, const ControlHandler *h, Control **ret);
Control *control_free(Control *c);
const char *control_path(const Control *c);
/* Connections open now, refused (caps, fd reserve) since start, and
 * requests refused (a verb the peer may not use) since start. */
void control_counters(const Control *c, unsigned *ret_open, uint64_t *ret_refused, uint64_t *ret_requests_refused);
/* Answer settle waiters whose condition now holds. */
void control_settled(Control *c);

/* For verbs: the peer, and replying later (settle). */
const struct ucred *conn_peer(const Conn *c);
void conn_reply(Conn *c, json_object *reply);   /* takes ownership; closes after sending */
/* The same, with fd passed along (SCM_RIGHTS, with the reply's first byte);
 * takes ownership of fd. */
void conn_reply_fd(Conn *c, json_object *reply, int fd);
/* A reply made as it is sent: fill writes up to cap bytes of it into buf and
 * returns how many, 0 at its end (the reply's last byte is its '\n'), or -1 to
 * cut it short. Called only when the peer has taken the last chunk, so a
 * reply of any size costs one chunk; a peer that takes nothing for 10 s is
 * dropped. free_state (may be NULL) runs when the connection ends. */
typedef ssize_t (*ConnFill)(void *state, char *buf, size_t cap);
void conn_reply_stream(Conn *c, ConnFill fill, void *state, void (*free_state)(void *state));
/* Park the connection until settled or timeout_usec passes. */
int conn_wait_settled(Conn *c, uint64_t timeout_usec);
/* Park the connection for a reply a verb sends later with conn_reply(): its
 * id (0 on failure) finds it again with control_parked(), NULL once the peer
 * hung up or timeout_usec passed (then it got {"error":"timeout"}). */
uint64_t conn_park(Conn *c, uint64_t timeout_usec);
Conn *control_parked(Control *ctl, uint64_t id);

json_object *reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
