/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The parts of itest-fsops, the operation matrix: the runner and the plain
 * columns (itest-fsops.c), the operations of issue 2 and the table
 * (fsops-ops.c), more ways to change content (fsops-writepaths.c), and the
 * column "metadata-only attested" (fsops-attest.c). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "iver/iver.h"

#define FILE_SIZE (256 * 1024)

typedef enum { EXP_HIT, EXP_REHASH } Expect;
typedef enum {
        L_NONE,           /* open: nothing to count */
        L_AVOID_ATIME,    /* read: atime heuristic re-hashes, iverd does not */
        L_EXTRA_UNCHANGED,/* metadata only: extra_vs_mtime and unchanged_content */
        L_MISSED,         /* content changed under an unchanged mtime+size: missed_by_mtime */
        L_CONTENT,        /* visible content change: re-hash, nothing missed */
        L_INFO,           /* only printed */
} LedgerExpect;

typedef struct Row {
        char note[160];
        bool na;
} Row;

typedef struct Op {
        const char *name;
        int (*setup)(const char *path, Row *row); /* before the first check */
        int (*run)(const char *path, Row *row);   /* 0 done, 1 n/a, -errno failure */
        Expect expect;
        LedgerExpect ledger;
        const char *blind_fs;  /* filesystem where the kernel moves no timestamp: a known gap */
} Op;

/* ---- itest-fsops.c: the run and its helpers ---- */

extern const char *fsname;
extern const char *dir;
extern struct timespec t0;   /* atime = mtime of every fresh file: an hour ago */

void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fill(uint8_t *buf, size_t n, unsigned seed);
/* A fresh file of size bytes, fsynced, atime = mtime = t0. */
int make_file(const char *path, unsigned seed, size_t size);
/* Whether the digest on record equals an independent SHA-256 of path now. */
bool digest_matches(const char *path, const IverDigest *d, const char *what);
const char *res(IverCheckResult r);

/* The change of one ledger counter between a and b. */
#define D(f) (b->f - a->f)

/* ---- fsops-ops.c: the operations, in the order of the matrix ---- */

extern const Op ops[];
extern const size_t n_ops;
/* A second file an operation uses (rename source, link, clone source). */
extern char sidecar[4096];

int open_op(const char *path, int *ret_fd);

/* ---- fsops-writepaths.c: more ways to change content (issue 15 item 3) ---- */

int op_writev(const char *path, Row *row);
int op_zero_range(const char *path, Row *row);
int op_falloc_extend(const char *path, Row *row);
int setup_source(const char *path, Row *row);
int op_copy_range(const char *path, Row *row);
int op_clone_range(const char *path, Row *row);
int op_splice(const char *path, Row *row);
int op_io_uring(const char *path, Row *row);
int op_loop(const char *path, Row *row);

/* ---- fsops-attest.c: the column "metadata-only attested" ---- */

/* A fanotify FID group on dir's filesystem and a context whose attestation
 * hook it feeds; -errno when there is none (the column is not run). */
int attest_setup(const IverContextOptions *opt);
/* The operation on a fresh file, checked with attestation: the cell to print;
 * *ok false on a failure. "-" when attest_setup() did not succeed. */
const char *run_attested(const Op *op, bool *ok);
void attest_done(void);
