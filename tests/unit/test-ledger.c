/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ledger truth table: every combination of changed snapshot fields ×
 * digest changed, judged against each heuristic's own shadow. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iver/ledger.h"
#include "check-run.h"
#include "seed.h"

enum { F_ATIME = 1, F_MTIME = 2, F_CTIME = 4, F_SIZE = 8 };

static IverStat base(void) {
        return (IverStat) { .atime = 1000, .mtime = 2000, .ctime = 3000, .size = 4096, .mode = 0100644 };
}

static IverStat changed(unsigned fields) {
        IverStat st = base();
        if (fields & F_ATIME)
                st.atime += 7;
        if (fields & F_MTIME)
                st.mtime += 11;
        if (fields & F_CTIME)
                st.ctime += 13;
        if (fields & F_SIZE)
                st.size += 17;
        return st;
}

START_TEST(test_truth_table) {
        for (unsigned fields = 0; fields < 16; fields++)
                for (int dchg = 0; dchg <= 1; dchg++) {
                        IverLedger *l = NULL;
                        ck_assert_int_eq(iver_ledger_new(5, &l), 0);
                        IverStat st0 = base(), st1 = changed(fields);
                        uint32_t sa, sm, sa1, sm1;

                        /* first sight: everybody hashes, counted apart */
                        IverVerdict v0 = iver_ledger_judge(false, 0, 0, true, &st0, &sa, &sm);
                        ck_assert(v0.first && v0.iverd && v0.atime && v0.mtime);
                        iver_ledger_account(l, &v0, st0.size, -1, st0.size, 0, "/f");

                        /* iverd decides by the cookie: ctime, mtime, size */
                        bool iverd = fields & (F_CTIME | F_MTIME | F_SIZE);
                        bool exp_atime = fields != 0;
                        bool exp_mtime = fields & (F_MTIME | F_SIZE);
                        IverVerdict v = iver_ledger_judge(true, sa, sm, iverd, &st1, &sa1, &sm1);
                        ck_assert(!v.first);
                        ck_assert_int_eq(v.iverd, iverd);
                        ck_assert_int_eq(v.atime, exp_atime);
                        ck_assert_int_eq(v.mtime, exp_mtime);
                        /* shadows advance only where that heuristic re-hashes */
                        ck_assert(exp_atime ? sa1 == iver_shadow_atime(&st1) : sa1 == sa);
                        ck_assert(exp_mtime ? sm1 == iver_shadow_mtime(&st1) : sm1 == sm);

                        int dc = iverd ? dchg : -1;
                        iver_ledger_account(l, &v, st1.size, dc, iverd ? st1.size : 0, 0, "/f");
                        const IverLedgerCounters *c = iver_ledger_counters(l);
                        ck_assert_uint_eq(c->checks, 2);
                        ck_assert_uint_eq(c->first_seen, 1);
                        ck_assert_uint_eq(c->remeasured, iverd);
                        ck_assert_uint_eq(c->avoided_vs_atime, !iverd && exp_atime);
                        ck_assert_uint_eq(c->avoided_vs_mtime, !iverd && exp_mtime);
                        ck_assert_uint_eq(c->extra_vs_mtime, iverd && !exp_mtime);
                        ck_assert_uint_eq(c->missed_by_mtime, iverd && !exp_mtime && dchg);
                        ck_assert_uint_eq(c->unchanged_content, iverd && !dchg);
                        ck_assert_uint_eq(c->atime_rehashes, exp_atime);
                        ck_assert_uint_eq(c->mtime_rehashes, exp_mtime);
                        ck_assert_uint_eq(c->bytes_avoided_vs_atime, (!iverd && exp_atime) ? st1.size : 0);
                        ck_assert_uint_eq(c->bytes_avoided_vs_mtime, (!iverd && exp_mtime) ? st1.size : 0);
                        ck_assert_uint_eq(c->bytes_hashed, st0.size + (iverd ? st1.size : 0));
                        iver_ledger_free(l);
                }
}
END_TEST

START_TEST(test_unknown_digest_counts_neither) {
        IverLedger *l = NULL;
        ck_assert_int_eq(iver_ledger_new(5, &l), 0);
        IverStat st0 = base(), st1 = changed(F_CTIME);
        uint32_t sa, sm;
        IverVerdict v = iver_ledger_judge(false, 0, 0, true, &st0, &sa, &sm);
        iver_ledger_account(l, &v, 1, -1, 1, 0, "/f");
        v = iver_ledger_judge(true, sa, sm, true, &st1, &sa, &sm);
        iver_ledger_account(l, &v, 1, -1, 1, 0, "/f");
        const IverLedgerCounters *c = iver_ledger_counters(l);
        ck_assert_uint_eq(c->extra_vs_mtime, 1);
        ck_assert_uint_eq(c->missed_by_mtime, 0);
        ck_assert_uint_eq(c->unchanged_content, 0);
        iver_ledger_free(l);
}
END_TEST

/* A metadata-only change (cookie moved, proven unwritten): counted as such,
 * nothing re-hashed; a touch (mtime moved, no write) is avoided_vs_mtime. */
START_TEST(test_metadata_only) {
        IverLedger *l = NULL;
        ck_assert_int_eq(iver_ledger_new(5, &l), 0);
        IverStat st0 = base(), st1 = changed(F_CTIME), st2 = changed(F_CTIME | F_MTIME);
        uint32_t sa, sm;
        IverVerdict v = iver_ledger_judge(false, 0, 0, true, &st0, &sa, &sm);
        iver_ledger_account(l, &v, 4096, -1, 4096, 0, "/f");
        v = iver_ledger_judge(true, sa, sm, false, &st1, &sa, &sm); /* chmod */
        v.metadata_only = true;
        iver_ledger_account(l, &v, 4096, 0, 0, 0, "/f");
        v = iver_ledger_judge(true, sa, sm, false, &st2, &sa, &sm); /* touch */
        v.metadata_only = true;
        iver_ledger_account(l, &v, 4096, 0, 0, 0, "/f");
        const IverLedgerCounters *c = iver_ledger_counters(l);
        ck_assert_uint_eq(c->metadata_only, 2);
        ck_assert_uint_eq(c->remeasured, 0);
        ck_assert_uint_eq(c->extra_vs_mtime, 0);
        ck_assert_uint_eq(c->avoided_vs_mtime, 1);
        ck_assert_uint_eq(c->bytes_hashed, 4096);
        iver_ledger_free(l);
}
END_TEST

/* The one field table: every counter once, names unique, in the dumps. */
START_TEST(test_field_table) {
        size_t n;
        const IverLedgerField *f = iver_ledger_fields(&n);
        ck_assert_uint_eq(n, sizeof(IverLedgerCounters) / sizeof(uint64_t));
        IverLedgerCounters c = {};
        for (size_t i = 0; i < n; i++) {
                ck_assert_ptr_nonnull(f[i].help);
                ck_assert_uint_lt(f[i].offset, sizeof(c));
                *(uint64_t *) ((char *) &c + f[i].offset) = i + 1;
                for (size_t j = 0; j < i; j++)
                        ck_assert_str_ne(f[i].name, f[j].name);
        }
        for (size_t i = 0; i < n; i++)
                ck_assert_uint_eq(iver_ledger_field_value(&c, &f[i]), i + 1); /* offsets distinct */
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        iver_ledger_print_json(&c, m);
        fclose(m);
        ck_assert_ptr_nonnull(strstr(buf, "\"metadata_only\":"));
        free(buf);
}
END_TEST

/* One read costs the atime heuristic one re-hash, not one at every later check. */
START_TEST(test_read_counts_once) {
        IverLedger *l = NULL;
        ck_assert_int_eq(iver_ledger_new(5, &l), 0);
        IverStat st = base();
        uint32_t sa, sm;
        IverVerdict v = iver_ledger_judge(false, 0, 0, true, &st, &sa, &sm);
        iver_ledger_account(l, &v, st.size, -1, st.size, 0, "/f");
        st.atime += 1; /* a read */
        for (int i = 0; i < 5; i++) {
                v = iver_ledger_judge(true, sa, sm, false, &st, &sa, &sm);
                iver_ledger_account(l, &v, st.size, 0, 0, 0, "/f");
        }
        ck_assert_uint_eq(iver_ledger_counters(l)->avoided_vs_atime, 1);
        ck_assert_uint_eq(iver_ledger_counters(l)->avoided_vs_mtime, 0);
        ck_assert_uint_eq(iver_ledger_counters(l)->checks, 6);
        iver_ledger_free(l);
}
END_TEST

/* The mtime heuristic's shadow stays where it last re-hashed: a chmod then a
 * tamper with mtime restored are both invisible to it. */
START_TEST(test_mtime_shadow_sticks) {
        IverLedger *l = NULL;
        ck_assert_int_eq(iver_ledger_new(5, &l), 0);
        IverStat st = base();
        uint32_t sa, sm, sm0;
        IverVerdict v = iver_ledger_judge(false, 0, 0, true, &st, &sa, &sm);
        iver_ledger_account(l, &v, st.size, -1, st.size, 0, "/f");
        sm0 = sm;
        st.ctime += 1; /* chmod */
        v = iver_ledger_judge(true, sa, sm, true, &st, &sa, &sm);
        iver_ledger_account(l, &v, st.size, 0, st.size, 0, "/f");
        ck_assert_uint_eq(sm, sm0);
        st.ctime += 1; /* content changed, mtime restored */
        v = iver_ledger_judge(true, sa, sm, true, &st, &sa, &sm);
        iver_ledger_account(l, &v, st.size, 1, st.size, 0, "/f");
        const IverLedgerCounters *c = iver_ledger_counters(l);
        ck_assert_uint_eq(c->extra_vs_mtime, 2);
        ck_assert_uint_eq(c->missed_by_mtime, 1);
        ck_assert_uint_eq(c->unchanged_content, 1);
        iver_ledger_free(l);
}
END_TEST

START_TEST(test_top_n) {
        IverLedger *l = NULL;
        ck_assert_int_eq(iver_ledger_new(3, &l), 0);
        char path[32];
        for (int i = 0; i < 10; i++) {
                snprintf(path, sizeof(path), "/p%d", i);
                IverVerdict v = { .iverd = true, .atime = true, .mtime = true };
                for (int k = 0; k <= i; k++)
                        iver_ledger_account(l, &v, 100, 1, 100, 0, path);
        }
        IverLedgerTop rows[8];
        unsigned n = iver_ledger_top(l, rows, 8);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(rows[0].path, "/p9");
        ck_assert_uint_eq(rows[0].remeasured, 10);
        ck_assert_uint_eq(rows[0].bytes_hashed, 1000);
        ck_assert_str_eq(rows[1].path, "/p8");
        ck_assert_str_eq(rows[2].path, "/p7");
        iver_ledger_free(l);
}
END_TEST

/* The set of followed paths is bounded (1,024): a stream of paths re-hashed
 * once each neither grows it nor pushes out the paths that cost most. */
START_TEST(test_top_bounded) {
        IverLedger *l = NULL;
        ck_assert_int_eq(iver_ledger_new(4, &l), 0);
        IverVerdict v = { .iverd = true, .atime = true, .mtime = true };
        char path[48];
        for (int k = 0; k < 50; k++)
                for (int i = 0; i < 4; i++) {
                        snprintf(path, sizeof(path), "/usr/bin/heavy%d", i);
                        iver_ledger_account(l, &v, 1000, 1, 1000 * (uint64_t) (i + 1), 0, path);
                }
        for (int i = 0; i < 100000; i++) {
                snprintf(path, sizeof(path), "/usr/lib/modules/%d/kernel/mod.ko", i);
                iver_ledger_account(l, &v, 10, 1, 10, 0, path);
        }
        IverLedgerTop rows[4];
        ck_assert_uint_eq(iver_ledger_top(l, rows, 4), 4);
        for (int i = 0; i < 4; i++) {
                snprintf(path, sizeof(path), "/usr/bin/heavy%d", 3 - i);
                ck_assert_str_eq(rows[i].path, path);
                ck_assert_uint_eq(rows[i].remeasured, 50);
                ck_assert_uint_eq(rows[i].bytes_hashed, 50 * 1000 * (uint64_t) (4 - i));
        }
        /* 1,020 places for the stream: all but the last 1,020 gave theirs up */
        ck_assert_uint_eq(iver_ledger_paths_dropped(l), 100000 - 1020);
        /* the newest 1,020 are followed (of those that cost as little, the
         * longest unseen gives its place), the older not */
        for (int i = 100000 - 1020; i < 100000; i++) {
                snprintf(path, sizeof(path), "/usr/lib/modules/%d/kernel/mod.ko", i);
                iver_ledger_account(l, &v, 10, 1, 10, 0, path);
        }
        ck_assert_uint_eq(iver_ledger_paths_dropped(l), 100000 - 1020);
        iver_ledger_account(l, &v, 10, 1, 10, 0, "/usr/lib/modules/98979/kernel/mod.ko");
        ck_assert_uint_eq(iver_ledger_paths_dropped(l), 100000 - 1020 + 1);
        ck_assert_uint_eq(iver_ledger_top(l, rows, 4), 4);
        ck_assert_str_eq(rows[0].path, "/usr/bin/heavy3"); /* still followed */
        iver_ledger_free(l);
}
END_TEST

/* The bounded set against a model that scans all 1,024 for the one that cost
 * least: a skewed random stream over 3,000 paths, the places given up compared
 * after every account. A wrong victim keeps a path the model dropped (or the
 * reverse), and the counts part the next time either is seen. */
enum { MODEL_PATHS = 3000, MODEL_MAX = 1024 };
typedef struct {
        int id;
        uint64_t bytes, n, seen;
} ModelPath;

static bool model_victim_before(const ModelPath *a, const ModelPath *b) {
        if (a->bytes != b->bytes)
                return a->bytes < b->bytes;
        if (a->n != b->n)
                return a->n < b->n;
        return a->seen < b->seen;
}

START_TEST(test_top_bounded_model) {
        IverLedger *l = NULL;
        ck_assert_int_eq(iver_ledger_new(8, &l), 0);
        static ModelPath kept[MODEL_MAX];
        static int where[MODEL_PATHS]; /* place in kept + 1; 0: not kept */
        memset(where, 0, sizeof(where));
        unsigned n_kept = 0;
        uint64_t dropped = 0, seq = 0;
        uint64_t rng = test_seed("ledger model", 0x9e3779b97f4a7c15ULL) | 1;
        IverVerdict v = { .iverd = true, .atime = true, .mtime = true };
        char path[48];
        for (int step = 0; step < 200000; step++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                /* skewed: low ids come often, high ones seldom */
                int id = (int) ((rng % MODEL_PATHS) * ((rng >> 32) % MODEL_PATHS) / MODEL_PATHS);
                uint64_t bytes = (rng >> 40) % 4 * 100;
                if (!where[id]) {
                        unsigned k = n_kept;
                        if (n_kept == MODEL_MAX) {
                                k = 0;
                                for (unsigned j = 1; j < MODEL_MAX; j++)
                                        if (model_victim_before(&kept[j], &kept[k]))
                                                k = j;
                                where[kept[k].id] = 0;
                                dropped++;
                        } else
                                n_kept++;
                        kept[k] = (ModelPath) { .id = id };
                        where[id] = (int) k + 1;
                }
                ModelPath *m = &kept[where[id] - 1];
                m->bytes += bytes, m->n++, m->seen = ++seq;
                snprintf(path, sizeof(path), "/var/lib/pkg/%d", id);
                iver_ledger_account(l, &v, bytes, 1, bytes, 0, path);
                ck_assert_uint_eq(iver_ledger_paths_dropped(l), dropped);
        }
        ck_assert_uint_gt(dropped, 10000); /* the stream did churn the set */
        /* the costliest of the model's kept paths lead the top rows */
        IverLedgerTop rows[8];
        ck_assert_uint_eq(iver_ledger_top(l, rows, 8), 8);
        for (int r = 0; r < 8; r++) {
                int id = -1;
                sscanf(rows[r].path, "/var/lib/pkg/%d", &id);
                ck_assert_int_gt(where[id], 0);
                ck_assert_uint_eq(rows[r].bytes_hashed, kept[where[id] - 1].bytes);
                ck_assert_uint_eq(rows[r].remeasured, kept[where[id] - 1].n);
        }
        iver_ledger_free(l);
}
END_TEST

int main(void) {
        Suite *s = suite_create("ledger");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_truth_table);
        tcase_add_test(tc, test_unknown_digest_counts_neither);
        tcase_add_test(tc, test_read_counts_once);
        tcase_add_test(tc, test_mtime_shadow_sticks);
        tcase_add_test(tc, test_top_n);
        tcase_add_test(tc, test_top_bounded);
        tcase_add_test(tc, test_top_bounded_model);
        tcase_add_test(tc, test_metadata_only);
        tcase_add_test(tc, test_field_table);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
