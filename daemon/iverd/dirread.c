/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A directory of the walk, read on a statx thread (dirread.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dirread.h"
#include "pathfd.h"
#include "pseudofs.h"

DirRead *dir_read_free(DirRead *d) {
        if (!d)
                return NULL;
        if (d->fd >= 0)
                close(d->fd);
        free(d->stats);
        free(d->path);
        free(d);
        return NULL;
}

static void open_dir(DirRead *d) {
        d->fd = path_open_dir(d->path, O_RDONLY | O_NOATIME);
        if (d->fd < 0)
                return;
        struct stat st;
        if (fstat(d->fd, &st) < 0) {
                d->fd = (close(d->fd), -errno);
                return;
        }
        d->dev = (major(st.st_dev) << 20) | (minor(st.st_dev) & 0xfffffU);
        if (d->covered_dev != 0 && d->dev == d->covered_dev)
                return; /* on the filesystem watched as a whole: read it now */
        /* another filesystem (a mount crossed, or the walk's first): never
         * a pseudo one (lib/pseudofs.h), and the loop watches it first */
        struct statfs sfs;
        if (fstatfs(d->fd, &sfs) == 0 && iver_fs_is_pseudo((uint64_t) sfs.f_type, &d->pseudo))
                return;
        d->opened = true;
}

static unsigned char type_of(int dirfd, const char *name, unsigned char type) {
        struct stat st;
        if (type != DT_UNKNOWN)
                return type;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return DT_UNKNOWN; /* gone: its check says so */
        return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
}

/* One buffer of entries: directories, and files unless none is wanted
 * (FIFOs, sockets, devices are never measured). The buffer is filled as far
 * as it goes: a directory that fits comes back once, its end seen. */
static void read_buffer(DirRead *d) {
        size_t used = 0;
        d->n = d->n_stats = 0;
        while (sizeof(d->buf) - used >= sizeof(struct dirent64)) {
                ssize_t k = getdents64(d->fd, d->buf + used, sizeof(d->buf) - used);
                if (k <= 0) {
                        if (k < 0)
                                d->error = -errno;
                        d->eof = true;
                        return;
                }
                for (size_t off = used; off < used + (size_t) k && d->n < DIR_READ_ENTRIES;) {
                        struct dirent64 *de = (struct dirent64 *) (d->buf + off);
                        off += de->d_reclen;
                        const char *name = de->d_name;
                        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                                continue;
                        unsigned char type = type_of(d->fd, name, de->d_type);
                        if (type != DT_DIR &&
                            (d->files == DIR_FILES_NONE || (type != DT_REG && type != DT_LNK && type != DT_UNKNOWN)))
                                continue;
                        DirEntryRead *e = &d->e[d->n++];
                        *e = (DirEntryRead) { .ino = de->d_ino, .name_off = (uint16_t) (name - d->buf), .stat = -1,
                                              .type = type };
                        if (d->stats && type != DT_DIR && d->n_stats < READ_STATS_MAX) {
                                DirStatRead *sr = &d->stats[d->n_stats];
                                e->stat = (int16_t) d->n_stats++;
                                sr->at = iver_now_ns();
                                sr->r = iver_stat(d->statx, d->fd, name, d->want_version, &sr->st);
                        }
                }
                used += (size_t) k;
        }
}

void dir_read_run(DirRead *d) {
        if (d->fd < 0) {
                open_dir(d);
                if (d->fd < 0 || d->pseudo || d->opened)
                        return;
        }
        d->opened = false; /* the loop's turn, if it had one, is over */
        read_buffer(d);
}
