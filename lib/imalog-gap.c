/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The restart gap's entry name: one encoder and one decoder (include/iver/imalog.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "iver/imalog.h"

#define GAP_UNKNOWN "unknown"
/* Unix seconds up to year 9999: keeps the name short and its parse exact */
#define GAP_SEC_MAX INT64_C(253402300799)

int iver_imalog_gap_name(int64_t start, int64_t end, char buf[static IVER_IMA_GAP_NAME_MAX]) {
        if (end < 0 || end > GAP_SEC_MAX || start > end)
                return -EINVAL;
        if (start < 0)
                snprintf(buf, IVER_IMA_GAP_NAME_MAX, IVER_IMA_GAP_PREFIX GAP_UNKNOWN "-%" PRId64, end);
        else
                snprintf(buf, IVER_IMA_GAP_NAME_MAX, IVER_IMA_GAP_PREFIX "%" PRId64 "-%" PRId64, start, end);
        return 0;
}

/* Decimal digits only, no sign, no leading zero (one spelling a value). */
static int parse_sec(const char *s, size_t len, int64_t *ret) {
        int64_t v = 0;
        if (len == 0 || len > 12 || (len > 1 && s[0] == '0'))
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (s[i] - '0');
        }
        if (v > GAP_SEC_MAX)
                return -EINVAL;
        *ret = v;
        return 0;
}

int iver_imalog_gap_parse(const char *name, size_t len, int64_t *ret_start, int64_t *ret_end) {
        const size_t plen = strlen(IVER_IMA_GAP_PREFIX);
        int64_t start = -1, end;

        if (!name || len <= plen || memcmp(name, IVER_IMA_GAP_PREFIX, plen) != 0)
                return 0;
        const char *s = name + plen, *stop = name + len;
        const char *dash = memchr(s, '-', (size_t) (stop - s));
        if (!dash)
                return 0;
        size_t slen = (size_t) (dash - s);
        if (!(slen == strlen(GAP_UNKNOWN) && memcmp(s, GAP_UNKNOWN, slen) == 0) && parse_sec(s, slen, &start) < 0)
                return 0;
        if (parse_sec(dash + 1, (size_t) (stop - dash - 1), &end) < 0 || (start >= 0 && start > end))
                return 0;
        *ret_start = start;
        *ret_end = end;
        return 1;
}
