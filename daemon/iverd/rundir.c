/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The runtime and state directories: created safely and refused when another
 * user could plant a file or symlink in them (a pre-created /run/iverd with
 * a symlink named like the measurement list would make root write through
 * it). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "rundir.h"

static bool trusted_owner(uid_t uid) {
        return uid == 0 || uid == geteuid();
}

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int rundir_prepare(const char *dir, mode_t mode, const char *what) {
        struct stat st;
        int r;

        if (!dir || dir[0] != '/') {
                log_error("The %s directory must be an absolute path: %s", what, dir ?: "(none)");
                return -EINVAL;
        }
        r = mkdir_p(dir, mode);
        if (r < 0)
                return log_error_errno(r, "Cannot create the %s directory %s: %m", what, dir);
        if (lstat(dir, &st) < 0)
                return log_error_errno(-errno, "Cannot stat the %s directory %s: %m", what, dir);
        if (S_ISLNK(st.st_mode)) {
                log_error("Refusing the %s directory %s: it is a symbolic link (another user may have planted it); "
                          "remove it or point iverd at a directory only root can write", what, dir);
                return -EPERM;
        }
        if (!S_ISDIR(st.st_mode)) {
                log_error("Refusing the %s directory %s: not a directory", what, dir);
                return -ENOTDIR;
        }
        if (!trusted_owner(st.st_uid) || (st.st_mode & 0022)) {
                log_error("Refusing the %s directory %s: owned by uid %u with mode %04o; expected owned by root "
                          "and not writable by group or others (another user could plant files or symlinks there)",
                          what, dir, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
                return -EPERM;
        }
        /* the ancestors: nobody else may rename or replace a component */
        _cleanup_free_ char *p = strdup(dir);
        if (!p)
                return log_error_errno(-ENOMEM, "Cannot check the %s directory %s: %m", what, dir);
        for (char *s = strrchr(p, '/'); s; s = strrchr(p, '/')) {
                *s = 0;
                const char *a = *p ? p : "/";
                if (stat(a, &st) < 0)
                        return log_error_errno(-errno, "Cannot stat %s: %m", a);
                if (!trusted_owner(st.st_uid) || ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX))) {
                        log_error("Refusing the %s directory %s: its parent %s is owned by uid %u with mode %04o; "
                                  "expected every parent owned by root and not writable by others (or sticky)",
                                  what, dir, a, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
                        return -EPERM;
                }
                if (!*p)
                        break;
        }
        return 0;
}
