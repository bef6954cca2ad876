/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "iver/stat.h"

/* Which files directly in a directory may be measured, by their paths (the
 * dir_files report): none (the directory is only on the way to measured
 * ones), some (ask per name: file_wanted), all. */
typedef enum DirFiles {
        DIR_FILES_NONE,
        DIR_FILES_SOME,
        DIR_FILES_ALL,
} DirFiles;

/* What a component reports to the one that wired it (the manager): outcomes,
 * not actions. A component gets this at construction, with the event loop
 * and the context it needs, and never includes manager.h: the manager alone
 * decides what a report leads to (queue, rescan, settle waiters). Any hook
 * may be NULL (nothing to report to). */
typedef struct Reports {
        void *userdata;
        /* path needs a check (a trigger fired, a retry is due) */
        void (*check)(void *userdata, const char *path);
        /* path was written to (a modification, no close, no name change):
         * a check, unless one is already scheduled for it (a writer holds it
         * and its re-checks run: they and the writer's close look again) */
        void (*written)(void *userdata, const char *path);
        /* the tree may have changed where no event told (lost events, a
         * mount, an unwatchable directory): look at everything again */
        void (*rescan)(void *userdata);
        /* the policy's question for walker and watchers: may anything below
         * dir be measured? */
        bool (*dir_wanted)(void *userdata, const char *dir);
        /* and which files directly in dir may be measured? */
        DirFiles (*dir_files)(void *userdata, const char *dir);
        /* may the file path (in a DIR_FILES_SOME directory) be measured, by
         * its path alone? (false: a walk need not look at it) */
        bool (*file_wanted)(void *userdata, const char *path);
        /* a directory appeared (created, moved in): walk it if the policy
         * may measure something below it */
        void (*new_dir)(void *userdata, const char *dir);
        /* what is visible below dir changed (a mount came or went there):
         * walk it again, and look again at what was recorded below it */
        void (*changed_below)(void *userdata, const char *dir);
        /* a directory left (moved away): what was recorded below it goes */
        void (*forget_below)(void *userdata, const char *dir);
        /* work finished: something may have settled */
        void (*settled)(void *userdata);
        /* the walk entered directory dir (open as dirfd, for this call):
         * triggers are to cover it; true when its filesystem's mark does
         * (a directory on that filesystem needs no watch of its own before
         * its entries are read) */
        bool (*dir_entered)(void *userdata, int dirfd, const char *dir);
        /* the walk found a file and made its statx (st, taken at st_at,
         * iver_now_ns): true when it is done with or handed over, false when
         * it must go through the queue (check) */
        bool (*file_found)(void *userdata, const char *path, const IverStat *st, int64_t st_at);
        /* whether the files directly in dir may be reported by name
         * (file_named) before any statx: the policy decides a file by its
         * path alone (no rule looks at a file's attributes), and nothing is
         * on record in dir (else the statx made with the directory's read
         * serves the hit rule best) */
        bool (*names_suffice)(void *userdata, const char *dir);
        /* the walk found a regular file by name, no statx made (dev: its
         * directory's; ino: the directory entry's): true when it is done
         * with or handed over, false when it needs its statx (file_found) */
        bool (*file_named)(void *userdata, const char *path, uint32_t dev, uint64_t ino);
        /* whether the hashing window takes more files (refill: it is at most
         * half full, so that a resumed walk hands over many at once) */
        bool (*has_room)(void *userdata, bool refill);
        /* path cannot be measured (error: -errno) */
        void (*unmeasurable)(void *userdata, const char *path, int error);
        /* the version of path on record was not listed (the list could not
         * be written, the churn limit held it back): it must be hashed again
         * at its next check */
        void (*unlisted)(void *userdata, const char *path);
} Reports;

static inline void report_check(const Reports *r, const char *path) {
        if (r && r->check)
                r->check(r->userdata, path);
}
static inline void report_written(const Reports *r, const char *path) {
        if (r && r->written)
                r->written(r->userdata, path);
        else
                report_check(r, path);
}
static inline void report_rescan(const Reports *r) {
        if (r && r->rescan)
                r->rescan(r->userdata);
}
static inline bool report_dir_wanted(const Reports *r, const char *dir) {
        return r && r->dir_wanted ? r->dir_wanted(r->userdata, dir) : true;
}
static inline DirFiles report_dir_files(const Reports *r, const char *dir) {
        return r && r->dir_files ? r->dir_files(r->userdata, dir) : DIR_FILES_ALL;
}
static inline bool report_file_wanted(const Reports *r, const char *path) {
        return r && r->file_wanted ? r->file_wanted(r->userdata, path) : true;
}
static inline void report_new_dir(const Reports *r, const char *dir) {
        if (r && r->new_dir)
                r->new_dir(r->userdata, dir);
}
static inline void report_changed_below(const Reports *r, const char *dir) {
        if (r && r->changed_below)
                r->changed_below(r->userdata, dir);
}
static inline void report_forget_below(const Reports *r, const char *dir) {
        if (r && r->forget_below)
                r->forget_below(r->userdata, dir);
}
static inline void report_settled(const Reports *r) {
        if (r && r->settled)
                r->settled(r->userdata);
}
static inline void report_unmeasurable(const Reports *r, const char *path, int error) {
        if (r && r->unmeasurable)
                r->unmeasurable(r->userdata, path, error);
}
static inline bool report_dir_entered(const Reports *r, int dirfd, const char *dir) {
        return r && r->dir_entered ? r->dir_entered(r->userdata, dirfd, dir) : false;
}
static inline bool report_file_found(const Reports *r, const char *path, const IverStat *st, int64_t st_at) {
        return r && r->file_found ? r->file_found(r->userdata, path, st, st_at) : false;
}
static inline bool report_names_suffice(const Reports *r, const char *dir) {
        return r && r->names_suffice ? r->names_suffice(r->userdata, dir) : false;
}
static inline bool report_file_named(const Reports *r, const char *path, uint32_t dev, uint64_t ino) {
        return r && r->file_named ? r->file_named(r->userdata, path, dev, ino) : false;
}
static inline bool report_has_room(const Reports *r, bool refill) {
        return r && r->has_room ? r->has_room(r->userdata, refill) : true;
}
static inline void report_unlisted(const Reports *r, const char *path) {
        if (r && r->unlisted)
                r->unlisted(r->userdata, path);
}
