/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A statx batch of the walk (statbatch.h), run on a statx thread. */
#include <stdlib.h>
#include <unistd.h>

#include "statbatch.h"

void stat_batch_run(StatBatch *b) {
        for (unsigned i = 0; i < b->n; i++) {
                b->at[i] = iver_now_ns();
                b->r[i] = iver_stat(b->statx, b->dirfd, b->names + b->name_off[i], b->want_version, &b->st[i]);
        }
}

StatBatch *stat_batch_free(StatBatch *b) {
        if (!b)
                return NULL;
        if (b->dirfd >= 0)
                close(b->dirfd);
        free(b->dir);
        free(b->names);
        free(b);
        return NULL;
}
