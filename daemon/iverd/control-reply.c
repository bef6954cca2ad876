/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replies on the control socket: written without blocking the loop (whole,
 * with an fd passed along, or streamed a chunk at a time), parked
 * connections answered later (settle, quote), and the timer that drops a
 * peer that does not read. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control-internal.h"

/* A streamed reply is made STREAM_CHUNK bytes at a time, when the peer has
 * read the last chunk: its cost is one chunk, whatever the cache or list holds. */
#define STREAM_CHUNK (64U * 1024U)
#define STREAM_CHUNKS_PER_WAKEUP 2U

json_object *reply_error(const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "ok", json_object_new_boolean(0));
        json_object_object_add(o, "error", json_object_new_string(msg));
        return o;
}

/* The first send carries out_fd, if there is one. */
static ssize_t conn_send(Conn *c) {
        const void *p = c->out + c->out_off;
        size_t len = c->out_len - c->out_off;
        if (c->out_fd < 0)
                return send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int))];
        } ctl = {};
        struct iovec iov = { .iov_base = (void *) p, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &c->out_fd, sizeof(int));
        ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
                close(c->out_fd);
                c->out_fd = -1;
        }
        return n;
}

static int on_conn_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        bool progress = false;
        for (unsigned chunks = 0;; chunks++) {
                if (c->out_off == c->out_len) {
                        if (c->fill && chunks >= STREAM_CHUNKS_PER_WAKEUP) {
                                /* the socket may take more, but other events go first */
                                if (c->timer)
                                        (void) sd_event_source_set_time_relative(c->timer, REQUEST_TIMEOUT_USEC);
                                return 0;
                        }
                        ssize_t k = c->fill ? c->fill(c->fill_state, c->out, STREAM_CHUNK) : 0;
                        if (k <= 0)
                                break; /* done, or the stream failed: the peer sees a cut reply */
                        c->out_len = (size_t) k;
                        c->out_off = 0;
                }
                ssize_t n = conn_send(c);
                if (n < 0) {
                        if (errno == EAGAIN) {
                                /* a peer that reads is not dropped as silent */
                                if (progress && c->timer)
                                        (void) sd_event_source_set_time_relative(c->timer, REQUEST_TIMEOUT_USEC);
                                return 0;
                        }
                        break; /* peer gone */
                }
                progress = true;
                c->out_off += (size_t) n;
        }
        conn_free(c);
        return 0;
}

static void conn_send_later(Conn *c) {
        c->waiting = false;
        sd_event_source_disable_unref(c->io);
        c->io = NULL;
        /* the reply goes out without blocking the loop; a peer that does not
         * read is dropped by the timer */
        if (sd_event_add_io(c->control->event, &c->io, c->fd, EPOLLOUT, on_conn_writable, c) < 0) {
                conn_free(c);
                return;
        }
        (void) sd_event_source_set_description(c->io, "control-conn-reply");
}

void conn_reply(Conn *c, json_object *reply) {
        const char *s = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
        size_t len = strlen(s);
        c->out = malloc(len + 1);
        if (!c->out) {
                json_object_put(reply);
                conn_free(c);
                return;
        }
        memcpy(c->out, s, len);
        c->out[len] = '\n';
        c->out_len = len + 1;
        json_object_put(reply);
        conn_send_later(c);
}

void conn_reply_fd(Conn *c, json_object *reply, int fd) {
        c->out_fd = fd;
        conn_reply(c, reply);
}

void conn_reply_stream(Conn *c, ConnFill fill, void *state, void (*free_state)(void *state)) {
        c->fill = fill;
        c->fill_state = state;
        c->fill_free = free_state;
        c->out = malloc(STREAM_CHUNK);
        if (!c->out) {
                conn_free(c);
                return;
        }
        conn_send_later(c);
}

int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Conn *c = userdata;
        if (c->waiting) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "ok", json_object_new_boolean(0));
                json_object_object_add(o, "error", json_object_new_string("timeout"));
                if (c->settle)
                        json_object_object_add(o, "settled", json_object_new_boolean(0));
                sd_event_source_disable_unref(c->timer);
                c->timer = NULL;
                conn_reply(c, o);
                return 0;
        }
        conn_free(c); /* slow or silent peer */
        return 0;
}

uint64_t conn_park(Conn *c, uint64_t timeout_usec) {
        c->waiting = true;
        c->id = ++c->control->next_id;
        sd_event_source_disable_unref(c->timer);
        c->timer = NULL;
        if (sd_event_add_time_relative(c->control->event, &c->timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                       on_conn_timeout, c) < 0)
                return 0;
        (void) sd_event_source_set_description(c->timer, "control-conn-parked");
        return c->id;
}

Conn *control_parked(Control *ctl, uint64_t id) {
        for (Conn *c = ctl ? ctl->conns : NULL; c; c = c->next)
                if (c->waiting && c->id == id)
                        return c;
        return NULL;
}

int conn_wait_settled(Conn *c, uint64_t timeout_usec) {
        c->settle = true;
        return conn_park(c, timeout_usec) ? 0 : -ENOMEM;
}

void control_settled(Control *ctl) {
        if (!ctl || !ctl->handler.settled(ctl->handler.userdata))
                return;
        for (Conn *c = ctl->conns, *next; c; c = next) {
                next = c->next;
                if (!c->waiting || !c->settle)
                        continue;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "ok", json_object_new_boolean(1));
                json_object_object_add(o, "settled", json_object_new_boolean(1));
                sd_event_source_disable_unref(c->timer);
                c->timer = NULL;
                conn_reply(c, o);
        }
}
