/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "iver/imalog.h"

/* The kernel's IMA measurement list in securityfs, read where iverd shares
 * PCR 10 with it (DESIGN.md §11): iverd's list continues the kernel's, so the
 * kernel's entries are copied into it verbatim. */

#define KERNEL_IMA_DIR "/sys/kernel/security/ima"

/* The directory to read: KERNEL_IMA_DIR, or for tests the one in the
 * environment variable IVERD_TEST_KERNEL_IMA_DIR (a fake kernel list; a test
 * knob, documented in iverd(8)). */
const char *kernel_ima_dir(void);
/* The kernel's binary list (binary_runtime_measurements in dir), every entry
 * from index from on, appended to l; *ret_count: the entries the kernel
 * listed. -ENOENT when the kernel keeps no list (no IMA, no securityfs);
 * -EOPNOTSUPP for an entry of a template iverd cannot replay. */
int kernel_ima_read(const char *dir, size_t from, IverImaLog *l, size_t *ret_count);
/* The kernel's binary list, opened to be read again and again from an
 * offset (kernel_ima_read_fd): an fd, or -errno. */
int kernel_ima_open(const char *dir);
/* Every entry from byte offset (an entry boundary) to the end, appended to l. */
int kernel_ima_read_fd(int fd, uint64_t offset, IverImaLog *l);
/* runtime_measurements_count in dir: cheap, read before the list. */
int kernel_ima_count(const char *dir, size_t *ret);
/* Whether the kernel keeps a list whose first entry names pcr: 1, 0 (no
 * list, or another PCR), -errno (-EOPNOTSUPP: a template iverd cannot read). */
int kernel_ima_uses(const char *dir, unsigned pcr);
/* Whether two entries are the same record (PCR, template, digest, data). */
bool kernel_ima_same(const IverImaEntry *a, const IverImaEntry *b);
/* Continue the kernel's list in f (iverd's list, PCR pcr): when the kernel
 * lists entries for pcr, append those f does not hold yet (found by walking f
 * for the kernel's entries in order), durably. 1 when the list is shared
 * (*ret_kernel: the kernel's entries, *ret_added: those appended now), 0 when
 * the kernel keeps no list for pcr, -errno. */
int kernel_ima_continue(IverImaFile *f, const char *dir, unsigned pcr, size_t *ret_kernel, size_t *ret_added);
