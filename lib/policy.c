/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy parser: a line tokenizer and a keyword → parser → field table.
 *
 * A rule is ACTION followed by words KEY=VALUE (KEY<=VALUE, KEY>=VALUE for
 * size). A value is bare (up to the next blank) or "double-quoted"; both
 * take backslash escapes, so any byte but NUL can be written. Every mistake
 * is reported at its line and column and parsing goes on with the next line,
 * so one run reports every error; a single error rejects the policy. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "grow.h"
#include "policy-internal.h"

typedef struct Parser {
        PolicyBuilder *b;
        const char *file_name;
        size_t file;
        unsigned line;
        /* The value being decoded: bytes, escaped flags, source column of each. */
        uint8_t *val;
        bool *esc;
        uint32_t *col;
        size_t val_len, val_cap;
        unsigned val_col;      /* column of the value's first byte (or quote) */
        int oom;
        char repr[160];
} Parser;

static bool is_blank(uint8_t c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Printable, shortened form of a token for messages. */
static const char *repr(Parser *ps, const uint8_t *s, size_t n) {
        size_t o = 0, i;
        for (i = 0; i < n && o + 8 < sizeof ps->repr - 4; i++) {
                uint8_t c = s[i];
                if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
                        ps->repr[o++] = (char) c;
                else
                        o += snprintf(ps->repr + o, sizeof ps->repr - o, "\\x%02x", c);
        }
        if (i < n)
                o += snprintf(ps->repr + o, sizeof ps->repr - o, "...");
        ps->repr[o] = 0;
        return ps->repr;
}

__attribute__((format(printf, 4, 5)))
static void error_at(Parser *ps, unsigned column, IverDiagLevel level, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        int k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0 || policy_diag_add(ps->b->diags, level, ps->file_name, ps->line, column, "%s", m) < 0)
                ps->oom = -ENOMEM;
}
#define error(ps, column, ...) error_at(ps, column, IVER_DIAG_ERROR, __VA_ARGS__)

/* ---- values ---- */

typedef struct Value {
        const uint8_t *s;     /* NUL-terminated copy of the decoded bytes */
        const bool *esc;
        const uint32_t *col;
        size_t len;
} Value;

static int val_push(Parser *ps, uint8_t c, bool escaped, unsigned column) {
        if (ps->val_len + 1 >= ps->val_cap) {
                size_t ncap = ps->val_cap ? ps->val_cap * 2 : 256;
                uint8_t *v = realloc(ps->val, ncap);
                if (v)
                        ps->val = v;
                bool *e = realloc(ps->esc, ncap * sizeof(bool));
                if (e)
                        ps->esc = e;
                uint32_t *cl = realloc(ps->col, ncap * sizeof(uint32_t));
                if (cl)
                        ps->col = cl;
                if (!v || !e || !cl)
                        return ps->oom = -ENOMEM;
                ps->val_cap = ncap;
        }
        ps->val[ps->val_len] = c;
        ps->esc[ps->val_len] = escaped;
        ps->col[ps->val_len] = column;
        ps->val_len++;
        ps->val[ps->val_len] = 0;
        return 0;
}


/* Decode one backslash escape at s[*i] (the backslash). */
static int decode_escape(Parser *ps, const uint8_t *s, size_t n, size_t *i) {
        unsigned column = (unsigned) *i + 1;
        if (*i + 1 >= n) {
                error(ps, column, "backslash at the end of the line, expected an escape such as \\\\ or \\xHH");
                return -EINVAL;
        }
        uint8_t c = s[*i + 1], out;
        switch (c) {
        case '\\': case '"': case '\'': case '*': case '?': case '#': case ' ':
                out = c;
                break;
        case 'n': out = '\n'; break;
        case 't': out = '\t'; break;
        case 'r': out = '\r'; break;
        case 'x': {
                int hi = *i + 2 < n ? iver_unhexchar(s[*i + 2]) : -1;
                int lo = *i + 3 < n ? iver_unhexchar(s[*i + 3]) : -1;
                if (hi < 0 || lo < 0) {
                        error(ps, column, "'\\x' not followed by two hex digits, expected \\xHH");
                        return -EINVAL;
                }
                out = (uint8_t) (hi << 4 | lo);
                if (out == 0) {
                        error(ps, column, "'\\x00' in a value, expected a byte other than NUL");
                        return -EINVAL;
                }
                *i += 4;
                return val_push(ps, out, true, column);
        }
        default:
                error(ps, column, "unknown escape '\\%s', expected one of \\\\ \\\" \\' \\n \\t \\r \\* \\? \\# \\(space) or \\xHH",
                      repr(ps, &c, 1));
                return -EINVAL;
        }
        *i += 2;
        return val_push(ps, out, true, column);
}

static int push_raw(Parser *ps, const uint8_t *s, size_t *i) {
        uint8_t c = s[*i];
        unsigned column = (unsigned) *i + 1;
        (*i)++;
        return val_push(ps, c, false, column);
}

/* Read a value starting at s[*i]; leaves *i after it. */
static int read_value(Parser *ps, const uint8_t *s, size_t n, size_t *i) {
        int r;

        ps->val_len = 0;
        ps->val_col = (unsigned) *i + 1;
        if (*i < n && s[*i] == '"') {
                size_t open = (*i)++;
                for (;;) {
                        if (*i >= n) {
                                error(ps, (unsigned) open + 1, "unterminated quoted string, expected a closing '\"'");
                                return -EINVAL;
                        }
                        if (s[*i] == '"')
                                break;
                        r = s[*i] == '\\' ? decode_escape(ps, s, n, i) : push_raw(ps, s, i);
                        if (r < 0)
                                return r;
                }
                (*i)++;
                if (*i < n && !is_blank(s[*i])) {
                        error(ps, (unsigned) *i + 1, "unexpected '%s' after a closing quote, expected a blank or the end of the line",
                              repr(ps, s + *i, 1));
                        return -EINVAL;
                }
                return 0;
        }
        while (*i < n && !is_blank(s[*i])) {
                if (s[*i] == '"') {
                        error(ps, (unsigned) *i + 1, "unexpected '\"' inside an unquoted value, expected the whole value in quotes");
                        return -EINVAL;
                }
                r = s[*i] == '\\' ? decode_escape(ps, s, n, i) : push_raw(ps, s, i);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- condition and option parsers ---- */

static bool parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;
        if (!*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                if (v > (max - (uint64_t) (*s - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *ret = v;
        return true;
}

static bool parse_octal(const char *s, uint32_t *ret) {
        uint32_t v = 0;
        if (!*s || strlen(s) > 5)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '7')
                        return false;
                v = v * 8 + (uint32_t) (*s - '0');
        }
        if (v > 07777)
                return false;
        *ret = v;
        return true;
}

static int parse_path(Parser *ps, IverRule *r, const Value *v) {
        const char *msg = NULL;
        size_t off = 0;
        int k = glob_compile(v->s, v->esc, v->len, &r->path, &msg, &off);
        if (k == -EINVAL) {
                error(ps, off < v->len ? v->col[off] : ps->val_col, "%s", msg);
                return k;
        }
        if (k < 0)
                return ps->oom = k;
        r->path_src = malloc(v->len + 1);
        r->path_esc = malloc(v->len + 1);
        if (!r->path_src || !r->path_esc)
                return ps->oom = -ENOMEM;
        memcpy(r->path_src, v->s, v->len);
        memcpy(r->path_esc, v->esc, v->len * sizeof(bool));
        r->path_len = v->len;
        return 0;
}

static int parse_fstype(Parser *ps, IverRule *r, const Value *v) {
        const char *s = (const char *) v->s;
        uint64_t m = iver_fstype_from_name(s);
        if (m == 0 && (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2])) {
                char *end;
                errno = 0;
                unsigned long long x = strtoull(s + 2, &end, 16);
                if (errno == 0 && !*end && x > 0 && x <= UINT32_MAX && iver_unhexchar((uint8_t) s[2]) >= 0)
                        m = x;
        }
        if (m == 0) {
                error(ps, ps->val_col, "unknown filesystem type '%s', expected a name such as ext4, xfs, btrfs or tmpfs, or a magic number such as 0xef53",
                      repr(ps, v->s, v->len));
                return -EINVAL;
        }
        r->fs_magic = m;
        return 0;
}

static int parse_uid_value(Parser *ps, const Value *v, const char *what, uint32_t *ret) {
        uint64_t x;
        if (!parse_u64((const char *) v->s, UINT32_MAX - 1, &x)) {
                error(ps, ps->val_col, "invalid %s '%s', expected a decimal number from 0 to 4294967294",
                      what, repr(ps, v->s, v->len));
                return -EINVAL;
        }
        *ret = (uint32_t) x;
        return 0;
}

static int parse_uid(Parser *ps, IverRule *r, const Value *v) {
        return parse_uid_value(ps, v, "uid", &r->uid);
}

static int parse_fowner(Parser *ps, IverRule *r, const Value *v) {
        return parse_uid_value(ps, v, "fowner", &r->fowner);
}

static int parse_func(Parser *ps, IverRule *r, const Value *v) {
        static const struct { const char *name; IverPolicyFunc func; } names[] = {
                { "FILE_CHECK", IVER_FUNC_OPEN }, { "open", IVER_FUNC_OPEN },
                { "BPRM_CHECK", IVER_FUNC_EXEC }, { "exec", IVER_FUNC_EXEC },
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcmp((const char *) v->s, names[i].name) == 0) {
                        r->func = (uint8_t) names[i].func;
                        return 0;
                }
        error(ps, ps->val_col, "unsupported func '%s', expected FILE_CHECK (open) or BPRM_CHECK (exec)", repr(ps, v->s, v->len));
        return -EINVAL;
}

static int parse_mask(Parser *ps, IverRule *r, const Value *v) {
        static const struct { const char *name; uint32_t bit; } names[] = {
                { "MAY_EXEC", IVER_MAY_EXEC }, { "MAY_WRITE", IVER_MAY_WRITE },
                { "MAY_READ", IVER_MAY_READ }, { "MAY_APPEND", IVER_MAY_APPEND },
        };
        const char *s = (const char *) v->s;
        r->mask_any = s[0] == '^';
        s += r->mask_any;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcmp(s, names[i].name) == 0) {
                        r->mask = names[i].bit;
                        return 0;
                }
        error(ps, ps->val_col, "invalid mask '%s', expected MAY_READ, MAY_WRITE, MAY_APPEND or MAY_EXEC, with ^ for any of the bits",
              repr(ps, v->s, v->len));
        return -EINVAL;
}

static int parse_mode(Parser *ps, IverRule *r, const Value *v) {
        static const struct { const char *name; uint32_t bits; } names[] = {
                { "exec", 0111 }, { "setuid", 04000 }, { "setgid", 02000 }, { "sticky", 01000 },
        };
        const char *s = (const char *) v->s;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcmp(s, names[i].name) == 0) {
                        r->mode_kind = MODE_ANY;
                        r->mode = names[i].bits;
                        return 0;
                }
        if (s[0] == '&' && parse_octal(s + 1, &r->mode) && r->mode != 0) {
                r->mode_kind = MODE_ANY;
                return 0;
        }
        if (parse_octal(s, &r->mode)) {
                r->mode_kind = MODE_EXACT;
                return 0;
        }
        error(ps, ps->val_col, "invalid mode '%s', expected exec, setuid, setgid, sticky, an octal mode such as 0755, or &OCTAL for any of those bits",
              repr(ps, v->s, v->len));
        return -EINVAL;
}

static int parse_size_value(Parser *ps, const Value *v, uint64_t *ret) {
        _cleanup_free_ char *num = strdup((const char *) v->s);
        uint64_t x, mult = 1;
        if (!num)
                return ps->oom = -ENOMEM;
        size_t n = strlen(num);
        if (n > 0) {
                const char *suffixes = "KMGT";
                char c = (char) (num[n - 1] & ~0x20);
                const char *p = c >= 'A' && c <= 'Z' ? strchr(suffixes, c) : NULL;
                if (p) {
                        mult = 1ull << (10 * (p - suffixes + 1));
                        num[n - 1] = 0;
                }
        }
        if (!parse_u64(num, UINT64_MAX / mult, &x)) {
                error(ps, ps->val_col, "invalid size '%s', expected a number of bytes with an optional K, M, G or T suffix",
                      repr(ps, v->s, v->len));
                return -EINVAL;
        }
        *ret = x * mult;
        return 0;
}

static int parse_size_le(Parser *ps, IverRule *r, const Value *v) {
        return parse_size_value(ps, v, &r->size_le);
}

static int parse_size_ge(Parser *ps, IverRule *r, const Value *v) {
        return parse_size_value(ps, v, &r->size_ge);
}

static int parse_pcr(Parser *ps, IverRule *r, const Value *v) {
        uint64_t x;
        if (!parse_u64((const char *) v->s, 23, &x)) {
                error(ps, ps->val_col, "invalid PCR '%s', expected a number from 0 to 23", repr(ps, v->s, v->len));
                return -EINVAL;
        }
        r->pcr = (int) x;
        return 0;
}

static int parse_hash(Parser *ps, IverRule *r, const Value *v) {
        IverHashAlgo a = iver_hash_algo_from_string((const char *) v->s);
        if (a < 0) {
                error(ps, ps->val_col, "unknown hash algorithm '%s', expected sha1, sha256, sha384, sha512 or sm3",
                      repr(ps, v->s, v->len));
                return -EINVAL;
        }
        r->hash = a;
        return 0;
}

static int parse_template(Parser *ps, IverRule *r, const Value *v) {
        IverImaTemplate t = iver_imalog_template_from_string((const char *) v->s);
        /* ima-buf and ima are read from a kernel's list, never written */
        if (t != IVER_IMA_TEMPLATE_NG && t != IVER_IMA_TEMPLATE_SIG) {
                error(ps, ps->val_col, "unknown template '%s', expected ima-ng or ima-sig", repr(ps, v->s, v->len));
                return -EINVAL;
        }
        r->template_ = t;
        return 0;
}

#define ACTIONS_ALL      ((1u << _IVER_ACTION_MAX) - 1)
#define ACTIONS_MEASURE  (1u << IVER_ACTION_MEASURE)
#define ACTIONS_POSITIVE ((1u << IVER_ACTION_MEASURE) | (1u << IVER_ACTION_APPRAISE))

static const struct Keyword {
        const char *key;
        const char *op;
        RuleCond cond;
        unsigned actions;   /* the actions it may appear on */
        const char *expect; /* what a value looks like, for "missing value" */
        int (*parse)(Parser *ps, IverRule *r, const Value *v);
} keywords[] = {
        { "path",     "=",  COND_PATH,    ACTIONS_ALL,      "an absolute path pattern",              parse_path     },
        { "fstype",   "=",  COND_FSTYPE,  ACTIONS_ALL,      "a filesystem name or 0x magic number",  parse_fstype   },
        { "uid",      "=",  COND_UID,     ACTIONS_ALL,      "a numeric uid",                         parse_uid      },
        { "fowner",   "=",  COND_FOWNER,  ACTIONS_ALL,      "a numeric uid",                         parse_fowner   },
        { "mode",     "=",  COND_MODE,    ACTIONS_ALL,      "exec, setuid, setgid, sticky or octal", parse_mode     },
        { "size",     "<=", COND_SIZE_LE, ACTIONS_ALL,      "a size such as 64M",                    parse_size_le  },
        { "size",     ">=", COND_SIZE_GE, ACTIONS_ALL,      "a size such as 64M",                    parse_size_ge  },
        { "func",     "=",  COND_FUNC,    ACTIONS_ALL,      "FILE_CHECK (open) or BPRM_CHECK (exec)", parse_func     },
        { "mask",     "=",  COND_MASK,    ACTIONS_ALL,      "MAY_READ, MAY_EXEC…, ^ for any",        parse_mask     },
        { "pcr",      "=",  OPT_PCR,      ACTIONS_MEASURE,  "a PCR number from 0 to 23",             parse_pcr      },
        { "hash",     "=",  OPT_HASH,     ACTIONS_POSITIVE, "a hash algorithm such as sha256",       parse_hash     },
        { "template", "=",  OPT_TEMPLATE, ACTIONS_MEASURE,  "ima-ng or ima-sig",                     parse_template },
};

static bool is_option(RuleCond c) {
        return c >= OPT_PCR;
}

/* ---- lines ---- */

static int rule_push(PolicyBuilder *b, IverRule *r) {
        IverPolicy *p = b->policy;
        if (GROW(p->rules, b->cap_rules, p->n_rules + 1, 16) < 0)
                return -ENOMEM;
        p->rules[p->n_rules++] = *r;
        *r = (IverRule) {};
        return 0;
}

static int parse_word(Parser *ps, IverRule *r, const uint8_t *s, size_t n, size_t *i, unsigned cols[]) {
        size_t start = *i, k = *i;
        while (k < n && !is_blank(s[k]) && s[k] != '=' && s[k] != '<' && s[k] != '>')
                k++;
        const uint8_t *key = s + start;
        size_t key_len = k - start;
        const char *op = NULL;
        if (k < n && s[k] == '=')
                op = "=";
        else if (k + 1 < n && (s[k] == '<' || s[k] == '>') && s[k + 1] == '=')
                op = s[k] == '<' ? "<=" : ">=";
        if (!op || key_len == 0) {
                size_t e = start;
                while (e < n && !is_blank(s[e]))
                        e++;
                error(ps, (unsigned) start + 1, "'%s' is not a condition or option, expected KEY=VALUE such as path=/usr/bin/**",
                      repr(ps, s + start, e - start));
                return -EINVAL;
        }

        const struct Keyword *kw = NULL;
        bool key_known = false;
        for (size_t j = 0; j < ELEMENTSOF(keywords); j++)
                if (strlen(keywords[j].key) == key_len && memcmp(keywords[j].key, key, key_len) == 0) {
                        key_known = true;
                        if (strcmp(keywords[j].op, op) == 0)
                                kw = &keywords[j];
                }
        if (!key_known) {
                error(ps, (unsigned) start + 1, "unknown condition or option '%s', expected path=, fstype=, uid=, fowner=, mode=, size<=, size>=, func=, mask=, pcr=, hash= or template=",
                      repr(ps, key, key_len));
                return -EINVAL;
        }
        if (!kw) {
                const char *k0 = NULL;
                for (size_t j = 0; j < ELEMENTSOF(keywords); j++)
                        if (strlen(keywords[j].key) == key_len && memcmp(keywords[j].key, key, key_len) == 0)
                                k0 = keywords[j].key;
                if (strcmp(k0, "size") == 0)
                        error(ps, (unsigned) k + 1, "'size' does not take '%s', expected size<= or size>=", op);
                else
                        error(ps, (unsigned) k + 1, "'%s' does not take '%s', expected %s=", k0, op, k0);
                return -EINVAL;
        }
        const char *kind = is_option(kw->cond) ? "option" : "condition";
        if (r->set & (1u << kw->cond)) {
                error(ps, (unsigned) start + 1, "duplicate %s '%s%s', expected each condition and option at most once in a rule",
                      kind, kw->key, kw->op);
                return -EINVAL;
        }
        if (!(kw->actions & (1u << r->action))) {
                error(ps, (unsigned) start + 1, "option '%s%s' does not apply to %s rules, expected it on %s rules only",
                      kw->key, kw->op, iver_policy_action_to_string(r->action),
                      kw->actions == ACTIONS_MEASURE ? "measure" : "measure and appraise");
                return -EINVAL;
        }

        *i = k + strlen(op);
        int q = read_value(ps, s, n, i);
        if (q < 0)
                return q;
        if (ps->val_len == 0) {
                error(ps, ps->val_col, "missing value after '%s%s', expected %s", kw->key, kw->op, kw->expect);
                return -EINVAL;
        }
        Value v = { .s = ps->val, .esc = ps->esc, .col = ps->col, .len = ps->val_len };
        q = kw->parse(ps, r, &v);
        if (q < 0)
                return q;
        r->set |= 1u << kw->cond;
        cols[kw->cond] = (unsigned) start + 1;
        return 0;
}

static int parse_line(Parser *ps, const uint8_t *s, size_t n) {
        _cleanup_(policy_rule_done) IverRule r = {
                .pcr = IVER_POLICY_PCR_UNSET, .hash = _IVER_HASH_INVALID, .template_ = _IVER_IMA_TEMPLATE_INVALID,
        };
        unsigned cols[_COND_MAX] = {};
        size_t i = 0;

        const uint8_t *nul = memchr(s, 0, n);
        if (nul) {
                error(ps, (unsigned) (nul - s) + 1, "NUL byte, expected text");
                return 0;
        }
        if (n > IVER_POLICY_LINE_MAX) {
                error(ps, IVER_POLICY_LINE_MAX + 1, "line longer than %u bytes, expected one short rule per line",
                      IVER_POLICY_LINE_MAX);
                return 0;
        }
        while (i < n && is_blank(s[i]))
                i++;
        if (i == n || s[i] == '#')
                return 0;

        size_t start = i;
        while (i < n && !is_blank(s[i]))
                i++;
        char action[16] = {};
        if (i - start < sizeof action)
                memcpy(action, s + start, i - start);
        r.action = iver_policy_action_from_string(action);
        if (r.action < 0) {
                error(ps, (unsigned) start + 1, "unknown action '%s', expected measure, dont_measure, appraise, dont_appraise or audit",
                      repr(ps, s + start, i - start));
                return 0;
        }
        for (;;) {
                while (i < n && is_blank(s[i]))
                        i++;
                if (i == n || s[i] == '#')
                        break;
                if (parse_word(ps, &r, s, n, &i, cols) < 0)
                        return ps->oom;
        }
        if ((r.set & (1u << COND_SIZE_LE)) && (r.set & (1u << COND_SIZE_GE)) && r.size_ge > r.size_le) {
                unsigned c = cols[COND_SIZE_LE] > cols[COND_SIZE_GE] ? cols[COND_SIZE_LE] : cols[COND_SIZE_GE];
                error(ps, c, "size range is empty (size>= is above size<=), expected size>=MIN size<=MAX with MIN <= MAX");
                return ps->oom;
        }
        if (ps->b->policy->n_rules >= IVER_POLICY_RULES_MAX) {
                error(ps, 1, "more than %u rules, expected fewer", IVER_POLICY_RULES_MAX);
                return ps->oom;
        }
        r.file = ps->file;
        r.line = ps->line;
        if (rule_push(ps->b, &r) < 0)
                return -ENOMEM;
        return ps->oom;
}

int policy_parse_text(PolicyBuilder *b, size_t file, const uint8_t *data, size_t len) {
        Parser ps = {
                .b = b,
                .file_name = b->policy->files[file],
                .file = file,
        };
        int r = 0;

        for (size_t pos = 0; pos < len && r >= 0; ) {
                const uint8_t *nl = memchr(data + pos, '\n', len - pos);
                size_t end = nl ? (size_t) (nl - data) : len;
                ps.line++;
                r = parse_line(&ps, data + pos, end - pos);
                pos = end + 1;
        }
        free(ps.val);
        free(ps.esc);
        free(ps.col);
        return r < 0 ? r : ps.oom;
}
