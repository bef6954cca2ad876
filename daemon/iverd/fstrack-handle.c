/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An object handle's inode number read from its bytes, without
 * open_by_handle_at + fstat + close (three syscalls an event: most of what a
 * write storm on a marked filesystem costs the daemon). Only layouts the
 * filesystem's export operations are known to write are read, and only once
 * FSTRACK_FORM_CHECKS handles of that (type, length) agreed with what the
 * kernel said for them; one disagreement and that layout is asked of the
 * kernel for good. */
#include <string.h>

#include "fstrack-internal.h"
#include "macro.h"

/* The layouts: ext2/3/4 and xfs FILEID_INO32_GEN (type 1: u32 ino, u32
 * gen), xfs's 64-bit inode form (type 0x81: u64 ino, u32 gen), tmpfs (type 1,
 * 12 bytes: u32 gen, u32 ino, u32 ino >> 32). Not btrfs (a subvolume is
 * another device). */
static bool decode(const TrackedFs *f, const struct file_handle *fh, uint64_t *ret) {
        const unsigned char *b = fh->f_handle;
        uint32_t lo, hi;
        bool ext = strcmp(f->fstype, "ext4") == 0 || strcmp(f->fstype, "ext3") == 0 || strcmp(f->fstype, "ext2") == 0;
        bool xfs = strcmp(f->fstype, "xfs") == 0;

        if ((ext || xfs) && fh->handle_type == 1 && fh->handle_bytes == 8) {
                memcpy(&lo, b, 4);
                *ret = lo;
                return true;
        }
        if (xfs && fh->handle_type == 0x81 && fh->handle_bytes == 12) {
                memcpy(ret, b, 8);
                return true;
        }
        if (strcmp(f->fstype, "tmpfs") == 0 && fh->handle_type == 1 && fh->handle_bytes == 12) {
                memcpy(&lo, b + 4, 4);
                memcpy(&hi, b + 8, 4);
                *ret = (uint64_t) hi << 32 | lo;
                return true;
        }
        return false;
}

static HandleForm *form(TrackedFs *f, const struct file_handle *fh) {
        for (unsigned i = 0; i < ELEMENTSOF(f->forms); i++) {
                HandleForm *m = &f->forms[i];
                if (m->bytes == 0) {
                        *m = (HandleForm) { .type = fh->handle_type, .bytes = (uint16_t) fh->handle_bytes };
                        return m;
                }
                if (m->type == fh->handle_type && m->bytes == fh->handle_bytes)
                        return m;
        }
        return NULL;
}

bool fstrack_handle_ino(TrackedFs *f, const struct file_handle *fh, uint32_t *ret_dev, uint64_t *ret_ino) {
        HandleForm *m = form(f, fh);
        if (!m || m->checks < FSTRACK_FORM_CHECKS || !decode(f, fh, ret_ino))
                return false;
        *ret_dev = f->dev;
        f->handles_read++;
        return true;
}

void fstrack_handle_learn(TrackedFs *f, const struct file_handle *fh, uint32_t dev, uint64_t ino) {
        HandleForm *m = form(f, fh);
        uint64_t mine;
        if (!m || m->checks < 0 || m->checks >= FSTRACK_FORM_CHECKS)
                return;
        if (dev == f->dev && decode(f, fh, &mine) && mine == ino)
                m->checks++;
        else
                m->checks = -1;
}
