/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whole list files read into memory and written from it: `iverctl log`,
 * `iverctl verify`, exports and tests (the daemon's live list stays on disk:
 * imalog-file.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iver/imalog.h"
#include "grow.h"
#include "fileio.h"
#include "macro.h"

int iver_imalog_load(const char *path, IverImaLog **ret) {
        _cleanup_(iver_imalog_freep) IverImaLog *l = NULL;
        _cleanup_free_ char *text = NULL;
        size_t size, used = 0;
        int r;

        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = iver_read_fd_max(fd, SIZE_MAX / 4, &text, &size);
        const uint8_t *buf = (const uint8_t *) text;
        if (r < 0)
                return r;
        r = iver_imalog_new(&l);
        if (r < 0)
                return r;
        switch (iver_imalog_format_detect(buf, size)) {
        case IVER_IMA_FORMAT_BINARY:
                r = iver_imalog_parse_binary(l, buf, size, &used);
                break;
        case IVER_IMA_FORMAT_ASCII:
                r = iver_imalog_parse_ascii(l, (const char *) buf, size, &used);
                break;
        default:
                r = -EBADMSG;
        }
        if (r < 0)
                return r;
        if (used != size)
                return -EBADMSG;        /* torn tail */
        *ret = TAKE_PTR(l);
        return 0;
}

/* Append e in format to *buf (*len bytes used of *cap). */
static int encode(const IverImaEntry *e, IverImaFormat format, char **buf, size_t *len, size_t *cap) {
        _cleanup_free_ char *line = NULL;
        size_t n = format == IVER_IMA_FORMAT_ASCII ? 0 : iver_imalog_entry_binary_size(e);
        int r;

        if (format == IVER_IMA_FORMAT_ASCII) {
                r = iver_imalog_entry_to_ascii(e, &line, &n);
                if (r < 0)
                        return r;
        }
        if (GROW(*buf, *cap, *len + n, 4096) < 0)
                return -ENOMEM;
        if (line)
                memcpy(*buf + *len, line, n);
        else if ((r = iver_imalog_entry_to_binary(e, (uint8_t *) *buf + *len, n)) < 0)
                return r;
        *len += n;
        return 0;
}

int iver_imalog_save(const IverImaLog *l, const char *path, IverImaFormat format) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        int r;

        if (format < 0 || format >= _IVER_IMA_FORMAT_MAX)
                return -EINVAL;
        for (size_t i = 0; i < iver_imalog_size(l); i++) {
                r = encode(iver_imalog_get(l, i), format, &buf, &len, &cap);
                if (r < 0)
                        return r;
        }
        return iver_write_file_atomic(path, buf ? buf : "", len, 0644, IVER_WRITE_SYNC);
}
