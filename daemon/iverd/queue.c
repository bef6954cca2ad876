/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Coalescing FIFO of paths to check. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"

typedef enum NodeState { NODE_QUEUED, NODE_INFLIGHT, NODE_INFLIGHT_DIRTY } NodeState;

typedef struct Node {
        struct Node *chain;  /* hash bucket */
        struct Node *next;   /* FIFO */
        uint64_t hash;
        NodeState state;
        char path[];
} Node;

struct Queue {
        Node **buckets;
        size_t n_buckets, n_nodes;
        Node *head, *tail;
        size_t queued, inflight, coalesced;
};

static uint64_t hash_path(const char *s) {
        uint64_t h = 1469598103934665603ULL;
        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * 1099511628211ULL;
        return h ^ (h >> 29);
}

int queue_new(Queue **ret) {
        Queue *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->n_buckets = 1024;
        q->buckets = calloc(q->n_buckets, sizeof(Node *));
        if (!q->buckets) {
                free(q);
                return -ENOMEM;
        }
        *ret = q;
        return 0;
}

Queue *queue_free(Queue *q) {
        if (!q)
                return NULL;
        for (size_t i = 0; i < q->n_buckets; i++)
                for (Node *n = q->buckets[i], *next; n; n = next) {
                        next = n->chain;
                        free(n);
                }
        free(q->buckets);
        free(q);
        return NULL;
}

static Node **find(Queue *q, const char *path, uint64_t h) {
        Node **p = &q->buckets[h & (q->n_buckets - 1)];
        for (; *p; p = &(*p)->chain)
                if ((*p)->hash == h && strcmp((*p)->path, path) == 0)
                        break;
        return p;
}

static void grow(Queue *q) {
        size_t nb = q->n_buckets * 2;
        Node **b = calloc(nb, sizeof(Node *));
        if (!b)
                return; /* longer chains, still correct */
        for (size_t i = 0; i < q->n_buckets; i++)
                for (Node *n = q->buckets[i], *next; n; n = next) {
                        next = n->chain;
                        n->chain = b[n->hash & (nb - 1)];
                        b[n->hash & (nb - 1)] = n;
                }
        free(q->buckets);
        q->buckets = b;
        q->n_buckets = nb;
}

static void enqueue(Queue *q, Node *n) {
        n->state = NODE_QUEUED;
        n->next = NULL;
        if (q->tail)
                q->tail->next = n;
        else
                q->head = n;
        q->tail = n;
        q->queued++;
}

/* A new node for path, or NULL with the existing one coalesced (or -ENOMEM
 * in *ret_r). */
static Node *add(Queue *q, const char *path, int *ret_r) {
        uint64_t h = hash_path(path);
        Node **p = find(q, path, h);
        if (*p) {
                if ((*p)->state == NODE_INFLIGHT)
                        (*p)->state = NODE_INFLIGHT_DIRTY;
                q->coalesced++;
                *ret_r = 0;
                return NULL;
        }
        size_t len = strlen(path);
        Node *n = malloc(sizeof(Node) + len + 1);
        if (!n) {
                *ret_r = -ENOMEM;
                return NULL;
        }
        memcpy(n->path, path, len + 1);
        n->hash = h;
        n->chain = NULL;
        *p = n;
        q->n_nodes++;
        if (q->n_nodes > q->n_buckets)
                grow(q);
        *ret_r = 1;
        return n;
}

int queue_push(Queue *q, const char *path) {
        int r;
        Node *n = add(q, path, &r);
        if (n)
                enqueue(q, n);
        return r;
}

int queue_push_inflight(Queue *q, const char *path, const char **ret_path) {
        int r;
        Node *n = add(q, path, &r);
        if (!n)
                return r;
        n->state = NODE_INFLIGHT;
        n->next = NULL;
        q->inflight++;
        *ret_path = n->path;
        return 1;
}

const char *queue_pop(Queue *q) {
        Node *n = q->head;
        if (!n)
                return NULL;
        q->head = n->next;
        if (!q->head)
                q->tail = NULL;
        q->queued--;
        q->inflight++;
        n->state = NODE_INFLIGHT;
        return n->path;
}

void queue_done(Queue *q, const char *path) {
        uint64_t h = hash_path(path);
        Node **p = find(q, path, h);
        Node *n = *p;
        if (!n || n->state == NODE_QUEUED)
                return;
        q->inflight--;
        if (n->state == NODE_INFLIGHT_DIRTY) {
                enqueue(q, n);
                return;
        }
        *p = n->chain;
        q->n_nodes--;
        free(n);
}

bool queue_dirty(const Queue *q, const char *path) {
        Node *const *p = find((Queue *) q, path, hash_path(path));
        return *p && (*p)->state == NODE_INFLIGHT_DIRTY;
}

size_t queue_queued(const Queue *q) {
        return q->queued;
}

size_t queue_inflight(const Queue *q) {
        return q->inflight;
}

size_t queue_coalesced(const Queue *q) {
        return q->coalesced;
}
