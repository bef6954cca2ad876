/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stdbool.h>

#include "iver/check.h"
#include "conf.h"
#include "iver/imalog.h"
#include "iver/policy.h"
#include "iver/tpm.h"

#include <systemd/sd-event.h>

#include "report.h"

typedef struct Evidence Evidence;

/* The measurement list (write-ahead, in the runtime directory) and its extend
 * cursor, on the event loop; the TPM calls run on the TPM thread
 * (tpm-thread.h). Entries are written (group commit: one fdatasync per 25 ms
 * or 1,000 entries) before they are extended; extends run in list order. */
int evidence_new(sd_event *event, const Reports *reports, const IverConf *conf, Evidence **ret);
/* The initial measurement is done: from now on the churn limit applies to
 * background listings (a use is never limited). */
void evidence_scan_done(Evidence *e);
Evidence *evidence_free(Evidence *e);
/* A new measurement of path: stage a list entry (dedup by template digest);
 * evidence_flush() writes it ahead of its extend. Returns 1 when a new entry
 * was staged, 0 when none was (already listed, or held back by the churn
 * limit of its inode, which a use never is), -errno. */
int evidence_record(Evidence *e, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                    const uint8_t *sig, size_t sig_len, bool use);
/* A violation entry for path, as kernel IMA's ima_add_violation() writes it
 * (open_writers, ToMToU, executed before measured…): an all-zero template
 * digest in the list, all-0xFF extended into every bank. Never deduplicated.
 * The cause goes to the journal and audit (the caller's log_violation()), not
 * into the entry, as in the kernel. d: the deciding measure rule (pcr=,
 * template=), or NULL; algo: the d-ng algorithm name recorded. */
int evidence_record_violation(Evidence *e, const char *path, const IverPolicyDecision *d, IverHashAlgo algo);
/* A file that kept changing through the hash of its last re-check (it has
 * no digest, and the list's last entry for it, if any, is of an older
 * version): a violation entry, journal and audit message, under its owner's
 * budget as a change's entry is. Returns 1 when an entry was staged (this
 * one, or the one saying the budget ran dry), 0 when the budget held it
 * back, -errno. */
int evidence_record_unstable(Evidence *e, const char *path, uint32_t owner, const IverPolicyDecision *d,
                             IverHashAlgo algo);
/* The restart gap (evidence-gap.c): when the list existed before this run
 * (a restart or crash in this boot), list one violation entry
 * "iverd-gap:<start>-<end>" and write it, before any other entry of the run;
 * journal and audit get one violation message with its length. start is the
 * later of the list's mtime and snapshot_sec (the restored snapshot's mtime,
 * -1 if none). Nothing on a fresh list. Call once, before the loop runs. */
int evidence_record_gap(Evidence *e, int64_t snapshot_sec, IverHashAlgo algo);
/* Touch the list file: its mtime says when this run was last known to
 * watch (the next run's gap starts there). Periodically and at stop. */
void evidence_mark_alive(Evidence *e);
/* Have what evidence_record() staged written soon: at once when 1,000 are
 * staged, else within 25 ms of the first (one write and one fdatasync for the
 * group); then the entries join the list and may be extended. A file with
 * more than 32 new versions a minute is rate limited (churn.h): recorded
 * once as a violation, re-checked after a backoff. */
int evidence_flush(Evidence *e);
/* Write what is staged now, without waiting for the group (a use waits for
 * its entry, a violation must not wait for the next measurement). */
int evidence_commit(Evidence *e);
/* Whether entries wait for their commit, extends for the TPM (connected
 * and in sync), or a churn-limited file for its re-check. */
bool evidence_pending(const Evidence *e);
/* status fields: tpm, pcr, banks, list_length, pending_extends,
 * evidence_broken… (never waits for the TPM) */
void evidence_status(const Evidence *e, json_object *o);
unsigned evidence_pcr(const Evidence *e);
/* The binary list file's fd (its identity binds the cache snapshot). */
int evidence_list_fd(const Evidence *e);
/* evidence-read.c: the list as written, read back from its file (the log,
 * quote and explain verbs). A new read-only fd on the binary list for a
 * client, with the bytes and entries written so far (whole records): */
int evidence_list_open(const Evidence *e, int *ret_fd, uint64_t *ret_bytes, uint64_t *ret_entries);
/* How many of the served list's entries the PCRs hold; -ENODEV without a TPM. */
int evidence_list_extended(const Evidence *e, uint64_t *ret);
/* A quote over every PCR the list uses in the banks of bank_mask
 * (IVER_TPM_BANK mask, 0: every bank iverd extends), made by the TPM thread.
 * 0: done(userdata, quote, NULL) or done(userdata, NULL, error) is called
 * later from the loop (within 15 s: "TPM busy" on timeout; also when iverd
 * stops). < 0: refused now, *ret_error says why if not NULL ("TPM
 * unavailable", "no TPM configured"). */
typedef void (*EvidenceQuoteDone)(void *userdata, const IverTpmQuote *quote, const char *error);
int evidence_quote(Evidence *e, const uint8_t *nonce, size_t nonce_len, unsigned bank_mask, EvidenceQuoteDone done,
                   void *userdata, const char **ret_error);
