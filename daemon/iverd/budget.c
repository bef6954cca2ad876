/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-owner budget of list entries (budget.h): a token bucket an owner, in a
 * small array (few owners write measured trees; a linear look is cheap next
 * to the hash that made the entry). */
#include <errno.h>
#include <stdlib.h>

#include "budget.h"
#include "grow.h"

#define SHARED_UID UINT32_MAX   /* the bucket of the owners past BUDGET_OWNERS_MAX */
#define USEC_PER_TOKEN (3600ULL * 1000000ULL / BUDGET_PER_HOUR)

typedef struct Bucket {
        uint32_t uid;
        bool limited;
        uint32_t tokens;
        uint64_t refilled;      /* when tokens were last counted (µs) */
} Bucket;

struct Budget {
        Bucket *buckets;
        size_t n, cap;
        uint64_t suppressed;
};

int budget_new(Budget **ret) {
        Budget *b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        *ret = b;
        return 0;
}

Budget *budget_free(Budget *b) {
        if (b) {
                free(b->buckets);
                free(b);
        }
        return NULL;
}

static Bucket *bucket(Budget *b, uint32_t uid, uint64_t now) {
        for (size_t i = 0; i < b->n; i++)
                if (b->buckets[i].uid == uid)
                        return &b->buckets[i];
        if (uid != SHARED_UID && b->n >= BUDGET_OWNERS_MAX)
                return bucket(b, SHARED_UID, now);
        if (GROW(b->buckets, b->cap, b->n + 1, 16) < 0)
                return uid == SHARED_UID ? NULL : bucket(b, SHARED_UID, now);
        b->buckets[b->n] = (Bucket) { .uid = uid, .tokens = BUDGET_BURST, .refilled = now };
        return &b->buckets[b->n++];
}

static void refill(Bucket *k, uint64_t now) {
        if (now <= k->refilled)
                return;
        uint64_t add = (now - k->refilled) / USEC_PER_TOKEN;
        if (add == 0)
                return;
        k->refilled += add * USEC_PER_TOKEN;
        k->tokens = add >= BUDGET_BURST - k->tokens ? BUDGET_BURST : k->tokens + (uint32_t) add;
        if (k->tokens == BUDGET_BURST)
                k->refilled = now;
}

BudgetVerdict budget_take(Budget *b, uint32_t uid, uint64_t now) {
        if (uid == 0)
                return BUDGET_LIST;
        Bucket *k = bucket(b, uid, now);
        if (!k)
                return BUDGET_LIST;     /* no memory for a bucket: listed, as before budgets */
        refill(k, now);
        if (k->limited && k->tokens >= BUDGET_RESUME)
                k->limited = false;
        if (!k->limited && k->tokens > 0) {
                k->tokens--;
                return BUDGET_LIST;
        }
        b->suppressed++;
        if (k->limited)
                return BUDGET_SUPPRESS;
        k->limited = true;
        return BUDGET_LIMIT;
}

size_t budget_limited(const Budget *b) {
        size_t n = 0;
        for (size_t i = 0; i < b->n; i++)
                n += b->buckets[i].limited;
        return n;
}

uint64_t budget_suppressed(const Budget *b) {
        return b->suppressed;
}
