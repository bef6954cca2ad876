/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "iver/check.h"
#include "report.h"

/* One directory of the walk, read off the loop (on a statx thread,
 * workers.h): opened, its entries read a buffer at a time, the statx of
 * their files made. A cold tree costs the disk a read for every directory
 * block and inode table block: here that wait is a thread's, while the loop
 * hands the files already found to the workers. The loop allocates it; the
 * thread allocates nothing (no memory of its own to keep).
 *
 * Two steps when the loop must act between the open and the read: the
 * directory is on another filesystem than the one the loop said is watched
 * as a whole (covered_dev): its watch (inotify) or its filesystem's mark
 * must be in place before its entries are read, or a file created between
 * the read and the watch would be missed. The thread then stops after the
 * open (opened); the loop watches it and hands it back for the read. A
 * directory bigger than the buffer comes back once a buffer (!eof), and is
 * handed back for the rest. */
#define DIR_READ_BYTES (8U << 10)
#define DIR_READ_ENTRIES (DIR_READ_BYTES / 24U) /* a record is at least 24 bytes */
/* The statx of a file made with the read: of the first READ_STATS_MAX
 * files of a buffer of an all-files directory (the others go in statx
 * batches, as a some-files directory's wanted names do). */
#define READ_STATS_MAX 128U

typedef struct DirStatRead {
        int r;                  /* iver_stat()'s return */
        int64_t at;             /* iver_now_ns() just before the statx */
        IverStat st;
} DirStatRead;

typedef struct DirEntryRead {
        uint64_t ino;           /* d_ino */
        uint16_t name_off;      /* its NUL-terminated name in buf */
        int16_t stat;           /* its statx in stats[], or -1: none made */
        uint8_t type;           /* DT_DIR, DT_REG, DT_LNK (DT_UNKNOWN resolved by fstatat, or left) */
} DirEntryRead;

typedef struct DirRead {
        /* in (the loop) */
        char *path;             /* owned */
        DirFiles files;         /* ALL: the thread statx'es files (unless names_only); SOME, NONE: names
                                 * only */
        bool names_only;        /* no statx: the loop looks at the names (and d_ino) first */
        uint32_t covered_dev;   /* a filesystem watched as a whole (0: none): a directory on it is read
                                 * at once */
        iver_statx_fn statx;
        bool want_version;
        bool entered;           /* the loop's: dir_entered reported (before the read on another
                                 * filesystem, after it on a covered one) */
        /* out (the thread) */
        int fd;                 /* the open directory (owned), or -errno: it could not be opened */
        uint32_t dev;
        bool opened;            /* opened only: on another filesystem, the loop's turn */
        bool eof;               /* every entry has been read */
        const char *pseudo;     /* a pseudo filesystem's name: never read */
        int error;              /* reading it failed part way (-errno): what was read is kept */
        unsigned n, n_stats;    /* entries and statx of the last buffer */
        DirEntryRead e[DIR_READ_ENTRIES];
        DirStatRead *stats;     /* the loop's (owned): READ_STATS_MAX of them where statx is made with
                                 * the read (ALL, not names_only); NULL: none */
        char buf[DIR_READ_BYTES] __attribute__((aligned(8)));
} DirRead;

/* On a statx thread: the next step (open, then a buffer of entries unless
 * it must stop). */
void dir_read_run(DirRead *d);
DirRead *dir_read_free(DirRead *d);
