/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iver/digest.h"

/* One file a Debian package installs, as iverd lists it once installed. */
typedef struct DebFile {
        char *name;     /* as installed: ROOT + "/usr/bin/x", in the kernel form */
        uint8_t digest[IVER_DIGEST_MAX]; /* of the content; of the target string for a symlink */
        bool symlink;
} DebFile;

typedef struct DebContents {
        DebFile *files;
        size_t n, allocated;
        size_t n_symlinks;      /* of n */
        size_t n_hardlinks;     /* of n: a second name of a file the archive holds */
        size_t n_other;         /* not listed: device nodes, FIFOs (iverd lists neither) */
        size_t n_md5sums;       /* files checked against the package's own md5sums */
        char compression[8];    /* of the data member: "gz", "xz", "zst", "bz2", "lzma", "none" */
} DebContents;

/* Read the data member of the Debian binary package at path (an ar archive:
 * debian-binary, control.tar*, data.tar*) with libarchive and append every
 * regular file and symlink it installs to *c, hashed with algo, named under
 * root ("" for /). Where the control member holds md5sums, every file it
 * names must be in the data member with that MD5 (dpkg's own record, so a
 * damaged data member is refused even where the compression has no check).
 * A damaged, truncated or non-.deb file is refused with a message naming
 * it on stderr. Returns an IverctlExit: 0, or IVERCTL_EXIT_FAILURE (*c may
 * then hold some of the package's files: its caller writes nothing and frees it). */
int deb_read(const char *path, IverHashAlgo algo, const char *root, DebContents *c);
void deb_contents_done(DebContents *c);
