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
#include "grow.h"
#include "fileio.h"
#include "imalog-file-internal.h"
#include "macro.h"

#define TEXT_CHUNK (256U * 1024U)
#define SCRATCH_KEEP (1024U * 1024U) /* a daemon group (256 entries) is ~85 KiB */

/* A new temporary file in dir_fd for name, never one someone left there (a
 * symlink to follow). */
static int open_temp(int dir_fd, const char *name, mode_t mode, char tmp[static 256]) {
        snprintf(tmp, 256, ".%s.%ld.tmp", name, (long) getpid());
        (void) unlinkat(dir_fd, tmp, 0);
        int fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, mode);
        return fd < 0 ? negative_errno() : fd;
}

/* Put the temporary in place (r ≥ 0) or remove it. */
static int finish_temp(int dir_fd, int fd, const char *tmp, const char *name, bool sync, int r) {
        if (r >= 0 && sync && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlinkat(dir_fd, tmp, 0);
        return r;
}

/* Whether the bytes of fd from off to size are a torn last record: all zero
 * (the file grew but the data never landed), or one record whose lengths
 * reach exactly to size (its data partly written). */
static int tail_is_torn(int fd, uint64_t off, uint64_t size) {
        uint8_t buf[4096];
        bool zero = true;
        size_t ext;

        for (uint64_t at = off; at < size && zero;) {
                size_t k = (size_t) MIN(size - at, (uint64_t) sizeof(buf));
                int r = iver_pread_full(fd, buf, k, at, NULL);
                if (r < 0)
                        return r;
                if (at == off && iver_imalog_entry_binary_extent(buf, k, &ext) >= 0 && ext == size - off)
                        return 1;
                for (size_t i = 0; i < k && zero; i++)
                        zero = buf[i] == 0;
                at += (uint64_t) k;
        }
        return zero;
}

/* Count and index one entry of the list, at offset. */
static int note_entry(IverImaFile *f, const IverImaEntry *e, uint64_t offset) {
        if (e->pcr < IVER_IMA_PCR_MAX)
                f->pcrs |= 1u << e->pcr;
        f->count++;
        if (e->violation)
                return 0;       /* never deduplicated */
        return ima_index_add(&f->index, e->pcr, e->template_digest, offset, f->bin_fd);
}

IverImaFile *iver_imalog_file_free(IverImaFile *f) {
        if (!f)
                return NULL;
        closep(&f->ascii_fd);
        closep(&f->bin_fd);
        closep(&f->dir_fd);
        ima_index_done(&f->index);
        free(f->bin_buf);
        free(f->text_buf);
        free(f);
        return NULL;
}

/* Read the binary list record by record: index each, its ASCII line to
 * ascii_fd. *ret_end: where the good records end; *ret_size: the file size. */
static int read_back(IverImaFile *f, int ascii_fd, uint64_t *ret_end, uint64_t *ret_size) {
        _cleanup_(iver_imalog_reader_freep) IverImaReader *rd = NULL;
        _cleanup_free_ char *text = malloc(TEXT_CHUNK);
        size_t text_len = 0;
        struct stat st;
        int r;

        if (!text)
                return -ENOMEM;
        if (fstat(f->bin_fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        r = iver_imalog_reader_new(f->bin_fd, 0, &rd);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
                uint64_t at = iver_imalog_reader_offset(rd);
                r = iver_imalog_reader_next(rd, (uint64_t) st.st_size, &e);
                if (r == -ENODATA)
                        break;          /* the last record ends past EOF: torn */
                if (r == -EBADMSG) {
                        int t = tail_is_torn(f->bin_fd, at, (uint64_t) st.st_size);
                        if (t < 0)
                                return t;
                        if (t > 0)
                                break;
                }
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        break;
                }
                r = note_entry(f, e, at);
                if (r < 0)
                        return r;
                _cleanup_free_ char *line = NULL;
                size_t ln;
                r = iver_imalog_entry_to_ascii(e, &line, &ln);
                if (r < 0)
                        return r;
                if (text_len + ln > TEXT_CHUNK) {
                        r = iver_write_full(ascii_fd, text, text_len);
                        if (r < 0)
                                return r;
                        text_len = 0;
                }
                if (ln > TEXT_CHUNK)
                        r = iver_write_full(ascii_fd, line, ln);
                else {
                        memcpy(text + text_len, line, ln);
                        text_len += ln;
                }
                if (r < 0)
                        return r;
        }
        r = iver_write_full(ascii_fd, text, text_len);
        if (r < 0)
                return r;
        *ret_end = iver_imalog_reader_offset(rd);
        *ret_size = (uint64_t) st.st_size;
        return 0;
}

/* Forget what read_back() counted and indexed (to read the list again). */
static void forget_entries(IverImaFile *f) {
        f->count = 0;
        f->pcrs = 0;
        ima_index_done(&f->index);
        ima_index_init(&f->index);
}

/* The ASCII twin there is, to be rewritten in place: only a regular file of
 * ours with one name (never through a symlink, never one planted there). */
static int open_in_place(int dir_fd) {
        struct stat st;
        _cleanup_close_ int fd = openat(dir_fd, IVER_IMA_ASCII_FILE, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid())
                return -EBADFD;
        return TAKE_FD(fd);
}

/* Cut fd back to size if it is longer. Only then: a truncate to the same
 * size frees the blocks past the end too (tmpfs), the reservation with them. */
static int cut_back(int fd, uint64_t size) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if ((uint64_t) st.st_size > size && ftruncate(fd, (off_t) size) < 0)
                return negative_errno();
        return 0;
}

/* Read the binary list back (indexing it) and rebuild the ASCII twin: into
 * a new file, renamed into place later (tmp); or, on a full filesystem,
 * where the new file finds no room, in the old twin's own blocks and the
 * reservation past them (*ret_in_place: the same lines written over
 * themselves, so a reader sees no change but a torn tail cut or lines the
 * binary list had more; then cut to length by finish_in_place()). */
static int rebuild_ascii(IverImaFile *f, char tmp[static 256], int *ret_fd, bool *ret_in_place, uint64_t *ret_end,
                         uint64_t *ret_size) {
        _cleanup_close_ int fd = open_temp(f->dir_fd, IVER_IMA_ASCII_FILE, 0640, tmp);
        int r = fd < 0 ? fd : read_back(f, fd, ret_end, ret_size);
        struct stat st;

        if (r >= 0) {
                *ret_in_place = false;
                *ret_fd = TAKE_FD(fd);
                return 0;
        }
        if (fd >= 0)
                (void) unlinkat(f->dir_fd, tmp, 0);
        if (r != -ENOSPC && r != -EDQUOT)
                return r;
        closep(&fd);
        forget_entries(f);
        fd = open_in_place(f->dir_fd);
        if (fd < 0 || fstat(fd, &st) < 0)
                return r;
        r = read_back(f, fd, ret_end, ret_size);
        if (r < 0) {
                /* what did not fit leaves no partial line behind */
                (void) cut_back(fd, (uint64_t) st.st_size);
                return r;
        }
        *ret_in_place = true;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The twin rewritten in place ends where the rewrite did; appends go to its end. */
static int finish_in_place(int fd) {
        off_t end = lseek(fd, 0, SEEK_CUR);
        int fl = fcntl(fd, F_GETFL);
        if (end < 0 || fl < 0)
                return negative_errno();
        int r = cut_back(fd, (uint64_t) end);
        if (r < 0)
                return r;
        return fcntl(fd, F_SETFL, fl | O_APPEND) < 0 ? negative_errno() : 0;
}

int iver_imalog_file_open(const char *dir, IverImaFile **ret_file, size_t *ret_truncated) {
        _cleanup_(iver_imalog_file_freep) IverImaFile *f = NULL;
        _cleanup_close_ int ascii_fd = -EBADF;
        uint64_t end = 0, size = 0;
        bool in_place = false;
        char tmp[256];
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->dir_fd = f->bin_fd = f->ascii_fd = -EBADF;
        ima_index_init(&f->index);
        f->dir_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (f->dir_fd < 0)
                return negative_errno();
        /* never through a symlink, never a FIFO or device planted there */
        f->bin_fd = openat(f->dir_fd, IVER_IMA_BINARY_FILE, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                           0640);
        if (f->bin_fd < 0)
                return negative_errno();
        r = rebuild_ascii(f, tmp, &ascii_fd, &in_place, &end, &size);
        if (r < 0)
                return r;
        /* what was listed before is durable before anything of it reaches a PCR */
        if ((end < size && ftruncate(f->bin_fd, (off_t) end) < 0) || fsync(f->bin_fd) < 0) {
                r = negative_errno();
                if (!in_place)
                        (void) unlinkat(f->dir_fd, tmp, 0);
                return r;
        }
        f->size = f->bin_alloc = end;
        r = in_place ? finish_in_place(ascii_fd) : finish_temp(f->dir_fd, ascii_fd, tmp, IVER_IMA_ASCII_FILE, false, 0);
        if (r < 0)
                return r;
        f->ascii_fd = TAKE_FD(ascii_fd);
        struct stat ast;
        if (fstat(f->ascii_fd, &ast) < 0)
                return negative_errno();
        f->ascii_size = (uint64_t) ast.st_size;
        if (ret_truncated)
                *ret_truncated = (size_t) (size - end);
        *ret_file = TAKE_PTR(f);
        return 0;
}

/* Room for need bytes in a buffer kept for the next batch: a group's text
 * and records come to tens or hundreds of KiB, which malloc would map and
 * unmap (or grow by copying), and the kernel fault in again, every commit. */
static int scratch(uint8_t **buf, size_t *cap, size_t need) {
        if (need <= *cap)
                return 0;
        size_t n = MAX(need, *cap * 2);
        uint8_t *p = realloc(*buf, n);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *cap = n;
        return 0;
}

static void scratch_trim(IverImaFile *f) {
        /* one huge batch (a merge, a replay) does not stay resident */
        if (f->bin_cap + f->text_cap > SCRATCH_KEEP) {
                free(f->bin_buf);
                free(f->text_buf);
                f->bin_buf = NULL;
                f->text_buf = NULL;
                f->bin_cap = f->text_cap = 0;
        }
}

static int append(IverImaFile *f, const IverImaEntry *const *e, size_t n, bool sync) {
        size_t size = 0, off = 0, text_len = 0, text_max = 0;
        int r;

        if (!f || (!e && n > 0))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                size += iver_imalog_entry_binary_size(e[i]);
                text_max += iver_imalog_entry_ascii_size(e[i]);
        }
        if (scratch(&f->bin_buf, &f->bin_cap, size + 1) < 0 ||
            scratch(&f->text_buf, &f->text_cap, text_max + 1) < 0)
                return -ENOMEM;
        uint8_t *bin = f->bin_buf;
        char *text = (char *) f->text_buf;
        for (size_t i = 0; i < n; i++) {
                r = iver_imalog_entry_to_binary(e[i], bin + off, size - off);
                if (r < 0)
                        return r;
                off += r;
        }
        /* the ASCII twin of the batch, built before anything is written */
        for (size_t i = 0; i < n; i++)
                text_len += iver_imalog_entry_ascii_put(e[i], text + text_len);
        /* room ahead of the batch's end; a full filesystem that refuses more
         * still lets the batch into what is already reserved */
        imalog_file_reserve_both(f, f->size + size, f->ascii_size + text_len);
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
                (void) cut_back(f->bin_fd, f->size);
                (void) cut_back(f->ascii_fd, f->ascii_size);
                /* a cut may free the blocks past the end: reserve them again next time */
                f->bin_alloc = MIN(f->bin_alloc, f->size);
                f->ascii_alloc = MIN(f->ascii_alloc, f->ascii_size);
                return r;
        }
        f->ascii_size += text_len;
        scratch_trim(f);
        /* in the list now: counted and indexed (an index that cannot grow
         * only lets a later duplicate through, which the kernel's rule
         * tolerates) */
        for (size_t i = 0; i < n; i++) {
                (void) note_entry(f, e[i], f->size);
                f->size += iver_imalog_entry_binary_size(e[i]);
        }
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

size_t iver_imalog_file_count(const IverImaFile *f) {
        return f ? f->count : 0;
}

uint32_t iver_imalog_file_pcrs(const IverImaFile *f) {
        return f ? f->pcrs : 0;
}

int iver_imalog_file_contains(const IverImaFile *f, const IverImaEntry *e) {
        if (!f || !e)
                return -EINVAL;
        if (e->violation)
                return 0;
        return ima_index_find(&f->index, e->pcr, e->template_digest, f->bin_fd);
}

size_t iver_imalog_file_memory(const IverImaFile *f) {
        return f ? ima_index_bytes(&f->index) : 0;
}

int iver_imalog_file_reopen(const IverImaFile *f) {
        struct stat a, b;
        if (!f)
                return -EINVAL;
        _cleanup_close_ int fd = openat(f->dir_fd, IVER_IMA_BINARY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &a) < 0 || fstat(f->bin_fd, &b) < 0)
                return negative_errno();
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return -ESTALE;
        return TAKE_FD(fd);
}
