/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <json-c/json.h>
#include <stdbool.h>

#include "iver/check.h"
#include "iver/conf.h"
#include "iver/policy.h"

typedef struct Manager Manager;
typedef struct Evidence Evidence;

/* The measurement list (write-ahead, in the runtime directory) and the TPM
 * extend queue. Entries are appended and flushed before they are extended;
 * extends drain in list order and never block the loop for long. */
int evidence_new(Manager *m, const IverConf *conf, Evidence **ret);
Evidence *evidence_free(Evidence *e);
/* A new measurement of path: stage a list entry (dedup by template digest);
 * evidence_flush() writes it ahead of its extend. */
int evidence_record(Evidence *e, const char *path, const IverCheckOutcome *o, const IverPolicyDecision *d,
                    const uint8_t *sig, size_t sig_len);
/* A violation entry for path, as kernel IMA's ima_add_violation() writes it
 * (open_writers, ToMToU, executed before measured…): an all-zero template
 * digest in the list, all-0xFF extended into every bank. Never deduplicated.
 * The cause goes to the journal and audit (the caller's log_violation()), not
 * into the entry, as in the kernel. d: the deciding measure rule (pcr=,
 * template=), or NULL; algo: the d-ng algorithm name recorded. */
int evidence_record_violation(Evidence *e, const char *path, const IverPolicyDecision *d, IverHashAlgo algo);
/* Write what evidence_record() staged: one write and one fdatasync for the
 * batch, then the entries join the list and may be extended. */
int evidence_flush(Evidence *e);
/* Whether extends are still waiting for the TPM. */
bool evidence_pending(const Evidence *e);
/* status fields: tpm, pcr, list_length, pending_extends… */
void evidence_status(const Evidence *e, json_object *o);
/* log verb: the list in ascii or base64 binary. */
int evidence_log(const Evidence *e, json_object *req, json_object *reply);
/* The list entries recorded for path (ASCII lines), appended to array. */
void evidence_entries_for(const Evidence *e, const char *path, json_object *array);
/* quote verb: nonce + out dir → quote files. */
int evidence_quote(Evidence *e, json_object *req, json_object *reply, char **ret_error);
