/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The dedup index of a measurement list kept on disk (lib/imalog-file.c):
 * which (PCR, template digest) pairs the list holds, in 8 bytes a slot and
 * no copy of the entries. A slot holds the record's file offset (38 bits)
 * and a 26-bit fingerprint of the pair: the top bits of a keyed hash, which
 * scaled to the table is also the slot's home position (so the table grows
 * without reading a record back; sizes as lib/table.h says). A fingerprint
 * match is confirmed by reading the record's first 24 bytes (u32 PCR, SHA-1 template digest) back
 * from the list file, so a false match costs one pread and never drops an
 * entry. Slot positions come from a per-index random key: list entries carry
 * digests of files a local user writes, who must not be able to pile them
 * into one probe chain. Internal to libiver. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iver/imalog.h"

/* The largest offset the index can address (256 GiB of list). */
#define IMA_INDEX_OFFSET_MAX ((UINT64_C(1) << 38) - 2)

typedef struct ImaIndex {
        uint64_t *slots;        /* 0 = free; else fingerprint << 38 | (offset + 1) */
        size_t n_slots, n_used;
        uint64_t key[2];
} ImaIndex;

void ima_index_init(ImaIndex *x);
void ima_index_done(ImaIndex *x);
/* Record that the list holds (pcr, digest) in the record at offset (fd is
 * the list, to tell a pair already there: it keeps its first record). */
int ima_index_add(ImaIndex *x, uint32_t pcr, const uint8_t digest[IVER_IMA_TEMPLATE_DIGEST_SIZE], uint64_t offset,
                  int fd);
/* 1 if the list in fd holds (pcr, digest), 0 if not, -errno if a record
 * could not be read back. */
int ima_index_find(const ImaIndex *x, uint32_t pcr, const uint8_t digest[IVER_IMA_TEMPLATE_DIGEST_SIZE], int fd);
/* Bytes the index holds. */
size_t ima_index_bytes(const ImaIndex *x);
