/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Talking to iverd: one JSON request a line over the control socket. */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "grow.h"
#include "client.h"
#include "iver/imalog.h"
#include "macro.h"
#include "output.h"
#include "iverctl.h"

const char *arg_socket;

int base64_decode(const char *in, uint8_t **ret, size_t *ret_len) {
        size_t n = strlen(in);
        uint8_t *out = malloc(n / 4 * 3 + 3);
        if (!out)
                return -ENOMEM;
        int k = n ? EVP_DecodeBlock(out, (const unsigned char *) in, (int) n) : 0;
        if (k < 0) {
                free(out);
                return -EBADMSG;
        }
        /* EVP_DecodeBlock counts padding as zero bytes */
        if (n >= 1 && in[n - 1] == '=')
                k--;
        if (n >= 2 && in[n - 2] == '=')
                k--;
        *ret = out;
        *ret_len = (size_t) k;
        return 0;
}

int oom(void) {
        fputs("iverctl: out of memory\n", stderr);
        return IVERCTL_EXIT_FAILURE;
}

static bool fail_add(json_object **obj, json_object *value) {
        json_object_put(value);
        json_object_put(*obj);
        *obj = NULL;
        return false;
}

bool json_add(json_object **obj, const char *key, json_object *value) {
        if (!*obj || !value || json_object_object_add(*obj, key, value) < 0)
                return fail_add(obj, value);
        return true;
}

bool json_append(json_object **arr, json_object *value) {
        if (!*arr || !value || json_object_array_add(*arr, value) < 0)
                return fail_add(arr, value);
        return true;
}

json_object *request(const char *verb) {
        json_object *o = json_object_new_object();
        (void) json_add(&o, "verb", json_object_new_string(verb));
        return o;
}

/* --socket, else $IVERD_SOCKET, else iverd.conf's Socket= (the file iverd
 * reads by default; one iverctl cannot read, or that does not parse, leaves
 * the default), else the default. */
static const char *socket_path(void) {
        static char conf_socket[108];
        if (arg_socket)
                return arg_socket;
        const char *e = getenv("IVERD_SOCKET");
        if (e && *e)
                return e;
        if (!conf_socket[0]) {
                IverConf c;
                snprintf(conf_socket, sizeof(conf_socket), "%s", IVER_CONF_DEFAULT_SOCKET);
                if (iver_conf_init(&c) >= 0) {
                        if (iver_conf_load_file(&c, IVER_CONF_FILE, IVER_CONF_LOAD_MISSING_OK, NULL) >= 0 && c.socket_path &&
                            strlen(c.socket_path) < sizeof(conf_socket))
                                snprintf(conf_socket, sizeof(conf_socket), "%s", c.socket_path);
                        iver_conf_done(&c);
                }
        }
        return conf_socket;
}

/* recv, keeping an fd that comes with the bytes (SCM_RIGHTS) in *fd if fd
 * is given and none came before, closing it otherwise. */
static ssize_t recv_fd(int sock, char *buf, size_t len, int *fd) {
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(4 * sizeof(int))];
        } ctl;
        struct iovec iov = { .iov_base = buf, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
        ssize_t k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (k < 0)
                return k;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < n; i++) {
                        int f;
                        memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        if (fd && *fd < 0)
                                *fd = f;
                        else
                                close(f);
                }
        }
        return k;
}

int call(json_object *req, double timeout_sec, json_object **ret) {
        return call_fd(req, timeout_sec, ret, NULL);
}

/* Connects to iverd's socket and sends the request line: *ret_fd, or an exit code after
 * printing why not. */
static int send_request(const char *msg, size_t len, int *ret_fd) {
        const char *path = socket_path();
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "iverctl: socket path too long: %s\n", path);
                return IVERCTL_EXIT_USAGE;
        }
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "iverctl: cannot reach iverd at %s: %s\n", path, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return IVERCTL_EXIT_DAEMON;
        }
        if (send(fd, msg, len + 1, MSG_NOSIGNAL) != (ssize_t) (len + 1)) {
                fprintf(stderr, "iverctl: cannot send to iverd: %s\n", strerror(errno));
                close(fd);
                return IVERCTL_EXIT_DAEMON;
        }
        *ret_fd = fd;
        return 0;
}

/* Reads the reply line within the timeout, keeping a file descriptor that comes with it
 * in *passed: *ret_buf (NUL-terminated), or an exit code after printing why not. */
static int read_reply(int fd, double timeout_sec, int *passed, char **ret_buf) {
        size_t cap = 65536, n = 0;
        char *buf = malloc(cap);
        if (!buf)
                return oom();
        int timeout_ms = (int) ((timeout_sec > 0 ? timeout_sec : 30) * 1000);
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int pr = poll(&p, 1, timeout_ms);
                if (pr == 0) {
                        fprintf(stderr, "iverctl: no answer from iverd within %d s\n", timeout_ms / 1000);
                        free(buf);
                        return IVERCTL_EXIT_DAEMON;
                }
                if (GROW(buf, cap, n + 4096, 65536) < 0) {
                        free(buf);
                        return oom();
                }
                ssize_t k = pr < 0 ? -1 : recv_fd(fd, buf + n, cap - n - 1, passed);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t) k;
                if (memchr(buf + n - k, '\n', (size_t) k))
                        break;
        }
        buf[n] = 0;
        *ret_buf = buf;
        return 0;
}

/* The reply as a JSON object that says "ok": *ret, or an exit code after printing the
 * daemon's error. */
static int parse_reply(const char *buf, json_object **ret) {
        /* json-c 0.16 does not tell a parse that ran out of memory from a bad
         * document: both are "malformed" here */
        json_object *reply = json_tokener_parse(buf);
        if (!reply || !json_object_is_type(reply, json_type_object)) {
                fprintf(stderr, "iverctl: malformed or no reply from iverd\n");
                json_object_put(reply);
                return IVERCTL_EXIT_DAEMON;
        }
        json_object *ok, *err;
        if (!json_object_object_get_ex(reply, "ok", &ok) || !json_object_get_boolean(ok)) {
                fputs("iverctl: iverd: ", stderr);
                print_text(stderr, json_object_object_get_ex(reply, "error", &err) ? json_object_get_string(err) : "failed");
                fputc('\n', stderr);
                json_object_put(reply);
                return IVERCTL_EXIT_DAEMON;
        }
        *ret = reply;
        return 0;
}

int call_fd(json_object *req, double timeout_sec, json_object **ret, int *ret_fd) {
        _cleanup_close_ int passed = -1;
        if (!req)
                return oom();
        const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
        size_t len = s ? strlen(s) : 0;
        _cleanup_free_ char *msg = s ? malloc(len + 2) : NULL;
        if (!msg)
                return oom();
        memcpy(msg, s, len);
        msg[len] = '\n';

        int fd, r;
        r = send_request(msg, len, &fd);
        if (r)
                return r;
        char *buf = NULL;
        r = read_reply(fd, timeout_sec, &passed, &buf);
        close(fd);
        if (r)
                return r;
        json_object *reply;
        r = parse_reply(buf, &reply);
        free(buf);
        if (r)
                return r;
        if (ret_fd) {
                if (passed < 0) {
                        fprintf(stderr, "iverctl: iverd sent no file descriptor with its reply\n");
                        json_object_put(reply);
                        return IVERCTL_EXIT_DAEMON;
                }
                *ret_fd = TAKE_FD(passed);
        }
        *ret = reply;
        return 0;
}

int reply_list_bytes(json_object *r, const char *who, uint64_t *ret) {
        json_object *v;
        if (!json_object_object_get_ex(r, "list_bytes", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) < 0) {
                fprintf(stderr, "iverctl %s: no list length in the reply\n", who);
                return IVERCTL_EXIT_DAEMON;
        }
        *ret = json_object_get_uint64(v);
        return 0;
}

int reply_list(json_object *r, int fd, const char *who, uint8_t **ret, size_t *ret_len) {
        uint64_t bytes;
        int k = reply_list_bytes(r, who, &bytes);
        if (k)
                return k;
        k = iver_imalog_read_prefix(fd, bytes, ret);
        if (k == -ENOMEM || k == -EFBIG)
                return oom();
        if (k < 0) {
                fprintf(stderr, "iverctl %s: cannot read the measurement list (%" PRIu64 " bytes): %s\n", who, bytes,
                        strerror(-k));
                return IVERCTL_EXIT_DAEMON;
        }
        *ret_len = (size_t) bytes;
        return 0;
}
