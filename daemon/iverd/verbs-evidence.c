/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The log and quote verbs: the measurement list and quotes as JSON. The
 * quote is made by the TPM thread (through evidence) and answered later on
 * the parked connection, never blocking the loop. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "evidence.h"
#include "macro.h"
#include "manager.h"
#include "verbs-evidence.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

static json_object *ok_reply(void) {
        json_object *o = json_object_new_object();
        ADD(o, "ok", json_object_new_boolean(1));
        return o;
}

static json_object *base64(const uint8_t *p, size_t len) {
        char *out = malloc(4 * ((len + 2) / 3) + 1);
        if (!out)
                return NULL;
        int n = EVP_EncodeBlock((unsigned char *) out, p, (int) len);
        json_object *s = json_object_new_string_len(out, n);
        free(out);
        return s;
}

static int add_line(size_t i, const IverImaEntry *ent, void *userdata) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r = iver_imalog_entry_to_ascii(ent, &line, &len);
        if (r < 0)
                return r;
        json_object_array_add(userdata, json_object_new_string_len(line, (int) len));
        return 0;
}

json_object *verb_log(Manager *m, Conn *c, json_object *req) {
        json_object *v, *o;
        int r;

        if (!m->evidence)
                return reply_error("no measurement list");
        bool binary = json_object_object_get_ex(req, "format", &v) && json_object_is_type(v, json_type_string) &&
                      strcmp(json_object_get_string(v), "binary") == 0;
        if (binary) {
                _cleanup_free_ uint8_t *buf = NULL;
                size_t len;
                r = evidence_list_binary(m->evidence, &buf, &len);
                if (r < 0)
                        return reply_error("no measurement list: %s", strerror(-r));
                o = ok_reply();
                ADD(o, "binary", base64(buf, len));
                return o;
        }
        json_object *a = json_object_new_array();
        r = evidence_list_foreach(m->evidence, add_line, a);
        if (r < 0) {
                json_object_put(a);
                return reply_error("measurement list not readable: %s", strerror(-r));
        }
        o = ok_reply();
        ADD(o, "ascii", a);
        return o;
}

typedef struct QuoteReq {
        Manager *m;
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
        _cleanup_free_ uint8_t *list = NULL;
        size_t list_len;
        int r = evidence_list_binary(qr->m->evidence, &list, &list_len);
        if (r < 0) {
                conn_reply(c, reply_error("quote failed: %s", strerror(-r)));
                return;
        }
        json_object *o = ok_reply();
        ADD(o, "msg", base64(q->msg, q->msg_len));
        ADD(o, "sig", base64(q->sig, q->sig_len));
        ADD(o, "pcrs", base64(q->pcrs, q->pcrs_len));
        ADD(o, "ak_pem", json_object_new_string_len(q->ak_pem, (int) q->ak_pem_len));
        ADD(o, "selection", json_object_new_string(q->selection));
        ADD(o, "list", base64(list, list_len));
        ADD(o, "pcr", json_object_new_int((int) evidence_pcr(qr->m->evidence)));
        conn_reply(c, o);
}

/* quote {"nonce": HEX, "banks": ["sha256", …] (optional: every bank iverd
 * extends)}: answered when the TPM thread has made it, never blocking the
 * loop; other clients are served meanwhile. */
json_object *verb_quote(Manager *m, Conn *c, json_object *req) {
        json_object *v;
        uint8_t nonce[64];
        size_t nonce_len;
        unsigned banks = 0;

        if (!m->evidence)
                return reply_error("quote failed: no measurement list");
        if (!json_object_object_get_ex(req, "nonce", &v) || !json_object_is_type(v, json_type_string) ||
            iver_hex_decode(json_object_get_string(v), strlen(json_object_get_string(v)), nonce, sizeof(nonce),
                            &nonce_len) < 0 ||
            nonce_len == 0)
                return reply_error("quote failed: nonce must be 1..64 bytes as hex");
        if (json_object_object_get_ex(req, "banks", &v)) {
                if (!json_object_is_type(v, json_type_array))
                        return reply_error("quote failed: \"banks\" must be an array of bank names");
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
