/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The restart gap. Kernel IMA cannot be stopped; iverd can: what ran while
 * it was stopped left nothing in the list. When iverd starts on a list that
 * already exists in the runtime directory (a restart or a crash in this
 * boot: open_lists() in evidence.c found the file before opening it), the
 * first entry of the new run is a violation named iverd-gap:<start>-<end>
 * (lib/imalog-gap.c), as ima_add_violation() writes one: zero template
 * digest, all-0xFF extended. A fresh list gets none.
 *
 * <start> is the last moment the previous run is known to have watched: the
 * later of the list file's mtime (every write of an entry sets it, and a
 * running iverd touches it every minute and when its loop ends,
 * evidence_mark_alive) and the restored snapshot's mtime (persist.c). Both
 * were read before this run wrote anything. A time later than now (the
 * clock was set back) is not trusted: <start> is "unknown". */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "evidence-internal.h"
#include "log.h"

void evidence_mark_alive(Evidence *e) {
        if (e && e->file && !e->broken)
                (void) futimens(iver_imalog_file_fd(e->file), NULL);
}

int evidence_record_gap(Evidence *e, int64_t snapshot_sec, IverHashAlgo algo) {
        char name[IVER_IMA_GAP_NAME_MAX], why[256];
        struct timespec now;

        if (!e->continued)
                return 0;
        (void) clock_gettime(CLOCK_REALTIME, &now);
        /* whole seconds, rounded outwards: the span covers the gap */
        int64_t end = (int64_t) now.tv_sec + (now.tv_nsec > 0);
        int64_t start = e->list_mtime_sec > snapshot_sec ? e->list_mtime_sec : snapshot_sec;
        if (start > end)
                start = -1;
        int r = iver_imalog_gap_name(start, end, name);
        if (r < 0)
                return log_error_errno(r, "Cannot name the restart gap (clock at %lld): %m", (long long) end);
        e->gap_start_sec = start;
        e->gap_end_sec = end;
        if (start >= 0)
                snprintf(why, sizeof(why),
                         "restart gap: iverd was not watching for %lld s (since %lld, the list's last write or "
                         "heartbeat); what ran meanwhile is not in the list",
                         (long long) (end - start), (long long) start);
        else
                snprintf(why, sizeof(why),
                         "restart gap: iverd was not watching for an unknown time (nothing durable records when it "
                         "stopped); what ran meanwhile is not in the list");
        log_violation(name, why);
        r = evidence_record_violation(e, name, NULL, algo);
        if (r < 0)
                return r;
        /* first in the new run's list: written before the loop hands out
         * anything. A failed write has marked the evidence broken (and said
         * so): the run goes on as with any entry that cannot be written. */
        (void) evidence_commit(e);
        return 0;
}

void evidence_gap_status(const Evidence *e, json_object *o) {
        if (!e->continued) {
                json_object_object_add(o, "gap_at_start_sec", json_object_new_int64(0));
                return;
        }
        json_object_object_add(o, "gap_at_start_sec",
                               e->gap_start_sec < 0 ? NULL : json_object_new_int64(e->gap_end_sec - e->gap_start_sec));
        json_object_object_add(o, "gap_at_start_since", e->gap_start_sec < 0 ? json_object_new_string("unknown")
                                                                             : json_object_new_int64(e->gap_start_sec));
}
