/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The loop side of the TPM thread: its state changes logged (the thread
 * never logs), quotes waited for and answered (with a timeout), status (the
 * per-path list entries are evidence-read.c's). Calls go one way: verbs.c → evidence →
 * tpm-thread.c; the thread answers through the eventfd watched here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"
#include "evidence-internal.h"
#include "log.h"
#include "macro.h"
#include "tpm-thread.h"
#include "thread.h"

#define QUOTE_TIMEOUT_USEC (15ULL * 1000000ULL)

void evidence_answer_quote(Evidence *e, QuoteWait *w, const IverTpmQuote *q, const char *error) {
        for (QuoteWait **p = &e->quotes; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        sd_event_source_disable_unref(w->timer);
        w->done(w->userdata, q, error);
        free(w);
}

/* The TPM thread changed something: log it (the thread never logs), answer
 * finished quotes, and let settle waiters look. */
int evidence_on_tpm(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Evidence *e = userdata;
        TpmThreadState st;

        tpm_thread_ack(e->tpm);
        tpm_thread_state(e->tpm, &st);
        if (st.connected && !e->last.connected)
                log_info("Connected to the TPM: banks 0x%x active, extending 0x%x, PCR %u; %zu of %zu list entries in the PCRs",
                         st.active_banks, st.banks, e->pcr, st.extended, st.queued);
        else if (!st.connected && e->last.connected)
                log_warning("TPM lost (%s): measuring and listing go on, %zu extends wait", st.error[0] ? st.error : "?",
                            st.queued - st.extended);
        if (st.desynced && !e->last.desynced)
                log_error("Measurement list and PCRs are out of sync (no prefix of the %zu entries replays to them): "
                          "not extending; status reports 'desynced'", st.queued);
        else if (!st.desynced && e->last.desynced && st.connected)
                log_notice("Measurement list and PCRs in sync again (%zu of %zu entries in the PCRs): extending", st.extended,
                           st.queued);
        if (st.resyncs > e->last.resyncs)
                log_warning("PCR %u does not hold what iverd extended (TPM reset, or another extender): resynced", e->pcr);
        if (st.unplaced && !e->last.unplaced) {
                e->broken = true;
                log_error("An extend of PCR %u cannot be placed among the kernel's IMA entries (another extender, or a "
                          "kernel entry its extend does not match): evidence marked broken, restart iverd after a reboot",
                          e->pcr);
                log_audit("evidence-broken", "an extend of the PCR shared with the kernel's IMA cannot be placed", false);
        }
        if (st.permanent_errors > e->last.permanent_errors && strcmp(st.permanent, e->last.permanent) != 0)
                log_error("The TPM refused a command for good (%s): %s; status reports tpm_error_permanent",
                          st.permanent,
                          st.extends_refused ? "not extending until it reconnects, entries stay pending"
                          : st.reads_refused ? "not reading the PCRs until it reconnects"
                          : "not retried");
        if (st.padded_banks != e->last.padded_banks && st.padded_banks) {
                char names[64] = "";
                size_t n = 0;
                for (int b = 0; b < _IVER_HASH_MAX; b++)
                        if ((st.padded_banks & IVER_TPM_BANK(b)) && n < sizeof(names))
                                n += (size_t) snprintf(names + n, sizeof(names) - n, " %s",
                                                       iver_hash_algo_to_string((IverHashAlgo) b));
                log_notice("PCR %u:%s hold the kernel's padded SHA-1 form (its IMA had no such hash when it started): "
                           "iverd extends its entries there alike, so every bank replays (SHA-1's strength only)",
                           e->pcr, names);
        }
        if (st.poisoned && !e->last.poisoned)
                log_error("Broken-evidence value extended into the PCRs: no quote verifies until iverd restarts with a fresh list");
        e->last = st;

        uint64_t tag;
        IverTpmQuote *q;
        int err;
        char msg[320];
        while (tpm_thread_take_quote(e->tpm, &tag, &q, &err, msg, sizeof(msg)) > 0) {
                QuoteWait *w = e->quotes;
                while (w && w->tag != tag)
                        w = w->next;
                if (w)
                        evidence_answer_quote(e, w, err < 0 ? NULL : q, err < 0 ? msg : NULL);
                iver_tpm_quote_free(q);
        }
        report_settled(e->reports);
        return 0;
}

static json_object *bank_names(unsigned banks) {
        json_object *a = json_object_new_array();
        for (int b = 0; b < _IVER_HASH_MAX; b++)
                if (banks & IVER_TPM_BANK(b))
                        json_object_array_add(a, json_object_new_string(iver_hash_algo_to_string((IverHashAlgo) b)));
        return a;
}

void evidence_status(const Evidence *e, json_object *o) {
        TpmThreadState st = {};
        if (!e)
                return;
        if (e->tpm)
                tpm_thread_state(e->tpm, &st);
        const char *tpm = !e->tpm ? "none" : st.connected ? "connected" : "unavailable";
        json_object_object_add(o, "tpm", json_object_new_string(tpm));
        if (e->tpm && !st.connected && st.error[0])
                json_object_object_add(o, "tpm_error", json_object_new_string(st.error));
        if (e->tpm) {
                json_object_object_add(o, "tpm_busy_ms", json_object_new_uint64(st.busy ? st.busy_usec / 1000 : 0));
                json_object_object_add(o, "tpm_commands", json_object_new_uint64(st.commands));
                json_object_object_add(o, "tpm_connects", json_object_new_uint64(st.connects));
                json_object_object_add(o, "tpm_retries", json_object_new_uint64(st.retries));
                json_object_object_add(o, "tpm_permanent_errors", json_object_new_uint64(st.permanent_errors));
                if (st.permanent[0])
                        json_object_object_add(o, "tpm_error_permanent", json_object_new_string(st.permanent));
                json_object_object_add(o, "tpm_extends_refused", json_object_new_boolean(st.extends_refused));
                json_object_object_add(o, "banks", bank_names(st.banks));
                if (e->shared)
                        json_object_object_add(o, "banks_padded", bank_names(st.padded_banks));
        }
        json_object_object_add(o, "pcr", json_object_new_int((int) e->pcr));
        json_object_object_add(o, "pcr_shared_with_kernel", json_object_new_boolean(e->shared || e->kernel_entries > 0));
        json_object_object_add(o, "kernel_entries", json_object_new_uint64(e->shared ? st.kernel_served : e->kernel_entries));
        size_t n = iver_imalog_file_count(e->file);
        /* shared: the served list; iverd's own entries wait in the journal */
        json_object_object_add(o, "list_length", json_object_new_uint64(e->shared ? st.served_entries : n));
        json_object_object_add(o, "list_bytes",
                               json_object_new_uint64(e->shared ? st.served_bytes : iver_imalog_file_size(e->file)));
        if (e->shared)
                json_object_object_add(o, "journal_length", json_object_new_uint64(n));
        json_object_object_add(o, "list_index_bytes", json_object_new_uint64(iver_imalog_file_memory(e->file)));
        json_object_object_add(o, "pending_extends", json_object_new_uint64(!e->tpm || st.extended > n ? 0 : n - st.extended));
        json_object_object_add(o, "staged_entries", json_object_new_uint64(e->n_staged));
        json_object_object_add(o, "list_commits", json_object_new_uint64(e->commits));
        json_object_object_add(o, "list_syncs", json_object_new_uint64(e->syncs));
        json_object_object_add(o, "desynced", json_object_new_boolean(st.desynced));
        json_object_object_add(o, "list_failing", json_object_new_boolean(e->list_failing));
        json_object_object_add(o, "list_failures", json_object_new_uint64(e->list_failures));
        json_object_object_add(o, "evidence_broken", json_object_new_boolean(e->broken));
        evidence_reserve_status(e, o);
        json_object_object_add(o, "extend_failures", json_object_new_uint64(st.extend_failures));
        json_object_object_add(o, "pcr_resyncs", json_object_new_uint64(st.resyncs));
        json_object_object_add(o, "rate_limited_versions", json_object_new_uint64(e->rate_limited));
        json_object_object_add(o, "rate_limited_files", json_object_new_uint64(churn_limited(e->churn, now_usec())));
        json_object_object_add(o, "budget_limited_owners", json_object_new_uint64(budget_limited(e->budget)));
        json_object_object_add(o, "budget_unlisted", json_object_new_uint64(budget_suppressed(e->budget)));
        evidence_gap_status(e, o);
}

unsigned evidence_pcr(const Evidence *e) {
        return e->pcr;
}

static int on_quote_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        QuoteWait *w = userdata;
        Evidence *e = w->e;
        TpmThreadState st;
        char msg[256];

        tpm_thread_state(e->tpm, &st);
        tpm_thread_cancel_quote(e->tpm, w->tag);
        if (st.busy)
                snprintf(msg, sizeof(msg), "TPM busy: no answer within %llu s (a TPM command outstanding for %llu ms)",
                         (unsigned long long) (QUOTE_TIMEOUT_USEC / 1000000ULL),
                         (unsigned long long) (st.busy_usec / 1000));
        else
                snprintf(msg, sizeof(msg), "TPM busy: no answer within %llu s",
                         (unsigned long long) (QUOTE_TIMEOUT_USEC / 1000000ULL));
        evidence_answer_quote(e, w, NULL, msg);
        return 0;
}

int evidence_quote(Evidence *e, const uint8_t *nonce, size_t nonce_len, unsigned bank_mask, EvidenceQuoteDone done,
                   void *userdata, const char **ret_error) {
        TpmThreadState st;
        int r;

        if (!e->tpm) {
                *ret_error = "no TPM configured";
                return -ENODEV;
        }
        tpm_thread_state(e->tpm, &st);
        if (!st.connected) {
                *ret_error = "TPM unavailable";
                return -ENXIO;
        }
        if (bank_mask & ~st.banks) {
                *ret_error = "a requested bank is not one iverd extends (see Banks= and `iverctl status`)";
                return -EINVAL;
        }
        QuoteWait *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->e = e;
        w->tag = ++e->next_tag;
        w->done = done;
        w->userdata = userdata;
        r = sd_event_add_time_relative(e->event, &w->timer, CLOCK_MONOTONIC, QUOTE_TIMEOUT_USEC, 0, on_quote_timeout, w);
        if (r >= 0) {
                (void) sd_event_source_set_description(w->timer, "quote-timeout");
                r = tpm_thread_quote(e->tpm, w->tag, bank_mask, nonce, nonce_len);
        }
        if (r < 0) {
                sd_event_source_disable_unref(w->timer);
                free(w);
                *ret_error = r == -EBUSY ? "TPM busy: too many quotes waiting" : NULL;
                return r;
        }
        w->next = e->quotes;
        e->quotes = w;
        return 0;
}
