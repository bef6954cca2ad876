/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "iver/check.h"
#include "report.h"

/* One directory of the walk, read off the loop (on a statx thread,
 * workers.h): opened, its entries read, its files' statx made. A cold tree
 * costs the disk a read for every directory block and inode table block:
 * here that wait is a thread's, while the loop hands the files already
 * found to the workers.
 *
 * Two steps when the loop must act between the open and the read: the
 * directory is on another filesystem than the one the loop said is watched
 * as a whole (covered_dev): its watch (inotify) or its filesystem's mark
 * must be in place before its entries are read, or a file created between
 * the read and the watch would be missed. The thread then stops after the
 * open (opened); the loop watches it and hands it back for the read. */
typedef struct DirEntryRead {
        uint32_t name_off;      /* in names */
        uint8_t type;           /* DT_DIR, DT_REG, DT_LNK (DT_UNKNOWN resolved by fstatat), other: skipped */
        bool stated;            /* st, at, r filled (files of an all-files directory) */
        int r;                  /* iver_stat()'s return */
        int64_t at;             /* iver_now_ns() just before the statx */
        IverStat st;
} DirEntryRead;

typedef struct DirRead {
        /* in (the loop) */
        char *path;             /* owned */
        DirFiles files;         /* ALL: the thread statx'es every file; SOME, NONE: names only */
        uint32_t covered_dev;   /* a filesystem watched as a whole (0: none): a directory on it is read
                                 * at once */
        iver_statx_fn statx;
        bool want_version;
        bool entered;           /* the loop's: watched before it was read */
        /* out (the thread) */
        int fd;                 /* the open directory (owned), or -errno: it could not be opened */
        uint32_t dev;
        bool opened;            /* opened only: on another filesystem, the loop's turn */
        bool read;              /* its entries are read */
        const char *pseudo;     /* a pseudo filesystem's name: never read */
        int error;              /* reading it failed part way (-errno): what was read is kept */
        char *names;            /* NUL-terminated */
        size_t names_len, names_cap;
        DirEntryRead *e;
        size_t n, cap;
} DirRead;

/* On a statx thread: the next step (open, then read unless it must stop). */
void dir_read_run(DirRead *d);
DirRead *dir_read_free(DirRead *d);
