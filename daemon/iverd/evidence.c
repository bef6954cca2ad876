/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement list (write-ahead) and the in-order TPM extend queue. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "evidence.h"
#include "iver/imalog.h"
#include "iver/tpm.h"
#include "log.h"
#include "macro.h"
#include "manager.h"

#define EXTEND_BATCH 64
#define RECONNECT_USEC (2ULL * 1000000ULL)
#define STAGE_MAX 256
#define HEALTH_USEC (1ULL * 1000000ULL)
#define RELIST_USEC (5ULL * 1000000ULL)
#define KERNEL_IMA_LIST "/sys/kernel/security/ima/ascii_runtime_measurements"

struct Evidence {
        Manager *m;
        unsigned pcr;
        IverImaFile *file;
        IverImaLog *log;
        IverTpm *tpm;
        size_t extended;           /* entries of the list already in the PCR */
        bool desynced;             /* no prefix of the list matches the PCR */
        bool list_failing;         /* last append failed: nothing is extended that is not in the list */
        uint64_t list_failures, extend_failures, duplicates;
        int last_list_error;
        IverDigest expected;       /* what PCR pcr's sha256 bank should hold after `extended` entries */
        bool expected_valid;
        uint64_t resets_seen;
        sd_event_source *drain, *retry, *relist, *health;
        /* entries of this loop iteration, written with one fdatasync (evidence_flush) */
        IverImaEntry *staged[STAGE_MAX];
        size_t n_staged;
};

static int on_drain(sd_event_source *s, void *userdata);
static int on_health(sd_event_source *s, uint64_t usec, void *userdata);
static int on_relist(sd_event_source *s, uint64_t usec, void *userdata);

/* PCR 10 is kernel IMA's: take it only where the kernel keeps no list of its own. */
static int choose_pcr(int configured, unsigned *ret) {
        if (configured >= 0) {
                *ret = (unsigned) configured;
                return 0;
        }
        FILE *f = fopen(KERNEL_IMA_LIST, "re");
        if (f) {
                char line[256];
                bool has = fgets(line, sizeof(line), f) != NULL;
                fclose(f);
                if (has)
                        return log_error_errno(-EBUSY,
                                               "The kernel's IMA keeps a measurement list in PCR 10 (%s): "
                                               "configure Pcr= in iverd.conf or --pcr (e.g. 23 for tests, a free PCR otherwise)",
                                               KERNEL_IMA_LIST);
        }
        *ret = 10;
        return 0;
}

static void sync_with_pcr(Evidence *e) {
        unsigned banks = iver_tpm_banks(e->tpm);
        IverDigest values[_IVER_HASH_MAX];
        size_t n = 0, prefix = 0;
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b)) {
                        if (iver_tpm_pcr_read(e->tpm, e->pcr, (IverHashAlgo) b, &values[n]) < 0) {
                                log_warning("Cannot read PCR %u: %s", e->pcr, iver_tpm_last_error(e->tpm));
                                return;
                        }
                        n++;
                }
        int r = iver_imalog_match_prefix(e->log, e->pcr, values, n, &prefix);
        if (r < 0) {
                e->desynced = true;
                log_error("Measurement list and PCR %u are out of sync (no prefix of the %zu entries replays to it): "
                          "not extending; status reports 'desynced'",
                          e->pcr, iver_imalog_size(e->log));
                return;
        }
        e->desynced = false;
        e->extended = prefix;
        e->expected_valid = iver_imalog_replay(e->log, prefix, e->pcr, IVER_HASH_SHA256, &e->expected) >= 0;
        if (prefix < iver_imalog_size(e->log))
                log_notice("PCR %u holds %zu of %zu list entries: extending the rest", e->pcr, prefix,
                           iver_imalog_size(e->log));
}

static int try_connect(Evidence *e) {
        if (!e->tpm || iver_tpm_is_none(e->tpm) || iver_tpm_is_connected(e->tpm))
                return 0;
        int r = iver_tpm_connect(e->tpm);
        if (r < 0)
                return r;
        log_info("Connected to the TPM: banks 0x%x, PCR %u", iver_tpm_banks(e->tpm), e->pcr);
        sync_with_pcr(e);
        return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Evidence *e = userdata;
        if (try_connect(e) < 0) {
                (void) sd_event_source_set_time_relative(s, RECONNECT_USEC);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        (void) sd_event_source_set_enabled(e->drain, SD_EVENT_ONESHOT);
        return 0;
}

int evidence_new(Manager *m, const IverConf *conf, Evidence **ret) {
        Evidence *e = calloc(1, sizeof(*e));
        size_t truncated = 0;
        int r;

        if (!e)
                return -ENOMEM;
        e->m = m;
        r = choose_pcr(conf->pcr, &e->pcr);
        if (r < 0)
                goto fail;
        r = iver_imalog_file_open(conf->runtime_directory, &e->file, &e->log, &truncated);
        if (r < 0) {
                log_error_errno(r, "Cannot open the measurement list in %s: %m", conf->runtime_directory);
                goto fail;
        }
        if (truncated)
                log_warning("Measurement list ended in a torn record (%zu bytes, from a crash): cut back to the last complete entry",
                            truncated);
        r = iver_tpm_new(conf->tpm_tcti ?: "none", &e->tpm);
        if (r < 0) {
                log_error_errno(r, "Bad TPM setting '%s': %m", conf->tpm_tcti ?: "none");
                goto fail;
        }
        if ((r = sd_event_add_time_relative(m->event, &e->health, CLOCK_MONOTONIC, HEALTH_USEC, 0, on_health, e)) < 0 ||
            (r = sd_event_add_time_relative(m->event, &e->relist, CLOCK_MONOTONIC, RELIST_USEC, 0, on_relist, e)) < 0 ||
            (r = sd_event_add_defer(m->event, &e->drain, on_drain, e)) < 0 ||
            (r = sd_event_add_time_relative(m->event, &e->retry, CLOCK_MONOTONIC, RECONNECT_USEC, 0, on_retry, e)) < 0)
                goto fail;
        (void) sd_event_source_set_enabled(e->retry, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(e->relist, SD_EVENT_OFF);
        if (iver_tpm_is_none(e->tpm))
                log_notice("No TPM configured: measurements go to the list only");
        else if (try_connect(e) < 0) {
                log_warning("TPM %s not available (%s): measuring and listing anyway, extends wait", conf->tpm_tcti,
                            iver_tpm_last_error(e->tpm));
                (void) sd_event_source_set_enabled(e->retry, SD_EVENT_ONESHOT);
        }
        (void) sd_event_source_set_enabled(e->drain, SD_EVENT_ONESHOT);
        *ret = e;
        return 0;
fail:
        evidence_free(e);
        return r;
}

Evidence *evidence_free(Evidence *e) {
        if (!e)
                return NULL;
        (void) evidence_flush(e);
        sd_event_source_disable_unref(e->drain);
        sd_event_source_disable_unref(e->retry);
        sd_event_source_disable_unref(e->relist);
        sd_event_source_disable_unref(e->health);
        iver_tpm_free(e->tpm);
        iver_imalog_file_free(e->file);
        iver_imalog_free(e->log);
        free(e);
        return NULL;
}

bool evidence_pending(const Evidence *e) {
        return e->n_staged > 0 || (!iver_tpm_is_none(e->tpm) && iver_tpm_is_connected(e->tpm) && !e->desynced &&
               e->extended < iver_imalog_size(e->log));
}

static int extend_one(Evidence *e, const IverImaEntry *ent) {
        IverDigest d[_IVER_HASH_MAX];
        size_t n = 0;
        unsigned banks = iver_tpm_banks(e->tpm);
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b)) {
                        int r = iver_imalog_entry_bank_digest(ent, (IverHashAlgo) b, &d[n]);
                        if (r < 0)
                                return r;
                        n++;
                }
        return iver_tpm_extend(e->tpm, ent->pcr, d, n);
}

/* Keep the expected sha256 value of our PCR in step with the extends, so a
 * one-PCR read can tell whether the TPM was reset (or someone else extended
 * it) behind a live connection. */
static void advance_expected(Evidence *e, const IverImaEntry *ent) {
        IverDigest d;
        uint8_t buf[64];
        unsigned len = 0;
        if (!e->expected_valid || ent->pcr != e->pcr)
                return;
        if (iver_imalog_entry_bank_digest(ent, IVER_HASH_SHA256, &d) < 0 || d.len != 32) {
                e->expected_valid = false;
                return;
        }
        memcpy(buf, e->expected.bytes, 32);
        memcpy(buf + 32, d.bytes, 32);
        if (EVP_Digest(buf, sizeof(buf), e->expected.bytes, &len, EVP_sha256(), NULL) != 1)
                e->expected_valid = false;
}

/* Read our PCR; if it is not what the extends so far should give, find
 * again how far the PCR got (sync_with_pcr) and extend the rest. */
static void check_pcr(Evidence *e) {
        IverDigest now;
        if (iver_tpm_is_none(e->tpm) || !iver_tpm_is_connected(e->tpm) || e->desynced || !e->expected_valid ||
            !(iver_tpm_banks(e->tpm) & IVER_TPM_BANK(IVER_HASH_SHA256)))
                return;
        if (iver_tpm_pcr_read(e->tpm, e->pcr, IVER_HASH_SHA256, &now) < 0 || now.len != 32)
                return;
        if (memcmp(now.bytes, e->expected.bytes, 32) == 0)
                return;
        e->resets_seen++;
        log_warning("PCR %u does not hold what iverd extended (TPM reset, or another extender): resyncing", e->pcr);
        sync_with_pcr(e);
        (void) sd_event_source_set_enabled(e->drain, SD_EVENT_ONESHOT);
}

static int on_health(sd_event_source *s, uint64_t usec, void *userdata) {
        Evidence *e = userdata;
        check_pcr(e);
        (void) sd_event_source_set_time_relative(s, HEALTH_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int on_drain(sd_event_source *s, void *userdata) {
        Evidence *e = userdata;
        if (iver_tpm_is_none(e->tpm) || !iver_tpm_is_connected(e->tpm) || e->desynced)
                return 0;
        for (unsigned i = 0; i < EXTEND_BATCH && e->extended < iver_imalog_size(e->log); i++) {
                int r = extend_one(e, iver_imalog_get(e->log, e->extended));
                if (r < 0) {
                        e->extend_failures++;
                        log_warning("TPM extend failed (%s): reconnecting; %zu extends pending",
                                    iver_tpm_last_error(e->tpm), iver_imalog_size(e->log) - e->extended);
                        iver_tpm_disconnect(e->tpm);
                        (void) sd_event_source_set_time_relative(e->retry, RECONNECT_USEC);
                        (void) sd_event_source_set_enabled(e->retry, SD_EVENT_ONESHOT);
                        return 0;
                }
                advance_expected(e, iver_imalog_get(e->log, e->extended));
                e->extended++;
        }
        if (e->extended < iver_imalog_size(e->log))
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        else
                manager_maybe_settled(e->m);
        return 0;
}

static bool staged_contains(const Evidence *e, const IverImaEntry *ent) {
        for (size_t i = 0; i < e->n_staged; i++)
                if (e->staged[i]->pcr == ent->pcr && !ent->violation &&
                    memcmp(e->staged[i]->template_digest, ent->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE) == 0)
                        return true;
        return false;
}

/* While the list cannot be written, measured files are marked stale and a
 * periodic rescan brings them back, so nothing measured is lost from the
 * list once it is writable again. */
static int on_relist(sd_event_source *s, uint64_t usec, void *userdata) {
        Evidence *e = userdata;
        if (!e->list_failing)
                return 0;
        (void) manager_rescan(e->m);
        (void) sd_event_source_set_time_relative(s, RELIST_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

int evidence_flush(Evidence *e) {
        if (!e || e->n_staged == 0)
                return 0;
        /* write-ahead: on disk (one fdatasync for the batch) before any can reach the PCR */
        int r = iver_imalog_file_append_many(e->file, (const IverImaEntry *const *) e->staged, e->n_staged);
        if (r < 0) {
                e->list_failures += e->n_staged;
                e->last_list_error = r;
                if (!e->list_failing)
                        log_error_errno(r, "Cannot append to the measurement list: %m; not extending until it works again");
                e->list_failing = true;
                for (size_t i = 0; i < e->n_staged; i++) {
                        iver_check_invalidate(e->m->ctx, e->staged[i]->path);
                        iver_imalog_entry_free(e->staged[i]);
                }
                e->n_staged = 0;
                (void) sd_event_source_set_time_relative(e->relist, RELIST_USEC);
                (void) sd_event_source_set_enabled(e->relist, SD_EVENT_ONESHOT);
                return r;
        }
        if (e->list_failing) {
                /* The entries dropped while failing belong to files marked
                 * stale: look at them now. The relist timer rescans only while
                 * the list is failing, and a smaller batch that fits (a nearly
                 * full directory) clears list_failing before it fires. */
                log_notice("Measurement list writable again: re-checking what could not be listed");
                e->list_failing = false;
                (void) manager_rescan(e->m);
        }
        for (size_t i = 0; i < e->n_staged; i++)
                if (iver_imalog_push(e->log, e->staged[i]) < 0) {
                        /* on disk but not in memory: the restart path reads it back */
                        iver_imalog_entry_free(e->staged[i]);
                        log_error("Out of memory holding the measurement list; restart iverd to resync");
                }
        e->n_staged = 0;
        (void) sd_event_source_set_enabled(e->drain, SD_EVENT_ONESHOT);
        return 0;
}

int evidence_record(Evidence *e, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                    const uint8_t *sig, size_t sig_len) {
        IverImaEntry *ent = NULL;
        IverImaTemplate t = d && d->template_ >= 0 ? d->template_ : IVER_IMA_TEMPLATE_NG;
        unsigned pcr = d && d->pcr >= 0 ? (unsigned) d->pcr : e->pcr;
        int r = iver_imalog_entry_new(t, pcr, o->digest.algo, o->digest.bytes, o->digest.len, path, strlen(path),
                                      t == IVER_IMA_TEMPLATE_SIG ? sig : NULL, t == IVER_IMA_TEMPLATE_SIG ? sig_len : 0,
                                      0 /* kernel form of the name */, &ent);
        if (r < 0)
                return log_error_errno(r, "Cannot build a list entry for %s: %m", path);
        if (iver_imalog_contains(e->log, ent) || staged_contains(e, ent)) {
                e->duplicates++;
                iver_imalog_entry_free(ent);
                return 0;
        }
        if (e->n_staged == STAGE_MAX)
                (void) evidence_flush(e);
        e->staged[e->n_staged++] = ent;
        return 0;
}

int evidence_record_violation(Evidence *e, const char *path, const IverPolicyDecision *d, IverHashAlgo algo) {
        IverImaEntry *ent = NULL;
        IverImaTemplate t = d && d->template_ >= 0 ? d->template_ : IVER_IMA_TEMPLATE_NG;
        unsigned pcr = d && d->pcr >= 0 ? (unsigned) d->pcr : e->pcr;
        int r = iver_imalog_entry_new_violation(t, pcr, algo, path, strlen(path), 0 /* kernel form */, &ent);
        if (r < 0)
                return log_error_errno(r, "Cannot build a violation entry for %s: %m", path);
        /* never deduplicated: the kernel records every violation */
        if (e->n_staged == STAGE_MAX)
                (void) evidence_flush(e);
        e->staged[e->n_staged++] = ent;
        return 0;
}

void evidence_status(const Evidence *e, json_object *o) {
        if (!e)
                return;
        const char *tpm = iver_tpm_is_none(e->tpm)        ? "none"
                          : iver_tpm_is_connected(e->tpm) ? "connected"
                                                          : "unavailable";
        json_object_object_add(o, "tpm", json_object_new_string(tpm));
        if (!iver_tpm_is_none(e->tpm) && !iver_tpm_is_connected(e->tpm) && iver_tpm_last_error(e->tpm))
                json_object_object_add(o, "tpm_error", json_object_new_string(iver_tpm_last_error(e->tpm)));
        json_object_object_add(o, "pcr", json_object_new_int((int) e->pcr));
        json_object_object_add(o, "list_length", json_object_new_uint64(iver_imalog_size(e->log)));
        json_object_object_add(o, "pending_extends",
                               json_object_new_uint64(iver_tpm_is_none(e->tpm) ? 0 : iver_imalog_size(e->log) - e->extended));
        json_object_object_add(o, "desynced", json_object_new_boolean(e->desynced));
        json_object_object_add(o, "list_failing", json_object_new_boolean(e->list_failing));
        json_object_object_add(o, "list_failures", json_object_new_uint64(e->list_failures));
        json_object_object_add(o, "extend_failures", json_object_new_uint64(e->extend_failures));
        json_object_object_add(o, "pcr_resyncs", json_object_new_uint64(e->resets_seen));
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

static int list_binary(const Evidence *e, uint8_t **ret, size_t *ret_len) {
        size_t total = 0, n = iver_imalog_size(e->log);
        for (size_t i = 0; i < n; i++)
                total += iver_imalog_entry_binary_size(iver_imalog_get(e->log, i));
        uint8_t *buf = malloc(total + 1);
        if (!buf)
                return -ENOMEM;
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
                const IverImaEntry *ent = iver_imalog_get(e->log, i);
                size_t sz = iver_imalog_entry_binary_size(ent);
                int r = iver_imalog_entry_to_binary(ent, buf + off, sz);
                if (r < 0) {
                        free(buf);
                        return r;
                }
                off += sz;
        }
        *ret = buf;
        *ret_len = off;
        return 0;
}

int evidence_log(const Evidence *e, json_object *req, json_object *reply) {
        json_object *v;
        bool binary = json_object_object_get_ex(req, "format", &v) && json_object_is_type(v, json_type_string) &&
                      strcmp(json_object_get_string(v), "binary") == 0;
        if (binary) {
                _cleanup_free_ uint8_t *buf = NULL;
                size_t len;
                int r = list_binary(e, &buf, &len);
                if (r < 0)
                        return r;
                json_object_object_add(reply, "binary", base64(buf, len));
                return 0;
        }
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < iver_imalog_size(e->log); i++) {
                char *line = NULL;
                size_t len;
                if (iver_imalog_entry_to_ascii(iver_imalog_get(e->log, i), &line, &len) < 0)
                        continue;
                json_object_array_add(a, json_object_new_string_len(line, (int) len));
                free(line);
        }
        json_object_object_add(reply, "ascii", a);
        return 0;
}

void evidence_entries_for(const Evidence *e, const char *path, json_object *array) {
        for (size_t i = 0; i < iver_imalog_size(e->log); i++) {
                const IverImaEntry *ent = iver_imalog_get(e->log, i);
                char *line = NULL;
                size_t len;
                if (!iver_imalog_entry_names(ent, path, strlen(path)) || iver_imalog_entry_to_ascii(ent, &line, &len) < 0)
                        continue;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "index", json_object_new_uint64(i));
                json_object_object_add(o, "line", json_object_new_string_len(line, (int) (len && line[len - 1] == '\n' ? len - 1 : len)));
                json_object_object_add(o, "extended", json_object_new_boolean(i < e->extended));
                json_object_array_add(array, o);
                free(line);
        }
}

int evidence_quote(Evidence *e, json_object *req, json_object *reply, char **ret_error) {
        json_object *v;
        uint8_t nonce[64];
        size_t nonce_len;
        if (!json_object_object_get_ex(req, "nonce", &v) || !json_object_is_type(v, json_type_string) ||
            iver_hex_decode(json_object_get_string(v), strlen(json_object_get_string(v)), nonce, sizeof(nonce), &nonce_len) < 0 || nonce_len == 0) {
                *ret_error = strdup("nonce must be 1..64 bytes as hex");
                return -EINVAL;
        }
        if (iver_tpm_is_none(e->tpm) || !iver_tpm_is_connected(e->tpm)) {
                *ret_error = strdup(iver_tpm_is_none(e->tpm) ? "no TPM configured" : "TPM not available");
                return -ENODEV;
        }
        check_pcr(e);
        if (evidence_pending(e)) {
                *ret_error = strdup("the PCR is being brought up to date with the list (TPM reset?); settle and retry");
                return -EAGAIN;
        }
        unsigned banks = iver_tpm_banks(e->tpm) & (IVER_TPM_BANK(IVER_HASH_SHA1) | IVER_TPM_BANK(IVER_HASH_SHA256));
        _cleanup_(iver_tpm_quote_freep) IverTpmQuote *q = NULL;
        int r = iver_tpm_quote(e->tpm, 1u << e->pcr, banks, nonce, nonce_len, &q);
        if (r < 0) {
                *ret_error = strdup(iver_tpm_last_error(e->tpm) ?: "quote failed");
                return r;
        }
        _cleanup_free_ uint8_t *list = NULL;
        size_t list_len;
        r = list_binary(e, &list, &list_len);
        if (r < 0)
                return r;
        json_object_object_add(reply, "msg", base64(q->msg, q->msg_len));
        json_object_object_add(reply, "sig", base64(q->sig, q->sig_len));
        json_object_object_add(reply, "pcrs", base64(q->pcrs, q->pcrs_len));
        json_object_object_add(reply, "ak_pem", json_object_new_string_len(q->ak_pem, (int) q->ak_pem_len));
        json_object_object_add(reply, "selection", json_object_new_string(q->selection));
        json_object_object_add(reply, "list", base64(list, list_len));
        json_object_object_add(reply, "pcr", json_object_new_int((int) e->pcr));
        return 0;
}
