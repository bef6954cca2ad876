/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdlib.h>
#include <string.h>

/* dir + "/" + name, without doubling the slash of "/"; malloc'd, NULL on OOM. */
static inline char *path_join(const char *dir, const char *name) {
        size_t a = strlen(dir), b = strlen(name), o = a;
        char *p = malloc(a + b + 2);
        if (!p)
                return NULL;
        memcpy(p, dir, a);
        if (a == 0 || dir[a - 1] != '/')
                p[o++] = '/';
        memcpy(p + o, name, b + 1);
        return p;
}
