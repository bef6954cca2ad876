/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Path globs of the policy language, compiled once into a list of ops:
 *   "*"   any bytes within one component (never '/'),
 *   "?"   one byte other than '/',
 *   "**"  any bytes, '/' included; a "**" standing alone as a component
 *         also matches no component at all, so the pattern /a/ ** /b (without
 *         the blanks) matches /a/b, /a/x/b and /a/x/y/b.
 * A wildcard that came from an escape (or a quoted "\*") is a literal byte:
 * the caller passes a per-byte "escaped" flag. Everything else is bytes. */

typedef enum GlobOpType {
        GLOB_LIT,    /* bytes[off .. off+len) */
        GLOB_QMARK,
        GLOB_STAR,
        GLOB_DSTAR,
        GLOB_DIRS,   /* a whole "**" component and its '/': "" or anything ending in '/' */
} GlobOpType;

typedef struct GlobOp {
        uint8_t type;
        uint32_t off;
        uint32_t len;
} GlobOp;

#define GLOB_WILDCARDS_MAX 64

typedef struct Glob {
        uint8_t *bytes;     /* the literal bytes of all GLOB_LIT ops */
        GlobOp *ops;
        size_t n_ops;
        size_t prefix_len;  /* literal bytes before the first wildcard */
        size_t suffix_len;  /* literal bytes after the last wildcard */
        size_t min_len;     /* no shorter path can match */
        bool literal;       /* no wildcard at all: bytes is the path */
} Glob;

/* Compile pattern s (n bytes; esc[i] true when s[i] was escaped, esc may be
 * NULL). Checks that it is an absolute path without empty, "." or ".."
 * components or a trailing '/'. On error returns -EINVAL with a static
 * message (what was wrong, what was expected) and the byte offset it applies
 * to in *ret_error / *ret_offset; -ENOMEM. */
int glob_compile(const uint8_t *s, const bool *esc, size_t n, Glob *ret,
                 const char **ret_error, size_t *ret_offset);
void glob_done(Glob *g);

/* Whether the whole path text matches. */
bool glob_match(const Glob *g, const uint8_t *text, size_t len);

/* Whether some path strictly below directory dir (len bytes, no trailing
 * '/' except for "/") might match. Conservative: may say true wrongly, never
 * false wrongly. */
bool glob_may_match_below(const Glob *g, const uint8_t *dir, size_t len);

/* Whether some path directly in directory dir (dir + "/" + a name without
 * '/') might match. Conservative like glob_may_match_below: false only when
 * the glob's literal prefix leaves dir or names a deeper directory. */
bool glob_may_match_child(const Glob *g, const uint8_t *dir, size_t len);

/* Whether the glob matches every path strictly below dir: the glob is a
 * literal prefix of dir + "/" followed by a trailing "**". */
bool glob_covers_below(const Glob *g, const uint8_t *dir, size_t len);

/* Equal patterns (same ops, same bytes). */
bool glob_equal(const Glob *a, const Glob *b);
