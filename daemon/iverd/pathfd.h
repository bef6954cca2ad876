/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "iver/check.h"

/* Opening by a path of any length without following symlinks (issue 13 item
 * 10: 18 levels of 250-byte names are longer than PATH_MAX). */

/* Open the directory at absolute path with openat2(RESOLVE_NO_SYMLINKS), in
 * pieces shorter than PATH_MAX each resolved RESOLVE_BENEATH the previous one.
 * flags: O_PATH, or O_RDONLY (| O_NOATIME, dropped where it is refused);
 * O_DIRECTORY | O_CLOEXEC are added. Returns the fd or -errno (ELOOP: a
 * symlink on the way). Without openat2 (old kernel, seccomp) falls back to
 * openat with O_NOFOLLOW, which checks the last component only. */
int path_open_dir(const char *path, int flags);

/* The parent directory of path (O_PATH, as above) and, in *ret_name, the last
 * component (relative to "." without a slash). Returns the fd or -errno. */
int path_open_parent(const char *path, const char **ret_name);

/* iver_context_stat() of a path of any length: directly when it is short,
 * relative to its parent (path_open_parent) when ENAMETOOLONG. */
int path_context_stat(IverContext *ctx, const char *path, IverStat *ret);
