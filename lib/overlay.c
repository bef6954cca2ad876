/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Overlay mounts from /proc/self/mountinfo: layers and the merged path of a
 * path below one. The kernel writes each super option with seq_show_option()
 * (',', ' ', '\t', '\n' and '\\' as \ooo), and the lowerdir= value as the
 * mounter gave it, where "\:" is a colon and "\\" a backslash inside a layer
 * name, ':' separates layers and "::" starts the data-only ones. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "overlay.h"

static void strv_free(char **v, size_t n) {
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
}

IverOverlay *iver_overlay_free(IverOverlay *o) {
        if (!o)
                return NULL;
        free(o->mount);
        free(o->upper);
        free(o->work);
        strv_free(o->lower, o->n_lower);
        strv_free(o->data, o->n_data);
        free(o);
        return NULL;
}

void iver_mountinfo_unescape(char *s) {
        char *w = s;
        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
                    s[3] <= '7') {
                        *w++ = (char) ((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
                        s += 3;
                } else
                        *w++ = *s;
        }
        *w = 0;
}

/* Append a copy of s to the NULL-terminated *v of *n entries. */
static int strv_push(char ***v, size_t *n, const char *s, size_t len) {
        char **nv = realloc(*v, (*n + 2) * sizeof(char *));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        if (!(nv[*n] = strndup(s, len)))
                return -ENOMEM;
        nv[++*n] = NULL;
        return 0;
}

/* Split a lowerdir= value (unescaped from mountinfo already) into layers:
 * "\x" is x, ':' ends a layer, "::" ends the last layer that has names. */
static int split_lowerdir(IverOverlay *o, const char *v) {
        size_t len = strlen(v);
        _cleanup_free_ char *cur = malloc(len + 1);
        size_t k = 0;
        bool data = false;
        if (!cur)
                return -ENOMEM;
        for (size_t i = 0;; i++) {
                if (v[i] == '\\') {
                        if (!v[i + 1])
                                return -EINVAL; /* an escape of nothing */
                        cur[k++] = v[++i];
                        continue;
                }
                if (v[i] != ':' && v[i] != 0) {
                        cur[k++] = v[i];
                        continue;
                }
                if (k == 0)
                        return -EINVAL; /* an empty layer: "a::" at the end, ":a", "a:::b" */
                int r = data ? strv_push(&o->data, &o->n_data, cur, k) : strv_push(&o->lower, &o->n_lower, cur, k);
                if (r < 0)
                        return r;
                k = 0;
                if (v[i] == 0)
                        return 0;
                if (v[i + 1] == ':') {
                        data = true; /* "/l1:/l2::/do1::/do2": every layer after the first "::" */
                        i++;
                }
        }
}

/* One super option "key=value" (escaped): the layers it names. */
static int parse_option(IverOverlay *o, char *opt) {
        char *eq = strchr(opt, '=');
        if (!eq)
                return 0; /* a flag: "rw", "userxattr" */
        *eq = 0;
        char *v = eq + 1;
        iver_mountinfo_unescape(v);
        if (strcmp(opt, "lowerdir") == 0) {
                if (o->n_lower > 0 || o->n_data > 0)
                        return -EINVAL;
                return split_lowerdir(o, v);
        }
        char **slot = strcmp(opt, "upperdir") == 0 ? &o->upper : strcmp(opt, "workdir") == 0 ? &o->work : NULL;
        if (slot) {
                if (!*v || *slot)
                        return -EINVAL;
                return (*slot = strdup(v)) ? 0 : -ENOMEM;
        }
        /* Linux 6.8+: one layer an option, no ':' escaping */
        bool lower = strcmp(opt, "lowerdir+") == 0, data = strcmp(opt, "datadir+") == 0;
        if (!lower && !data)
                return 0;
        if (!*v || (lower && o->n_data > 0))
                return -EINVAL; /* the data-only layers come last */
        return lower ? strv_push(&o->lower, &o->n_lower, v, strlen(v)) : strv_push(&o->data, &o->n_data, v, strlen(v));
}

int iver_overlay_parse(const char *mount, const char *super_opts, IverOverlay **ret) {
        _cleanup_(iver_overlay_freep) IverOverlay *o = calloc(1, sizeof(*o));
        _cleanup_free_ char *opts = strdup(super_opts);
        if (!o || !opts || !(o->mount = strdup(mount)) || !(o->lower = calloc(1, sizeof(char *))) ||
            !(o->data = calloc(1, sizeof(char *))))
                return -ENOMEM;
        char *save = NULL;
        for (char *opt = strtok_r(opts, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
                int r = parse_option(o, opt);
                if (r < 0)
                        return r;
        }
        if (o->n_lower == 0 || !o->mount[0] || (!o->upper != !o->work))
                return -EINVAL;
        *ret = TAKE_PTR(o);
        return 0;
}

/* The n-th space-separated field of line (from 0), its length in *ret_len. */
static const char *field(const char *line, unsigned n, size_t *ret_len) {
        const char *p = line;
        for (unsigned i = 0;; i++) {
                size_t len = strcspn(p, " \n");
                if (i == n) {
                        *ret_len = len;
                        return len ? p : NULL;
                }
                if (p[len] != ' ')
                        return NULL;
                p += len + 1;
        }
}

int iver_overlay_from_mountinfo(const char *line, IverOverlay **ret) {
        size_t mlen, tlen, olen;
        const char *mnt = field(line, 4, &mlen);
        const char *sep = strstr(line, " - ");
        if (!mnt || !sep || sep < mnt + mlen)
                return -EINVAL;
        const char *type = field(sep + 3, 0, &tlen), *opts = field(sep + 3, 2, &olen);
        if (!type)
                return -EINVAL;
        if (tlen != 7 || memcmp(type, "overlay", 7) != 0) {
                *ret = NULL;
                return 0;
        }
        if (!opts)
                return -EINVAL;
        _cleanup_free_ char *m = strndup(mnt, mlen), *o = strndup(opts, olen);
        if (!m || !o)
                return -ENOMEM;
        iver_mountinfo_unescape(m);
        return iver_overlay_parse(m, o, ret);
}

size_t iver_overlay_layers(const IverOverlay *o) {
        return o->n_lower + !!o->upper;
}

const char *iver_overlay_layer(const IverOverlay *o, size_t i) {
        if (o->upper && i-- == 0)
                return o->upper;
        return i < o->n_lower ? o->lower[i] : NULL;
}

void iver_overlay_set_layer(IverOverlay *o, size_t i, char *path) {
        size_t up = o->upper ? 1 : 0;
        char **slot = up && i == 0 ? &o->upper : i - up < o->n_lower ? &o->lower[i - up] : NULL;
        if (!slot) {
                free(path);
                return;
        }
        free(*slot);
        *slot = path;
}

int iver_overlay_map(const IverOverlay *o, const char *path, char **ret_merged) {
        for (size_t i = 0; i < iver_overlay_layers(o); i++) {
                const char *root = iver_overlay_layer(o, i);
                size_t n = strlen(root);
                while (n > 1 && root[n - 1] == '/')
                        n--;
                if (strncmp(path, root, n) != 0)
                        continue;
                const char *rel = path + n;
                if (n == 1 && root[0] == '/')
                        rel = path; /* a layer at "/": every absolute path is below it */
                else if (*rel != 0 && *rel != '/')
                        continue; /* "/a/upperx" is not below "/a/upper" */
                if (ret_merged) {
                        size_t m = strlen(o->mount);
                        bool root_mount = m == 1 && o->mount[0] == '/';
                        char *s = malloc(m + strlen(rel) + 2);
                        if (!s)
                                return -ENOMEM;
                        strcpy(s, root_mount && *rel ? "" : o->mount);
                        strcat(s, rel);
                        *ret_merged = s;
                }
                return (int) i;
        }
        return -ENOENT;
}
