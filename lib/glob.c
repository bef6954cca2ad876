/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Path globs: compile a pattern once, match it many times.
 *
 * The matcher is a backtracking one in the manner of git's wildmatch: a "*"
 * that reaches a '/' and a star loop that runs out of text tell the callers
 * that trying further positions cannot help, which keeps patterns with many
 * stars polynomial. Literal runs are compared with memcmp and skipped to with
 * memchr. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glob.h"
#include "grow.h"
#include "macro.h"

enum {
        M_MATCH,
        M_NOMATCH,
        M_ABORT_ALL,       /* the text ran out: starting later cannot help */
        M_ABORT_TO_DSTAR,  /* a '*' met a '/': only an enclosing "**" may go on */
};

void glob_done(Glob *g) {
        if (!g)
                return;
        free(g->bytes);
        free(g->ops);
        *g = (Glob) {};
}

static int push_op(Glob *g, size_t *cap, GlobOpType type, uint32_t off, uint32_t len) {
        if (type == GLOB_LIT && len == 0)
                return 0;
        /* Adjacent literals (a literal '*' between two runs) merge into one. */
        if (type == GLOB_LIT && g->n_ops > 0 && g->ops[g->n_ops - 1].type == GLOB_LIT &&
            g->ops[g->n_ops - 1].off + g->ops[g->n_ops - 1].len == off) {
                g->ops[g->n_ops - 1].len += len;
                return 0;
        }
        if (GROW(g->ops, *cap, g->n_ops + 1, 8) < 0)
                return -ENOMEM;
        g->ops[g->n_ops++] = (GlobOp) { .type = type, .off = off, .len = len };
        return 0;
}

static int check_components(const uint8_t *s, size_t n, const char **ret_error, size_t *ret_offset) {
        if (n == 0 || s[0] != '/') {
                *ret_error = "path is not absolute, expected a pattern starting with '/'";
                *ret_offset = 0;
                return -EINVAL;
        }
        if (n == 1)
                return 0;
        if (s[n - 1] == '/') {
                *ret_error = "path ends in '/', expected a file or directory name (use '/**' for everything below)";
                *ret_offset = n - 1;
                return -EINVAL;
        }
        for (size_t i = 1, start = 1; i <= n; i++) {
                if (i < n && s[i] != '/')
                        continue;
                size_t l = i - start;
                if (l == 0) {
                        *ret_error = "empty path component '//', expected a single '/'";
                        *ret_offset = start;
                        return -EINVAL;
                }
                if ((l == 1 && s[start] == '.') || (l == 2 && s[start] == '.' && s[start + 1] == '.')) {
                        *ret_error = "'.' or '..' path component, expected a canonical path";
                        *ret_offset = start;
                        return -EINVAL;
                }
                start = i + 1;
        }
        return 0;
}

int glob_compile(const uint8_t *s, const bool *esc, size_t n, Glob *ret,
                 const char **ret_error, size_t *ret_offset) {
        _cleanup_(glob_done) Glob g = {};
        size_t cap = 0, lit_start = 0, n_wild = 0;
        int r;

        r = check_components(s, n, ret_error, ret_offset);
        if (r < 0)
                return r;

        g.bytes = malloc(n ? n : 1);
        if (!g.bytes)
                return -ENOMEM;
        memcpy(g.bytes, s, n);

        for (size_t i = 0; i < n; i++) {
                bool wild = (s[i] == '*' || s[i] == '?') && !(esc && esc[i]);
                if (!wild)
                        continue;

                if (++n_wild > GLOB_WILDCARDS_MAX) {
                        *ret_error = "too many wildcards, expected at most 64 in one pattern";
                        *ret_offset = i;
                        return -EINVAL;
                }
                if (s[i] == '?') {
                        r = push_op(&g, &cap, GLOB_LIT, lit_start, i - lit_start);
                        if (r >= 0)
                                r = push_op(&g, &cap, GLOB_QMARK, 0, 0);
                        if (r < 0)
                                return r;
                        lit_start = i + 1;
                        continue;
                }

                bool dbl = i + 1 < n && s[i + 1] == '*' && !(esc && esc[i + 1]);
                if (dbl && i + 2 < n && s[i + 2] == '*' && !(esc && esc[i + 2])) {
                        *ret_error = "'***' in pattern, expected '*' or '**'";
                        *ret_offset = i;
                        return -EINVAL;
                }
                if (dbl && s[i - 1] == '/' && i + 2 < n && s[i + 2] == '/') {
                        /* A whole "**" component: the slash before stays literal, "**" and the slash after become DIRS. */
                        r = push_op(&g, &cap, GLOB_LIT, lit_start, i - lit_start);
                        if (r >= 0)
                                r = push_op(&g, &cap, GLOB_DIRS, 0, 0);
                        if (r < 0)
                                return r;
                        i += 2;
                        lit_start = i + 1;
                        continue;
                }
                r = push_op(&g, &cap, GLOB_LIT, lit_start, i - lit_start);
                if (r >= 0)
                        r = push_op(&g, &cap, dbl ? GLOB_DSTAR : GLOB_STAR, 0, 0);
                if (r < 0)
                        return r;
                if (dbl)
                        i++;
                lit_start = i + 1;
        }
        r = push_op(&g, &cap, GLOB_LIT, lit_start, n - lit_start);
        if (r < 0)
                return r;

        g.literal = n_wild == 0;
        g.prefix_len = g.n_ops > 0 && g.ops[0].type == GLOB_LIT ? g.ops[0].len : 0;
        g.suffix_len = g.n_ops > 1 && g.ops[g.n_ops - 1].type == GLOB_LIT ? g.ops[g.n_ops - 1].len : 0;
        for (size_t i = 0; i < g.n_ops; i++)
                g.min_len += g.ops[i].type == GLOB_LIT ? g.ops[i].len : g.ops[i].type == GLOB_QMARK;
        /* A trailing "/" "**" means everything below: at least one byte more ("/" is not below "/"). */
        if (g.n_ops >= 2 && g.ops[g.n_ops - 1].type == GLOB_DSTAR && g.ops[g.n_ops - 2].type == GLOB_LIT &&
            s[g.ops[g.n_ops - 2].off + g.ops[g.n_ops - 2].len - 1] == '/')
                g.min_len++;

        *ret = g;
        g = (Glob) {};
        return 0;
}

static int match_ops(const Glob *g, size_t i, const uint8_t *t, const uint8_t *end, bool partial);

/* Try the ops from i at every position from t up to lim (inclusive), skipping
 * positions where a following literal cannot start. */
static int star_loop(const Glob *g, size_t i, const uint8_t *t, const uint8_t *lim,
                     const uint8_t *end, bool partial, bool dstar) {
        const GlobOp *next = i < g->n_ops ? &g->ops[i] : NULL;
        uint8_t first = next && next->type == GLOB_LIT ? g->bytes[next->off] : 0;

        for (const uint8_t *p = t;; p++) {
                if (first && p < lim && *p != first) {
                        p = memchr(p, first, lim - p);
                        if (!p)
                                p = lim;
                }
                int r = match_ops(g, i, p, end, partial);
                if (r == M_MATCH || r == M_ABORT_ALL)
                        return r;
                if (r == M_ABORT_TO_DSTAR && !dstar)
                        return r;
                if (p >= lim)
                        break;
        }
        return M_ABORT_ALL;
}

static int match_ops(const Glob *g, size_t i, const uint8_t *t, const uint8_t *end, bool partial) {
        for (; i < g->n_ops; i++) {
                const GlobOp *op = &g->ops[i];
                size_t left = end - t;

                switch (op->type) {
                case GLOB_LIT:
                        if (left < op->len) {
                                /* In partial mode the text is a directory prefix: running
                                 * out inside a literal that continues it is a match. */
                                if (partial && memcmp(t, g->bytes + op->off, left) == 0)
                                        return M_MATCH;
                                return partial ? M_NOMATCH : M_ABORT_ALL;
                        }
                        if (memcmp(t, g->bytes + op->off, op->len) != 0)
                                return M_NOMATCH;
                        t += op->len;
                        break;

                case GLOB_QMARK:
                        if (left == 0)
                                return partial ? M_MATCH : M_ABORT_ALL;
                        if (*t == '/')
                                return M_NOMATCH;
                        t++;
                        break;

                case GLOB_STAR: {
                        const uint8_t *slash = memchr(t, '/', left);
                        if (i + 1 == g->n_ops)
                                return slash ? M_ABORT_TO_DSTAR : M_MATCH;
                        int r = star_loop(g, i + 1, t, slash ? slash : end, end, partial, false);
                        if (r == M_ABORT_ALL && slash)
                                return M_ABORT_TO_DSTAR;
                        return r;
                }

                case GLOB_DSTAR:
                        if (i + 1 == g->n_ops || partial)
                                return M_MATCH;
                        return star_loop(g, i + 1, t, end, end, partial, true);

                case GLOB_DIRS: {
                        if (partial)
                                return M_MATCH;
                        int r = match_ops(g, i + 1, t, end, partial);
                        if (r == M_MATCH || r == M_ABORT_ALL)
                                return r;
                        for (const uint8_t *p = t; (p = memchr(p, '/', end - p)); ) {
                                p++;
                                r = match_ops(g, i + 1, p, end, partial);
                                if (r == M_MATCH || r == M_ABORT_ALL)
                                        return r;
                        }
                        return M_ABORT_ALL;
                }
                }
        }
        return t == end ? M_MATCH : M_NOMATCH;
}

bool glob_match(const Glob *g, const uint8_t *text, size_t len) {
        if (len < g->min_len)
                return false;
        if (g->literal)
                return len == g->prefix_len && memcmp(text, g->bytes, len) == 0;
        if (memcmp(text, g->bytes, g->prefix_len) != 0)
                return false;
        if (g->suffix_len > 0 &&
            memcmp(text + len - g->suffix_len, g->bytes + g->ops[g->n_ops - 1].off, g->suffix_len) != 0)
                return false;
        size_t first = g->prefix_len > 0 ? 1 : 0;
        return match_ops(g, first, text + g->prefix_len, text + len, false) == M_MATCH;
}

/* dir + "/" as the text below which we ask; "/" stays "/". Returns its length
 * in buf, or 0 when it does not fit (callers then answer conservatively). */
static size_t dir_slash(const uint8_t *dir, size_t len, uint8_t *buf, size_t size) {
        if (len == 1 && dir[0] == '/')
                len = 0;
        if (len + 1 > size)
                return 0;
        memcpy(buf, dir, len);
        buf[len] = '/';
        return len + 1;
}

bool glob_may_match_below(const Glob *g, const uint8_t *dir, size_t len) {
        uint8_t buf[4096];
        size_t n = dir_slash(dir, len, buf, sizeof buf);
        if (n == 0)
                return true;
        if (g->literal)
                return g->prefix_len > n && memcmp(g->bytes, buf, n) == 0;
        return match_ops(g, 0, buf, buf + n, true) == M_MATCH;
}

bool glob_may_match_child(const Glob *g, const uint8_t *dir, size_t len) {
        uint8_t buf[4096];
        size_t n = dir_slash(dir, len, buf, sizeof buf);
        if (n == 0)
                return true;
        size_t k = MIN(n, g->prefix_len);
        if (memcmp(g->bytes, buf, k) != 0)
                return false; /* the prefix leaves dir */
        /* a '/' in the prefix beyond dir + "/": only deeper paths match */
        return g->prefix_len <= n || !memchr(g->bytes + n, '/', g->prefix_len - n);
}

bool glob_covers_below(const Glob *g, const uint8_t *dir, size_t len) {
        uint8_t buf[4096];
        size_t n = dir_slash(dir, len, buf, sizeof buf);
        if (n == 0)
                return false;
        /* Exactly LIT(prefix of dir/) DSTAR, or a lone DSTAR. */
        if (g->n_ops == 2 && g->ops[0].type == GLOB_LIT && g->ops[1].type == GLOB_DSTAR)
                return g->ops[0].len <= n && memcmp(g->bytes, buf, g->ops[0].len) == 0 &&
                       g->bytes[g->ops[0].len - 1] == '/';
        return false;
}

bool glob_equal(const Glob *a, const Glob *b) {
        if (a->n_ops != b->n_ops)
                return false;
        for (size_t i = 0; i < a->n_ops; i++) {
                const GlobOp *x = &a->ops[i], *y = &b->ops[i];
                if (x->type != y->type || x->len != y->len)
                        return false;
                if (x->type == GLOB_LIT && memcmp(a->bytes + x->off, b->bytes + y->off, x->len) != 0)
                        return false;
        }
        return true;
}
