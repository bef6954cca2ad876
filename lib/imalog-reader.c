/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading a binary measurement list file record by record, through a small
 * buffer: the daemon keeps its list on disk and reads it back for replays,
 * the TPM thread's extends and the list verbs, never all of it in memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iver/imalog.h"
#include "fileio.h"
#include "macro.h"

#define READ_SIZE (64U * 1024U)

struct IverImaReader {
        int fd;
        uint8_t *buf;
        size_t cap;
        uint64_t buf_off;       /* file offset of buf[0] */
        size_t pos, len;        /* next record at buf[pos]; buf[0..len) read */
};

int iver_imalog_reader_new(int fd, uint64_t offset, IverImaReader **ret) {
        IverImaReader *r;

        if (fd < 0 || !ret)
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->buf = malloc(READ_SIZE);
        if (!r->buf) {
                free(r);
                return -ENOMEM;
        }
        r->cap = READ_SIZE;
        r->fd = fd;
        r->buf_off = offset;
        *ret = r;
        return 0;
}

IverImaReader *iver_imalog_reader_free(IverImaReader *r) {
        if (r) {
                free(r->buf);
                free(r);
        }
        return NULL;
}

uint64_t iver_imalog_reader_offset(const IverImaReader *r) {
        return r->buf_off + r->pos;
}

void iver_imalog_reader_seek(IverImaReader *r, uint64_t offset) {
        if (offset >= r->buf_off && offset <= r->buf_off + r->len) {
                r->pos = (size_t) (offset - r->buf_off);
                return;
        }
        r->buf_off = offset;
        r->pos = r->len = 0;
}

/* Read more of the file (up to end) after what the buffer holds, making room
 * for at least want bytes from pos. 0 at end (nothing more to read). */
static int fill(IverImaReader *r, uint64_t end, size_t want) {
        if (r->pos > 0) {
                memmove(r->buf, r->buf + r->pos, r->len - r->pos);
                r->buf_off += r->pos;
                r->len -= r->pos;
                r->pos = 0;
        }
        if (want > r->cap) {
                uint8_t *b = realloc(r->buf, want);
                if (!b)
                        return -ENOMEM;
                r->buf = b;
                r->cap = want;
        }
        uint64_t at = r->buf_off + r->len;
        if (at >= end)
                return 0;
        size_t room = r->cap - r->len;
        if (room > end - at)
                room = (size_t) (end - at);
        size_t k;
        int e = iver_pread_full(r->fd, r->buf + r->len, room, at, &k);
        if (e < 0)
                return e;
        r->len += k;
        return k > 0;
}

int iver_imalog_reader_next(IverImaReader *r, uint64_t end, IverImaEntry **ret) {
        size_t ext = 0;
        int k;

        if (iver_imalog_reader_offset(r) >= end)
                return 0;
        for (;;) {
                k = iver_imalog_entry_binary_extent(r->buf + r->pos, r->len - r->pos, &ext);
                if (k >= 0 && ext <= r->len - r->pos)
                        break;
                if (k < 0 && k != -ENODATA)
                        return k;
                /* the record (or its length fields) is not all in the buffer */
                k = fill(r, end, k >= 0 ? ext : 0);
                if (k < 0)
                        return k;
                if (k == 0)     /* clean end, or a record torn at end */
                        return r->pos == r->len ? 0 : -ENODATA;
        }
        if (iver_imalog_reader_offset(r) + ext > end)
                return -ENODATA;        /* buffered from a longer read, but past end */
        k = iver_imalog_entry_from_binary(r->buf + r->pos, ext, ret);
        if (k < 0)
                return k;
        r->pos += (size_t) k;
        return 1;
}

int iver_imalog_read_prefix(int fd, uint64_t size, uint8_t **ret) {
        if (size > SIZE_MAX - 1)
                return -EFBIG;
        _cleanup_free_ uint8_t *buf = malloc((size_t) size + 1);
        if (!buf)
                return -ENOMEM;
        int r = iver_pread_full(fd, buf, (size_t) size, 0, NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}
