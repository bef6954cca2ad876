/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pseudo filesystems by statfs magic and by mount point; see lib/pseudofs.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "overlay.h" /* iver_mountinfo_unescape */
#include "pseudofs.h"

/* statfs f_type values (linux/magic.h); written out so that an older header
 * does not drop any. */
static const struct {
        uint32_t magic;
        const char *name;
} pseudo[] = {
        { 0x00009fa0, "proc" },       { 0x62656572, "sysfs" },     { 0x64626720, "debugfs" },
        { 0x74726163, "tracefs" },    { 0x73636673, "securityfs" }, { 0xde5e81e4, "efivarfs" },
        { 0x0027e0eb, "cgroup" },     { 0x63677270, "cgroup2" },   { 0xcafe4a11, "bpf" },
        { 0x62656570, "configfs" },   { 0x6165676c, "pstore" },    { 0x00001cd1, "devpts" },
        { 0x19800202, "mqueue" },     { 0x958458f6, "hugetlbfs" }, { 0x65735543, "fusectl" },
        { 0xf97cff8c, "selinuxfs" },  { 0x43415d53, "smackfs" },   { 0x00000187, "autofs" },
        { 0x42494e4d, "binfmt_misc" }, { 0x6e736673, "nsfs" },     { 0x50495045, "pipefs" },
        { 0x534f434b, "sockfs" },     { 0x09041934, "anon_inodefs" }, { 0x07655821, "resctrl" },
        { 0x62646576, "bdev" },       { 0x00009fa2, "usbdevfs" },  { 0x67596969, "rpc_pipefs" },
};

bool iver_fs_is_pseudo(uint64_t fs_magic, const char **ret_name) {
        for (size_t i = 0; i < ELEMENTSOF(pseudo); i++)
                if (pseudo[i].magic == (uint32_t) fs_magic && fs_magic != 0) {
                        if (ret_name)
                                *ret_name = pseudo[i].name;
                        return true;
                }
        return false;
}

const char *const iver_pseudo_fs_dirs[] = {
        "/proc", "/sys", "/dev/pts", "/dev/mqueue", "/dev/hugepages", "/proc/sys/fs/binfmt_misc", NULL,
};

static const char *const pseudo_types[] = {
        "proc", "sysfs", "debugfs", "tracefs", "securityfs", "efivarfs", "cgroup", "cgroup2", "bpf", "configfs",
        "pstore", "devpts", "mqueue", "hugetlbfs", "fusectl", "selinuxfs", "smackfs", "autofs", "binfmt_misc",
        "nsfs", "rpc_pipefs", "resctrl", "usbfs", NULL,
};

void iver_strv_free(char **v) {
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

int iver_pseudo_fs_mounts(char ***ret) {
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, n = 0;
        char **v = calloc(1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f) {
                *ret = v;
                return 0;
        }
        while (getline(&line, &cap, f) > 0) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTS */
                char mnt[4096], type[64];
                const char *sep = strstr(line, " - ");
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 || sscanf(sep + 3, "%63s", type) != 1)
                        continue;
                bool is = false;
                for (size_t i = 0; pseudo_types[i] && !is; i++)
                        is = strcmp(type, pseudo_types[i]) == 0;
                if (!is)
                        continue;
                iver_mountinfo_unescape(mnt);
                char **nv = realloc(v, (n + 2) * sizeof(char *));
                if (!nv)
                        break;
                v = nv;
                if (!(v[n] = strdup(mnt)))
                        break;
                v[++n] = NULL;
        }
        fclose(f);
        *ret = v;
        return 0;
}
