/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Pending checks, coalesced per path: a path is queued at most once, and an
 * event for a path whose check is in flight only marks it to run again. So a
 * storm of N events on F files costs O(F) memory, not O(N). */
typedef struct Queue Queue;

int queue_new(Queue **ret);
Queue *queue_free(Queue *q);

/* 1: newly queued; 0: coalesced into a pending or in-flight check; -errno. */
int queue_push(Queue *q, const char *path);
/* The same for a check that starts at once (the walker's, which has just
 * looked at the file): 1 with *ret_path in flight (borrowed until
 * queue_done), 0 when it coalesced into a pending or in-flight check of
 * path (nothing to start), -errno. */
int queue_push_inflight(Queue *q, const char *path, const char **ret_path);
/* The oldest queued path, now in flight (borrowed until queue_done), or NULL. */
const char *queue_pop(Queue *q);
/* The check of path (as returned by queue_pop) finished: forgets it, or
 * re-queues it if events came in meanwhile. */
void queue_done(Queue *q, const char *path);
/* Whether path's check is in flight and an event for it came meanwhile (it
 * will run again at queue_done). */
bool queue_dirty(const Queue *q, const char *path);

size_t queue_queued(const Queue *q);
size_t queue_inflight(const Queue *q);
size_t queue_coalesced(const Queue *q);  /* events absorbed since start */
