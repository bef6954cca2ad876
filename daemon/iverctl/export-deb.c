/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl policy export --keylime --from-deb: a Keylime runtime policy whose
 * digests come from Debian packages' own archives (deb.c), not from the disk
 * being attested, for the host that installs them.
 *
 * With --base the policy is the base policy with the packages' digests added
 * to it: for each path the union of the base's digests and the packages'
 * (the upgrade window of keylime/keylime#1515: while v1 is replaced by v2 a
 * host lists either digest, and a file v2 removed keeps v1's). Keylime's own
 * generator (keylime/policy/create_runtime_policy.py) merges a base policy
 * the same way and refuses a base whose digests are of another algorithm;
 * so does this one. The base's other fields (excludes, keyrings, ...) are
 * kept; its meta.timestamp is renewed.
 *
 * Everything is read and checked before anything is written: a damaged
 * package or base policy writes nothing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "deb.h"
#include "export.h"
#include "iverctl.h"
#include "macro.h"
#include "output.h"

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

static void hex(const uint8_t *p, size_t n, char *out) {
        static const char x[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++)
                out[2 * i] = x[p[i] >> 4], out[2 * i + 1] = x[p[i] & 15];
        out[2 * n] = 0;
}

static bool is_hex(const char *s, size_t len) {
        if (strlen(s) != len)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static int base_error(const char *path, const char *what) {
        fprintf(stderr, "iverctl policy export: base policy ");
        print_path(stderr, path);
        fprintf(stderr, ": %s\n", what);
        return IVERCTL_EXIT_FAILURE;
}

/* Every digest of the base: lower-case hex of algo's size (Keylime compares
 * strings; another algorithm or case would never match a list entry). */
static int check_base_digests(const char *path, json_object *digests, IverHashAlgo algo, size_t *ret_paths) {
        size_t n = 0;
        json_object_object_foreach(digests, name, arr) {
                if (!json_object_is_type(arr, json_type_array))
                        return base_error(path, "a \"digests\" value is not a list");
                for (size_t i = 0; i < json_object_array_length(arr); i++) {
                        json_object *d = json_object_array_get_idx(arr, i);
                        if (!json_object_is_type(d, json_type_string) ||
                            !is_hex(json_object_get_string(d), 2 * iver_hash_algo_size(algo))) {
                                fprintf(stderr, "iverctl policy export: base policy ");
                                print_path(stderr, path);
                                fprintf(stderr, ": the digest of ");
                                print_path(stderr, name);
                                fprintf(stderr, " is not a lower-case hex %s digest (see --algo)\n",
                                        iver_hash_algo_to_string(algo));
                                return IVERCTL_EXIT_FAILURE;
                        }
                }
                n++;
        }
        *ret_paths = n;
        return 0;
}

/* The base policy, completed with any field Keylime's schema has and it lacks. */
static int load_base(const char *path, IverHashAlgo algo, json_object **ret, size_t *ret_paths) {
        json_object *digests, *meta;
        _cleanup_(json_object_putp) json_object *base = json_object_from_file(path);
        if (!base) {
                fprintf(stderr, "iverctl policy export: base policy ");
                print_path(stderr, path);
                fprintf(stderr, ": unreadable or not JSON: ");
                print_text(stderr, json_util_get_last_err() ?: "?");
                fputc('\n', stderr);
                return IVERCTL_EXIT_FAILURE;
        }
        if (!json_object_is_type(base, json_type_object) || !json_object_object_get_ex(base, "digests", &digests) ||
            !json_object_is_type(digests, json_type_object))
                return base_error(path, "not a Keylime runtime policy (a JSON object with a \"digests\" object)");
        int r = check_base_digests(path, digests, algo, ret_paths);
        if (r)
                return r;
        _cleanup_(json_object_putp) json_object *skel = export_skeleton(json_object_new_object());
        if (!skel)
                return oom();
        json_object_object_foreach(skel, key, value)
                if (!json_object_object_get_ex(base, key, NULL) &&
                    json_object_object_add(base, key, json_object_get(value)) < 0)
                        return oom();
        json_object *ts; /* borrowed */
        if (json_object_object_get_ex(base, "meta", &meta) && json_object_is_type(meta, json_type_object) &&
            json_object_object_get_ex(skel, "meta", &ts) && json_object_object_get_ex(ts, "timestamp", &ts) &&
            json_object_object_add(meta, "timestamp", json_object_get(ts)) < 0)
                return oom();
        *ret = TAKE_PTR(base);
        return 0;
}

/* "" for /, else an absolute directory without trailing slashes. */
static int root_prefix(const char *root, char **ret) {
        if (*root && *root != '/') {
                fprintf(stderr, "iverctl policy export: --root must be an absolute directory\n");
                return IVERCTL_EXIT_USAGE;
        }
        char *s = strdup(root);
        if (!s)
                return oom();
        for (size_t n = strlen(s); n > 0 && s[n - 1] == '/'; n--)
                s[n - 1] = 0;
        *ret = s;
        return 0;
}

int export_from_deb(char *const debs[], size_t n_debs, const char *base, const char *root, const char *algo_name,
                    const char *out) {
        IverHashAlgo algo = algo_name ? iver_hash_algo_from_string(algo_name) : IVER_HASH_SHA256;
        if (algo < 0 || !iver_hash_algo_available(algo)) {
                fprintf(stderr, "iverctl policy export: unknown or unavailable hash algorithm '%s'\n", algo_name);
                return IVERCTL_EXIT_USAGE;
        }
        _cleanup_free_ char *prefix = NULL;
        int r = root_prefix(root, &prefix);
        if (r)
                return r;
        _cleanup_(json_object_putp) json_object *policy = NULL;
        size_t n_base = 0, n_paths = 0, n_digests = 0;
        if (base)
                r = load_base(base, algo, &policy, &n_base);
        else if (!(policy = export_skeleton(json_object_new_object())))
                r = oom();
        if (r)
                return r;

        DebContents c = {};
        for (size_t i = 0; i < n_debs && !r; i++) {
                size_t before = c.n;
                r = deb_read(debs[i], algo, prefix, &c);
                if (!r) {
                        print_path(stderr, debs[i]);
                        fprintf(stderr, ": data.tar%s%s, %zu files\n", strcmp(c.compression, "none") ? "." : "",
                                strcmp(c.compression, "none") ? c.compression : "", c.n - before);
                }
        }
        json_object *digests = json_object_object_get(policy, "digests"); /* borrowed */
        for (size_t i = 0; i < c.n && !r; i++) {
                char h[2 * IVER_DIGEST_MAX + 1];
                hex(c.files[i].digest, iver_hash_algo_size(algo), h);
                if (!export_add_digest(digests, c.files[i].name, h, &n_paths, &n_digests))
                        r = oom();
        }
        if (!r)
                r = export_write(policy, out);
        if (r) {
                deb_contents_done(&c);
                return r;
        }
        fprintf(stderr, ": %zu packages: %zu files (%zu symlinks, %zu hard links; %zu checked against the packages' md5sums",
                n_debs, c.n, c.n_symlinks, c.n_hardlinks, c.n_md5sums);
        if (c.n_other)
                fprintf(stderr, "; %zu device nodes or FIFOs left out", c.n_other);
        fprintf(stderr, "), %s digests: %zu digests added", iver_hash_algo_to_string(algo), n_digests);
        if (base)
                fprintf(stderr, " to the base's %zu paths, %zu paths new", n_base, n_paths);
        fputs(".\n", stderr);
        deb_contents_done(&c);
        return IVERCTL_EXIT_OK;
}
