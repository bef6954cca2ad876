/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The list's room on the runtime directory's filesystem. Anyone else who
 * fills it (another daemon, a user with a writable directory on the same
 * tmpfs) would make the next list write fail, and a list that misses an
 * extended entry no longer replays: the evidence of the boot ends. So each
 * list file keeps space allocated ahead of its end (lib/imalog-file.c,
 * fallocate FALLOC_FL_KEEP_SIZE): when the filesystem refuses more, the list
 * goes on in what is reserved, the journal says so once, and status shows
 * it; only a used-up reservation breaks the evidence (evidence.c).
 * This file decides the size, logs and reports; it owns no list. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "evidence-internal.h"
#include "log.h"
#include "thread.h"

#define RESERVE_DEFAULT (4ULL << 20)            /* each file: ~28,000 entries of ~150 B */
#define WARN_INTERVAL_USEC (60ULL * 1000000ULL)

/* IVERD_TEST_LIST_RESERVE: bytes, 0 for none (a test shows the failure mode) */
static uint64_t reserve_bytes(void) {
        const char *t = getenv("IVERD_TEST_LIST_RESERVE");
        return t && *t ? strtoull(t, NULL, 10) : RESERVE_DEFAULT;
}

/* The journal hears of a change of state: once, not per commit. */
static void note_state(Evidence *e, int r, uint64_t ahead) {
        if (r == e->reserve_error)
                return;
        if (r == -EOPNOTSUPP)
                log_notice("The filesystem of %s cannot reserve space (fallocate): the measurement list goes on without a "
                           "reservation, and a full runtime directory ends the boot's evidence", e->list_dir);
        else if (r < 0) {
                /* a writer who fills and frees in a loop gets a line a minute */
                uint64_t now = now_usec();
                e->reserve_logged = e->reserve_warned_usec == 0 || now - e->reserve_warned_usec >= WARN_INTERVAL_USEC;
                if (e->reserve_logged) {
                        log_warning_errno(r, "Cannot extend the measurement list's reservation in %s: %m; the list goes on "
                                             "in the %" PRIu64 " bytes still reserved, and the evidence breaks when they are "
                                             "used up: free space there", e->list_dir, ahead);
                        e->reserve_warned_usec = now;
                }
        } else if (e->reserve_error < 0 && e->reserve_logged)
                log_notice("The measurement list's reservation in %s is whole again (%" PRIu64 " bytes ahead)", e->list_dir,
                           ahead);
        e->reserve_error = r;
}

int evidence_reserve_open(Evidence *e, IverImaFile *f, const char *dir) {
        uint64_t ahead = 0;
        int r;

        if (!f)
                return 0;
        if (f == e->file && !(e->list_dir = strdup(dir)))
                return -ENOMEM;
        e->reserve_target = reserve_bytes();
        r = iver_imalog_file_reserve(f, e->reserve_target);
        (void) iver_imalog_file_reserve_state(f, &ahead);
        if (f == e->file)
                note_state(e, r, ahead);
        else if (r < 0 && r != -EOPNOTSUPP)
                /* the served list: the TPM thread's from now on, this is the last word of it here */
                log_warning_errno(r, "Cannot reserve space for the served measurement list in %s: %m", dir);
        return 0;
}

void evidence_reserve_check(Evidence *e) {
        uint64_t ahead = 0;
        int r = iver_imalog_file_reserve_state(e->file, &ahead);
        note_state(e, r, ahead);
}

void evidence_reserve_status(const Evidence *e, json_object *o) {
        uint64_t ahead = 0;
        int r = iver_imalog_file_reserve_state(e->file, &ahead);
        json_object_object_add(o, "list_reserve_target_bytes", json_object_new_uint64(e->reserve_target));
        json_object_object_add(o, "list_reserved_bytes", json_object_new_uint64(ahead));
        json_object_object_add(o, "list_reserve_short", json_object_new_boolean(r < 0 && r != -EOPNOTSUPP));
        json_object_object_add(o, "list_reserve_supported", json_object_new_boolean(r != -EOPNOTSUPP));
}
