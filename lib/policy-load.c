/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loading a policy: files and drop-in directories, diagnostics, the
 * all-or-nothing rule (a new policy is built whole and handed out only when
 * no file had an error), names of enums, and rules back to text. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "grow.h"
#include "macro.h"
#include "policy-internal.h"

static const char *const action_names[_IVER_ACTION_MAX] = {
        [IVER_ACTION_MEASURE] = "measure",
        [IVER_ACTION_DONT_MEASURE] = "dont_measure",
        [IVER_ACTION_APPRAISE] = "appraise",
        [IVER_ACTION_DONT_APPRAISE] = "dont_appraise",
        [IVER_ACTION_AUDIT] = "audit",
};

/* The first name of a magic is the one printed. */
static const struct { const char *name; uint32_t magic; } fstypes[] = {
        { "ext4", 0xef53 }, { "ext3", 0xef53 }, { "ext2", 0xef53 },
        { "xfs", 0x58465342 }, { "btrfs", 0x9123683e }, { "tmpfs", 0x01021994 },
        { "f2fs", 0xf2f52010 }, { "erofs", 0xe0f5e1e2 }, { "squashfs", 0x73717368 },
        { "overlay", 0x794c7630 }, { "vfat", 0x4d44 }, { "msdos", 0x4d44 },
        { "exfat", 0x2011bab0 }, { "iso9660", 0x9660 }, { "nfs", 0x6969 },
        { "cifs", 0xff534d42 }, { "smb2", 0xfe534d42 }, { "ceph", 0x00c36400 },
        { "fuse", 0x65735546 }, { "ramfs", 0x858458f6 }, { "hugetlbfs", 0x958458f6 },
        { "ecryptfs", 0xf15f }, { "proc", 0x9fa0 }, { "sysfs", 0x62656572 },
        { "devpts", 0x1cd1 }, { "securityfs", 0x73636673 }, { "selinuxfs", 0xf97cff8c },
        { "debugfs", 0x64626720 }, { "tracefs", 0x74726163 }, { "cgroup", 0x27e0eb },
        { "cgroup2", 0x63677270 }, { "bpf", 0xcafe4a11 }, { "efivarfs", 0xde5e81e4 },
        { "binfmt_misc", 0x42494e4d }, { "pstore", 0x6165676c }, { "nsfs", 0x6e736673 },
        { "autofs", 0x0187 }, { "configfs", 0x62656570 }, { "mqueue", 0x19800202 },
        { "zfs", 0x2fc12fc1 },
};

const char *iver_policy_action_to_string(IverPolicyAction a) {
        return a >= 0 && a < _IVER_ACTION_MAX ? action_names[a] : NULL;
}

IverPolicyAction iver_policy_action_from_string(const char *s) {
        for (int i = 0; s && i < _IVER_ACTION_MAX; i++)
                if (strcmp(s, action_names[i]) == 0)
                        return (IverPolicyAction) i;
        return _IVER_ACTION_INVALID;
}

IverPolicyClass iver_policy_action_class(IverPolicyAction a) {
        switch (a) {
        case IVER_ACTION_MEASURE:
        case IVER_ACTION_DONT_MEASURE:
                return IVER_CLASS_MEASURE;
        case IVER_ACTION_APPRAISE:
        case IVER_ACTION_DONT_APPRAISE:
                return IVER_CLASS_APPRAISE;
        case IVER_ACTION_AUDIT:
                return IVER_CLASS_AUDIT;
        default:
                return _IVER_CLASS_INVALID;
        }
}

bool iver_policy_action_is_positive(IverPolicyAction a) {
        return a == IVER_ACTION_MEASURE || a == IVER_ACTION_APPRAISE || a == IVER_ACTION_AUDIT;
}


uint64_t iver_fstype_from_name(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(fstypes); i++)
                if (strcmp(name, fstypes[i].name) == 0)
                        return fstypes[i].magic;
        return 0;
}

const char *iver_fstype_to_name(uint64_t magic) {
        for (size_t i = 0; i < ELEMENTSOF(fstypes); i++)
                if (fstypes[i].magic == (uint32_t) magic)
                        return fstypes[i].name;
        return NULL;
}

/* ---- diagnostics ---- */

void iver_policy_diags_done(IverPolicyDiags *d) {
        if (!d)
                return;
        for (size_t i = 0; i < d->n_items; i++) {
                free(d->items[i].file);
                free(d->items[i].message);
        }
        free(d->items);
        *d = (IverPolicyDiags) {};
}

int policy_diag_add(IverPolicyDiags *d, IverDiagLevel level, const char *file, unsigned line,
                    unsigned column, const char *fmt, ...) {
        va_list ap;

        if (level == IVER_DIAG_ERROR)
                d->n_errors++;
        else
                d->n_warnings++;
        if (d->n_items >= IVER_POLICY_DIAGS_MAX) {
                d->n_dropped++;
                return 0;
        }
        IverPolicyDiag *n = realloc(d->items, (d->n_items + 1) * sizeof(IverPolicyDiag));
        if (!n)
                return -ENOMEM;
        d->items = n;
        IverPolicyDiag *e = &d->items[d->n_items];
        *e = (IverPolicyDiag) { .level = level, .line = line, .column = column };
        e->file = strdup(file);
        va_start(ap, fmt);
        int k = vasprintf(&e->message, fmt, ap);
        va_end(ap);
        if (k < 0 || !e->file) {
                free(e->file);
                if (k >= 0)
                        free(e->message);
                return -ENOMEM;
        }
        d->n_items++;
        return 0;
}

int iver_policy_diag_format(const IverPolicyDiag *d, char **ret) {
        const char *w = d->level == IVER_DIAG_WARNING ? "warning: " : "";
        char *s;
        int k = d->line == 0 ? asprintf(&s, "%s: %s%s", d->file, w, d->message)
                             : asprintf(&s, "%s:%u:%u: %s%s", d->file, d->line, d->column, w, d->message);
        if (k < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* ---- the policy object ---- */

void policy_rule_done(IverRule *r) {
        glob_done(&r->path);
        free(r->path_src);
        free(r->path_esc);
        r->path_src = NULL;
        r->path_esc = NULL;
}

IverPolicy *iver_policy_free(IverPolicy *p) {
        if (!p)
                return NULL;
        policy_index_free(p);
        for (size_t i = 0; i < p->n_rules; i++)
                policy_rule_done(&p->rules[i]);
        free(p->rules);
        for (size_t i = 0; i < p->n_files; i++)
                free(p->files[i]);
        free(p->files);
        free(p);
        return NULL;
}

int policy_builder_add_file(PolicyBuilder *b, const char *name, size_t *ret_idx) {
        IverPolicy *p = b->policy;
        if (GROW(p->files, b->cap_files, p->n_files + 1, 4) < 0)
                return -ENOMEM;
        p->files[p->n_files] = strdup(name);
        if (!p->files[p->n_files])
                return -ENOMEM;
        *ret_idx = p->n_files++;
        return 0;
}

size_t iver_policy_n_rules(const IverPolicy *p) {
        return p ? p->n_rules : 0;
}

void iver_policy_rule_source(const IverPolicy *p, size_t i, const char **ret_file, unsigned *ret_line) {
        *ret_file = p->files[p->rules[i].file];
        *ret_line = p->rules[i].line;
}

IverPolicyAction iver_policy_rule_action(const IverPolicy *p, size_t i) {
        return i < p->n_rules ? p->rules[i].action : _IVER_ACTION_INVALID;
}

/* ---- files ---- */

static int io_error(PolicyBuilder *b, const char *path, int err, const char *what) {
        int r = policy_diag_add(b->diags, IVER_DIAG_ERROR, path, 0, 0, "%s: %s, expected %s",
                                what, iver_file_strerror(err), "a readable policy file or directory");
        return r < 0 ? r : err;
}

static int load_fd(PolicyBuilder *b, const char *path, int fd) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        size_t idx;
        int r;

        r = iver_read_fd_max(fd, IVER_POLICY_FILE_MAX, &buf, &len);
        if (r == -EFBIG) {
                r = policy_diag_add(b->diags, IVER_DIAG_ERROR, path, 0, 0,
                                    "file is larger than %u bytes, expected a policy text file", IVER_POLICY_FILE_MAX);
                return r < 0 ? r : 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return io_error(b, path, r, "cannot read");
        r = policy_builder_add_file(b, path, &idx);
        if (r < 0)
                return r;
        return policy_parse_text(b, idx, (const uint8_t *) buf, len);
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static bool is_dropin_name(const char *n) {
        size_t l = strlen(n), sl = strlen(IVER_POLICY_DROPIN_SUFFIX);
        return n[0] != '.' && l > sl && strcmp(n + l - sl, IVER_POLICY_DROPIN_SUFFIX) == 0;
}

static int load_path(PolicyBuilder *b, const char *path, bool missing_ok, bool allow_dir);

static int load_dir(PolicyBuilder *b, const char *path, int fd) {
        DIR *d = fdopendir(fd);
        char **names = NULL;
        size_t n = 0;
        int r = 0, first_err = 0;

        if (!d) {
                close(fd);
                return io_error(b, path, negative_errno(), "cannot read directory");
        }
        for (struct dirent *de; (errno = 0, de = readdir(d)); ) {
                if (!is_dropin_name(de->d_name))
                        continue;
                char **nn = realloc(names, (n + 1) * sizeof(char *));
                if (!nn) {
                        r = -ENOMEM;
                        goto finish;
                }
                names = nn;
                bool slash = path[0] && path[strlen(path) - 1] == '/';
                if (asprintf(&names[n], "%s%s%s", path, slash ? "" : "/", de->d_name) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                n++;
        }
        if (errno != 0) {
                r = io_error(b, path, negative_errno(), "cannot read directory");
                goto finish;
        }
        /* Lexical (byte) order, as systemd and fapolicyd read drop-ins. */
        if (n > 0)
                qsort(names, n, sizeof(char *), name_cmp);
        for (size_t i = 0; i < n; i++) {
                r = load_path(b, names[i], false, false);
                if (r == -ENOMEM)
                        goto finish;
                if (r < 0 && first_err == 0)
                        first_err = r;
        }
        r = first_err;
finish:
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        closedir(d);
        return r;
}

/* Whether path is a symlink to /dev/null: a masked drop-in, as with systemd. */
static bool masked(const char *path) {
        char target[sizeof("/dev/null")];
        ssize_t n = readlink(path, target, sizeof(target));
        return n == (ssize_t) sizeof(target) - 1 && memcmp(target, "/dev/null", n) == 0;
}

static int load_path(PolicyBuilder *b, const char *path, bool missing_ok, bool allow_dir) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        /* Never blocks (a FIFO) and never follows a symlink (lib/fileio.h),
         * but for a drop-in masked by a link to /dev/null. */
        fd = iver_open_regular(path, IVER_OPEN_DEV_NULL_OK | (allow_dir ? IVER_OPEN_DIR_OK : 0), &st);
        if (fd == -ENOENT && missing_ok)
                return 0;
        if (fd == -ELOOP && masked(path))
                return 0;
        if (fd == -EISDIR)
                return io_error(b, path, -EISDIR, "cannot load");
        if (fd < 0)
                return io_error(b, path, fd, "cannot open");
        if (S_ISDIR(st.st_mode))
                return load_dir(b, path, TAKE_FD(fd));
        return load_fd(b, path, fd);
}

static int builder_new(PolicyBuilder *b, IverPolicyDiags *diags) {
        *diags = (IverPolicyDiags) {};
        *b = (PolicyBuilder) { .diags = diags, .policy = calloc(1, sizeof(IverPolicy)) };
        return b->policy ? 0 : -ENOMEM;
}

static int builder_finish(PolicyBuilder *b, int io_err, IverPolicy **ret) {
        _cleanup_(iver_policy_freep) IverPolicy *p = NULL;
        int r;

        if (b->diags->n_errors == 0) {
                r = policy_warn_shadowed(b);
                if (r >= 0)
                        r = policy_warn_pseudo(b);
                if (r < 0)
                        return r;
        }
        p = TAKE_PTR(b->policy);
        if (io_err < 0)
                return io_err;
        if (b->diags->n_errors > 0)
                return -EINVAL;
        r = policy_index_build(p);
        if (r < 0)
                return r;
        if (ret)
                *ret = TAKE_PTR(p);
        return 0;
}

int iver_policy_load(const char *const *paths, size_t n_paths, unsigned flags,
                     IverPolicyDiags *diags, IverPolicy **ret) {
        IverPolicyDiags local;
        PolicyBuilder b;
        int r, io_err = 0;

        if (!diags)
                diags = &local;
        r = builder_new(&b, diags);
        for (size_t i = 0; r >= 0 && i < n_paths; i++) {
                int k = load_path(&b, paths[i], flags & IVER_POLICY_LOAD_MISSING_OK, true);
                if (k == -ENOMEM)
                        r = k;
                else if (k < 0 && io_err == 0)
                        io_err = k;
        }
        if (r >= 0)
                r = builder_finish(&b, io_err, ret);
        b.policy = iver_policy_free(b.policy);
        if (diags == &local)
                iver_policy_diags_done(&local);
        return r;
}

int iver_policy_load_default(IverPolicyDiags *diags, IverPolicy **ret) {
        const char *paths[] = { IVER_POLICY_FILE, IVER_POLICY_DROPIN_DIR };
        return iver_policy_load(paths, ELEMENTSOF(paths), IVER_POLICY_LOAD_MISSING_OK, diags, ret);
}

int iver_policy_load_string(const char *name, const void *data, size_t len,
                            IverPolicyDiags *diags, IverPolicy **ret) {
        IverPolicyDiags local;
        PolicyBuilder b;
        size_t idx;
        int r;

        if (!diags)
                diags = &local;
        r = builder_new(&b, diags);
        if (r >= 0)
                r = policy_builder_add_file(&b, name, &idx);
        if (r >= 0)
                r = policy_parse_text(&b, idx, data, len);
        if (r >= 0)
                r = builder_finish(&b, 0, ret);
        b.policy = iver_policy_free(b.policy);
        if (diags == &local)
                iver_policy_diags_done(&local);
        return r;
}

int iver_policy_check_file(const char *path, IverPolicyDiags *diags) {
        IverPolicyDiags local;
        if (!diags)
                diags = &local;
        int r = iver_policy_load(&path, 1, 0, diags, NULL);
        size_t n = diags->n_errors;
        if (diags == &local)
                iver_policy_diags_done(&local);
        if (r == -ENOMEM)
                return r;
        return (int) (n > INT32_MAX ? INT32_MAX : n);
}
