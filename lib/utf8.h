/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Length of the valid multi-byte UTF-8 sequence at s (strict: no overlong
 * form, no surrogate, nothing above U+10FFFF) and, if ret_cp, its code point;
 * 0 when s does not start one (ASCII included). left: bytes available. One
 * decoder for the list's kernel-form names and iverctl's terminal escaping. */
static inline size_t iver_utf8_seq(const uint8_t *s, size_t left, uint32_t *ret_cp) {
        size_t n;
        uint32_t cp;

        if (left == 0)
                return 0;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4, cp = s[0] & 0x07;
        else
                return 0;
        if (n > left)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        if (ret_cp)
                *ret_cp = cp;
        return n;
}
