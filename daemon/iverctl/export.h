/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>

/* A Keylime runtime policy (version 1) around digests, which it takes
 * (NULL, or digests NULL: out of memory). */
json_object *export_skeleton(json_object *digests);
/* Add the hex digest h to digests[name] unless it is there; counts the
 * paths and digests it adds. false when out of memory. */
bool export_add_digest(json_object *digests, const char *name, const char *h, size_t *n_paths, size_t *n_digests);
/* Write the policy to out (atomically, synced) or to stdout; on success
 * stderr gets "Keylime runtime policy[ written to OUT]" for the caller to
 * finish the line. Returns an IverctlExit. */
int export_write(json_object *policy, const char *out);

/* policy export --keylime --from-deb (export-deb.c). root: "" or an
 * absolute directory without a trailing '/'. */
int export_from_deb(char *const debs[], size_t n_debs, const char *base, const char *root, const char *algo,
                    const char *out);
