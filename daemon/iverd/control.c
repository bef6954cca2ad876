/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Control socket mechanics: accept, read one bounded request, check the
 * peer, dispatch, reply, close. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "control.h"
#include "log.h"
#include "macro.h"
#include "manager.h"

#define REQUEST_TIMEOUT_USEC (10ULL * 1000000ULL)

struct Conn {
        Conn *next, *prev;
        Control *control;
        int fd;
        struct ucred peer;
        gid_t groups[64];       /* SO_PEERGROUPS: supplementary groups count for the stats group */
        int n_groups;
        sd_event_source *io, *timer;
        char *buf;
        size_t len;
        bool waiting;           /* parked: settle, or a reply that comes later (quote) */
        bool settle;            /* parked for settle */
        uint64_t id;            /* parked: how a later reply finds it (control_parked) */
        char *out;              /* reply being written */
        size_t out_len, out_off;
};

struct Control {
        Manager *m;
        int fd;
        bool own_socket;        /* created by us: unlink on exit */
        char *path;
        sd_event_source *source;
        Conn *conns;
        uint64_t next_id;
};

static void conn_free(Conn *c) {
        if (!c)
                return;
        Control *ctl = c->control;
        if (c->prev)
                c->prev->next = c->next;
        else
                ctl->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        free(c->buf);
        free(c->out);
        free(c);
}

const struct ucred *conn_peer(const Conn *c) {
        return &c->peer;
}

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

static int on_conn_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EAGAIN)
                                return 0;
                        break; /* peer gone */
                }
                c->out_off += (size_t) n;
        }
        conn_free(c);
        return 0;
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
        c->waiting = false;
        sd_event_source_disable_unref(c->io);
        c->io = NULL;
        /* the reply goes out without blocking the loop; a peer that does not
         * read is dropped by the timer */
        if (sd_event_add_io(c->control->m->event, &c->io, c->fd, EPOLLOUT, on_conn_writable, c) < 0)
                conn_free(c);
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
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
        if (sd_event_add_time_relative(c->control->m->event, &c->timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                       on_conn_timeout, c) < 0)
                return 0;
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
        if (!ctl || !manager_settled(ctl->m))
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

static bool peer_allowed(const Manager *m, const Conn *c, VerbAccess access) {
        if (c->peer.uid == 0)
                return true;
        if (access != VERB_READ || m->gid_stats == UINT64_MAX)
                return false;
        if (c->peer.gid == (gid_t) m->gid_stats)
                return true;
        for (int i = 0; i < c->n_groups; i++)
                if (c->groups[i] == (gid_t) m->gid_stats)
                        return true;
        return false;
}

static void dispatch(Conn *c, const char *line, size_t len) {
        Manager *m = c->control->m;
        json_object *req = NULL;
        const char *error = NULL;
        VerbId verb;

        if (request_parse(line, len, &req, &verb, &error) < 0) {
                conn_reply(c, reply_error("%s", error));
                return;
        }
        VerbAccess access = verb_access(verb);
        if (!peer_allowed(m, c, access)) {
                log_notice("Refused '%s' from uid %u (pid %d): %s", verb_name(verb), c->peer.uid, c->peer.pid,
                           access == VERB_ROOT ? "root only" : "not root and not in the stats group");
                conn_reply(c, reply_error("permission denied: '%s' is %s", verb_name(verb),
                                          access == VERB_ROOT ? "root's" : "for root and the stats group"));
                json_object_put(req);
                return;
        }
        json_object *reply = verb_run(verb, m, c, req);
        json_object_put(req);
        if (reply)
                conn_reply(c, reply);
}

static int on_conn_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        if (c->waiting) {
                /* a parked peer that hangs up is dropped */
                char b;
                if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
                        conn_free(c);
                return 0;
        }
        if (!c->buf && !(c->buf = malloc(REQUEST_MAX))) {
                conn_free(c);
                return 0;
        }
        ssize_t n = recv(fd, c->buf + c->len, REQUEST_MAX - c->len, MSG_DONTWAIT);
        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        conn_free(c);
                return 0;
        }
        if (n == 0) {
                conn_free(c);
                return 0;
        }
        c->len += (size_t) n;
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
                dispatch(c, c->buf, (size_t) (nl - c->buf));
                return 0;
        }
        if (c->len >= REQUEST_MAX)
                conn_reply(c, reply_error("request too large (limit %d bytes)", REQUEST_MAX));
        return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Control *ctl = userdata;
        int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return 0;
        Conn *c = calloc(1, sizeof(*c));
        if (!c) {
                close(cfd);
                return 0;
        }
        c->fd = cfd;
        c->control = ctl;
        socklen_t sl = sizeof(c->peer);
        c->next = ctl->conns;
        if (ctl->conns)
                ctl->conns->prev = c;
        ctl->conns = c;
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &c->peer, &sl) < 0) {
                conn_free(c);
                return 0;
        }
        socklen_t gl = sizeof(c->groups);
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &gl) == 0)
                c->n_groups = (int) (gl / sizeof(gid_t));
        /* ERANGE (more than 64 groups): only the primary group counts */
        if (sd_event_add_io(ctl->m->event, &c->io, cfd, EPOLLIN, on_conn_readable, c) < 0 ||
            sd_event_add_time_relative(ctl->m->event, &c->timer, CLOCK_MONOTONIC, REQUEST_TIMEOUT_USEC, 0,
                                       on_conn_timeout, c) < 0)
                conn_free(c);
        return 0;
}

static int fd_nonblock_cloexec(int fd) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        return 0;
}

static int make_socket(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 || listen(fd, 64) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int control_new(Manager *m, const char *path, Control **ret) {
        Control *c = calloc(1, sizeof(*c));
        int r;
        if (!c)
                return -ENOMEM;
        c->m = m;
        c->fd = -EBADF;
        c->path = strdup(path);
        if (!c->path) {
                free(c);
                return -ENOMEM;
        }
        /* socket activation: take the first passed stream socket */
        int n = sd_listen_fds(0);
        if (n > 0 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0) {
                c->fd = SD_LISTEN_FDS_START;
                (void) fd_nonblock_cloexec(c->fd);
                log_info("Using control socket passed by the service manager");
        } else {
                c->fd = make_socket(path);
                if (c->fd < 0) {
                        r = c->fd;
                        free(c->path);
                        free(c);
                        return log_error_errno(r, "Failed to create control socket %s: %m", path);
                }
                c->own_socket = true;
        }
        r = sd_event_add_io(m->event, &c->source, c->fd, EPOLLIN, on_accept, c);
        if (r < 0) {
                control_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

Control *control_free(Control *c) {
        if (!c)
                return NULL;
        while (c->conns)
                conn_free(c->conns);
        sd_event_source_disable_unref(c->source);
        if (c->fd >= 0)
                close(c->fd);
        if (c->own_socket)
                (void) unlink(c->path);
        free(c->path);
        free(c);
        return NULL;
}

const char *control_path(const Control *c) {
        return c->path;
}
