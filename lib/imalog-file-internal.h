/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The live list (imalog-file.c) and its reservation (imalog-reserve.c). */
#include <stdint.h>

#include "iver/imalog.h"
#include "imalog-index.h"

struct IverImaFile {
        int dir_fd;
        int bin_fd;
        int ascii_fd;
        uint64_t size;
        uint64_t ascii_size;            /* the ASCII twin's length: only we write it */
        size_t count;
        uint32_t pcrs;
        int ascii_error;
        ImaIndex index;
        /* Space kept allocated beyond each file's end (FALLOC_FL_KEEP_SIZE:
         * st_size, and so every reader, unchanged), so that another writer
         * filling the filesystem does not end the list. */
        uint64_t reserve;               /* bytes to keep ahead (0: none) */
        uint64_t bin_alloc, ascii_alloc; /* allocated up to (as far as we know) */
        int reserve_error;              /* 0, or why the last extension failed */
        /* a batch's records and text, kept for the next one (imalog-file.c) */
        uint8_t *bin_buf, *text_buf;
        size_t bin_cap, text_cap;
};

/* Both files' reservations, ahead of ends bin_end and ascii_end (before a
 * write that takes the files there): f->reserve_error says how it went
 * (-EOPNOTSUPP sticks: the filesystem cannot). */
void imalog_file_reserve_both(IverImaFile *f, uint64_t bin_end, uint64_t ascii_end);
