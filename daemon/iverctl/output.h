/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A JSON string literal of arbitrary bytes: controls are escaped, valid UTF-8
 * passes, and each byte that is not valid UTF-8 becomes \udcXX (the
 * surrogateescape convention), so the original bytes can be recovered. */
void json_string(FILE *f, const char *s, size_t len);
/* A path for a line-oriented listing: backslash, newline, tab and every byte a
 * terminal may act on (other C0 controls, DEL, C1 controls U+0080..U+009F and
 * bytes outside valid UTF-8) as \\, \n, \t and \xHH, so one file is always
 * one line and a name cannot drive the terminal. Valid UTF-8 passes. */
void print_path(FILE *f, const char *s);
/* The same for a human message (an error from the daemon, a diagnostic):
 * a backslash stays as it is. */
void print_text(FILE *f, const char *s);
/* A line of the ASCII measurement list: written as it is to a file or pipe
 * (the list format), escaped as print_path does (but for its final '\n')
 * when f is a terminal. */
void print_line(FILE *f, const char *s, size_t len);
/* Whether s (len bytes) is strict UTF-8 (no overlongs, surrogates, > U+10FFFF). */
bool utf8_valid(const char *s, size_t len);
