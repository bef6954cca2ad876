/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The log and quote verbs: the measurement list (as an fd on its file) and
 * quotes. The quote is made by the TPM thread (through evidence) and
 * answered later on the parked connection, never blocking the loop. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "evidence.h"
#include "macro.h"
#include "house.h"
#include "verbs-internal.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

static json_object *base64(const uint8_t *p, size_t len) {
        char *out = malloc(4 * ((len + 2) / 3) + 1);
        if (!out)
                return NULL;
        int n = EVP_EncodeBlock((unsigned char *) out, p, (int) len);
        json_object *s = json_object_new_string_len(out, n);
        free(out);
        return s;
}

/* The list goes to the client as a read-only fd on its file with the length
 * it has now (whole records; the list only grows): the daemon neither copies
 * nor decodes it, so a list of any length costs the loop nothing. */
json_object *verb_list_reply(House *m, json_object *o, int *ret_fd) {
        uint64_t bytes, entries;
        int r = evidence_list_open(m->evidence, ret_fd, &bytes, &entries);
        if (r < 0) {
                json_object_put(o);
                return reply_error("measurement list not readable: %s", strerror(-r));
        }
        ADD(o, "list_bytes", json_object_new_uint64(bytes));
        ADD(o, "list_entries", json_object_new_uint64(entries));
        return o;
}

/* log: {"list_bytes", "list_entries"} and the list's fd (iverctl decodes it). */
json_object *verb_log(House *m, Conn *c, json_object *req) {
        int fd = -1;
        if (!m->evidence)
                return reply_error("no measurement list");
        json_object *o = verb_list_reply(m, ok_reply(), &fd);
        if (fd < 0)
                return o;
        conn_reply_fd(c, o, fd);
        return NULL;
}

typedef struct QuoteReq {
        House *m;
        uint64_t conn;
} QuoteReq;

/* The TPM thread's answer (through evidence): the reply to the parked peer,
 * if it is still there. */
static void quote_done(void *userdata, const IverTpmQuote *q, const char *error) {
        _cleanup_free_ QuoteReq *qr = userdata;
        Conn *c = control_parked(qr->m->control, qr->conn);
        if (!c)
                return;
        if (!q) {
                conn_reply(c, reply_error("quote failed: %s", error ?: "?"));
                return;
        }
        json_object *o = ok_reply();
        ADD(o, "msg", base64(q->msg, q->msg_len));
        ADD(o, "sig", base64(q->sig, q->sig_len));
        ADD(o, "pcrs", base64(q->pcrs, q->pcrs_len));
        ADD(o, "ak_pem", json_object_new_string_len(q->ak_pem, (int) q->ak_pem_len));
        ADD(o, "selection", json_object_new_string(q->selection));
        ADD(o, "pcr", json_object_new_int((int) evidence_pcr(qr->m->evidence)));
        int fd = -1;
        o = verb_list_reply(qr->m, o, &fd);
        if (fd < 0)
                conn_reply(c, o);
        else
                conn_reply_fd(c, o, fd);
}

/* quote {"nonce": HEX, "banks": ["sha256", …] (optional: every bank iverd
 * extends)}: answered when the TPM thread has made it, never blocking the
 * loop; other clients are served meanwhile. */
json_object *verb_quote(House *m, Conn *c, json_object *req) {
        json_object *v;
        uint8_t nonce[64];
        size_t nonce_len;
        unsigned banks = 0;

        if (!m->evidence)
                return reply_error("quote failed: no measurement list");
        (void) json_object_object_get_ex(req, "nonce", &v); /* a string (request.c) */
        if (iver_hex_decode(json_object_get_string(v), strlen(json_object_get_string(v)), nonce, sizeof(nonce),
                            &nonce_len) < 0 ||
            nonce_len == 0)
                return reply_error("quote failed: nonce must be 1..64 bytes as hex");
        if (json_object_object_get_ex(req, "banks", &v)) {
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        const char *name = json_object_get_string(json_object_array_get_idx(v, i));
                        IverHashAlgo a = name ? iver_hash_algo_from_string(name) : _IVER_HASH_INVALID;
                        if (a < 0 || a == IVER_HASH_SM3)
                                return reply_error("quote failed: unknown bank '%s' (sha1, sha256, sha384, sha512)",
                                                   name ?: "");
                        banks |= IVER_TPM_BANK(a);
                }
        }
        QuoteReq *qr = calloc(1, sizeof(*qr));
        if (!qr)
                return reply_error("quote failed: out of memory");
        qr->m = m;
        /* the evidence answers within its 15 s quote timeout; the park outlives it */
        qr->conn = conn_park(c, 20ULL * 1000000ULL);
        const char *error = NULL;
        int r = qr->conn ? evidence_quote(m->evidence, nonce, nonce_len, banks, quote_done, qr, &error) : -ENOMEM;
        if (r < 0) {
                free(qr);
                return reply_error("quote failed: %s", error ?: strerror(-r));
        }
        return NULL;
}
