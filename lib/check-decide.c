/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy's whole say on one file (iver_check_decide, check.h): the one
 * place a check, the re-decision after hashing, the on-access probe of a
 * directory, the on-access fast path and explain get it from. */
#include <string.h>

#include "iver/check.h"
#include "pseudofs.h"

void iver_check_decide(const IverPolicy *p, const char *path, const IverFileAttr *attr, IverHashAlgo default_hash,
                       IverDecision *ret) {
        size_t len = strlen(path);
        IverPolicyDecision a;

        *ret = (IverDecision) { .attr = *attr, .algo = default_hash };
        if (iver_fs_is_pseudo(attr->fs_magic, NULL)) {
                ret->pseudo = true;
                return;
        }
        ret->measure = iver_policy_match(p, IVER_CLASS_MEASURE, path, len, attr, &ret->d) >= 0 && ret->d.matched &&
                       ret->d.action == IVER_ACTION_MEASURE;
        ret->appraise = iver_policy_match(p, IVER_CLASS_APPRAISE, path, len, attr, &a) >= 0 && a.matched &&
                        a.action == IVER_ACTION_APPRAISE;
        /* an appraise rule's hash= names the algorithm its signatures use */
        ret->algo = ret->appraise && a.hash >= 0 ? a.hash : ret->measure && ret->d.hash >= 0 ? ret->d.hash : default_hash;
        /* a signature appraised or listed (ima-sig): a new one must be seen */
        ret->flags = ret->appraise || (ret->measure && ret->d.template_ == IVER_IMA_TEMPLATE_SIG)
                             ? IVER_CHECK_SIGNATURE_BOUND : 0;
        /* audit rules are only asked about what is measured (journal, audit) */
        IverPolicyDecision ad;
        ret->audit = ret->measure && iver_policy_match(p, IVER_CLASS_AUDIT, path, len, attr, &ad) > 0;
}
