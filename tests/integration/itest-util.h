/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Helpers shared by the integration test programs. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <unistd.h>

/* Independent SHA-256 of the file's bytes (O_NOATIME: the test's own reads
 * must not look like a user's read to the atime heuristic). */
static inline int sha256_file(const char *path, uint8_t out[32]) {
        static uint8_t buf[1 << 20];
        EVP_MD_CTX *md;
        unsigned len = 0;
        int fd, r = 0;

        fd = open(path, O_RDONLY | O_NOATIME | O_CLOEXEC);
        if (fd < 0 && errno == EPERM)
                fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        md = EVP_MD_CTX_new();
        if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
                r = -ENOMEM;
                goto out;
        }
        for (;;) {
                ssize_t k = read(fd, buf, sizeof buf);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        goto out;
                }
                if (k == 0)
                        break;
                EVP_DigestUpdate(md, buf, (size_t) k);
        }
        if (EVP_DigestFinal_ex(md, out, &len) != 1 || len != 32)
                r = -EIO;
out:
        EVP_MD_CTX_free(md);
        close(fd);
        return r;
}

/* pwrite all of buf at off, retrying short writes and EINTR. */
static inline int write_all(int fd, const void *buf, size_t n, off_t off) {
        const uint8_t *p = buf;
        while (n > 0) {
                ssize_t k = pwrite(fd, p, n, off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
                off += k;
        }
        return 0;
}
