/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The room of the live list's files on their filesystem: space kept
 * allocated past each file's end (fallocate FALLOC_FL_KEEP_SIZE: st_size,
 * and so every reader, unchanged), so that another writer filling the
 * filesystem does not make the next append fail while it lasts. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include "fileio.h"
#include "imalog-file-internal.h"
#include "macro.h"

#define RESERVE_MIN_CHUNK 4096U       /* a page */

/* Keep f->reserve bytes allocated past end in fd, extended a chunk (a
 * quarter of the reservation) at a time: one fallocate per chunk the file
 * grows, not per entry. Allocating what is already allocated costs nothing,
 * so *alloc may lag behind the file's blocks (after a reopen or a cut). */
static int reserve_ahead(const IverImaFile *f, int fd, uint64_t end, uint64_t *alloc) {
        uint64_t chunk = MAX((uint64_t) RESERVE_MIN_CHUNK, f->reserve / 4);
        uint64_t want, from;

        if (*alloc >= end + f->reserve)
                return 0;
        want = (end + f->reserve + chunk - 1) / chunk * chunk;
        from = MAX(*alloc, end);
        if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t) from, (off_t) (want - from)) < 0)
                return negative_errno();
        *alloc = want;
        return 0;
}

void imalog_file_reserve_both(IverImaFile *f, uint64_t bin_end, uint64_t ascii_end) {
        if (f->reserve == 0 || f->reserve_error == -EOPNOTSUPP)
                return;
        int r = reserve_ahead(f, f->bin_fd, bin_end, &f->bin_alloc);
        if (r >= 0)
                r = reserve_ahead(f, f->ascii_fd, ascii_end, &f->ascii_alloc);
        f->reserve_error = r == -ENOTSUP ? -EOPNOTSUPP : MIN(r, 0);
}

/* Where the blocks of an append-only (dense) file end: an earlier run's
 * reservation survives a reopen. Less a block for what a filesystem counts
 * besides data (ext4's extent blocks): never more than is there. */
static uint64_t allocated_end(int fd) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return 0;
        uint64_t b = (uint64_t) st.st_blocks * 512;
        return b > (uint64_t) st.st_blksize ? b - (uint64_t) st.st_blksize : 0;
}

int iver_imalog_file_reserve(IverImaFile *f, uint64_t bytes) {
        if (!f)
                return -EINVAL;
        f->reserve = bytes;
        f->reserve_error = 0;
        /* all of it asked for: what an earlier run reserved is not taken twice */
        f->bin_alloc = f->size;
        f->ascii_alloc = f->ascii_size;
        imalog_file_reserve_both(f, f->size, f->ascii_size);
        if (f->reserve_error < 0) {
                /* short: what is there still counts (an estimate: st_blocks) */
                f->bin_alloc = MAX(f->bin_alloc, allocated_end(f->bin_fd));
                f->ascii_alloc = MAX(f->ascii_alloc, allocated_end(f->ascii_fd));
        }
        return f->reserve_error;
}

int iver_imalog_file_reserve_state(const IverImaFile *f, uint64_t *ret_ahead) {
        if (!f)
                return -EINVAL;
        uint64_t a = f->bin_alloc > f->size ? f->bin_alloc - f->size : 0;
        uint64_t b = f->ascii_alloc > f->ascii_size ? f->ascii_alloc - f->ascii_size : 0;
        *ret_ahead = f->reserve_error == -EOPNOTSUPP ? 0 : MIN(a, b);
        return f->reserve_error;
}
