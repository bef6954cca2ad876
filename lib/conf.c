/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverd.conf: [Section] and Key=value lines, parsed through a
 * (section, key) → parser → field table. A file is applied to a copy of the
 * configuration, which replaces the original only when the file was valid. */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "conf.h"
#include "fileio.h"
#include "macro.h"

static const char *const on_access_names[_IVER_ON_ACCESS_MAX] = {
        [IVER_ON_ACCESS_NONE] = "none",
        [IVER_ON_ACCESS_EXEC] = "exec",
        [IVER_ON_ACCESS_OPEN] = "open",
};

static int lookup(const char *const *names, int n, const char *s) {
        for (int i = 0; s && i < n; i++)
                if (strcmp(names[i], s) == 0)
                        return i;
        return -EINVAL;
}

const char *iver_on_access_to_string(IverOnAccess a) {
        return a >= 0 && a < _IVER_ON_ACCESS_MAX ? on_access_names[a] : NULL;
}

IverOnAccess iver_on_access_from_string(const char *s) {
        return (IverOnAccess) lookup(on_access_names, _IVER_ON_ACCESS_MAX, s);
}

void iver_conf_done(IverConf *c) {
        if (!c)
                return;
        free(c->tpm_tcti);
        free(c->runtime_directory);
        free(c->state_directory);
        free(c->socket_path);
        free(c->appraise_keys);
        free(c->appraise_keyring);
        *c = (IverConf) {};
}

int iver_conf_init(IverConf *c) {
        *c = (IverConf) {
                .tpm_tcti = strdup(IVER_CONF_DEFAULT_TCTI),
                .pcr = IVER_CONF_PCR_AUTO,
                .banks = (1u << IVER_HASH_SHA1) | (1u << IVER_HASH_SHA256),
                .hash = IVER_HASH_SHA256,
                .version_source = IVER_VERSION_AUTO,
                .rescan_interval_usec = IVER_CONF_DEFAULT_RESCAN_USEC,
                .workers = 0,
                .on_access = IVER_ON_ACCESS_EXEC,
                .on_access_timeout_usec = IVER_CONF_DEFAULT_ON_ACCESS_TIMEOUT_USEC,
                .runtime_directory = strdup(IVER_CONF_DEFAULT_RUNTIME_DIR),
                .state_directory = strdup(IVER_CONF_DEFAULT_STATE_DIR),
                .socket_path = strdup(IVER_CONF_DEFAULT_SOCKET),
        };
        if (!c->tpm_tcti || !c->runtime_directory || !c->state_directory || !c->socket_path) {
                iver_conf_done(c);
                return -ENOMEM;
        }
        return 0;
}

static int copy_str(char **dst, const char *src) {
        *dst = NULL;
        if (src && !(*dst = strdup(src)))
                return -ENOMEM;
        return 0;
}

static int conf_copy(IverConf *dst, const IverConf *src) {
        *dst = *src;
        if (copy_str(&dst->tpm_tcti, src->tpm_tcti) < 0 ||
            copy_str(&dst->runtime_directory, src->runtime_directory) < 0 ||
            copy_str(&dst->state_directory, src->state_directory) < 0 ||
            copy_str(&dst->socket_path, src->socket_path) < 0) {
                iver_conf_done(dst);
                return -ENOMEM;
        }
        return 0;
}

void iver_conf_error_done(IverConfError *e) {
        if (!e)
                return;
        free(e->file);
        free(e->message);
        *e = (IverConfError) {};
}

int iver_conf_error_format(const IverConfError *e, char **ret) {
        char *s;
        int k = e->line == 0 ? asprintf(&s, "%s: %s", e->file, e->message)
                             : asprintf(&s, "%s:%u:%u: %s", e->file, e->line, e->column, e->message);
        if (k < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* ---- the parse ---- */

typedef struct ConfParser {
        const char *file;
        unsigned line;
        IverConfError *error;
        int err;
} ConfParser;

__attribute__((format(printf, 3, 4)))
static int fail(ConfParser *cp, unsigned column, const char *fmt, ...) {
        va_list ap;
        if (!cp->error)
                return -EINVAL;
        iver_conf_error_done(cp->error);
        cp->error->file = strdup(cp->file);
        cp->error->line = cp->line;
        cp->error->column = column;
        va_start(ap, fmt);
        if (vasprintf(&cp->error->message, fmt, ap) < 0)
                cp->error->message = NULL;
        va_end(ap);
        if (!cp->error->file || !cp->error->message) {
                iver_conf_error_done(cp->error);
                return -ENOMEM;
        }
        return -EINVAL;
}

/* Every parser gets the value (trimmed, NUL-terminated, never empty) and its column. */
typedef int (*ConfValueParser)(ConfParser *cp, IverConf *c, const char *v, unsigned col);

static int parse_tcti(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        if (strcmp(v, "none") == 0) {
                free(c->tpm_tcti);
                c->tpm_tcti = NULL;
                return 0;
        }
        size_t name = strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_-");
        bool ok = name > 0 && (v[name] == 0 || v[name] == ':');
        for (const char *p = v; ok && *p; p++)
                ok = *p > 0x20 && *p < 0x7f;
        if (!ok)
                return fail(cp, col, "invalid TCTI '%s', expected none or NAME[:CONFIG] such as device:/dev/tpmrm0", v);
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        free(c->tpm_tcti);
        c->tpm_tcti = s;
        return 0;
}

static bool parse_uint(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t x = 0;
        if (!*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || x > (max - (uint64_t) (*s - '0')) / 10)
                        return false;
                x = x * 10 + (uint64_t) (*s - '0');
        }
        *ret = x;
        return true;
}

static int parse_pcr(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        uint64_t x;
        if (strcmp(v, "auto") == 0) {
                c->pcr = IVER_CONF_PCR_AUTO;
                return 0;
        }
        if (!parse_uint(v, 23, &x))
                return fail(cp, col, "invalid PCR '%s', expected auto or a number from 0 to 23", v);
        c->pcr = (int) x;
        return 0;
}

static int parse_banks(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        uint32_t banks = 0;
        for (const char *p = v; *p; ) {
                size_t skip = strspn(p, " \t,");
                p += skip;
                size_t n = strcspn(p, " \t,");
                if (n == 0)
                        break;
                char name[32] = {};
                IverHashAlgo a = _IVER_HASH_INVALID;
                if (n < sizeof name) {
                        memcpy(name, p, n);
                        a = iver_hash_algo_from_string(name);
                }
                if (a < 0)
                        return fail(cp, col + (unsigned) (p - v), "unknown bank '%.*s', expected sha1, sha256, sha384, sha512 or sm3",
                                    (int) (n > 64 ? 64 : n), p);
                banks |= 1u << a;
                p += n;
        }
        if (banks == 0)
                return fail(cp, col, "no bank in '%s', expected one or more of sha1, sha256, sha384, sha512 and sm3", v);
        c->banks = banks;
        return 0;
}

/* Seconds, or a systemd-style span: "90", "90s", "500ms", "15min", "1h 30min", "2d". */
static int parse_span(ConfParser *cp, const char *v, unsigned col, uint64_t *ret_usec) {
        static const struct { const char *unit; uint64_t usec; } units[] = {
                { "usec", 1 }, { "us", 1 }, { "msec", 1000 }, { "ms", 1000 },
                { "seconds", 1000000 }, { "second", 1000000 }, { "sec", 1000000 }, { "s", 1000000 },
                { "minutes", 60000000 }, { "minute", 60000000 }, { "min", 60000000 }, { "m", 60000000 },
                { "hours", 3600000000ull }, { "hour", 3600000000ull }, { "hr", 3600000000ull }, { "h", 3600000000ull },
                { "days", 86400000000ull }, { "day", 86400000000ull }, { "d", 86400000000ull },
                { "weeks", 604800000000ull }, { "week", 604800000000ull }, { "w", 604800000000ull },
        };
        uint64_t total = 0;
        const char *p = v;
        while (*p) {
                uint64_t x = 0, mult = 1000000;
                size_t nd = strspn(p, "0123456789");
                if (nd == 0 || nd > 12)
                        goto bad;
                for (size_t i = 0; i < nd; i++)
                        x = x * 10 + (uint64_t) (p[i] - '0');
                p += nd;
                p += strspn(p, " \t");
                size_t nu = strspn(p, "abcdefghijklmnopqrstuvwxyz");
                if (nu > 0) {
                        size_t i;
                        for (i = 0; i < ELEMENTSOF(units); i++)
                                if (strlen(units[i].unit) == nu && strncmp(units[i].unit, p, nu) == 0)
                                        break;
                        if (i == ELEMENTSOF(units))
                                goto bad;
                        mult = units[i].usec;
                        p += nu;
                }
                if (x > (UINT64_MAX - total) / mult)
                        goto bad;
                total += x * mult;
                p += strspn(p, " \t");
        }
        *ret_usec = total;
        return 0;
bad:
        return fail(cp, col, "invalid time span '%s', expected seconds or a span such as 90s, 15min or 1h", v);
}

/* "0" disables the periodic rescan. */
static int parse_rescan(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        return parse_span(cp, v, col, &c->rescan_interval_usec);
}

/* How long an exec (or open) waits for its measurement: 1 ms … 10 min. */
static int parse_on_access_timeout(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        uint64_t usec;
        int r = parse_span(cp, v, col, &usec);
        if (r < 0)
                return r;
        if (usec < 1000 || usec > 600ull * 1000000ull)
                return fail(cp, col, "on-access timeout '%s' out of range, expected 1ms to 10min (e.g. 2s or 500ms)", v);
        c->on_access_timeout_usec = usec;
        return 0;
}

static int parse_workers(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        uint64_t x;
        if (strcmp(v, "auto") == 0) {
                c->workers = 0;
                return 0;
        }
        if (!parse_uint(v, 1024, &x) || x == 0)
                return fail(cp, col, "invalid worker count '%s', expected auto or a number from 1 to 1024", v);
        c->workers = (unsigned) x;
        return 0;
}

static int set_path(ConfParser *cp, char **field, const char *v, unsigned col, size_t max) {
        if (v[0] != '/')
                return fail(cp, col, "path '%s' is not absolute, expected a path starting with '/'", v);
        for (const char *p = v; (p = strstr(p, "/..")); p += 3)
                if (p[3] == '/' || p[3] == 0)
                        return fail(cp, col, "path '%s' has a '..' component, expected a canonical path", v);
        if (strlen(v) > max)
                return fail(cp, col, "path '%s' is longer than %zu bytes, expected a shorter path", v, max);
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

static int parse_runtime_dir(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        return set_path(cp, &c->runtime_directory, v, col, 4095);
}

static int parse_state_dir(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        return set_path(cp, &c->state_directory, v, col, 4095);
}

static int parse_socket(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        return set_path(cp, &c->socket_path, v, col, sizeof(((struct sockaddr_un *) NULL)->sun_path) - 1);
}

/* Keys=/a.pem /b.der: each absolute; one string, split by the daemon. */
static int parse_appraise_keys(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        for (const char *p = v; *p;) {
                size_t n = strcspn(p, " \t");
                if (n > 0 && p[0] != '/')
                        return fail(cp, col + (unsigned) (p - v), "key file '%.*s' is not absolute, expected paths starting with '/'",
                                    (int) n, p);
                p += n;
                p += strspn(p, " \t");
        }
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        free(c->appraise_keys);
        c->appraise_keys = s;
        return 0;
}

static int parse_appraise_keyring(ConfParser *cp, IverConf *c, const char *v, unsigned col) {
        if (strlen(v) > 255)
                return fail(cp, col, "keyring name longer than 255 bytes, expected a keyring name such as %%keyring:_ima");
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        free(c->appraise_keyring);
        c->appraise_keyring = s;
        return 0;
}

/* The enum-valued keys: a name → value function and the names it takes. */
typedef struct ConfEnum {
        int (*from_string)(const char *s);
        const char *what, *expected;
} ConfEnum;

static int hash_from_string(const char *s) {
        return iver_hash_algo_from_string(s);
}
static int version_mode_from_string(const char *s) {
        return iver_version_mode_from_string(s);
}
static int on_access_from_string(const char *s) {
        return iver_on_access_from_string(s);
}

static const ConfEnum hash_enum = { hash_from_string, "unknown hash algorithm", "sha1, sha256, sha384, sha512 or sm3" };
static const ConfEnum version_enum = { version_mode_from_string, "invalid version source", "auto, statx or ctime" };
static const ConfEnum on_access_enum = { on_access_from_string, "invalid on-access mode", "none, exec or open" };

/* Each key: its parser (NULL for an enum key, parsed by its ConfEnum) and the
 * IverConf field it sets (an empty value puts that field back to its
 * default). */
typedef struct ConfKey {
        const char *section;
        const char *key;
        ConfValueParser parse;
        const ConfEnum *enumeration;
        size_t offset, size;
} ConfKey;

#define FIELD(f) offsetof(IverConf, f), sizeof(((IverConf *) 0)->f)

static const ConfKey conf_keys[] = {
        { "TPM",      "TCTI",               parse_tcti,              NULL,            FIELD(tpm_tcti) },
        { "TPM",      "PCR",                parse_pcr,               NULL,            FIELD(pcr) },
        { "TPM",      "Pcr",                parse_pcr,               NULL,            FIELD(pcr) }, /* alias */
        { "TPM",      "Banks",              parse_banks,             NULL,            FIELD(banks) },
        { "Measure",  "Hash",               NULL,                    &hash_enum,      FIELD(hash) },
        { "Measure",  "VersionSource",      NULL,                    &version_enum,   FIELD(version_source) },
        { "Measure",  "RescanIntervalSec",  parse_rescan,            NULL,            FIELD(rescan_interval_usec) },
        { "Measure",  "Workers",            parse_workers,           NULL,            FIELD(workers) },
        { "Measure",  "OnAccess",           NULL,                    &on_access_enum, FIELD(on_access) },
        { "Measure",  "OnAccessTimeoutSec", parse_on_access_timeout, NULL,            FIELD(on_access_timeout_usec) },
        { "Paths",    "RuntimeDirectory",   parse_runtime_dir,       NULL,            FIELD(runtime_directory) },
        { "Paths",    "StateDirectory",     parse_state_dir,         NULL,            FIELD(state_directory) },
        { "Paths",    "Socket",             parse_socket,            NULL,            FIELD(socket_path) },
        { "Appraise", "Keys",               parse_appraise_keys,     NULL,            FIELD(appraise_keys) },
        { "Appraise", "Keyring",            parse_appraise_keyring,  NULL,            FIELD(appraise_keyring) },
};

static const char *const sections[] = { "TPM", "Measure", "Paths", "Appraise" };

static int parse_enum(ConfParser *cp, IverConf *c, const ConfKey *k, const char *v, unsigned col) {
        int x = k->enumeration->from_string(v);
        if (x < 0)
                return fail(cp, col, "%s '%s', expected %s", k->enumeration->what, v, k->enumeration->expected);
        assert(k->size == sizeof(x));
        memcpy((char *) c + k->offset, &x, sizeof(x));
        return 0;
}

/* An empty value puts the key back to its default, as in systemd: the
 * field's bytes are swapped with a default configuration's, which then frees
 * what the field held. */
static int reset_key(IverConf *c, const ConfKey *k) {
        IverConf d;
        int r = iver_conf_init(&d);
        if (r < 0)
                return r;
        uint8_t t[64];
        assert(k->size <= sizeof(t));
        memcpy(t, (char *) c + k->offset, k->size);
        memcpy((char *) c + k->offset, (char *) &d + k->offset, k->size);
        memcpy((char *) &d + k->offset, t, k->size);
        iver_conf_done(&d);
        return 0;
}

static bool blank(char ch) {
        return ch == ' ' || ch == '\t' || ch == '\r';
}

static int parse_line(ConfParser *cp, IverConf *c, char *s, size_t n, const char **section) {
        size_t i = 0;
        while (i < n && blank(s[i]))
                i++;
        while (n > i && blank(s[n - 1]))
                n--;
        s[n] = 0;
        if (i == n || s[i] == '#' || s[i] == ';')
                return 0;

        if (s[i] == '[') {
                if (s[n - 1] != ']')
                        return fail(cp, (unsigned) n, "section header without ']', expected [TPM], [Measure], [Paths] or [Appraise]");
                s[n - 1] = 0;
                for (size_t k = 0; k < ELEMENTSOF(sections); k++)
                        if (strcmp(s + i + 1, sections[k]) == 0) {
                                *section = sections[k];
                                return 0;
                        }
                return fail(cp, (unsigned) i + 1, "unknown section '[%.64s]', expected [TPM], [Measure], [Paths] or [Appraise]", s + i + 1);
        }

        char *eq = strchr(s + i, '=');
        if (!eq)
                return fail(cp, (unsigned) i + 1, "'%.64s' is not Key=value, expected a key such as Workers=4", s + i);
        size_t ke = (size_t) (eq - s);
        while (ke > i && blank(s[ke - 1]))
                ke--;
        s[ke] = 0;
        const char *key = s + i;
        if (!*section)
                return fail(cp, (unsigned) i + 1, "key '%.64s' outside a section, expected a [Section] header first", key);

        const ConfKey *k = NULL;
        for (size_t j = 0; j < ELEMENTSOF(conf_keys); j++)
                if (strcmp(conf_keys[j].section, *section) == 0 && strcmp(conf_keys[j].key, key) == 0)
                        k = &conf_keys[j];
        if (!k) {
                const char *expect = strcmp(*section, "TPM") == 0 ? "TCTI=, PCR= or Banks=" :
                                     strcmp(*section, "Measure") == 0 ? "Hash=, VersionSource=, RescanIntervalSec=, Workers=, OnAccess= or OnAccessTimeoutSec=" :
                                     strcmp(*section, "Appraise") == 0 ? "Keys= or Keyring=" :
                                     "RuntimeDirectory=, StateDirectory= or Socket=";
                return fail(cp, (unsigned) i + 1, "unknown key '%.64s' in [%s], expected %s", key, *section, expect);
        }

        size_t v = (size_t) (eq - s) + 1;
        while (v < n && blank(s[v]))
                v++;
        if (v == n)
                return reset_key(c, k);
        return k->parse ? k->parse(cp, c, s + v, (unsigned) v + 1) : parse_enum(cp, c, k, s + v, (unsigned) v + 1);
}

static int conf_parse(IverConf *c, const char *name, const char *data, size_t len, IverConfError *ret_error) {
        ConfParser cp = { .file = name, .error = ret_error };
        const char *section = NULL;
        IverConf n;
        int r;

        r = conf_copy(&n, c);
        if (r < 0)
                return r;
        for (size_t pos = 0; pos < len; ) {
                const char *nl = memchr(data + pos, '\n', len - pos);
                size_t end = nl ? (size_t) (nl - data) : len;
                cp.line++;
                const char *nul = memchr(data + pos, 0, end - pos);
                if (nul) {
                        r = fail(&cp, (unsigned) (nul - (data + pos)) + 1, "NUL byte, expected text");
                        goto finish;
                }
                _cleanup_free_ char *line = strndup(data + pos, end - pos);
                if (!line) {
                        r = -ENOMEM;
                        goto finish;
                }
                r = parse_line(&cp, &n, line, end - pos, &section);
                if (r < 0)
                        goto finish;
                pos = end + 1;
        }
        iver_conf_done(c);
        *c = n;
        return 0;
finish:
        iver_conf_done(&n);
        return r;
}

int iver_conf_load_string(IverConf *c, const char *name, const void *data, size_t len, IverConfError *ret_error) {
        return conf_parse(c, name, data, len, ret_error);
}

int iver_conf_load_file(IverConf *c, const char *path, unsigned flags, IverConfError *ret_error) {
        ConfParser cp = { .file = path, .error = ret_error };
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r, k;

        /* Never blocks (a FIFO) and never follows a symlink: see lib/fileio.h. */
        fd = iver_open_regular(path, IVER_OPEN_DEV_NULL_OK, NULL);
        if (fd < 0) {
                if (fd == -ENOENT && (flags & IVER_CONF_LOAD_MISSING_OK))
                        return 0;
                k = fail(&cp, 0, "cannot open: %s, expected a readable configuration file", iver_file_strerror(fd));
                return k == -ENOMEM ? k : fd;
        }
        r = iver_read_fd_max(fd, IVER_CONF_FILE_MAX, &buf, &len);
        if (r == -EFBIG)
                return fail(&cp, 0, "file is larger than %u bytes, expected a configuration file", IVER_CONF_FILE_MAX);
        if (r < 0) {
                k = fail(&cp, 0, "cannot read: %s, expected a readable configuration file", strerror(-r));
                return k == -ENOMEM ? k : r;
        }
        return conf_parse(c, path, buf, len, ret_error);
}
