/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A JSON string literal of arbitrary bytes: controls are escaped, valid UTF-8
 * passes, and each byte that is not valid UTF-8 becomes \udcXX (the
 * surrogateescape convention), so the original bytes can be recovered. */
void json_string(FILE *f, const char *s, size_t len);
/* A path for a line-oriented listing: backslash, newline, tab and non-printable
 * bytes as \\, \n, \t and \xHH, so one file is always one line. */
void print_path(FILE *f, const char *s);
/* Whether s (len bytes) is strict UTF-8 (no overlongs, surrogates, > U+10FFFF). */
bool utf8_valid(const char *s, size_t len);
