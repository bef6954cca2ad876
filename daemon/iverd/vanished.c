/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names found gone, forgotten after the checks queued with them (vanished.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vanished.h"

typedef struct Gone {
        char *path;
        IverIdentity id;        /* of the entry the name held: a new file under it keeps its own */
} Gone;

struct Vanished {
        Gone items[VANISHED_MAX];
        unsigned n;
};

int vanished_new(Vanished **ret) {
        *ret = calloc(1, sizeof(**ret));
        return *ret ? 0 : -ENOMEM;
}

Vanished *vanished_free(Vanished *v) {
        if (v)
                for (unsigned i = 0; i < v->n; i++)
                        free(v->items[i].path);
        free(v);
        return NULL;
}

static void forget(IverCache *c, const Gone *g) {
        uint32_t idx = iver_cache_find_path(c, g->path, strlen(g->path));
        if (idx == IVER_CACHE_NONE)
                return; /* renamed: the new name took the entry */
        IverEntry e;
        iver_cache_get(c, idx, &e);
        if (e.id.dev == g->id.dev && e.id.ino == g->id.ino && e.id.gen == g->id.gen)
                iver_cache_remove(c, idx);
}

void vanished_add(Vanished *v, IverContext *ctx, const char *path) {
        IverCache *c = iver_context_cache(ctx);
        uint32_t idx = iver_cache_find_path(c, path, strlen(path));
        if (idx == IVER_CACHE_NONE)
                return; /* nothing on record: the usual gone name */
        IverEntry e;
        iver_cache_get(c, idx, &e);
        Gone g = { .path = strdup(path), .id = e.id };
        if (!g.path || v->n == VANISHED_MAX) {
                if (!g.path) { /* no memory to wait: forget now, as before */
                        iver_cache_remove(c, idx);
                        return;
                }
                vanished_flush(v, ctx);
        }
        v->items[v->n++] = g;
}

void vanished_flush(Vanished *v, IverContext *ctx) {
        IverCache *c = iver_context_cache(ctx);
        for (unsigned i = 0; i < v->n; i++) {
                forget(c, &v->items[i]);
                free(v->items[i].path);
        }
        v->n = 0;
}
