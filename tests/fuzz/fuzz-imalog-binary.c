/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the binary measurement-list parsers
 * (iver_imalog_parse_binary, iver_imalog_entry_from_binary,
 * iver_imalog_entry_binary_extent). A list read back after a crash, or
 * handed to `iverctl verify`, can hold any bytes.
 *
 * Invariants: consumed never exceeds the input; a record that decodes
 * re-encodes to exactly the bytes it came from, its extent is what it used,
 * and its ASCII line parses back to the same template data (unless the path
 * holds '\n', which the ASCII format cannot carry). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iver/imalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const IverImaEntry *e, const uint8_t *src, size_t src_len) {
        size_t n = iver_imalog_entry_binary_size(e);
        if (src && n != src_len)
                abort();
        uint8_t *buf = malloc(n ? n : 1);
        if (!buf)
                return;
        int w = iver_imalog_entry_to_binary(e, buf, n);
        if (w < 0 || (size_t) w != n)
                abort();
        if (src && memcmp(buf, src, n) != 0)
                abort(); /* decode → encode is not the identity */
        free(buf);

        if (e->path_len != strlen(e->path))
                abort();
        if (!memchr(e->path, '\n', e->path_len)) {
                char *line = NULL;
                size_t len;
                if (iver_imalog_entry_to_ascii(e, &line, &len) == 0) {
                        IverImaEntry *a = NULL;
                        if (iver_imalog_entry_from_ascii(line, len, &a) < 0)
                                abort(); /* our own ASCII line does not parse */
                        if (a->template_data_len != e->template_data_len ||
                            memcmp(a->template_data, e->template_data, e->template_data_len) != 0 || a->pcr != e->pcr ||
                            memcmp(a->template_digest, e->template_digest, sizeof(a->template_digest)) != 0)
                                abort();
                        iver_imalog_entry_free(a);
                        free(line);
                }
        }
        IverDigest d;
        (void) iver_imalog_entry_bank_digest(e, IVER_HASH_SHA256, &d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* exact-size copy: ASan catches any read past the end */
        uint8_t *buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        /* one record */
        IverImaEntry *e = NULL;
        size_t extent = 0;
        int er = iver_imalog_entry_binary_extent(buf, size, &extent);
        int r = iver_imalog_entry_from_binary(buf, size, &e);
        if (r > 0) {
                if ((size_t) r > size || er < 0 || extent != (size_t) r)
                        abort();
                check_entry(e, buf, (size_t) r);
                iver_imalog_entry_free(e);
        } else if (r == 0)
                abort();

        /* the whole list */
        IverImaLog *l = NULL;
        if (iver_imalog_new(&l) < 0) {
                free(buf);
                return 0;
        }
        size_t consumed = SIZE_MAX;
        r = iver_imalog_parse_binary(l, buf, size, &consumed);
        if (r == 0 && consumed > size)
                abort();
        size_t off = 0, n = iver_imalog_size(l);
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *x = iver_imalog_get(l, i);
                size_t bs = iver_imalog_entry_binary_size(x);
                if (off + bs > size)
                        abort();
                check_entry(x, buf + off, bs);
                off += bs;
        }
        if (r == 0 && off != consumed)
                abort();
        if (n > 0 && n <= 64) {
                IverDigest v;
                (void) iver_imalog_replay(l, n, iver_imalog_get(l, 0)->pcr, IVER_HASH_SHA256, &v);
        }
        (void) iver_imalog_format_detect(buf, size);
        iver_imalog_free(l);
        free(buf);
        return 0;
}
