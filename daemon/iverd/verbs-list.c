/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The list verb: the cache's files as one JSON reply, made a chunk at a time
 * as the client reads it (control.c's conn_reply_stream). A cache of a
 * million files used to be built as a million json-c objects on the loop and
 * held until the peer read it; now a listing costs one chunk and one
 * rendered entry, however large the cache and however slow the peer.
 *
 * The listing is not a snapshot: between chunks the loop goes on, and a file
 * measured, removed or renamed meanwhile may show its newer state, or (a
 * removal moves the cache's last entry into the gap) be left out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "macro.h"
#include "house.h"
#include "verbs-internal.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))
/* Entries looked at per chunk once it holds something: a prefix that matches
 * little does not make one chunk scan the whole cache. */
#define SCAN_BUDGET 8192U

static const char head[] = "{\"ok\":true,\"files\":[", tail[] = "]}\n";

typedef struct ListStream {
        House *m;
        char *prefix;
        size_t plen;
        bool only_violations;
        enum { HEAD, BODY, TAIL, DONE } part;
        uint32_t next;          /* cache index */
        bool any;               /* an entry was sent: the next needs a comma */
        char *pending;          /* the entry being sent, from pending_off on */
        size_t pending_len, pending_off;
} ListStream;

static void list_stream_free(void *p) {
        ListStream *st = p;
        free(st->prefix);
        free(st->pending);
        free(st);
}

/* Entry idx as JSON in st->pending (with its leading comma): 1, or 0 when the
 * filter leaves it out, -ENOMEM. */
static int render(ListStream *st, IverCache *cache, uint32_t idx) {
        char hex[2 * IVER_DIGEST_MAX + 1], p[IVER_CACHE_PATH_MAX];
        size_t len = iver_cache_path(cache, idx, p, sizeof(p));
        if (len < st->plen || memcmp(p, st->prefix, st->plen) != 0)
                return 0;
        IverEntry e;
        iver_cache_get(cache, idx, &e);
        bool violation = e.flags & (IVER_ENTRY_VIOLATION | IVER_ENTRY_UNSTABLE);
        if (st->only_violations && !violation)
                return 0;
        json_object *r = json_object_new_object();
        ADD(r, "path", json_object_new_string_len(p, (int) len));
        ADD(r, "violation", json_object_new_boolean(violation));
        if (e.flags & IVER_ENTRY_MEASURED) {
                char d[2 * IVER_DIGEST_MAX + 16];
                snprintf(d, sizeof(d), "%s:%s", iver_hash_algo_to_string(e.digest.algo), iver_digest_to_hex(&e.digest, hex));
                ADD(r, "digest", json_object_new_string(d));
        }
        const char *state = e.flags & IVER_ENTRY_UNSTABLE      ? "unstable"
                            : e.flags & IVER_ENTRY_PROVISIONAL ? "provisional"
                            : e.flags & IVER_ENTRY_RACY        ? "racy"
                            : e.flags & IVER_ENTRY_STALE       ? "stale"
                                                               : "measured";
        ADD(r, "state", json_object_new_string(state));
        ADD(r, "size", json_object_new_uint64(e.size));
        const char *s = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN);
        size_t n = s ? strlen(s) : 0;
        st->pending = n ? malloc(n + 1) : NULL;
        if (st->pending) {
                st->pending[0] = ',';
                memcpy(st->pending + 1, s, n);
                st->pending_off = st->any ? 0 : 1;
                st->pending_len = n + 1;
                st->any = true;
        }
        json_object_put(r);
        return st->pending ? 1 : -ENOMEM;
}

static size_t put(char *buf, size_t cap, size_t n, const char *s, size_t len) {
        size_t k = MIN(len, cap - n);
        memcpy(buf + n, s, k);
        return k;
}

static ssize_t list_fill(void *p, char *buf, size_t cap) {
        ListStream *st = p;
        IverCache *cache = iver_context_cache(st->m->ctx);
        size_t n = 0;
        unsigned looked = 0;

        if (st->part == HEAD) {
                n += put(buf, cap, n, head, sizeof(head) - 1);
                st->part = BODY;
        }
        while (st->part == BODY && n < cap) {
                if (st->pending) {
                        size_t k = put(buf, cap, n, st->pending + st->pending_off, st->pending_len - st->pending_off);
                        n += k;
                        st->pending_off += k;
                        if (st->pending_off < st->pending_len)
                                break;
                        free(st->pending);
                        st->pending = NULL;
                        continue;
                }
                if (looked >= SCAN_BUDGET) {
                        /* nothing matched yet: JSON allows a space between
                         * array elements, and the loop goes on meanwhile */
                        if (n == 0)
                                buf[n++] = ' ';
                        break;
                }
                if (st->next >= iver_cache_size(cache)) {
                        st->part = TAIL;
                        break;
                }
                looked++;
                if (render(st, cache, st->next++) < 0)
                        return -1;
        }
        if (st->part == TAIL && cap - n >= sizeof(tail) - 1) {
                n += put(buf, cap, n, tail, sizeof(tail) - 1);
                st->part = DONE;
        }
        return (ssize_t) n;
}

json_object *verb_list(House *m, Conn *c, json_object *req) {
        json_object *v;
        ListStream *st = calloc(1, sizeof(*st));
        const char *prefix = json_object_object_get_ex(req, "prefix", &v) ? json_object_get_string(v) : "";
        if (!st || !(st->prefix = strdup(prefix ?: ""))) {
                free(st);
                return reply_error("out of memory");
        }
        st->m = m;
        st->plen = strlen(st->prefix);
        st->only_violations = json_object_object_get_ex(req, "violations", &v) && json_object_get_boolean(v);
        conn_reply_stream(c, list_fill, st, list_stream_free);
        return NULL;
}
