/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The compiled policy, shared by the parser (policy.c) and the matcher (policy-match.c). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glob.h"
#include "iver/policy.h"

typedef enum RuleCond {
        COND_PATH,
        COND_FSTYPE,
        COND_UID,
        COND_FOWNER,
        COND_MODE,
        COND_SIZE_LE,
        COND_SIZE_GE,
        COND_FUNC,
        COND_MASK,
        OPT_PCR,
        OPT_HASH,
        OPT_TEMPLATE,
        _COND_MAX,
} RuleCond;

/* Conditions other than path= (they need the file's attributes). */
#define COND_ATTR_MASK ((1u << COND_FSTYPE) | (1u << COND_UID) | (1u << COND_FOWNER) | \
                        (1u << COND_MODE) | (1u << COND_SIZE_LE) | (1u << COND_SIZE_GE) | \
                        (1u << COND_FUNC) | (1u << COND_MASK))

typedef enum ModeKind {
        MODE_ANY,   /* mode=exec, mode=&0111: any of the bits set */
        MODE_EXACT, /* mode=0755: permission bits exactly */
} ModeKind;

typedef struct IverRule {
        IverPolicyAction action;
        unsigned set;            /* 1 << RuleCond for every condition and option given */
        Glob path;
        uint8_t *path_src;       /* decoded pattern bytes, for formatting */
        bool *path_esc;          /* which of them were escaped */
        size_t path_len;
        uint64_t fs_magic;
        uint32_t uid, fowner;
        ModeKind mode_kind;
        uint32_t mode;
        uint64_t size_le, size_ge;
        uint8_t func;            /* IverPolicyFunc */
        bool mask_any;           /* mask=^MAY_…: any of the bits; else exactly */
        uint32_t mask;
        int pcr;
        IverHashAlgo hash;
        IverImaTemplate template_;
        size_t file;             /* index into IverPolicy.files */
        unsigned line;
} IverRule;

typedef struct TrieNode {
        const uint8_t *name;     /* component bytes, borrowed from a rule's pattern */
        uint32_t name_len;
        uint32_t *children;      /* node indices, sorted by name */
        uint32_t n_children, cap_children;
        uint32_t *rules;         /* rule indices attached here, ascending */
        uint32_t n_rules, cap_rules;
        uint32_t parent;
        uint32_t min_pos_tree;   /* smallest positive rule index attached here or anywhere below */
        uint32_t min_pos_kids;   /* the same, below this node only */
} TrieNode;

typedef struct Trie {
        TrieNode *nodes;         /* nodes[0] is the root "/" */
        uint32_t n_nodes, cap_nodes;
} Trie;

struct IverPolicy {
        IverRule *rules;
        size_t n_rules;
        char **files;
        size_t n_files;
        Trie tries[_IVER_CLASS_MAX];
};

/* Build the per-class indexes over p->rules. -ENOMEM. */
int policy_index_build(IverPolicy *p);
void policy_index_free(IverPolicy *p);
/* Whether rule r's attribute conditions hold (true when it has none). */
bool policy_rule_attrs_match(const IverRule *r, const IverFileAttr *attr);

/* Rules of all files being loaded, and what went wrong so far. */
typedef struct PolicyBuilder {
        IverPolicy *policy;
        size_t cap_rules;
        size_t cap_files;
        IverPolicyDiags *diags;
} PolicyBuilder;

void policy_rule_done(IverRule *r);
/* Record a file name; its index goes into rules and diagnostics. */
int policy_builder_add_file(PolicyBuilder *b, const char *name, size_t *ret_idx);
/* Parse one file's text into b. Errors in the text go to b->diags (the
 * return value stays 0); -ENOMEM. */
int policy_parse_text(PolicyBuilder *b, size_t file, const uint8_t *data, size_t len);
/* Append a diagnostic (kept while fewer than IVER_POLICY_DIAGS_MAX, always counted). -ENOMEM. */
int policy_diag_add(IverPolicyDiags *d, IverDiagLevel level, const char *file, unsigned line,
                    unsigned column, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* After all files: warn about rules an earlier rule makes unreachable. -ENOMEM. */
int policy_warn_shadowed(PolicyBuilder *b);
/* Warn on measure/appraise rules that can reach a pseudo filesystem. */
int policy_warn_pseudo(PolicyBuilder *b);
