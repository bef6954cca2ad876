/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ledger's per-path set under a stream of paths it has not seen (a
 * rescan after every file's atime moved, an upgrade naming new versioned
 * directories): nanoseconds per iver_ledger_account() of a new path once the
 * 1,024-path set is full (each takes the place of the one that cost least),
 * and of a path already followed, median of 5 rounds.
 *
 *   bench-ledger_top [PATHS]      (default 200000)
 *
 * Prints figures; it is not a test. */
#include <stdio.h>
#include <stdlib.h>

#include "iver/ledger.h"
#include "iver/stat.h"

static int cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        int n = argc > 1 ? atoi(argv[1]) : 200000;
        if (n < 2048) {
                fprintf(stderr, "PATHS must be at least 2048\n");
                return 2;
        }
        char (*paths)[48] = malloc((size_t) n * sizeof(*paths));
        if (!paths)
                return 1;
        for (int i = 0; i < n; i++)
                snprintf(paths[i], sizeof(paths[i]), "/srv/tree/d%03d/f%07d", i % 997, i);
        IverVerdict moved = { .atime = true }; /* avoided a re-hash the atime rule would make */
        double fresh[5], known[5];
        for (int round = 0; round < 5; round++) {
                IverLedger *l = NULL;
                if (iver_ledger_new(10, &l) < 0)
                        return 1;
                double t0 = (double) iver_monotonic_ns();
                for (int i = 0; i < n; i++)
                        iver_ledger_account(l, &moved, 4096, 0, 0, 0, paths[i]);
                double t1 = (double) iver_monotonic_ns();
                for (int k = 0; k < 100; k++) /* the last 1,024 are followed */
                        for (int i = n - 1024; i < n; i++)
                                iver_ledger_account(l, &moved, 4096, 0, 0, 0, paths[i]);
                double t2 = (double) iver_monotonic_ns();
                fresh[round] = (t1 - t0) / n;
                known[round] = (t2 - t1) / (100 * 1024);
                if (iver_ledger_paths_dropped(l) != (uint64_t) (n - 1024)) {
                        fprintf(stderr, "unexpected: %llu paths dropped\n",
                                (unsigned long long) iver_ledger_paths_dropped(l));
                        return 1;
                }
                iver_ledger_free(l);
        }
        qsort(fresh, 5, sizeof(double), cmp);
        qsort(known, 5, sizeof(double), cmp);
        printf("ledger per-path set (1,024 followed), %d paths new to it: %.0f ns an account of a new path, "
               "%.0f ns of a followed one (median of 5)\n",
               n, fresh[2], known[2]);
        free(paths);
        return 0;
}
