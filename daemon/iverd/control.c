/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Control socket mechanics: accept, read one bounded request, check the
 * peer, dispatch (replies: control-reply.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "control-internal.h"
#include "log.h"
#include "macro.h"
#include "thread.h"

/* An unprivileged user must not be able to take the daemon's fds (issue 13
 * item 12): at most CONNS_PER_UID connections per non-root uid, CONNS_MAX in
 * all, of which CONNS_ROOT_RESERVE only root may use. A connection is closed
 * after REQUEST_TIMEOUT_USEC without a complete request (settle waiters wait
 * on their own timer). Beyond a cap, or with fewer than FD_RESERVE fds left
 * below RLIMIT_NOFILE (kept for hashing, the list, the TPM; root may go down to
 * FD_RESERVE / 4), a connection is
 * accepted and closed at once; when accept itself fails for want of fds or
 * memory, the listening socket rests ACCEPT_PAUSE_USEC instead of spinning
 * (it stays readable while the backlog is full). */
#define CONNS_MAX 256U
#define CONNS_ROOT_RESERVE 32U
#define CONNS_PER_UID 16U
#define FD_RESERVE 128
#define ACCEPT_PAUSE_USEC (100ULL * 1000ULL)
#define REFUSAL_LOG_USEC (10ULL * 1000000ULL)

void conn_free(Conn *c) {
        if (!c)
                return;
        Control *ctl = c->control;
        if (c->prev)
                c->prev->next = c->next;
        else
                ctl->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        ctl->n_conns--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        if (c->out_fd >= 0)
                close(c->out_fd);
        if (c->fill_free)
                c->fill_free(c->fill_state);
        free(c->buf);
        free(c->out);
        free(c);
}

const struct ucred *conn_peer(const Conn *c) {
        return &c->peer;
}


static bool peer_allowed(const Control *ctl, const Conn *c, VerbAccess access) {
        if (c->peer.uid == 0)
                return true;
        if (access != VERB_READ || ctl->gid_stats == UINT64_MAX)
                return false;
        if (c->peer.gid == (gid_t) ctl->gid_stats)
                return true;
        for (int i = 0; i < c->n_groups; i++)
                if (c->groups[i] == (gid_t) ctl->gid_stats)
                        return true;
        return false;
}

/* Count a refusal; the number since the last message when one is due (one
 * a REFUSAL_LOG_USEC), else 0: a peer that repeats refused requests or
 * connections cannot push violation lines out of the journal. */
static uint64_t refusal_count(Refusals *r) {
        uint64_t now = now_usec();
        r->count++;
        if (r->logged_at != 0 && now - r->logged_at < REFUSAL_LOG_USEC)
                return 0;
        uint64_t n = r->count - r->logged;
        r->logged = r->count;
        r->logged_at = now;
        return n;
}

static void dispatch(Conn *c, const char *line, size_t len) {
        Control *ctl = c->control;
        json_object *req = NULL;
        const char *error = NULL;
        VerbId verb;

        if (request_parse(line, len, &req, &verb, &error) < 0) {
                conn_reply(c, reply_error("%s", error));
                return;
        }
        VerbAccess access = verb_access(verb);
        if (!peer_allowed(ctl, c, access)) {
                uint64_t n = refusal_count(&c->control->requests_refused);
                if (n > 0)
                        log_notice("Refused '%s' from uid %u (pid %d): %s (%llu requests refused since the last message)",
                                   verb_name(verb), c->peer.uid, c->peer.pid,
                                   access == VERB_ROOT ? "root only" : "not root and not in the stats group",
                                   (unsigned long long) n);
                conn_reply(c, reply_error("permission denied: '%s' is %s", verb_name(verb),
                                          access == VERB_ROOT ? "root's" : "for root and the stats group"));
                json_object_put(req);
                return;
        }
        char why[256];
        if (request_check(verb, req, why, sizeof(why)) < 0) {
                conn_reply(c, reply_error("%s", why));
                json_object_put(req);
                return;
        }
        json_object *reply = ctl->handler.run(ctl->handler.userdata, verb, c, req);
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

static int on_accept_pause_end(sd_event_source *s, uint64_t usec, void *userdata) {
        Control *ctl = userdata;
        (void) sd_event_source_set_enabled(ctl->source, SD_EVENT_ON);
        return 0;
}

/* accept4 failed for want of fds or memory: the pending connection stays in
 * the backlog and the socket readable, so retrying at once would spin. */
static void accept_pause(Control *ctl, int error) {
        ctl->accept_failures++;
        if (ctl->accept_failures == 1 || ctl->accept_failures % 1000 == 0)
                log_warning_errno(error, "Cannot accept control connections (%llu times): %m; pausing",
                                  (unsigned long long) ctl->accept_failures);
        (void) sd_event_source_set_enabled(ctl->source, SD_EVENT_OFF);
        if (!ctl->pause) {
                if (sd_event_add_time_relative(ctl->event, &ctl->pause, CLOCK_MONOTONIC, ACCEPT_PAUSE_USEC, 0,
                                               on_accept_pause_end, ctl) < 0)
                        (void) sd_event_source_set_enabled(ctl->source, SD_EVENT_ON); /* better a spin than deaf */
                else
                        (void) sd_event_source_set_description(ctl->pause, "control-accept-pause");
                return;
        }
        (void) sd_event_source_set_time_relative(ctl->pause, ACCEPT_PAUSE_USEC);
        (void) sd_event_source_set_enabled(ctl->pause, SD_EVENT_ONESHOT);
}

/* Why a new connection from uid (already counted in) must be refused, or NULL.
 * fd is the accepted fd: fds are handed out lowest first, so every fd below it
 * is in use and at most fd_limit - fd - 1 remain. */
static const char *refusal(const Control *ctl, uid_t uid, int fd) {
        /* read again each time: the limit can change under us (prlimit) */
        struct rlimit rl;
        int limit = getrlimit(RLIMIT_NOFILE, &rl) < 0 ? ctl->fd_limit
                    : rl.rlim_cur > (rlim_t) INT32_MAX  ? INT32_MAX
                                                        : (int) rl.rlim_cur;
        /* root keeps a way in for diagnosis until the last quarter of the reserve */
        if (limit > 0 && fd >= limit - (uid == 0 ? FD_RESERVE / 4 : FD_RESERVE))
                return "file descriptors kept for measurement";
        if (ctl->n_conns >= CONNS_MAX)
                return "too many connections";
        if (uid == 0)
                return NULL;
        if (ctl->n_conns >= CONNS_MAX - CONNS_ROOT_RESERVE)
                return "too many connections";
        unsigned n = 0;
        for (const Conn *c = ctl->conns; c; c = c->next)
                if (c->peer.uid == uid && ++n >= CONNS_PER_UID)
                        return "too many connections from this user";
        return NULL;
}

static void refuse(Control *ctl, int cfd, uid_t uid, const char *why) {
        uint64_t n = refusal_count(&ctl->conns_refused);
        if (n > 0)
                log_notice("Refused a control connection from uid %u: %s (%llu refused since the last message)",
                           uid, why, (unsigned long long) n);
        close(cfd);
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Control *ctl = userdata;
        /* a few per wakeup: a burst drains without one epoll round per connection */
        for (unsigned i = 0; i < 32; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                                accept_pause(ctl, -errno);
                        return 0; /* EAGAIN, or a peer that left (ECONNABORTED): next wakeup */
                }
                struct ucred peer;
                socklen_t sl = sizeof(peer);
                if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &peer, &sl) < 0) {
                        close(cfd);
                        continue;
                }
                const char *why = refusal(ctl, peer.uid, cfd);
                if (why) {
                        refuse(ctl, cfd, peer.uid, why);
                        continue;
                }
                Conn *c = calloc(1, sizeof(*c));
                if (!c) {
                        close(cfd);
                        continue;
                }
                c->fd = cfd;
                c->out_fd = -1;
                c->control = ctl;
                c->peer = peer;
                c->next = ctl->conns;
                if (ctl->conns)
                        ctl->conns->prev = c;
                ctl->conns = c;
                ctl->n_conns++;
                socklen_t gl = sizeof(c->groups);
                if (getsockopt(cfd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &gl) == 0)
                        c->n_groups = (int) (gl / sizeof(gid_t));
                /* ERANGE (more than 64 groups): only the primary group counts */
                if (sd_event_add_io(ctl->event, &c->io, cfd, EPOLLIN, on_conn_readable, c) < 0 ||
                    sd_event_add_time_relative(ctl->event, &c->timer, CLOCK_MONOTONIC, REQUEST_TIMEOUT_USEC, 0,
                                               on_conn_timeout, c) < 0) {
                        conn_free(c);
                        continue;
                }
                (void) sd_event_source_set_description(c->io, "control-conn");
                (void) sd_event_source_set_description(c->timer, "control-conn-timeout");
        }
        return 0;
}

/* Hashing needs an fd per file in flight, the list and the TPM theirs: raise
 * the soft fd limit to the hard one (LimitNOFILE= in the unit sets both). */
static int raise_fd_limit(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 0;
        if (rl.rlim_cur < rl.rlim_max) {
                /* select() is never used: fds above FD_SETSIZE are fine */
                struct rlimit want = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };
                if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                        rl = want;
                else
                        log_debug("Cannot raise the fd limit from %llu to %llu: %m", (unsigned long long) rl.rlim_cur,
                                  (unsigned long long) rl.rlim_max);
        }
        return rl.rlim_cur > (rlim_t) INT32_MAX ? INT32_MAX : (int) rl.rlim_cur;
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
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            fchmodat(AT_FDCWD, path, 0666, AT_SYMLINK_NOFOLLOW) < 0 || listen(fd, 64) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int control_new(sd_event *event, const char *path, uint64_t gid_stats, const ControlHandler *h, Control **ret) {
        Control *c = calloc(1, sizeof(*c));
        int r;
        if (!c)
                return -ENOMEM;
        c->event = event;
        c->handler = *h;
        c->gid_stats = gid_stats;
        c->fd = -EBADF;
        c->fd_limit = raise_fd_limit();
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
        r = sd_event_add_io(event, &c->source, c->fd, EPOLLIN, on_accept, c);
        if (r < 0) {
                control_free(c);
                return r;
        }
        (void) sd_event_source_set_description(c->source, "control-socket");
        *ret = c;
        return 0;
}

Control *control_free(Control *c) {
        if (!c)
                return NULL;
        while (c->conns)
                conn_free(c->conns);
        sd_event_source_disable_unref(c->source);
        sd_event_source_disable_unref(c->pause);
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

void control_counters(const Control *c, unsigned *ret_open, uint64_t *ret_refused, uint64_t *ret_requests_refused) {
        *ret_open = c ? c->n_conns : 0;
        *ret_refused = c ? c->conns_refused.count : 0;
        *ret_requests_refused = c ? c->requests_refused.count : 0;
}
