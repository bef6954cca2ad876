/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's IMA list, read from securityfs (kernel-ima.h). securityfs
 * files report size 0: they are read to EOF. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "fileio.h"
#include "kernel-ima.h"
#include "macro.h"

const char *kernel_ima_dir(void) {
        const char *d = getenv("IVERD_TEST_KERNEL_IMA_DIR");
        return d && d[0] == '/' ? d : KERNEL_IMA_DIR;
}

/* fd's bytes from offset to EOF (pread: a seq_file serves any offset). */
static int read_from(int fd, uint64_t offset, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0, alloc = 0;

        for (;;) {
                if (GROW(buf, alloc, size + 65536, 131072) < 0)
                        return -ENOMEM;
                size_t want = alloc - size, n;
                int r = iver_pread_full(fd, buf + size, want, offset + size, &n);
                if (r < 0)
                        return r;
                size += n;
                if (n < want)
                        break; /* EOF */
        }
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

static int read_all(const char *dir, const char *name, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_from(fd, 0, ret, ret_size);
}

int kernel_ima_open(const char *dir) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, IVER_IMA_BINARY_FILE) < 0)
                return -ENOMEM;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

int kernel_ima_read_fd(int fd, uint64_t offset, IverImaLog *l) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0, off = 0;
        int r = read_from(fd, offset, &buf, &size);
        if (r < 0)
                return r;
        while (off < size) {
                IverImaEntry *e = NULL;
                r = iver_imalog_entry_from_binary(buf + off, size - off, &e);
                if (r < 0)
                        return r == -ENODATA ? -EBADMSG : r;
                off += (size_t) r;
                r = iver_imalog_push(l, e);
                if (r < 0) {
                        iver_imalog_entry_free(e);
                        return r;
                }
        }
        return 0;
}

int kernel_ima_count(const char *dir, size_t *ret) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0;
        char s[32];
        int r = read_all(dir, "runtime_measurements_count", &buf, &size);
        if (r < 0)
                return r;
        if (size == 0 || size >= sizeof(s))
                return -EBADMSG;
        memcpy(s, buf, size);
        s[size] = 0;
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || (*end && *end != '\n'))
                return -EBADMSG;
        *ret = (size_t) v;
        return 0;
}

int kernel_ima_read(const char *dir, size_t from, IverImaLog *l, size_t *ret_count) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0, off = 0, i = 0;
        int r = read_all(dir, IVER_IMA_BINARY_FILE, &buf, &size);
        if (r < 0)
                return r;
        while (off < size) {
                size_t ext = 0;
                r = iver_imalog_entry_binary_extent(buf + off, size - off, &ext);
                if (r < 0)
                        return r == -ENODATA ? -EBADMSG : r;
                if (i >= from) {
                        IverImaEntry *e = NULL;
                        r = iver_imalog_entry_from_binary(buf + off, size - off, &e);
                        if (r < 0)
                                return r == -ENODATA ? -EBADMSG : r;
                        r = iver_imalog_push(l, e);
                        if (r < 0) {
                                iver_imalog_entry_free(e);
                                return r;
                        }
                }
                off += ext;
                i++;
        }
        *ret_count = i;
        return 0;
}

/* The kernel's list in *ret_log (n entries) when it keeps one in pcr: 1;
 * 0 when it keeps none there (no securityfs list, empty, another PCR). */
static int read_list_in(const char *dir, unsigned pcr, IverImaLog **ret_log, size_t *ret_n) {
        _cleanup_(iver_imalog_freep) IverImaLog *k = NULL;
        size_t n = 0;
        int r = iver_imalog_new(&k);
        if (r < 0)
                return r;
        r = kernel_ima_read(dir, 0, k, &n);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (n == 0 || iver_imalog_get(k, 0)->pcr != pcr)
                return 0;
        *ret_log = TAKE_PTR(k);
        *ret_n = n;
        return 1;
}

int kernel_ima_uses(const char *dir, unsigned pcr) {
        _cleanup_(iver_imalog_freep) IverImaLog *k = NULL;
        size_t n;
        return read_list_in(dir, pcr, &k, &n);
}

bool kernel_ima_same(const IverImaEntry *a, const IverImaEntry *b) {
        return a->pcr == b->pcr && a->template == b->template && a->violation == b->violation &&
               memcmp(a->template_digest, b->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE) == 0 &&
               a->template_data_len == b->template_data_len &&
               memcmp(a->template_data, b->template_data, a->template_data_len) == 0;
}

int kernel_ima_continue(IverImaFile *f, const char *dir, unsigned pcr, size_t *ret_kernel, size_t *ret_added) {
        _cleanup_(iver_imalog_freep) IverImaLog *k = NULL;
        _cleanup_(iver_imalog_reader_freep) IverImaReader *rd = NULL;
        size_t n = 0, held = 0;
        int r;

        r = read_list_in(dir, pcr, &k, &n);
        if (r <= 0)
                return r;
        r = iver_imalog_reader_new(iver_imalog_file_fd(f), 0, &rd);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
                r = iver_imalog_reader_next(rd, iver_imalog_file_size(f), &e);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (held < n && kernel_ima_same(e, iver_imalog_get(k, held)))
                        held++;
        }
        if (held < n) {
                r = iver_imalog_file_append_many(f, iver_imalog_entries(k) + held, n - held);
                if (r < 0)
                        return r;
        }
        *ret_kernel = n;
        *ret_added = n - held;
        return 1;
}
