/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Control socket mechanics: accept, read one bounded request, check the
 * peer, dispatch, reply, close. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

#include "control.h"
#include "log.h"
#include "macro.h"
#include "manager.h"

#define REQUEST_TIMEOUT_USEC (10ULL * 1000000ULL)
/* A streamed reply is made STREAM_CHUNK bytes at a time, when the peer has
 * read the last chunk: its cost is one chunk, whatever the cache or list holds. */
#define STREAM_CHUNK (64U * 1024U)
#define STREAM_CHUNKS_PER_WAKEUP 2U
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
        int out_fd;             /* sent with the reply's first byte (SCM_RIGHTS), then closed */
        ConnFill fill;          /* streamed reply: the next chunk, when out is sent */
        void *fill_state;
        void (*fill_free)(void *state);
};

struct Control {
        Manager *m;
        int fd;
        bool own_socket;        /* created by us: unlink on exit */
        char *path;
        sd_event_source *source;
        sd_event_source *pause;        /* re-enables source after an accept failure */
        Conn *conns;
        unsigned n_conns;
        uint64_t refused, refused_logged, accept_failures;
        uint64_t refusal_logged_at;     /* CLOCK_MONOTONIC usec */
        int fd_limit;                   /* RLIMIT_NOFILE soft limit */
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
        if (sd_event_add_io(c->control->m->event, &c->io, c->fd, EPOLLOUT, on_conn_writable, c) < 0)
                conn_free(c);
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

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
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
                if (sd_event_add_time_relative(ctl->m->event, &ctl->pause, CLOCK_MONOTONIC, ACCEPT_PAUSE_USEC, 0,
                                               on_accept_pause_end, ctl) < 0)
                        (void) sd_event_source_set_enabled(ctl->source, SD_EVENT_ON); /* better a spin than deaf */
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
        ctl->refused++;
        uint64_t now = now_usec();
        if (ctl->refusal_logged_at == 0 || now - ctl->refusal_logged_at >= REFUSAL_LOG_USEC) {
                log_notice("Refused a control connection from uid %u: %s (%llu refused since the last message)",
                           uid, why, (unsigned long long) (ctl->refused - ctl->refused_logged));
                ctl->refused_logged = ctl->refused;
                ctl->refusal_logged_at = now;
        }
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
                if (sd_event_add_io(ctl->m->event, &c->io, cfd, EPOLLIN, on_conn_readable, c) < 0 ||
                    sd_event_add_time_relative(ctl->m->event, &c->timer, CLOCK_MONOTONIC, REQUEST_TIMEOUT_USEC, 0,
                                               on_conn_timeout, c) < 0)
                        conn_free(c);
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

int control_new(Manager *m, const char *path, Control **ret) {
        Control *c = calloc(1, sizeof(*c));
        int r;
        if (!c)
                return -ENOMEM;
        c->m = m;
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

void control_counters(const Control *c, unsigned *ret_open, uint64_t *ret_refused) {
        *ret_open = c ? c->n_conns : 0;
        *ret_refused = c ? c->refused : 0;
}
