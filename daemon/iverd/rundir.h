/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <sys/types.h>

/* Create dir (and missing parents) with mode if needed, then make sure no
 * other user can plant files or symlinks in it: dir itself must be a real
 * directory (not a symlink) owned by iverd's user (root) and not writable by
 * group or others; every ancestor must be owned by root or iverd's user and
 * not writable by group or others unless sticky (/tmp). Logs what is wrong
 * (what = "runtime", "state"), every failure, and returns -EPERM when the
 * directory is refused, another -errno when it cannot be created or
 * checked; the caller refuses to start (exit status 4). */
int rundir_prepare(const char *dir, mode_t mode, const char *what);
