/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The in-memory measurement list: entries in order, a hash set of
 * (PCR, template digest) for the kernel's dedup rule, and parsing whole
 * buffers of either format into it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iver/imalog.h"
#include "macro.h"

/* ---- the in-memory list ---- */

struct IverImaLog {
        IverImaEntry **entries;
        size_t n, cap;
        /* Open addressing over entry indexes + 1 (0 = free slot). */
        uint32_t *slots;
        size_t n_slots, n_used;
};

int iver_imalog_new(IverImaLog **ret) {
        IverImaLog *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}

IverImaLog *iver_imalog_free(IverImaLog *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                iver_imalog_entry_free(l->entries[i]);
        free(l->entries);
        free(l->slots);
        free(l);
        return NULL;
}

size_t iver_imalog_size(const IverImaLog *l) {
        return l ? l->n : 0;
}

const IverImaEntry *iver_imalog_get(const IverImaLog *l, size_t i) {
        return l && i < l->n ? l->entries[i] : NULL;
}

const IverImaEntry *const *iver_imalog_entries(const IverImaLog *l) {
        return l ? (const IverImaEntry *const *) l->entries : NULL;
}

static size_t slot_hash(const IverImaEntry *e) {
        uint64_t h;
        memcpy(&h, e->template_digest, sizeof(h));   /* a SHA-1 is uniform enough */
        return (size_t) (h ^ (uint64_t) e->pcr * 0x9e3779b97f4a7c15ULL);
}

static bool same_key(const IverImaEntry *a, const IverImaEntry *b) {
        return a->pcr == b->pcr && memcmp(a->template_digest, b->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE) == 0;
}

/* Slot holding e's key, or the free slot where it would go. */
static size_t slot_find(const IverImaLog *l, const IverImaEntry *e) {
        size_t mask = l->n_slots - 1, i = slot_hash(e) & mask;
        while (l->slots[i] != 0 && !same_key(l->entries[l->slots[i] - 1], e))
                i = (i + 1) & mask;
        return i;
}

static int slots_grow(IverImaLog *l) {
        size_t n = l->n_slots ? l->n_slots * 2 : 64;
        uint32_t *old = l->slots;
        size_t old_n = l->n_slots;

        l->slots = calloc(n, sizeof(uint32_t));
        if (!l->slots) {
                l->slots = old;
                return -ENOMEM;
        }
        l->n_slots = n;
        for (size_t i = 0; i < old_n; i++)
                if (old[i] != 0)
                        l->slots[slot_find(l, l->entries[old[i] - 1])] = old[i];
        free(old);
        return 0;
}

bool iver_imalog_contains(const IverImaLog *l, const IverImaEntry *e) {
        if (!l || !e || e->violation || l->n_slots == 0)
                return false;
        return l->slots[slot_find(l, e)] != 0;
}

int iver_imalog_push(IverImaLog *l, IverImaEntry *e) {
        int r;

        if (!l || !e)
                return -EINVAL;
        if (l->n >= UINT32_MAX - 1)
                return -E2BIG;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                IverImaEntry **n = reallocarray(l->entries, cap, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                l->entries = n;
                l->cap = cap;
        }
        if (!e->violation) {
                if ((l->n_used + 1) * 4 > l->n_slots * 3) {
                        r = slots_grow(l);
                        if (r < 0)
                                return r;
                }
                size_t i = slot_find(l, e);
                if (l->slots[i] == 0) {         /* a list from disk may repeat one */
                        l->slots[i] = l->n + 1;
                        l->n_used++;
                }
        }
        l->entries[l->n++] = e;
        return 0;
}

int iver_imalog_append(IverImaLog *l, IverImaEntry *e) {
        if (iver_imalog_contains(l, e))
                return -EEXIST;
        return iver_imalog_push(l, e);
}

/* ---- whole buffers ---- */

int iver_imalog_parse_binary(IverImaLog *l, const uint8_t *buf, size_t size, size_t *ret_consumed) {
        size_t off = 0;
        int r;

        while (off < size) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
                r = iver_imalog_entry_from_binary(buf + off, size - off, &e);
                if (r == -ENODATA)
                        break;          /* torn tail */
                if (r < 0)
                        return r;
                int k = iver_imalog_push(l, e);
                if (k < 0)
                        return k;
                TAKE_PTR(e);
                off += r;
        }
        if (ret_consumed)
                *ret_consumed = off;
        return 0;
}

int iver_imalog_parse_ascii(IverImaLog *l, const char *buf, size_t size, size_t *ret_consumed) {
        size_t off = 0;
        int r;

        while (off < size) {
                const char *nl = memchr(buf + off, '\n', size - off);
                if (!nl)
                        break;          /* incomplete last line */
                size_t len = nl - (buf + off) + 1;
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
                r = iver_imalog_entry_from_ascii(buf + off, len, &e);
                if (r < 0)
                        return r;
                r = iver_imalog_push(l, e);
                if (r < 0)
                        return r;
                TAKE_PTR(e);
                off += len;
        }
        if (ret_consumed)
                *ret_consumed = off;
        return 0;
}
