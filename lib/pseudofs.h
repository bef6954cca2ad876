/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Pseudo filesystems: kernel interfaces that look like files (proc, sysfs,
 * debugfs, …). Their "content" is generated on read, may be huge or endless
 * (/proc/PID/pagemap, /sys/kernel/debug/…), may have side effects, and is
 * not what a measurement list is for: iverd never hashes a file on one,
 * whatever the policy says, and its walkers never descend into one.
 * Internal (lib/). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a statfs f_type is a pseudo filesystem; its name in *ret_name
 * (optional, static) when it is. */
bool iver_fs_is_pseudo(uint64_t fs_magic, const char **ret_name);

/* The mount points where pseudo filesystems are mounted conventionally
 * (/proc, /sys, /dev/pts, …), NULL-terminated: what `policy check` tests a
 * rule against besides the live mount table. */
extern const char *const iver_pseudo_fs_dirs[];

/* The live mount points of pseudo filesystems from /proc/self/mountinfo
 * (octal escapes decoded), NULL-terminated, to be freed with
 * iver_strv_free(). An empty list if the table cannot be read. */
int iver_pseudo_fs_mounts(char ***ret);
void iver_strv_free(char **v);
