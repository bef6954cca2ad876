/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The column "metadata-only attested" of the operation matrix (issue 15):
 * the same operation on a second fresh file, checked by a context with the
 * write-attestation hook fed by a real fanotify group (FAN_REPORT_FID
 * filesystem mark; a write or close-write event sets IVER_ENTRY_WRITTEN on
 * the inode's entry, a close-write also IVER_ENTRY_STALE, as iverd's fstrack
 * does). Every metadata operation must then be a metadata-only hit (nothing
 * hashed), every content operation a re-hash, and the digest on record must
 * equal the independent SHA-256. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fsops.h"

static IverContext *actx;     /* with the attestation hook */
static int fan_fd = -1, mnt_fd = -1;
static uint32_t fan_dev;
/* Apply queued fanotify write events to actx's cache entries. */
static void fan_drain(void) {
        char buf[16384] __attribute__((aligned(8)));
        ssize_t n;
        while (fan_fd >= 0 && (n = read(fan_fd, buf, sizeof buf)) > 0) {
                /* FID records make event_len a multiple of 4, not 8: read each
                 * event from an aligned copy */
                for (size_t off = 0; off + FAN_EVENT_METADATA_LEN <= (size_t) n;) {
                        uint32_t len;
                        memcpy(&len, buf + off + offsetof(struct fanotify_event_metadata, event_len), sizeof(len));
                        if (len < FAN_EVENT_METADATA_LEN || len > (size_t) n - off)
                                break;
                        char ev[4096] __attribute__((aligned(8)));
                        const struct fanotify_event_metadata *md = (const void *) ev;
                        memcpy(ev, buf + off, len < sizeof(ev) ? len : sizeof(ev));
                        off += len;
                        if (len > sizeof(ev) || !(md->mask & (FAN_MODIFY | FAN_CLOSE_WRITE)))
                                continue;
                        const char *p = (const char *) md + md->metadata_len, *end = (const char *) md + md->event_len;
                        while (p < end) {
                                const struct fanotify_event_info_header *h = (const void *) p;
                                if (h->len == 0)
                                        break;
                                if (h->info_type == FAN_EVENT_INFO_TYPE_FID) {
                                        struct fanotify_event_info_fid *fi = (void *) p;
                                        int fd = open_by_handle_at(mnt_fd, (struct file_handle *) fi->handle, O_PATH | O_CLOEXEC);
                                        struct stat st;
                                        if (fd >= 0 && fstat(fd, &st) == 0) {
                                                IverCache *c = iver_context_cache(actx);
                                                uint32_t dev = (major(st.st_dev) << 20) | minor(st.st_dev);
                                                uint32_t idx = iver_cache_find_inode(c, dev, st.st_ino);
                                                if (idx != IVER_CACHE_NONE)
                                                        iver_cache_update_flags(c, idx, IVER_ENTRY_WRITTEN |
                                                                (md->mask & FAN_CLOSE_WRITE ? IVER_ENTRY_STALE : 0), 0);
                                        }
                                        if (fd >= 0)
                                                close(fd);
                                }
                                p += h->len;
                        }
                }
        }
}

static int fan_attest(void *userdata, const IverStat *st) {
        fan_drain();
        return st->dev == fan_dev;
}

static int fan_setup(void) {
        struct stat st;
        fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK,
                               O_RDONLY | O_CLOEXEC);
        if (fan_fd < 0)
                return -errno;
        if (fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_MODIFY | FAN_CLOSE_WRITE, AT_FDCWD, dir) < 0)
                return -errno;
        mnt_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mnt_fd < 0 || fstat(mnt_fd, &st) < 0)
                return -errno;
        fan_dev = (major(st.st_dev) << 20) | minor(st.st_dev);
        return 0;
}

const char *run_attested(const Op *op, bool *ok) {
        char path[4096];
        IverCheckOutcome o1, o2, o3;
        IverLedgerCounters c0, c1;
        Row row = { .note = "" };
        bool metadata = op->ledger == L_EXTRA_UNCHANGED;
        int r;

        if (!actx)
                return "-";
        snprintf(path, sizeof path, "%s/att-%s", dir, op->name);
        if (make_file(path, (unsigned) (op - ops) + 101, FILE_SIZE) < 0 || (op->setup && op->setup(path, &row) != 0))
                return "n/a";
        fan_drain(); /* the creation's own events: before the measurement */
        if (iver_check(actx, AT_FDCWD, path, &o1) < 0 || o1.result != IVER_CHECK_MEASURED ||
            iver_check(actx, AT_FDCWD, path, &o2) < 0 || o2.result != IVER_CHECK_HIT) {
                fail("%s (attested): preconditions: %s then %s", op->name, res(o1.result), res(o2.result));
                *ok = false;
                return "FAIL (setup)";
        }
        c0 = *iver_ledger_counters(iver_context_ledger(actx));
        r = op->run(path, &row);
        if (r > 0)
                return "n/a";
        if (r < 0) {
                *ok = false;
                return "FAIL (op)";
        }
        /* as iverd does: the events are applied (a close-write marks the entry
         * stale) before the check they trigger; a hit never calls the hook */
        fan_drain();
        r = iver_check(actx, AT_FDCWD, path, &o3);
        c1 = *iver_ledger_counters(iver_context_ledger(actx));
        const IverLedgerCounters *a = &c0, *b = &c1;
        bool dig = r >= 0 && digest_matches(path, &o3.digest, "attested");
        bool good;
        const char *cell;
        if (metadata) {
                good = o3.result == IVER_CHECK_HIT && o3.metadata_only && D(metadata_only) == 1 && D(bytes_hashed) == 0 &&
                       D(remeasured) == 0;
                cell = good && dig ? "metadata-only: ok" : "metadata-only: WRONG";
        } else if (op->expect == EXP_HIT) {
                good = o3.result == IVER_CHECK_HIT && !o3.metadata_only;
                cell = good && dig ? "hit: ok" : "hit: WRONG";
        } else {
                good = o3.result == IVER_CHECK_MEASURED && !o3.provisional;
                cell = good && dig ? "re-hash: ok" : "re-hash: WRONG";
        }
        if (!good || !dig) {
                fail("%s (attested): got %s%s (reason %s), metadata_only %+" PRId64 ", bytes_hashed %+" PRId64, op->name,
                     res(o3.result), o3.metadata_only ? " metadata-only" : "",
                     iver_check_reason_to_string(o3.reason) ?: "?", (int64_t) D(metadata_only), (int64_t) D(bytes_hashed));
                *ok = false;
        }
        return cell;
}

int attest_setup(const IverContextOptions *opt) {
        int r = fan_setup();
        if (r < 0)
                return r;
        r = iver_context_new(opt, &actx);
        if (r < 0)
                return r;
        iver_context_set_attest(actx, fan_attest, NULL);
        return 0;
}

void attest_done(void) {
        actx = iver_context_free(actx);
        if (fan_fd >= 0)
                close(fan_fd);
        if (mnt_fd >= 0)
                close(mnt_fd);
        fan_fd = mnt_fd = -1;
}
