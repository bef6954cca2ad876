/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>

typedef struct Manager Manager;
typedef struct Recheck Recheck;

/* Files measured provisionally (a writer held them open, so no read lease)
 * are checked again later, with a per-file backoff from 20 ms to 10 s. The
 * close-write event alone is not enough: it is sent before the kernel drops
 * the writer's count, so a lease taken right after it can still be refused. */
int recheck_new(Manager *m, Recheck **ret);
Recheck *recheck_free(Recheck *r);
void recheck_add(Recheck *r, const char *path);
/* The file measured stably (or vanished): stop re-checking it. */
void recheck_remove(Recheck *r, const char *path);
size_t recheck_count(const Recheck *r);
/* Re-checks due soon (backoff still short): count as pending work for settle. */
bool recheck_pending_soon(const Recheck *r);
