/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Escaping of untrusted bytes (file names) for terminals and JSON. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "utf8.h"

bool utf8_valid(const char *str, size_t len) {
        const uint8_t *s = (const uint8_t *) str;
        for (size_t i = 0; i < len;) {
                if (s[i] < 0x80) {
                        i++;
                        continue;
                }
                size_t n = iver_utf8_seq(s + i, len - i, NULL);
                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

void json_string(FILE *f, const char *str, size_t len) {
        const uint8_t *s = (const uint8_t *) str;
        fputc('"', f);
        for (size_t i = 0; i < len;) {
                uint8_t c = s[i];
                size_t n;
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c), i++;
                else if (c == '\n')
                        fputs("\\n", f), i++;
                else if (c == '\t')
                        fputs("\\t", f), i++;
                else if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\u%04x", c), i++;
                else if (c < 0x80)
                        fputc(c, f), i++;
                else if ((n = iver_utf8_seq(s + i, len - i, NULL)) > 0)
                        fwrite(s + i, 1, n, f), i += n;
                else
                        /* not UTF-8: a byte has no JSON spelling; use the private-use
                         * mapping U+DC80..U+DCFF (Python's surrogateescape) */
                        fprintf(f, "\\udc%02x", c), i++;
        }
        fputc('"', f);
}

/* Bytes a terminal may act on: C0 controls, DEL, and C1 controls — both the
 * U+0080..U+009F code points and raw bytes 0x80..0xFF outside valid UTF-8
 * (0x9b is CSI for a terminal in an 8-bit mode). Each is written as \xHH;
 * a valid UTF-8 character other than a C1 control passes. Returns the bytes
 * consumed at s. */
static size_t put_safe(FILE *f, const uint8_t *s, size_t left, bool escape_backslash) {
        size_t n;
        if (*s == '\\' && escape_backslash)
                fputs("\\\\", f);
        else if (*s == '\n')
                fputs("\\n", f);
        else if (*s == '\t')
                fputs("\\t", f);
        else if (*s < 0x20 || *s == 0x7f)
                fprintf(f, "\\x%02x", *s);
        else if (*s < 0x80)
                fputc(*s, f);
        else if ((n = iver_utf8_seq(s, left, NULL)) > 0 && !(n == 2 && s[0] == 0xc2 && s[1] < 0xa0)) {
                fwrite(s, 1, n, f);
                return n;
        } else if (n == 2) {    /* a C1 control, U+0080..U+009F */
                fprintf(f, "\\x%02x\\x%02x", s[0], s[1]);
                return 2;
        } else
                fprintf(f, "\\x%02x", *s);
        return 1;
}

void print_path(FILE *f, const char *str) {
        if (!str)
                str = "null"; /* a JSON null */
        const uint8_t *s = (const uint8_t *) str;
        size_t len = strlen(str);
        for (size_t i = 0; i < len;)
                i += put_safe(f, s + i, len - i, true);
}

void print_text(FILE *f, const char *str) {
        if (!str)
                str = "null"; /* a JSON null */
        const uint8_t *s = (const uint8_t *) str;
        size_t len = strlen(str);
        for (size_t i = 0; i < len;)
                i += put_safe(f, s + i, len - i, false);
}

void print_line(FILE *f, const char *str, size_t len) {
        const uint8_t *s = (const uint8_t *) str;
        bool nl = len > 0 && s[len - 1] == '\n';
        if (!isatty(fileno(f))) {
                fwrite(str, 1, len, f);
                return;
        }
        for (size_t i = 0; i < len - nl;)
                i += put_safe(f, s + i, len - nl - i, true);
        if (nl)
                fputc('\n', f);
}
