/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The compiled matcher.
 *
 * Each class (measure, appraise) has a trie keyed by path components. A rule
 * hangs on the deepest node its pattern's literal prefix fully names: the rule
 * usr/lib/[**].so* on usr → lib, /usr/li* on usr, /usr/bin (a literal) on
 * usr → bin, a rule without path= on the root (brackets keep this comment open). A path can only be matched by
 * rules hanging on the nodes its own components walk through, so a match
 * visits a handful of short lists instead of every rule. Each list is in rule
 * order, and first-match-wins becomes "smallest matching rule index": every
 * list is scanned only up to the best index found so far. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"
#include "grow.h"
#include "policy-internal.h"

#define NONE UINT32_MAX

static int component_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
        int c = memcmp(a, b, al < bl ? al : bl);
        if (c != 0)
                return c;
        return al < bl ? -1 : al > bl;
}

/* Index in node->children where name is or would be inserted; *found says which. */
static uint32_t child_search(const Trie *t, const TrieNode *node, const uint8_t *name, size_t len, bool *found) {
        uint32_t lo = 0, hi = node->n_children;
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                const TrieNode *c = &t->nodes[node->children[mid]];
                int cmp = component_cmp(c->name, c->name_len, name, len);
                if (cmp == 0) {
                        *found = true;
                        return mid;
                }
                if (cmp < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = false;
        return lo;
}

static uint32_t child_find(const Trie *t, uint32_t node, const uint8_t *name, size_t len) {
        bool found;
        uint32_t i = child_search(t, &t->nodes[node], name, len, &found);
        return found ? t->nodes[node].children[i] : NONE;
}

static int child_get(Trie *t, uint32_t node, const uint8_t *name, size_t len, uint32_t *ret) {
        bool found;
        uint32_t pos = child_search(t, &t->nodes[node], name, len, &found);
        if (found) {
                *ret = t->nodes[node].children[pos];
                return 0;
        }
        if (GROW(t->nodes, t->cap_nodes, t->n_nodes + 1, 4) < 0)
                return -ENOMEM;
        TrieNode *n = &t->nodes[node];
        if (GROW(n->children, n->cap_children, n->n_children + 1, 4) < 0)
                return -ENOMEM;
        uint32_t idx = t->n_nodes++;
        t->nodes[idx] = (TrieNode) {
                .name = name, .name_len = len, .parent = node,
                .min_pos_tree = NONE, .min_pos_kids = NONE,
        };
        memmove(n->children + pos + 1, n->children + pos, (n->n_children - pos) * sizeof(uint32_t));
        n->children[pos] = idx;
        n->n_children++;
        *ret = idx;
        return 0;
}

/* The node a rule hangs on: every component its literal prefix spells out in full. */
static int rule_attach(Trie *t, const IverRule *r, uint32_t idx) {
        uint32_t node = 0;
        int k;

        if (r->set & (1u << COND_PATH)) {
                const uint8_t *s = r->path.bytes;
                size_t n = r->path.prefix_len;
                for (size_t start = 1, i = 1; i <= n; i++) {
                        if (i < n ? s[i] != '/' : !r->path.literal)
                                continue;
                        if (i > start && (k = child_get(t, node, s + start, i - start, &node)) < 0)
                                return k;
                        start = i + 1;
                }
        }
        TrieNode *nd = &t->nodes[node];
        if (GROW(nd->rules, nd->cap_rules, nd->n_rules + 1, 4) < 0)
                return -ENOMEM;
        nd->rules[nd->n_rules++] = idx;
        if (iver_policy_action_is_positive(r->action) && idx < nd->min_pos_tree)
                nd->min_pos_tree = idx;
        return 0;
}

void policy_index_free(IverPolicy *p) {
        for (size_t c = 0; c < _IVER_CLASS_MAX; c++) {
                Trie *t = &p->tries[c];
                for (uint32_t i = 0; i < t->n_nodes; i++) {
                        free(t->nodes[i].children);
                        free(t->nodes[i].rules);
                }
                free(t->nodes);
                *t = (Trie) {};
        }
}

int policy_index_build(IverPolicy *p) {
        int r;

        policy_index_free(p);
        for (size_t c = 0; c < _IVER_CLASS_MAX; c++) {
                Trie *t = &p->tries[c];
                if (GROW(t->nodes, t->cap_nodes, 1, 4) < 0)
                        return -ENOMEM;
                t->nodes[0] = (TrieNode) { .parent = NONE, .min_pos_tree = NONE, .min_pos_kids = NONE };
                t->n_nodes = 1;
        }
        for (size_t i = 0; i < p->n_rules; i++) {
                const IverRule *rule = &p->rules[i];
                r = rule_attach(&p->tries[iver_policy_action_class(rule->action)], rule, (uint32_t) i);
                if (r < 0)
                        return r;
        }
        /* Children always have larger indices than their parent: one backward pass. */
        for (size_t c = 0; c < _IVER_CLASS_MAX; c++) {
                Trie *t = &p->tries[c];
                for (uint32_t i = t->n_nodes; i-- > 1; ) {
                        TrieNode *n = &t->nodes[i], *parent = &t->nodes[n->parent];
                        uint32_t m = n->min_pos_tree;
                        if (m < parent->min_pos_kids)
                                parent->min_pos_kids = m;
                        if (m < parent->min_pos_tree)
                                parent->min_pos_tree = m;
                }
        }
        return 0;
}

bool policy_rule_attrs_match(const IverRule *r, const IverFileAttr *a) {
        /* OnAccess=exec: an open is checked only where a rule asks for it */
        if (a && a->func == IVER_FUNC_OPEN && !a->open_default && !(r->set & (1u << COND_FUNC)))
                return false;
        if (!(r->set & COND_ATTR_MASK))
                return true;
        if (!a)
                return false;
        if ((r->set & (1u << COND_FSTYPE)) && (uint32_t) a->fs_magic != (uint32_t) r->fs_magic)
                return false;
        if ((r->set & (1u << COND_UID)) && (a->subject_uid == IVER_UID_UNKNOWN || a->subject_uid != r->uid))
                return false;
        if ((r->set & (1u << COND_FOWNER)) && a->owner != r->fowner)
                return false;
        if (r->set & (1u << COND_MODE)) {
                if (r->mode_kind == MODE_ANY ? (a->mode & r->mode) == 0 : (a->mode & 07777) != r->mode)
                        return false;
        }
        if ((r->set & (1u << COND_SIZE_LE)) && a->size > r->size_le)
                return false;
        if ((r->set & (1u << COND_SIZE_GE)) && a->size < r->size_ge)
                return false;
        /* func= and mask= say which uses are checked; a scan (no use) matches */
        if ((r->set & (1u << COND_FUNC)) && a->func != IVER_FUNC_NONE && a->func != r->func)
                return false;
        if ((r->set & (1u << COND_MASK)) && a->mask != 0 &&
            (r->mask_any ? (a->mask & r->mask) == 0 : a->mask != r->mask))
                return false;
        return true;
}

bool iver_policy_wants_opens(const IverPolicy *p) {
        for (size_t i = 0; p && i < p->n_rules; i++)
                if ((p->rules[i].set & (1u << COND_FUNC)) && p->rules[i].func == IVER_FUNC_OPEN &&
                    iver_policy_action_is_positive(p->rules[i].action))
                        return true;
        return false;
}

bool iver_policy_uses_file_attrs(const IverPolicy *p) {
        const unsigned file = (1u << COND_FOWNER) | (1u << COND_MODE) | (1u << COND_SIZE_LE) | (1u << COND_SIZE_GE);
        for (size_t i = 0; p && i < p->n_rules; i++)
                if (p->rules[i].set & file)
                        return true;
        return false;
}

bool iver_policy_uses_subject(const IverPolicy *p) {
        for (size_t i = 0; p && i < p->n_rules; i++)
                if (p->rules[i].set & (1u << COND_UID))
                        return true;
        return false;
}

/* The trie nodes along a path, the root first: the nodes whose rules may
 * match it or reach below it. node is NONE once the path left the trie. */
typedef struct TriePath {
        const Trie *t;
        const uint8_t *s;
        size_t len, pos;
        uint32_t node;
} TriePath;

static const TrieNode *trie_path_first(TriePath *it, const Trie *t, const uint8_t *s, size_t len) {
        *it = (TriePath) { .t = t, .s = s, .len = len, .pos = 1, .node = 0 };
        return &t->nodes[0];
}

static const TrieNode *trie_path_next(TriePath *it) {
        if (it->pos >= it->len)
                return NULL;
        const uint8_t *slash = memchr(it->s + it->pos, '/', it->len - it->pos);
        size_t end = slash ? (size_t) (slash - it->s) : it->len;
        it->node = child_find(it->t, it->node, it->s + it->pos, end - it->pos);
        if (it->node == NONE)
                return NULL;
        it->pos = end + 1;
        return &it->t->nodes[it->node];
}

static uint32_t scan_list(const IverPolicy *p, const TrieNode *n, const uint8_t *path, size_t len,
                          const IverFileAttr *attr, uint32_t best) {
        for (uint32_t k = 0; k < n->n_rules; k++) {
                uint32_t idx = n->rules[k];
                if (idx >= best)
                        break;
                const IverRule *r = &p->rules[idx];
                if (!policy_rule_attrs_match(r, attr))
                        continue;
                if ((r->set & (1u << COND_PATH)) && !glob_match(&r->path, path, len))
                        continue;
                return idx;
        }
        return best;
}

int iver_policy_match(const IverPolicy *p, IverPolicyClass class,
                      const char *path, size_t len, const IverFileAttr *attr,
                      IverPolicyDecision *ret) {
        const uint8_t *s = (const uint8_t *) path;
        uint32_t best = NONE;

        *ret = (IverPolicyDecision) {
                .action = class == IVER_CLASS_APPRAISE ? IVER_ACTION_DONT_APPRAISE
                          : class == IVER_CLASS_AUDIT  ? _IVER_ACTION_INVALID
                                                       : IVER_ACTION_DONT_MEASURE,
                .pcr = IVER_POLICY_PCR_UNSET,
                .hash = _IVER_HASH_INVALID,
                .template_ = _IVER_IMA_TEMPLATE_INVALID,
        };
        if (!p || class < 0 || class >= _IVER_CLASS_MAX)
                return 0;
        while (len > 1 && s[len - 1] == '/')
                len--;

        TriePath it;
        for (const TrieNode *n = trie_path_first(&it, &p->tries[class], s, len); n; n = trie_path_next(&it))
                best = scan_list(p, n, s, len, attr, best);
        if (best == NONE)
                return 0;

        const IverRule *r = &p->rules[best];
        ret->matched = true;
        ret->action = r->action;
        ret->pcr = r->pcr;
        ret->hash = r->hash;
        ret->template_ = r->template_;
        ret->rule = best;
        ret->file = p->files[r->file];
        ret->line = r->line;
        return 1;
}

static void below_scan(const IverPolicy *p, const TrieNode *n, const uint8_t *dir, size_t len,
                       uint32_t *best_pos, uint32_t *best_cover) {
        for (uint32_t k = 0; k < n->n_rules; k++) {
                uint32_t idx = n->rules[k];
                if (idx >= *best_pos || idx >= *best_cover)
                        break;
                const IverRule *r = &p->rules[idx];
                bool has_path = r->set & (1u << COND_PATH);
                if (iver_policy_action_is_positive(r->action)) {
                        if (!has_path || glob_may_match_below(&r->path, dir, len))
                                *best_pos = idx;
                } else if (!(r->set & COND_ATTR_MASK) && (!has_path || glob_covers_below(&r->path, dir, len)))
                        *best_cover = idx;
        }
}

/* A positive rule of class without a pattern, or whose pattern passes test
 * on directory dir. */
static bool any_positive(const IverPolicy *p, IverPolicyClass class, const char *dir, size_t len,
                         bool (*test)(const Glob *g, const uint8_t *dir, size_t len)) {
        if (!p || class < 0 || class >= _IVER_CLASS_MAX)
                return false;
        while (len > 1 && dir[len - 1] == '/')
                len--;
        for (size_t i = 0; i < p->n_rules; i++) {
                const IverRule *r = &p->rules[i];
                if (iver_policy_action_class(r->action) != class || !iver_policy_action_is_positive(r->action))
                        continue;
                if (!(r->set & (1u << COND_PATH)) || test(&r->path, (const uint8_t *) dir, len))
                        return true;
        }
        return false;
}

bool iver_policy_may_match_child(const IverPolicy *p, IverPolicyClass class, const char *dir, size_t len) {
        return any_positive(p, class, dir, len, glob_may_match_child);
}

bool iver_policy_may_match_children(const IverPolicy *p, IverPolicyClass class, const char *dir, size_t len) {
        return any_positive(p, class, dir, len, glob_covers_below);
}

/* A positive rule on node n whose pattern matches path (attributes aside). */
static bool path_scan(const IverPolicy *p, const TrieNode *n, const uint8_t *path, size_t len) {
        for (uint32_t k = 0; k < n->n_rules; k++) {
                const IverRule *r = &p->rules[n->rules[k]];
                if (iver_policy_action_is_positive(r->action) &&
                    (!(r->set & (1u << COND_PATH)) || glob_match(&r->path, path, len)))
                        return true;
        }
        return false;
}

bool iver_policy_may_match_path(const IverPolicy *p, IverPolicyClass class, const char *path, size_t len) {
        const uint8_t *s = (const uint8_t *) path;
        if (!p || class < 0 || class >= _IVER_CLASS_MAX)
                return false;
        while (len > 1 && s[len - 1] == '/')
                len--;
        /* the nodes iver_policy_match() looks at: the rules that may match */
        TriePath it;
        for (const TrieNode *n = trie_path_first(&it, &p->tries[class], s, len); n; n = trie_path_next(&it))
                if (path_scan(p, n, s, len))
                        return true;
        return false;
}

bool iver_policy_may_match_below(const IverPolicy *p, IverPolicyClass class, const char *dir, size_t len) {
        const uint8_t *s = (const uint8_t *) dir;
        uint32_t best_pos = NONE, best_cover = NONE;

        if (!p || class < 0 || class >= _IVER_CLASS_MAX)
                return false;
        while (len > 1 && s[len - 1] == '/')
                len--;
        const Trie *t = &p->tries[class];

        /* Rules on the nodes dir walks through may reach below it: check each.
         * Rules hanging below dir's own node reach below it by construction. */
        TriePath it;
        for (const TrieNode *n = trie_path_first(&it, t, s, len); n; n = trie_path_next(&it))
                below_scan(p, n, s, len, &best_pos, &best_cover);
        if (it.node != NONE && t->nodes[it.node].min_pos_kids < best_pos)
                best_pos = t->nodes[it.node].min_pos_kids;
        return best_pos < best_cover;
}
