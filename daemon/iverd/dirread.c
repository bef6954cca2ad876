/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A directory of the walk, read on a statx thread (dirread.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dirread.h"
#include "grow.h"
#include "pathfd.h"
#include "pseudofs.h"

DirRead *dir_read_free(DirRead *d) {
        if (!d)
                return NULL;
        if (d->fd >= 0)
                close(d->fd);
        free(d->path);
        free(d->names);
        free(d->e);
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

static int add(DirRead *d, const char *name, unsigned char type) {
        size_t len = strlen(name) + 1;
        if (GROW(d->names, d->names_cap, d->names_len + len, 4096) < 0 || GROW(d->e, d->cap, d->n + 1, 64) < 0)
                return -ENOMEM;
        DirEntryRead *e = &d->e[d->n++];
        *e = (DirEntryRead) { .name_off = (uint32_t) d->names_len, .type = type };
        memcpy(d->names + d->names_len, name, len);
        d->names_len += len;
        if (d->files == DIR_FILES_ALL && type != DT_DIR) {
                e->stated = true;
                e->at = iver_now_ns();
                e->r = iver_stat(d->statx, d->fd, name, d->want_version, &e->st);
        }
        return 0;
}

static void read_dir(DirRead *d) {
        int fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 3);
        DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
        if (!dir) {
                d->error = -errno;
                if (fd >= 0)
                        close(fd);
                return;
        }
        d->read = true;
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(dir);
                if (!de) {
                        if (errno != 0)
                                d->error = -errno;
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                unsigned char type = type_of(d->fd, de->d_name, de->d_type);
                /* a file of an ancestor-only directory is never looked at */
                if (type != DT_DIR && (d->files == DIR_FILES_NONE || (type != DT_REG && type != DT_LNK && type != DT_UNKNOWN)))
                        continue;
                if (add(d, de->d_name, type) < 0) {
                        d->error = -ENOMEM;
                        break;
                }
        }
        closedir(dir);
}

void dir_read_run(DirRead *d) {
        if (!d->opened) {
                open_dir(d);
                if (d->fd < 0 || d->pseudo || d->opened)
                        return;
        } else
                d->opened = false; /* the loop's turn is over */
        read_dir(d);
}
