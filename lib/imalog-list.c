/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The in-memory measurement list (a list read back whole: iverctl, tests):
 * entries in order, and parsing whole buffers of either format into it. The
 * kernel's dedup rule is the live list's (imalog-file.c, imalog-index.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iver/imalog.h"
#include "grow.h"
#include "macro.h"

/* ---- the in-memory list ---- */

struct IverImaLog {
        IverImaEntry **entries;
        size_t n, cap;
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

int iver_imalog_push(IverImaLog *l, IverImaEntry *e) {
        if (!l || !e)
                return -EINVAL;
        if (l->n >= UINT32_MAX - 1)
                return -E2BIG;
        if (GROW(l->entries, l->cap, l->n + 1, 64) < 0)
                return -ENOMEM;
        l->entries[l->n++] = e;
        return 0;
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
