/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iver/digest.h"
#include "iver/imalog.h"   /* IverImaTemplate */

/* The policy language of iverd(8), described in iverd.policy(5).
 *
 * A policy is an ordered list of rules, one a line. Rules fall in three
 * independent classes, as in kernel IMA: measure/dont_measure decide
 * whether a file is measured, appraise/dont_appraise whether it is
 * appraised, audit whether each of its measurements is also written to the
 * audit log (kernel IMA has no dont_audit either). Within a class the first
 * matching rule wins; a path no rule of the class matches is not measured
 * (not appraised, not audited).
 *
 * Loading builds a complete new policy and hands it out only if every file
 * parsed without error: a policy is never half-loaded. Every problem found
 * is reported as structured data (file, line, column, message); library
 * code never prints. */

#ifndef IVER_SYSCONFDIR                 /* as in lib/conf.h (iverd.conf) */
#define IVER_SYSCONFDIR "/etc"
#endif
#define IVER_POLICY_FILE       IVER_SYSCONFDIR "/iverd/iverd.policy"
#define IVER_POLICY_DROPIN_DIR IVER_SYSCONFDIR "/iverd/policy.d"
#define IVER_POLICY_DROPIN_SUFFIX ".policy"

/* Limits that keep a hostile or broken file from costing more than a clear error. */
#define IVER_POLICY_FILE_MAX  (16u * 1024u * 1024u) /* bytes per file */
#define IVER_POLICY_LINE_MAX  65536u                /* bytes per line */
#define IVER_POLICY_RULES_MAX 100000u               /* rules per policy */
#define IVER_POLICY_DIAGS_MAX 100u                  /* diagnostics kept; more are counted */

typedef enum IverPolicyAction {
        IVER_ACTION_MEASURE,
        IVER_ACTION_DONT_MEASURE,
        IVER_ACTION_APPRAISE,
        IVER_ACTION_DONT_APPRAISE,
        IVER_ACTION_AUDIT,
        _IVER_ACTION_MAX,
        _IVER_ACTION_INVALID = -22, /* -EINVAL */
} IverPolicyAction;

/* Which question a match answers: measure/dont_measure rules, appraise/dont_appraise rules or audit rules. */
typedef enum IverPolicyClass {
        IVER_CLASS_MEASURE,
        IVER_CLASS_APPRAISE,
        IVER_CLASS_AUDIT,
        _IVER_CLASS_MAX,
        _IVER_CLASS_INVALID = -22,
} IverPolicyClass;

const char *iver_policy_action_to_string(IverPolicyAction a);
IverPolicyAction iver_policy_action_from_string(const char *s);
IverPolicyClass iver_policy_action_class(IverPolicyAction a);
/* Whether the action is measure, appraise or audit (as opposed to dont_…). */
bool iver_policy_action_is_positive(IverPolicyAction a);

/* Filesystem magic by name ("ext4", "tmpfs", …) and back. 0 / NULL when unknown. */
uint64_t iver_fstype_from_name(const char *name);
const char *iver_fstype_to_name(uint64_t magic);

#define IVER_UID_UNKNOWN UINT32_MAX

/* What a matcher knows about the file besides its path. */
/* The use an on-access check is for (kernel IMA's func=). */
typedef enum IverPolicyFunc {
        IVER_FUNC_NONE,       /* no use: a scan or a change; func= and mask= rules match */
        IVER_FUNC_EXEC,       /* BPRM_CHECK */
        IVER_FUNC_OPEN,       /* FILE_CHECK */
        _IVER_FUNC_MAX,
} IverPolicyFunc;

/* mask= bits, the kernel's MAY_* values */
#define IVER_MAY_EXEC   0x1u
#define IVER_MAY_WRITE  0x2u
#define IVER_MAY_READ   0x4u
#define IVER_MAY_APPEND 0x8u

typedef struct IverFileAttr {
        uint64_t fs_magic;    /* statfs f_type of the file's filesystem */
        uint32_t owner;       /* st_uid: for fowner= */
        uint32_t subject_uid; /* uid of the process that caused an on-access event: for uid=;
                               * IVER_UID_UNKNOWN for scans, and then uid= rules do not match */
        uint32_t mode;        /* st_mode */
        uint64_t size;        /* st_size */
        uint8_t func;         /* IverPolicyFunc of the use */
        bool open_default;    /* OnAccess=open: rules without func= check opens too; else only
                               * rules that name func=open match an open */
        uint32_t mask;        /* IVER_MAY_* of the use (0: unknown, mask= rules match) */
} IverFileAttr;

#define IVER_POLICY_PCR_UNSET (-1)

/* The answer of a match. Pointers borrow from the policy. */
typedef struct IverPolicyDecision {
        bool matched;            /* false: no rule of the class matched; action is the dont_ one
                                  * (_IVER_ACTION_INVALID for the audit class, which has none) */
        IverPolicyAction action;
        int pcr;                 /* pcr= of the rule, or IVER_POLICY_PCR_UNSET (use the configured PCR) */
        IverHashAlgo hash;       /* hash= of the rule, or _IVER_HASH_INVALID (use the configured hash) */
        IverImaTemplate template_;  /* template= of the rule, or _IVER_IMA_TEMPLATE_INVALID (ima-ng) */
        size_t rule;             /* index of the deciding rule, in load order */
        const char *file;        /* where the deciding rule was written, NULL when !matched */
        unsigned line;
} IverPolicyDecision;

/* One problem found while loading. Messages say what was wrong and what was
 * expected; iver_policy_diag_format() prefixes "FILE:LINE:COLUMN: ". Line and
 * column are 1-based; the column counts bytes. Column 0 means the whole file
 * (it could not be opened or read), line 0 too. */
typedef enum IverDiagLevel {
        IVER_DIAG_ERROR,
        IVER_DIAG_WARNING,
        _IVER_DIAG_MAX,
        _IVER_DIAG_INVALID = -22,
} IverDiagLevel;

typedef struct IverPolicyDiag {
        IverDiagLevel level;
        char *file;
        unsigned line;
        unsigned column;
        char *message;
} IverPolicyDiag;

typedef struct IverPolicyDiags {
        IverPolicyDiag *items; /* in the order found: file by file, line by line */
        size_t n_items;
        size_t n_errors;       /* counted even beyond IVER_POLICY_DIAGS_MAX kept items */
        size_t n_warnings;
        size_t n_dropped;      /* found but not kept */
} IverPolicyDiags;

void iver_policy_diags_done(IverPolicyDiags *d);
/* "FILE:LINE:COLUMN: message", or "FILE:LINE:COLUMN: warning: message". */
int iver_policy_diag_format(const IverPolicyDiag *d, char **ret);

typedef struct IverPolicy IverPolicy;

enum {
        /* A path that does not exist is skipped (for the default locations).
         * Without it a missing path is an error. */
        IVER_POLICY_LOAD_MISSING_OK = 1 << 0,
};

/* Load a policy from paths, in order. Each path is a file, or a directory
 * whose *.policy entries are read in lexical (byte) order; other entries are
 * ignored. The rules of all files form one policy in that order.
 *
 * Every error of every file is collected (up to IVER_POLICY_DIAGS_MAX kept)
 * into *diags when diags is not NULL; warnings too. Returns 0 and the policy
 * in *ret when there was no error, -EINVAL on any error in the text (see
 * diags), -ENOMEM, or another -errno when a path cannot be read (also in
 * diags). On failure *ret is untouched. diags is filled in either case and
 * must be released with iver_policy_diags_done(). */
int iver_policy_load(const char *const *paths, size_t n_paths, unsigned flags,
                     IverPolicyDiags *diags, IverPolicy **ret);

/* The default locations: IVER_POLICY_FILE, then IVER_POLICY_DROPIN_DIR, each optional. */
int iver_policy_load_default(IverPolicyDiags *diags, IverPolicy **ret);

/* Parse policy text held in memory; name is the file name used in diagnostics.
 * data need not be NUL-terminated and may contain any byte. */
int iver_policy_load_string(const char *name, const void *data, size_t len,
                            IverPolicyDiags *diags, IverPolicy **ret);

/* Lint: like iver_policy_load() of one FILE or DIR, keeping only the
 * diagnostics. Reports every error found (not just the first), up to
 * IVER_POLICY_DIAGS_MAX. Returns the number of errors (0: the file would
 * load), or a negative -errno when it could not be checked at all (-ENOMEM). */
int iver_policy_check_file(const char *path, IverPolicyDiags *diags);

IverPolicy *iver_policy_free(IverPolicy *p);
static inline void iver_policy_freep(IverPolicy **p) {
        if (*p)
                *p = iver_policy_free(*p);
}

size_t iver_policy_n_rules(const IverPolicy *p);
/* Where rule i was written. */
void iver_policy_rule_source(const IverPolicy *p, size_t i, const char **ret_file, unsigned *ret_line);
IverPolicyAction iver_policy_rule_action(const IverPolicy *p, size_t i);
/* Rule i in canonical text form (the compiled rule, re-quoted so that it
 * parses back to the same rule). */
int iver_policy_rule_format(const IverPolicy *p, size_t i, char **ret);

/* Decide path (len bytes, absolute, no trailing slash except "/") for class.
 * attr may be NULL when only the path is known: rules with fstype=, uid=,
 * fowner=, mode= or size conditions then do not match. Always fills *ret;
 * returns 1 when a rule matched, 0 when none did. Thread-safe on a shared
 * policy: matching never writes to it. */
int iver_policy_match(const IverPolicy *p, IverPolicyClass class,
                      const char *path, size_t len, const IverFileAttr *attr,
                      IverPolicyDecision *ret);

/* Whether any path strictly below directory dir (len bytes) could be decided
 * positively (measure, or appraise) for class, whatever its attributes. false
 * means a walker or watcher may skip the whole subtree: every path below it
 * is matched by no positive rule, or by an unconditional dont_ rule first.
 * Conservative: true may still turn out to measure nothing. */
bool iver_policy_may_match_below(const IverPolicy *p, IverPolicyClass class,
                                 const char *dir, size_t len);

/* Whether a file directly in directory dir could be decided positively for
 * class (a rule's pattern may end there). false: dir is only on the way to
 * what is measured (an ancestor); its own files never are. Conservative. */
bool iver_policy_may_match_child(const IverPolicy *p, IverPolicyClass class, const char *dir, size_t len);

/* Whether every file directly in directory dir could be decided positively
 * for class by its path alone: a positive rule whose pattern covers all
 * below dir, or has none. Then a walker need not ask per name
 * (iver_policy_may_match_path). */
bool iver_policy_may_match_children(const IverPolicy *p, IverPolicyClass class, const char *dir, size_t len);

/* Whether the file path could be decided positively for class, whatever its
 * attributes (a positive rule whose pattern matches it, or which has none).
 * false: no look at the file can make it measured or appraised, so a walker
 * need not statx it. Conservative: dont_ rules are not considered. */
bool iver_policy_may_match_path(const IverPolicy *p, IverPolicyClass class, const char *path, size_t len);

/* Whether a measure or appraise rule names func=open (FILE_CHECK): then
 * on-access must see opens even with OnAccess=exec. */
bool iver_policy_wants_opens(const IverPolicy *p);
/* Whether any rule looks at a file's own attributes (fowner=, mode=, size):
 * without one, a scan decides a file by its path and its filesystem's type
 * alone, before any look at the file. */
bool iver_policy_uses_file_attrs(const IverPolicy *p);
/* Whether any rule looks at the subject of a use (uid=): without one, a
 * decision for a use needs no look at the process that made it. */
bool iver_policy_uses_subject(const IverPolicy *p);
