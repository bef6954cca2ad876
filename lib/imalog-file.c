/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement list files of a running daemon: the binary list is
 * authoritative and written ahead of every extend; the ASCII twin is derived
 * from it and rebuilt whenever the list is opened. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iver/imalog.h"
#include "fileio.h"
#include "macro.h"

struct IverImaFile {
        int dir_fd;
        int bin_fd;
        int ascii_fd;
        uint64_t size;
        int ascii_error;
};

static int read_all(int fd, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0, cap = 0;
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        cap = (size_t) st.st_size + 1;
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (size == cap) {
                        uint8_t *n = realloc(buf, cap * 2);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                        cap *= 2;
                }
                ssize_t k = pread(fd, buf + size, cap - size, size);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                size += k;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

static int encode_binary(const IverImaEntry *e, uint8_t **ret, size_t *ret_size) {
        size_t n = iver_imalog_entry_binary_size(e);
        _cleanup_free_ uint8_t *buf = malloc(n);
        if (!buf)
                return -ENOMEM;
        int r = iver_imalog_entry_to_binary(e, buf, n);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        *ret_size = n;
        return 0;
}

/* Write all of l to fd in format. */
static int write_list(int fd, const IverImaLog *l, IverImaFormat format) {
        for (size_t i = 0; i < iver_imalog_size(l); i++) {
                const IverImaEntry *e = iver_imalog_get(l, i);
                _cleanup_free_ void *buf = NULL;
                size_t n;
                int r;

                if (format == IVER_IMA_FORMAT_ASCII)
                        r = iver_imalog_entry_to_ascii(e, (char **) &buf, &n);
                else
                        r = encode_binary(e, (uint8_t **) &buf, &n);
                if (r < 0)
                        return r;
                r = iver_write_full(fd, buf, n);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Write to dir_fd/name through a temporary and rename; returns an fd for
 * appending to the new file if ret_fd. */
static int replace_file(int dir_fd, const char *name, const IverImaLog *l, IverImaFormat format, bool sync,
                        mode_t mode, int *ret_fd) {
        char tmp[256];
        int r;

        snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long) getpid());
        /* a new file, never one someone left there (a symlink to follow) */
        (void) unlinkat(dir_fd, tmp, 0);
        _cleanup_close_ int fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, mode);
        if (fd < 0)
                return negative_errno();
        r = write_list(fd, l, format);
        if (r >= 0 && sync && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(dir_fd, tmp, 0);
                return r;
        }
        if (ret_fd)
                *ret_fd = TAKE_FD(fd);
        return 0;
}

int iver_imalog_load(const char *path, IverImaLog **ret) {
        _cleanup_(iver_imalog_freep) IverImaLog *l = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size, used = 0;
        int r;

        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = read_all(fd, &buf, &size);
        if (r < 0)
                return r;
        r = iver_imalog_new(&l);
        if (r < 0)
                return r;
        switch (iver_imalog_format_detect(buf, size)) {
        case IVER_IMA_FORMAT_BINARY:
                r = iver_imalog_parse_binary(l, buf, size, &used);
                break;
        case IVER_IMA_FORMAT_ASCII:
                r = iver_imalog_parse_ascii(l, (const char *) buf, size, &used);
                break;
        default:
                r = -EBADMSG;
        }
        if (r < 0)
                return r;
        if (used != size)
                return -EBADMSG;        /* torn tail */
        *ret = TAKE_PTR(l);
        return 0;
}

int iver_imalog_save(const IverImaLog *l, const char *path, IverImaFormat format) {
        _cleanup_free_ char *dir = strdup(path);
        _cleanup_close_ int dir_fd = -EBADF;
        char *slash;

        if (!dir)
                return -ENOMEM;
        if (format < 0 || format >= _IVER_IMA_FORMAT_MAX)
                return -EINVAL;
        slash = strrchr(dir, '/');
        if (slash == dir)
                slash[1] = 0;
        else if (slash)
                *slash = 0;
        dir_fd = open(slash ? dir : ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (dir_fd < 0)
                return negative_errno();
        return replace_file(dir_fd, slash ? strrchr(path, '/') + 1 : path, l, format, true, 0644, NULL);
}

static bool all_zero(const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

IverImaFile *iver_imalog_file_free(IverImaFile *f) {
        if (!f)
                return NULL;
        closep(&f->ascii_fd);
        closep(&f->bin_fd);
        closep(&f->dir_fd);
        free(f);
        return NULL;
}

int iver_imalog_file_open(const char *dir, IverImaFile **ret_file, IverImaLog **ret_log, size_t *ret_truncated) {
        _cleanup_(iver_imalog_file_freep) IverImaFile *f = NULL;
        _cleanup_(iver_imalog_freep) IverImaLog *l = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size, off = 0;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->dir_fd = f->bin_fd = f->ascii_fd = -EBADF;
        f->dir_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (f->dir_fd < 0)
                return negative_errno();
        /* never through a symlink, never a FIFO or device planted there */
        f->bin_fd = openat(f->dir_fd, IVER_IMA_BINARY_FILE, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                           0640);
        if (f->bin_fd < 0)
                return negative_errno();
        struct stat st;
        if (fstat(f->bin_fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        r = read_all(f->bin_fd, &buf, &size);
        if (r < 0)
                return r;
        r = iver_imalog_new(&l);
        if (r < 0)
                return r;

        while (off < size) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
                r = iver_imalog_entry_from_binary(buf + off, size - off, &e);
                if (r == -ENODATA)
                        break;  /* the last record ends past EOF: torn */
                if (r == -EBADMSG && all_zero(buf + off, size - off))
                        break;  /* file size grew but the data never landed */
                size_t ext;
                if (r == -EBADMSG && iver_imalog_entry_binary_extent(buf + off, size - off, &ext) >= 0 &&
                    ext == size - off)
                        break;  /* the last record, its data partly written */
                if (r < 0)
                        return r;
                int k = iver_imalog_push(l, e);
                if (k < 0)
                        return k;
                TAKE_PTR(e);
                off += r;
        }
        if (off < size) {
                if (ftruncate(f->bin_fd, off) < 0 || fsync(f->bin_fd) < 0)
                        return negative_errno();
        }
        f->size = off;

        r = replace_file(f->dir_fd, IVER_IMA_ASCII_FILE, l, IVER_IMA_FORMAT_ASCII, false, 0640, &f->ascii_fd);
        if (r < 0)
                return r;

        if (ret_truncated)
                *ret_truncated = size - off;
        if (ret_log)
                *ret_log = TAKE_PTR(l);
        *ret_file = TAKE_PTR(f);
        return 0;
}

static int append(IverImaFile *f, const IverImaEntry *const *e, size_t n, bool sync) {
        _cleanup_free_ uint8_t *bin = NULL;
        _cleanup_free_ char *text = NULL;
        size_t size = 0, off = 0, text_len = 0;
        struct stat ast;
        int r;

        if (!f || (!e && n > 0))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                size += iver_imalog_entry_binary_size(e[i]);
        bin = malloc(size ? size : 1);
        if (!bin)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = iver_imalog_entry_to_binary(e[i], bin + off, size - off);
                if (r < 0)
                        return r;
                off += r;
        }
        /* the ASCII twin of the batch, built before anything is written */
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *line = NULL;
                size_t ln;
                r = iver_imalog_entry_to_ascii(e[i], &line, &ln);
                if (r < 0)
                        return r;
                char *t = realloc(text, text_len + ln + 1);
                if (!t)
                        return -ENOMEM;
                text = t;
                memcpy(text + text_len, line, ln);
                text_len += ln;
        }
        if (fstat(f->ascii_fd, &ast) < 0)
                return negative_errno();
        r = iver_write_full(f->bin_fd, bin, size);
        if (r >= 0 && sync && fdatasync(f->bin_fd) < 0)
                r = negative_errno();
        /* An entry is in the list only when both files hold it: a full
         * directory must not leave the ASCII list short of entries the binary
         * list (and then the PCR) has, for good. */
        if (r >= 0 && (r = iver_write_full(f->ascii_fd, text, text_len)) < 0)
                f->ascii_error = r;
        if (r < 0) {
                /* Leave no partial record behind: cut back to the last good one. */
                (void) ftruncate(f->bin_fd, f->size);
                (void) ftruncate(f->ascii_fd, ast.st_size);
                return r;
        }
        f->size += size;
        return 0;
}

int iver_imalog_file_append_many(IverImaFile *f, const IverImaEntry *const *e, size_t n) {
        return append(f, e, n, true);
}

int iver_imalog_file_write_many(IverImaFile *f, const IverImaEntry *const *e, size_t n) {
        return append(f, e, n, false);
}

int iver_imalog_file_fd(const IverImaFile *f) {
        return f ? f->bin_fd : -EINVAL;
}

int iver_imalog_file_append(IverImaFile *f, const IverImaEntry *e) {
        if (!e)
                return -EINVAL;
        return iver_imalog_file_append_many(f, &e, 1);
}

int iver_imalog_file_ascii_error(const IverImaFile *f) {
        return f ? f->ascii_error : -EINVAL;
}

uint64_t iver_imalog_file_size(const IverImaFile *f) {
        return f ? f->size : 0;
}
