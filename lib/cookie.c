/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The change cookie: which source each filesystem gets, how cookies compare,
 * the racy guard, and the probe that decides whether the seed statx ABI
 * (stx_ino_version) can be trusted. */
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include "iver/cookie.h"
#include "grow.h"
#include "macro.h"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

static const char *const source_names[_IVER_COOKIE_MAX] = {
        [IVER_COOKIE_STATX_VERSION] = "statx-ino-version",
        [IVER_COOKIE_CTIME] = "ctime",
        [IVER_COOKIE_CTIME_COARSE] = "ctime-coarse",
};

static const char *const mode_names[_IVER_VERSION_MAX] = {
        [IVER_VERSION_AUTO] = "auto",
        [IVER_VERSION_STATX] = "statx",
        [IVER_VERSION_CTIME] = "ctime",
};

const char *iver_cookie_source_to_string(IverCookieSource s) {
        return s >= 0 && s < _IVER_COOKIE_MAX ? source_names[s] : NULL;
}

IverCookieSource iver_cookie_source_from_string(const char *s) {
        for (int i = 0; s && i < _IVER_COOKIE_MAX; i++)
                if (strcmp(s, source_names[i]) == 0)
                        return (IverCookieSource) i;
        return _IVER_COOKIE_INVALID;
}

const char *iver_version_mode_to_string(IverVersionMode m) {
        return m >= 0 && m < _IVER_VERSION_MAX ? mode_names[m] : NULL;
}

IverVersionMode iver_version_mode_from_string(const char *s) {
        for (int i = 0; s && i < _IVER_VERSION_MAX; i++)
                if (strcmp(s, mode_names[i]) == 0)
                        return (IverVersionMode) i;
        return _IVER_VERSION_INVALID;
}

IverCookie iver_cookie_from_stat(IverCookieSource source, const IverStat *st) {
        /* size and mtime cost nothing and guard against a clock stepped back. */
        return (IverCookie) {
                .source = source,
                .ctime = st->ctime,
                .mtime = st->mtime,
                .size = st->size,
                .version = source == IVER_COOKIE_STATX_VERSION ? st->ino_version : 0,
        };
}

bool iver_cookie_equal(const IverCookie *a, const IverCookie *b) {
        if (a->source != b->source || a->size != b->size || a->mtime != b->mtime)
                return false;
        if (a->source == IVER_COOKIE_STATX_VERSION)
                return a->version == b->version && a->ctime == b->ctime;
        return a->ctime == b->ctime;
}

bool iver_cookie_is_racy(const IverCookie *c, int64_t measured_at, int64_t granularity_ns) {
        if (c->source != IVER_COOKIE_CTIME_COARSE)
                return false;
        /* A change in the same tick as (or after) our measurement could leave
         * ctime unchanged: only a ctime older than the measurement by more than
         * one tick proves the content we hashed is what that ctime stands for. */
        return c->ctime > measured_at - granularity_ns;
}

int iver_kernel_info(IverKernelInfo *ret) {
        struct utsname u;
        int major = 0, minor = 0;

        if (uname(&u) < 0)
                return negative_errno();
        if (sscanf(u.release, "%d.%d", &major, &minor) != 2)
                return -EINVAL;
        *ret = (IverKernelInfo) { .major = major, .minor = minor };
        return 0;
}

static bool kernel_at_least(const IverKernelInfo *k, int major, int minor) {
        return k->major > major || (k->major == major && k->minor >= minor);
}

bool iver_fs_is_multigrain(uint64_t fs_magic, const IverKernelInfo *kernel) {
        /* Multigrain timestamps landed in 6.13 for these four. */
        if (!kernel_at_least(kernel, 6, 13))
                return false;
        switch (fs_magic) {
        case EXT4_SUPER_MAGIC: /* == EXT2/EXT3 magic; all served by ext4 */
        case XFS_SUPER_MAGIC:
        case BTRFS_SUPER_MAGIC:
        case TMPFS_MAGIC:
                return true;
        default:
                return false;
        }
}

/* ---- the seed-ABI probe ---- */

static int probe_value(iver_statx_fn fn, int dirfd, const char *name, uint64_t *ret) {
        IverStat st;
        int r = iver_stat(fn, dirfd, name, true, &st);
        if (r < 0)
                return r;
        if (!st.has_ino_version)
                return 0;
        *ret = st.ino_version;
        return 1;
}

int iver_cookie_probe_statx(iver_statx_fn fn, int dirfd) {
        char a[64], b[64];
        uint64_t va0, va1, va2, vb;
        char buf[8];
        int r, proven = 0;

        snprintf(a, sizeof(a), ".iverd-probe-%d-a", (int) getpid());
        snprintf(b, sizeof(b), ".iverd-probe-%d-b", (int) getpid());

        _cleanup_close_ int fa = openat(dirfd, a, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fa < 0)
                return negative_errno();
        _cleanup_close_ int fb = openat(dirfd, b, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fb < 0) {
                r = negative_errno();
                goto out;
        }
        if (write(fa, "x", 1) != 1 || write(fb, "y", 1) != 1) {
                r = negative_errno();
                goto out;
        }

        r = probe_value(fn, dirfd, a, &va0);
        if (r <= 0)
                goto out;
        /* A write must move it. */
        if (pwrite(fa, "z", 1, 0) != 1) {
                r = negative_errno();
                goto out;
        }
        r = probe_value(fn, dirfd, a, &va1);
        if (r <= 0)
                goto out;
        if (va1 == va0)
                goto out;
        /* A read must not. */
        if (pread(fa, buf, 1, 0) < 0) {
                r = negative_errno();
                goto out;
        }
        r = probe_value(fn, dirfd, a, &va2);
        if (r <= 0)
                goto out;
        if (va2 != va1)
                goto out;
        /* Two files must not share a constant value (DIOALIGN: 0x0000020000000200). */
        r = probe_value(fn, dirfd, b, &vb);
        if (r <= 0)
                goto out;
        if (vb == va2)
                goto out;
        proven = 1;
out:
        (void) unlinkat(dirfd, a, 0);
        (void) unlinkat(dirfd, b, 0);
        return r < 0 ? r : proven;
}

/* ---- per-filesystem table ---- */

typedef struct CookieFs {
        uint32_t dev;
        IverCookieSource source;
        uint64_t magic;
        int8_t getversion;      /* FS_IOC_GETVERSION: 1 works, -1 not supported, 0 unknown */
} CookieFs;

struct IverCookieTable {
        IverVersionMode mode;
        iver_statx_fn statx;
        IverKernelInfo kernel;
        CookieFs *fs;
        unsigned n_fs, allocated;
        unsigned last;          /* index of the last hit: checks come in runs per fs */
        bool wants_version;     /* some filesystem uses the seed ABI */
};

int iver_cookie_table_new(IverVersionMode mode, iver_statx_fn fn, const IverKernelInfo *kernel, IverCookieTable **ret) {
        IverCookieTable *t;
        IverKernelInfo k;
        int r;

        if (mode < 0 || mode >= _IVER_VERSION_MAX)
                return -EINVAL;
        if (kernel)
                k = *kernel;
        else {
                r = iver_kernel_info(&k);
                if (r < 0)
                        return r;
        }
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->mode = mode;
        t->statx = fn;
        t->kernel = k;
        *ret = t;
        return 0;
}

IverCookieTable *iver_cookie_table_free(IverCookieTable *t) {
        if (!t)
                return NULL;
        free(t->fs);
        free(t);
        return NULL;
}

bool iver_cookie_table_wants_version(const IverCookieTable *t) {
        return t->wants_version;
}

IverCookieSource iver_cookie_table_peek(const IverCookieTable *t, uint32_t dev) {
        if (t->last < t->n_fs && t->fs[t->last].dev == dev)
                return t->fs[t->last].source;
        for (unsigned i = 0; i < t->n_fs; i++)
                if (t->fs[i].dev == dev) {
                        ((IverCookieTable *) t)->last = i; /* a cache hint, not state */
                        return t->fs[i].source;
                }
        return _IVER_COOKIE_INVALID;
}

uint64_t iver_cookie_table_fs_magic(const IverCookieTable *t, uint32_t dev) {
        if (iver_cookie_table_peek(t, dev) < 0)
                return 0;
        return t->fs[t->last].magic;
}

bool iver_cookie_table_stores_move(const IverCookieTable *t, uint32_t dev) {
        IverCookieSource s = iver_cookie_table_peek(t, dev);
        if (s != IVER_COOKIE_STATX_VERSION && s != IVER_COOKIE_CTIME)
                return false; /* unknown, or a tick ctime */
        switch (t->fs[t->last].magic) {
        case EXT4_SUPER_MAGIC: /* ->page_mkwrite() calls file_update_time() */
        case XFS_SUPER_MAGIC:
        case BTRFS_SUPER_MAGIC:
                return true;
        default: /* tmpfs has no ->page_mkwrite(): a store through a new mapping of a dirty page moves nothing */
                return false;
        }
}

int iver_cookie_table_getversion(const IverCookieTable *t, uint32_t dev) {
        if (iver_cookie_table_peek(t, dev) < 0)
                return 0;
        return t->fs[t->last].getversion;
}

bool iver_cookie_table_get(const IverCookieTable *t, unsigned i, uint32_t *ret_dev, IverCookieSource *ret_source,
                           uint64_t *ret_fs_magic) {
        if (i >= t->n_fs)
                return false;
        *ret_dev = t->fs[i].dev;
        *ret_source = t->fs[i].source;
        *ret_fs_magic = t->fs[i].magic;
        return true;
}

/* The directory a probe can write in: the file's parent. */
static int open_parent(int dirfd, const char *path) {
        const char *slash = strrchr(path, '/');
        if (!slash)
                return openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (slash == path)
                return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *dir = strndup(path, slash - path);
        if (!dir)
                return -ENOMEM;
        return openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static IverCookieSource decide(IverCookieTable *t, int dirfd, const char *path, uint64_t *ret_magic,
                               int8_t *ret_getversion) {
        struct statfs sfs;
        bool mg = false;

        *ret_magic = 0;
        *ret_getversion = 0;
        _cleanup_close_ int pfd = path ? open_parent(dirfd, path) : -EBADF;
        if (pfd >= 0 && fstatfs(pfd, &sfs) == 0) {
                *ret_magic = (uint64_t) sfs.f_type;
                mg = iver_fs_is_multigrain(*ret_magic, &t->kernel);
        }
        /* the generation ioctl, probed once here instead of failing per file
         * (it is only asked for where statx has no btime) */
        int gen;
        if (pfd >= 0)
                *ret_getversion = ioctl(pfd, FS_IOC_GETVERSION, &gen) == 0                         ? 1
                                  : errno == ENOTTY || errno == EOPNOTSUPP || errno == EINVAL ? -1
                                                                                               : 0;

        /* The seed ABI only when asked for (or, in auto mode, on a kernel that
         * predates STATX_DIOALIGN) and only when the probe proves it. */
        bool try_statx = t->mode == IVER_VERSION_STATX ||
                         (t->mode == IVER_VERSION_AUTO && !kernel_at_least(&t->kernel, 6, 1));
        if (try_statx && pfd >= 0 && iver_cookie_probe_statx(t->statx, pfd) == 1)
                return IVER_COOKIE_STATX_VERSION;

        return mg ? IVER_COOKIE_CTIME : IVER_COOKIE_CTIME_COARSE;
}

IverCookieSource iver_cookie_table_source(IverCookieTable *t, uint32_t dev, int dirfd, const char *path) {
        IverCookieSource s = iver_cookie_table_peek(t, dev);
        uint64_t magic;

        if (s >= 0)
                return s;
        int8_t getversion;
        s = decide(t, dirfd, path, &magic, &getversion);
        if (GROW(t->fs, t->allocated, t->n_fs + 1, 8) < 0)
                return s; /* undecided next time too; safe */
        t->fs[t->n_fs] = (CookieFs) { .dev = dev, .source = s, .magic = magic, .getversion = getversion };
        t->wants_version |= s == IVER_COOKIE_STATX_VERSION;
        t->last = t->n_fs++;
        return s;
}
