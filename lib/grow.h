/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <errno.h>
#include <stddef.h>

/* Room for need elements of elem bytes in *array, whose capacity is *cap:
 * the capacity doubles (from min when it is 0) until it holds need, the
 * multiplication overflow-checked. 0, or -ENOMEM with *array and *cap
 * unchanged. */
int iver_grow(void **array, size_t *cap, size_t need, size_t elem, size_t min);

/* The same for a typed array and a capacity of any unsigned type (one that
 * cannot count the new capacity is -ENOMEM). */
#define GROW(array, cap, need, min)                                                     \
        ({                                                                              \
                void *_g_p = (array);                                                   \
                size_t _g_c = (cap);                                                    \
                int _g_r = iver_grow(&_g_p, &_g_c, (need), sizeof(*(array)), (min));    \
                if (_g_r >= 0) {                                                        \
                        (array) = _g_p;                                                 \
                        if ((size_t) (__typeof__(cap)) _g_c == _g_c)                    \
                                (cap) = (__typeof__(cap)) _g_c;                         \
                        else                                                            \
                                _g_r = -ENOMEM;                                         \
                }                                                                       \
                _g_r;                                                                   \
        })
