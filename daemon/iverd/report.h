/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>

/* What a component reports to the one that wired it (the manager): outcomes,
 * not actions. A component gets this at construction, with the event loop
 * and the context it needs, and never includes manager.h: the manager alone
 * decides what a report leads to (queue, rescan, settle waiters). Any hook
 * may be NULL (nothing to report to). */
typedef struct Reports {
        void *userdata;
        /* path needs a check (a trigger fired, a retry is due) */
        void (*check)(void *userdata, const char *path);
        /* the tree may have changed where no event told (lost events, a
         * mount, an unwatchable directory): look at everything again */
        void (*rescan)(void *userdata);
        /* the policy's question for walker and watchers: may anything below
         * dir be measured? */
        bool (*dir_wanted)(void *userdata, const char *dir);
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
        /* path cannot be measured (error: -errno) */
        void (*unmeasurable)(void *userdata, const char *path, int error);
} Reports;

static inline void report_check(const Reports *r, const char *path) {
        if (r && r->check)
                r->check(r->userdata, path);
}
static inline void report_rescan(const Reports *r) {
        if (r && r->rescan)
                r->rescan(r->userdata);
}
static inline bool report_dir_wanted(const Reports *r, const char *dir) {
        return r && r->dir_wanted ? r->dir_wanted(r->userdata, dir) : true;
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
