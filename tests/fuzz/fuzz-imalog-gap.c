/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the restart gap's name decoder (lib/imalog-gap.c:
 * iver_imalog_gap_parse), which iverctl verify runs on every violation
 * entry's name of a list it was handed. A name it accepts must be the one
 * the encoder writes for the values it decoded (one spelling a gap). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iver/imalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* a list entry's name is not NUL-terminated for the decoder: an
         * exact-size copy lets ASan see any over-read */
        char *name = malloc(size ? size : 1);
        if (!name)
                return 0;
        memcpy(name, data, size);
        int64_t start = -2, end = -2;
        int r = iver_imalog_gap_parse(name, size, &start, &end);
        if (r == 1) {
                char again[IVER_IMA_GAP_NAME_MAX];
                if (iver_imalog_gap_name(start, end, again) < 0 || strlen(again) != size ||
                    memcmp(again, name, size) != 0)
                        abort();
        } else if (r != 0 || start != -2 || end != -2)
                abort();
        free(name);
        return 0;
}
