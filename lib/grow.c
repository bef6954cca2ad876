/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Growth of arrays by doubling (grow.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"

int iver_grow(void **array, size_t *cap, size_t need, size_t elem, size_t min) {
        if (need <= *cap)
                return 0;
        size_t c = *cap ? *cap : (min ? min : 1);
        while (c < need) {
                if (c > SIZE_MAX / 2)
                        return -ENOMEM;
                c *= 2;
        }
        if (elem && c > SIZE_MAX / elem)
                return -ENOMEM;
        void *p = realloc(*array, c * elem);
        if (!p)
                return -ENOMEM;
        *array = p;
        *cap = c;
        return 0;
}
