/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Overlay mounts as /proc/self/mountinfo shows them: the mount point and the
 * layers (upperdir, workdir, lowerdir; lowerdir+=/datadir+= on Linux 6.8+),
 * and the mapping of a path below a layer to the merged path. Pure parsing:
 * no file is opened. Internal (lib/), not part of the public API. */
#include <stddef.h>

typedef struct IverOverlay {
        char *mount;   /* mount point */
        char *upper;   /* NULL: a read-only overlay */
        char *work;
        char **lower;  /* top first, NULL-terminated (never NULL itself) */
        size_t n_lower;
        char **data;   /* data-only lower layers ("::" or datadir+=): reached
                        * through metacopy redirects only, never by name */
        size_t n_data;
} IverOverlay;

IverOverlay *iver_overlay_free(IverOverlay *o);
static inline void iver_overlay_freep(IverOverlay **o) {
        iver_overlay_free(*o);
}

/* Decode mountinfo's octal escapes (\ooo: space, tab, newline, backslash,
 * and in option values the comma) in place. */
void iver_mountinfo_unescape(char *s);

/* One line of /proc/self/mountinfo ("ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS
 * [OPTIONAL…] - FSTYPE SOURCE SUPEROPTS"). *ret is the overlay mount it
 * describes, or NULL (and 0) for a mount of another type. -EINVAL for a line
 * without its fields or an overlay whose options cannot be read (no lower
 * layer, an empty layer name, a trailing escape). */
int iver_overlay_from_mountinfo(const char *line, IverOverlay **ret);

/* The super options of an overlay mount (still escaped as mountinfo shows
 * them), mount the mount point (decoded). A lowerdir= value is split at ':'
 * that no backslash escapes ("\:" a colon, "\\" a backslash in a name) and
 * at "::" (the data-only layers after it). */
int iver_overlay_parse(const char *mount, const char *super_opts, IverOverlay **ret);

/* Which layer path is below (≥ 0, as iver_overlay_layer counts: the upper
 * first if there is one, then the lower layers top first); -ENOENT below none (the work dir and data-only layers are not mapped).
 * *ret_merged (optional) gets the merged path: the mount point + the path
 * relative to the layer's root. The layer paths are compared as strings:
 * give canonical paths (see iver_overlay_set_layer). */
int iver_overlay_map(const IverOverlay *o, const char *path, char **ret_merged);

/* Number of mapped layers (the upper, if any, and the lower ones), and
 * layer i's path (the order of iver_overlay_map) / its replacement (the
 * caller's canonical form of it; the string is taken over). */
size_t iver_overlay_layers(const IverOverlay *o);
const char *iver_overlay_layer(const IverOverlay *o, size_t i);
void iver_overlay_set_layer(IverOverlay *o, size_t i, char *path);
