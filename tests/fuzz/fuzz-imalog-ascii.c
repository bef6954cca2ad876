/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the ASCII measurement-list parsers
 * (iver_imalog_parse_ascii, iver_imalog_entry_from_ascii).
 *
 * Invariants: consumed never exceeds the input; an entry that parses
 * re-encodes to a binary record that decodes back to the same entry, and
 * to an ASCII line that parses back to the same template data. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iver/imalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const IverImaEntry *e) {
        size_t n = iver_imalog_entry_binary_size(e);
        uint8_t *buf = malloc(n ? n : 1);
        if (!buf)
                return;
        int w = iver_imalog_entry_to_binary(e, buf, n);
        if (w < 0 || (size_t) w != n)
                abort();
        IverImaEntry *b = NULL;
        int r = iver_imalog_entry_from_binary(buf, n, &b);
        if (r < 0 || (size_t) r != n)
                abort(); /* an entry we accepted does not survive the binary list */
        if (b->template_data_len != e->template_data_len ||
            memcmp(b->template_data, e->template_data, e->template_data_len) != 0 || b->pcr != e->pcr)
                abort();
        iver_imalog_entry_free(b);
        free(buf);

        if (e->path_len != strlen(e->path))
                abort();
        if (!memchr(e->path, '\n', e->path_len)) {
                char *line = NULL;
                size_t len;
                if (iver_imalog_entry_to_ascii(e, &line, &len) == 0) {
                        IverImaEntry *a = NULL;
                        if (iver_imalog_entry_from_ascii(line, len, &a) < 0)
                                abort();
                        if (a->template_data_len != e->template_data_len ||
                            memcmp(a->template_data, e->template_data, e->template_data_len) != 0)
                                abort();
                        iver_imalog_entry_free(a);
                        free(line);
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        /* one line, as given (with or without its '\n') */
        const char *nl = memchr(buf, '\n', size);
        size_t first = nl ? (size_t) (nl - buf) + 1 : size;
        IverImaEntry *e = NULL;
        if (iver_imalog_entry_from_ascii(buf, first, &e) == 0) {
                check_entry(e);
                iver_imalog_entry_free(e);
        }

        /* the whole list */
        IverImaLog *l = NULL;
        if (iver_imalog_new(&l) < 0) {
                free(buf);
                return 0;
        }
        size_t consumed = SIZE_MAX;
        int r = iver_imalog_parse_ascii(l, buf, size, &consumed);
        if (r == 0 && consumed > size)
                abort();
        size_t n = iver_imalog_size(l);
        for (size_t i = 0; i < n && i < 64; i++)
                check_entry(iver_imalog_get(l, i));
        (void) iver_imalog_format_detect((const uint8_t *) buf, size);
        iver_imalog_free(l);
        free(buf);
        return 0;
}
