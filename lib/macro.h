/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Internal helpers shared by libiver modules and programs: ownership idioms
 * in the systemd style (_cleanup_, TAKE_PTR) and small utilities. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

#define TAKE_PTR(p)                          \
        ({                                   \
                __typeof__(p) _p_ = (p);     \
                (p) = NULL;                  \
                _p_;                         \
        })

#define TAKE_FD(fd)                          \
        ({                                   \
                int _fd_ = (fd);             \
                (fd) = -EBADF;               \
                _fd_;                        \
        })

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)  \
        static inline void func##p(type *p) {    \
                if (*p)                          \
                        *p = func(*p);           \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

/* -errno of the last failed libc call, never 0. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

/* The splitmix64 finaliser: a well-mixed 64-bit hash of x. */
static inline uint64_t mix64(uint64_t x) {
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        x ^= x >> 31;
        return x;
}
