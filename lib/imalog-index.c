/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The dedup index of the on-disk measurement list (imalog-index.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "imalog-index.h"
#include "fileio.h"
#include "macro.h"
#include "table.h"

#define OFFSET_BITS 38
#define FP_BITS (64 - OFFSET_BITS)
#define OFFSET_MASK ((UINT64_C(1) << OFFSET_BITS) - 1)
#define MIN_SLOTS 1024
#define RECORD_KEY_SIZE (4 + IVER_IMA_TEMPLATE_DIGEST_SIZE)     /* u32 pcr · template digest */

void ima_index_init(ImaIndex *x) {
        *x = (ImaIndex) {};
        if (getrandom(x->key, sizeof(x->key), GRND_NONBLOCK) != sizeof(x->key)) {
                /* early boot without entropy: still not the same in every run */
                x->key[0] = (uint64_t) (uintptr_t) x ^ (uint64_t) getpid() * 0x9e3779b97f4a7c15ULL;
                x->key[1] = x->key[0] * 0xbf58476d1ce4e5b9ULL + 1;
        }
}

void ima_index_done(ImaIndex *x) {
        free(x->slots);
        *x = (ImaIndex) {};
}

size_t ima_index_bytes(const ImaIndex *x) {
        return x->n_slots * sizeof(uint64_t);
}

/* The pair's fingerprint: the top FP_BITS of a keyed hash. */
static uint64_t fingerprint(const ImaIndex *x, uint32_t pcr, const uint8_t *digest) {
        uint64_t a, b, c = 0;
        memcpy(&a, digest, 8);
        memcpy(&b, digest + 8, 8);
        memcpy(&c, digest + 16, 4);
        uint64_t h = mix64(a ^ x->key[0]);
        h = mix64(h ^ b ^ x->key[1]);
        h = mix64(h ^ (c << 8) ^ pcr);
        return h >> OFFSET_BITS;
}

/* The home slot of a fingerprint: the fingerprint scaled to the table
 * (table.h), so it moves with the table's size without reading a record. */
static size_t home(uint64_t fp, size_t n_slots) {
        return (size_t) iver_table_home((uint32_t) (fp << (32 - FP_BITS)), n_slots);
}

/* Whether the record at offset in fd is (pcr, digest). */
static int record_is(int fd, uint64_t offset, uint32_t pcr, const uint8_t *digest) {
        uint8_t buf[RECORD_KEY_SIZE];
        uint32_t p;
        int r = iver_pread_full(fd, buf, sizeof(buf), offset, NULL); /* -EIO: the list got shorter under us */
        if (r < 0)
                return r;
        memcpy(&p, buf, 4);
        return p == pcr && memcmp(buf + 4, digest, IVER_IMA_TEMPLATE_DIGEST_SIZE) == 0;
}

/* 1 and the slot holding (pcr, digest), or 0 and the free slot where it
 * would go. */
static int probe(const ImaIndex *x, uint64_t fp, uint32_t pcr, const uint8_t *digest, int fd, size_t *ret) {
        size_t i = home(fp, x->n_slots);

        for (;; i = iver_table_next(i, x->n_slots)) {
                uint64_t s = x->slots[i];
                if (s == 0)
                        break;
                if ((s >> OFFSET_BITS) != fp)
                        continue;
                int r = record_is(fd, (s & OFFSET_MASK) - 1, pcr, digest);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret = i;
                        return 1;
                }
        }
        *ret = i;
        return 0;
}

/* Grow the table (table.h): every slot goes to its fingerprint's new home,
 * no record is read back (the pairs in it are distinct). */
static int grow(ImaIndex *x) {
        size_t n = (size_t) iver_table_capacity(x->n_used + 1, MIN_SLOTS);
        uint64_t *slots = calloc(n, sizeof(uint64_t));

        if (!slots)
                return -ENOMEM;
        for (size_t j = 0; j < x->n_slots; j++) {
                uint64_t s = x->slots[j];
                if (s == 0)
                        continue;
                size_t i = home(s >> OFFSET_BITS, n);
                while (slots[i] != 0)
                        i = iver_table_next(i, n);
                slots[i] = s;
        }
        free(x->slots);
        x->slots = slots;
        x->n_slots = n;
        return 0;
}

int ima_index_find(const ImaIndex *x, uint32_t pcr, const uint8_t digest[IVER_IMA_TEMPLATE_DIGEST_SIZE], int fd) {
        size_t i;
        if (x->n_used == 0)
                return 0;
        return probe(x, fingerprint(x, pcr, digest), pcr, digest, fd, &i);
}

int ima_index_add(ImaIndex *x, uint32_t pcr, const uint8_t digest[IVER_IMA_TEMPLATE_DIGEST_SIZE], uint64_t offset,
                  int fd) {
        uint64_t fp = fingerprint(x, pcr, digest);
        size_t i;
        int r;

        if (offset > IMA_INDEX_OFFSET_MAX)
                return -EFBIG;
        if (x->n_slots == 0 || iver_table_over(x->n_used + 1, x->n_slots)) {
                r = grow(x);
                if (r < 0)
                        return r;
        }
        r = probe(x, fp, pcr, digest, fd, &i);
        if (r != 0)
                return r < 0 ? r : 0;   /* there already: the first record stays */
        x->slots[i] = fp << OFFSET_BITS | (offset + 1);
        x->n_used++;
        return 0;
}
