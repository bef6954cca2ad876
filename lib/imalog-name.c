/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The name a measurement list stores for a path ("kernel form"), so that no
 * file name can break a line-based reader of the list. See include/iver/imalog.h. */
#include <stdint.h>
#include <string.h>

#include "iver/imalog.h"
#include "utf8.h"

/* Code points beyond ASCII that a reader may split a line on, strip, or that
 * change how a terminal shows the line: C1 controls (U+0085 is a line break
 * for Python's splitlines), what Python's str.split()/strip() count as
 * white space, the line and paragraph separators, and the bidirectional
 * controls (a name that displays as another). */
static bool cp_unsafe(uint32_t cp) {
        return (cp >= 0x80 && cp <= 0xa0) || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
               cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202f) || cp == 0x205f ||
               (cp >= 0x2066 && cp <= 0x2069) || cp == 0x3000;
}

/* Length of the run at s that stays as it is in the kernel form (0: s[0]
 * becomes '_', alone or with the rest of its code point in *ret_bad). */
static size_t safe_char(const uint8_t *s, size_t left, size_t *ret_bad) {
        uint32_t cp;
        size_t n;

        *ret_bad = 1;
        if (s[0] < 0x80)
                return s[0] > 0x20 && s[0] != 0x7f;
        n = iver_utf8_seq(s, left, &cp);
        if (n == 0)
                return 0;
        if (cp_unsafe(cp)) {
                *ret_bad = n;
                return 0;
        }
        return n;
}

void iver_imalog_name_kernel_form(char *name, size_t len) {
        uint8_t *s = (uint8_t *) name;
        for (size_t i = 0; i < len;) {
                /* the usual name: printable ASCII, left as it is */
                while (i < len && s[i] > 0x20 && s[i] < 0x7f)
                        i++;
                if (i == len)
                        break;
                size_t bad, n = safe_char(s + i, len - i, &bad);
                if (n > 0) {
                        i += n;
                        continue;
                }
                memset(s + i, '_', bad);
                i += bad;
        }
}

bool iver_imalog_name_is_kernel_form(const char *name, size_t len) {
        const uint8_t *s = (const uint8_t *) name;
        for (size_t i = 0; i < len;) {
                size_t bad, n = safe_char(s + i, len - i, &bad);
                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

bool iver_imalog_entry_names(const IverImaEntry *e, const char *path, size_t len) {
        const uint8_t *s = (const uint8_t *) path, *p = (const uint8_t *) e->path;
        if (len != e->path_len)
                return false;
        if (memcmp(path, e->path, len) == 0)
                return true;    /* also a raw name, from a list written before the kernel form */
        for (size_t i = 0; i < len;) {
                size_t bad, n = safe_char(s + i, len - i, &bad);
                if (n > 0) {
                        if (memcmp(s + i, p + i, n) != 0)
                                return false;
                        i += n;
                        continue;
                }
                for (size_t k = 0; k < bad; k++)
                        if (p[i + k] != '_')
                                return false;
                i += bad;
        }
        return true;
}
