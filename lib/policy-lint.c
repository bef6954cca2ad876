/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What `iverctl policy check` shows beyond syntax errors: rules that can
 * never match, and each compiled rule written back as canonical text. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "policy-internal.h"
#include "pseudofs.h"

#define NONE UINT32_MAX

static uint64_t glob_hash(const Glob *g) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t i = 0; i < g->n_ops; i++) {
                const GlobOp *op = &g->ops[i];
                h = (h ^ op->type) * 0x100000001b3ull;
                if (op->type == GLOB_LIT)
                        for (uint32_t k = 0; k < op->len; k++)
                                h = (h ^ g->bytes[op->off + k]) * 0x100000001b3ull;
        }
        return h;
}

static bool rule_unconditional(const IverRule *r) {
        return !(r->set & COND_ATTR_MASK);
}

/* The first pseudo filesystem mount point in dirs a rule's path can reach
 * (a file strictly below it may match), or NULL. */
static const char *reaches(const IverRule *rule, char *const *dirs) {
        for (size_t i = 0; dirs && dirs[i]; i++)
                if (glob_may_match_below(&rule->path, (const uint8_t *) dirs[i], strlen(dirs[i])))
                        return dirs[i];
        return NULL;
}

/* measure/appraise rules whose path can reach a pseudo filesystem: iverd
 * never hashes a file there (lib/pseudofs.h), so say so. The conventional
 * mount points and the live mount table are both checked. */
int policy_warn_pseudo(PolicyBuilder *b) {
        const IverPolicy *p = b->policy;
        char **live = NULL;
        int r = iver_pseudo_fs_mounts(&live);
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n_rules && r >= 0; i++) {
                const IverRule *rule = &p->rules[i];
                if ((rule->action != IVER_ACTION_MEASURE && rule->action != IVER_ACTION_APPRAISE) ||
                    !(rule->set & (1u << COND_PATH)))
                        continue;
                const char *dir = reaches(rule, (char *const *) iver_pseudo_fs_dirs) ?: reaches(rule, live);
                if (!dir)
                        continue;
                r = policy_diag_add(b->diags, IVER_DIAG_WARNING, p->files[rule->file], rule->line, 1,
                                    "path can reach %s, a pseudo filesystem: files there are never measured "
                                    "(the kernel makes their content on read), expected a path outside "
                                    "proc, sysfs, debugfs and the like", dir);
        }
        iver_strv_free(live);
        return r < 0 ? r : 0;
}

/* A rule is unreachable when an earlier rule of its class without attribute
 * conditions matches every path it could: one with no path= or the pattern
 * that is "/" and "**" (all but "/" itself), or one with the same pattern. Cheap cases only; the
 * general question (glob inclusion) is not worth its cost here. */
int policy_warn_shadowed(PolicyBuilder *b) {
        const IverPolicy *p = b->policy;
        uint32_t catch_all[_IVER_CLASS_MAX] = { NONE, NONE };
        _cleanup_free_ uint32_t *table = NULL;
        size_t size = 16;
        int r;

        while (size < p->n_rules * 2)
                size *= 2;
        table = malloc(size * sizeof(uint32_t));
        if (!table)
                return -ENOMEM;
        memset(table, 0xff, size * sizeof(uint32_t));

        for (size_t i = 0; i < p->n_rules; i++) {
                const IverRule *rule = &p->rules[i];
                IverPolicyClass c = iver_policy_action_class(rule->action);
                bool has_path = rule->set & (1u << COND_PATH);
                uint32_t by = NONE;

                if (catch_all[c] != NONE) {
                        const IverRule *e = &p->rules[catch_all[c]];
                        bool root_only = has_path && rule->path.literal && rule->path_len == 1;
                        if (!(e->set & (1u << COND_PATH)) || !root_only)
                                by = catch_all[c];
                }
                size_t slot = 0;
                if (by == NONE && has_path) {
                        for (slot = glob_hash(&rule->path) & (size - 1); table[slot] != NONE; slot = (slot + 1) & (size - 1)) {
                                const IverRule *e = &p->rules[table[slot]];
                                if (iver_policy_action_class(e->action) == c && glob_equal(&e->path, &rule->path)) {
                                        by = table[slot];
                                        break;
                                }
                        }
                }
                if (by != NONE) {
                        const IverRule *e = &p->rules[by];
                        r = policy_diag_add(b->diags, IVER_DIAG_WARNING, p->files[rule->file], rule->line, 1,
                                            "rule can never match: the rule at %s:%u decides every path it could match, expected specific rules before general ones",
                                            p->files[e->file], e->line);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!rule_unconditional(rule))
                        continue;
                if (!has_path || glob_covers_below(&rule->path, (const uint8_t *) "/", 1)) {
                        if (catch_all[c] == NONE)
                                catch_all[c] = (uint32_t) i;
                } else
                        table[slot] = (uint32_t) i;
        }
        return 0;
}

/* ---- formatting ---- */

typedef struct Buf {
        char *s;
        size_t len, cap;
        int err;
} Buf;

__attribute__((format(printf, 2, 3)))
static void buf_printf(Buf *b, const char *fmt, ...) {
        va_list ap;
        if (b->err)
                return;
        for (;;) {
                va_start(ap, fmt);
                int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
                va_end(ap);
                if (k < 0) {
                        b->err = -EINVAL;
                        return;
                }
                if (b->s && b->len + (size_t) k < b->cap) {
                        b->len += (size_t) k;
                        return;
                }
                size_t ncap = (b->cap + (size_t) k + 64) * 2;
                char *n = realloc(b->s, ncap);
                if (!n) {
                        b->err = -ENOMEM;
                        return;
                }
                b->s = n;
                b->cap = ncap;
        }
}

static void format_path(Buf *b, const IverRule *r) {
        buf_printf(b, " path=\"");
        for (size_t i = 0; i < r->path_len; i++) {
                uint8_t c = r->path_src[i];
                if ((c == '*' || c == '?') && r->path_esc[i])
                        buf_printf(b, "\\%c", c);
                else if (c == '"' || c == '\\')
                        buf_printf(b, "\\%c", c);
                else if (c >= 0x20 && c < 0x7f)
                        buf_printf(b, "%c", c);
                else
                        buf_printf(b, "\\x%02x", c);
        }
        buf_printf(b, "\"");
}

static void format_mode(Buf *b, const IverRule *r) {
        static const struct { const char *name; uint32_t bits; } names[] = {
                { "exec", 0111 }, { "setuid", 04000 }, { "setgid", 02000 }, { "sticky", 01000 },
        };
        if (r->mode_kind == MODE_EXACT) {
                buf_printf(b, " mode=%04o", r->mode);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (names[i].bits == r->mode) {
                        buf_printf(b, " mode=%s", names[i].name);
                        return;
                }
        buf_printf(b, " mode=&%04o", r->mode);
}

int iver_policy_rule_format(const IverPolicy *p, size_t i, char **ret) {
        Buf b = {};

        if (!p || i >= p->n_rules)
                return -EINVAL;
        const IverRule *r = &p->rules[i];
        buf_printf(&b, "%s", iver_policy_action_to_string(r->action));
        if (r->set & (1u << COND_PATH))
                format_path(&b, r);
        if (r->set & (1u << COND_FSTYPE)) {
                const char *n = iver_fstype_to_name(r->fs_magic);
                if (n)
                        buf_printf(&b, " fstype=%s", n);
                else
                        buf_printf(&b, " fstype=0x%llx", (unsigned long long) r->fs_magic);
        }
        if (r->set & (1u << COND_UID))
                buf_printf(&b, " uid=%u", r->uid);
        if (r->set & (1u << COND_FOWNER))
                buf_printf(&b, " fowner=%u", r->fowner);
        if (r->set & (1u << COND_MODE))
                format_mode(&b, r);
        if (r->set & (1u << COND_SIZE_GE))
                buf_printf(&b, " size>=%llu", (unsigned long long) r->size_ge);
        if (r->set & (1u << COND_SIZE_LE))
                buf_printf(&b, " size<=%llu", (unsigned long long) r->size_le);
        if (r->set & (1u << COND_FUNC))
                buf_printf(&b, " func=%s", r->func == IVER_FUNC_OPEN ? "FILE_CHECK" : "BPRM_CHECK");
        if (r->set & (1u << COND_MASK))
                buf_printf(&b, " mask=%s%s", r->mask_any ? "^" : "",
                           r->mask == IVER_MAY_EXEC ? "MAY_EXEC" : r->mask == IVER_MAY_WRITE ? "MAY_WRITE" :
                           r->mask == IVER_MAY_READ ? "MAY_READ" : "MAY_APPEND");
        if (r->set & (1u << OPT_PCR))
                buf_printf(&b, " pcr=%d", r->pcr);
        if (r->set & (1u << OPT_HASH))
                buf_printf(&b, " hash=%s", iver_hash_algo_to_string(r->hash));
        if (r->set & (1u << OPT_TEMPLATE))
                buf_printf(&b, " template=%s", iver_imalog_template_to_string(r->template_));
        if (b.err) {
                free(b.s);
                return b.err;
        }
        *ret = b.s;
        return 0;
}
