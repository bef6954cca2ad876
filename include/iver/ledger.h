/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "iver/stat.h"

/* The avoided-remeasurement ledger (DESIGN §5). Every check is judged three
 * ways on the same observation: iverd (identity + cookie), the atime heuristic
 * (any of atime, mtime, ctime, size differs from its own shadow) and the mtime
 * heuristic (mtime or size differs from its own shadow). Each heuristic's
 * shadow advances only when that heuristic would have re-hashed. */
typedef struct IverLedgerCounters {
        uint64_t checks;
        uint64_t first_seen;           /* files seen for the first time: everyone hashes */
        uint64_t remeasured;           /* iverd re-hashed a known file */
        uint64_t avoided_vs_atime;
        uint64_t avoided_vs_mtime;
        uint64_t extra_vs_mtime;
        uint64_t missed_by_mtime;
        uint64_t unchanged_content;
        uint64_t atime_rehashes;       /* what the atime heuristic re-hashed (known files) */
        uint64_t mtime_rehashes;
        uint64_t bytes_hashed;
        uint64_t bytes_avoided_vs_atime;
        uint64_t bytes_avoided_vs_mtime;
        uint64_t hash_cpu_ns;
        uint64_t unstable;
        uint64_t provisional;
        uint64_t metadata_only;        /* cookie moved, proven unwritten (last-writer rule): not re-hashed */
} IverLedgerCounters;

/* The counters by name, in report order, with their help text and unit
 * ("", "bytes", "ns"): the one table iverd's stats verb, iverctl's text and
 * Prometheus output and the man pages follow. */
typedef struct IverLedgerField {
        const char *name;
        const char *help;
        const char *unit;
        size_t offset;                 /* into IverLedgerCounters (uint64_t) */
} IverLedgerField;

const IverLedgerField *iver_ledger_fields(size_t *ret_n);
static inline uint64_t iver_ledger_field_value(const IverLedgerCounters *c, const IverLedgerField *f) {
        return *(const uint64_t *) ((const char *) c + f->offset);
}

/* Per-check verdicts, also the input of the per-path top-N. */
typedef struct IverVerdict {
        bool first;          /* no previous observation of this file/path */
        bool iverd;          /* iverd re-hashes */
        bool atime;          /* atime heuristic would re-hash */
        bool mtime;          /* mtime heuristic would re-hash */
        bool metadata_only;  /* cookie moved, proven unwritten: not re-hashed (iverd false) */
} IverVerdict;

/* Shadow fingerprints of the fields each heuristic compares: equality of the
 * 32-bit fingerprint stands for equality of the fields (a collision, 2^-32 an
 * observation, miscounts one heuristic's verdict in the ledger; no check
 * depends on them). 32 bits keep a cache entry at 56 bytes. */
uint32_t iver_shadow_atime(const IverStat *st);
uint32_t iver_shadow_mtime(const IverStat *st);

/* Judge one observation. have_prev: a previous entry exists for this file or
 * path; prev_shadow_*: its shadows. iverd_rehash: iverd's own decision.
 * Outputs the verdict and the shadows to store (advanced only where the
 * heuristic re-hashes). */
IverVerdict iver_ledger_judge(bool have_prev, uint32_t prev_shadow_atime, uint32_t prev_shadow_mtime,
                              bool iverd_rehash, const IverStat *st,
                              uint32_t *ret_shadow_atime, uint32_t *ret_shadow_mtime);

typedef struct IverLedger IverLedger;

int iver_ledger_new(unsigned top_n, IverLedger **ret);
IverLedger *iver_ledger_free(IverLedger *l);

/* Account one check. size: the file's size now (what a heuristic would hash).
 * digest_changed (used when v.iverd && !v.first): 1 the new digest differs
 * from the recorded one, 0 it is the same, -1 unknown (no digest produced:
 * counted neither as unchanged content nor as a miss). bytes_hashed/cpu_ns:
 * what iverd actually spent. */
void iver_ledger_account(IverLedger *l, const IverVerdict *v, uint64_t size, int digest_changed,
                         uint64_t bytes_hashed, uint64_t cpu_ns, const char *path);
void iver_ledger_count_unstable(IverLedger *l);
void iver_ledger_count_provisional(IverLedger *l);

const IverLedgerCounters *iver_ledger_counters(const IverLedger *l);
/* Restore counters (snapshot load). */
void iver_ledger_set_counters(IverLedger *l, const IverLedgerCounters *c);

/* Per-path top offenders: paths whose checks cost the most re-hash bytes
 * under the atime heuristic (avoided) and paths iverd re-hashed most. */
typedef struct IverLedgerTop {
        const char *path;
        uint64_t remeasured;
        uint64_t avoided_vs_atime;
        uint64_t bytes_hashed;
} IverLedgerTop;
/* Fill up to n rows, ordered by bytes_hashed then remeasured; returns rows.
 * At most 1,024 paths are followed: a path new to a full set takes the place
 * of the one that cost least, whose counts are dropped (and its own start
 * then); a path that costs much stays. */
unsigned iver_ledger_top(const IverLedger *l, IverLedgerTop *rows, unsigned n);
/* How many paths gave their place to another so far. */
uint64_t iver_ledger_paths_dropped(const IverLedger *l);

/* Human-readable and JSON dumps. */
void iver_ledger_print(const IverLedgerCounters *c, FILE *f);
void iver_ledger_print_json(const IverLedgerCounters *c, FILE *f);
