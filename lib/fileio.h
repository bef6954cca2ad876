/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* File I/O shared by libiver, iverd and iverctl: whole reads and writes that
 * survive EINTR and short counts, opening a file that must be a regular file
 * (configuration, policy, keys) without blocking or following a symlink, and
 * replacing a file atomically. Internal (lib/), not part of the public API. */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Read until EOF or size bytes; *ret_len receives what was read. */
int iver_read_full(int fd, void *buf, size_t size, size_t *ret_len);
/* Read size bytes of fd at offset (pread: the file position does not move),
 * retrying short reads and EINTR. With ret_len, the file may end first
 * (*ret_len: what was read); without it that is -EIO (the file is shorter
 * than its reader was told: it shrank under us). The one pread loop. */
int iver_pread_full(int fd, void *buf, size_t size, uint64_t offset, size_t *ret_len);
/* Write all len bytes (retrying short writes and EINTR). */
int iver_write_full(int fd, const void *buf, size_t len);

enum {
        IVER_OPEN_DIR_OK = 1 << 0,      /* a directory is opened too (O_DIRECTORY callers read it) */
        IVER_OPEN_DEV_NULL_OK = 1 << 1, /* /dev/null (a character device) reads as empty */
};

/* Open path for reading with O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_NOCTTY|O_CLOEXEC
 * and check what it is: a FIFO, socket or device never blocks the caller.
 * Returns the fd, or -ELOOP (path is a symbolic link: not followed),
 * -EBADFD (not a regular file: a FIFO, socket or device), -EISDIR (a
 * directory without IVER_OPEN_DIR_OK), or the open's -errno. ret_st
 * (optional) receives the fstat. */
int iver_open_regular(const char *path, unsigned flags, struct stat *ret_st);
/* Read at most max bytes of an fd from iver_open_regular(): -EFBIG if the
 * file holds more. The buffer is NUL-terminated (not counted in *ret_len). */
int iver_read_fd_max(int fd, size_t max, char **ret, size_t *ret_len);
/* iver_open_regular() + iver_read_fd_max(). */
int iver_read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* A short explanation of the errors above for messages ("a symbolic link
 * (not followed)", "not a regular file (a FIFO, socket or device)"), else
 * strerror(-r). */
const char *iver_file_strerror(int r);

enum {
        IVER_WRITE_SYNC = 1 << 0,       /* fsync the file and the directory: durable across a crash */
        IVER_WRITE_EXACT_MODE = 1 << 1, /* mode as given, not reduced by the umask */
};

/* A file being written to replace dir_fd/name atomically: a new temporary
 * file in the same directory (O_CREAT|O_EXCL|O_NOFOLLOW, a random name:
 * never an existing file or a planted symlink), renamed over name by
 * iver_atomic_commit. dir_fd is borrowed. */
typedef struct IverAtomicFile {
        int dir_fd;
        int fd;
        char tmp[NAME_MAX + 1];
} IverAtomicFile;
int iver_atomic_open(int dir_fd, const char *name, mode_t mode, IverAtomicFile *ret);
/* Close f (with flags as below) and rename it over name; on failure, or on
 * r < 0 (the caller's write failed: returned as is), the temporary is
 * removed. f's fd is closed either way. */
int iver_atomic_commit(IverAtomicFile *f, const char *name, mode_t mode, unsigned flags, int r);
/* Replace dir_fd/name atomically with data (iver_atomic_open, written
 * fully, iver_atomic_commit). */
int iver_write_file_atomic_at(int dir_fd, const char *name, const void *data, size_t len, mode_t mode,
                              unsigned flags);
/* path's directory opened (O_DIRECTORY), and its last component in *ret_name. */
int iver_open_dir_of(const char *path, const char **ret_name);
/* The same for a path (its directory opened with O_DIRECTORY). */
int iver_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags);
