/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* recheck.c against a model: membership through many adds and removals (its
 * hash index, the swap on removal), the short-backoff count, and a file's
 * episode of tries on a real event loop up to its last try. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "recheck.h"
#include "thread.h"

#define PATHS 3000

static unsigned checks;

static void on_check(void *userdata, const char *path) {
        (void) path;
        checks++;
}

static const Reports reports = { .check = on_check };

static void path_of(unsigned i, char *buf, size_t n) {
        snprintf(buf, n, "/tree/d%02u/file-%05u", i % 37, i);
}

START_TEST(test_model) {
        sd_event *e = NULL;
        Recheck *r = NULL;
        static bool in[PATHS];
        size_t n = 0;
        char p[64];
        ck_assert_int_ge(sd_event_new(&e), 0);
        ck_assert_int_ge(recheck_new(e, &reports, &r), 0);
        srand(7);
        for (unsigned op = 0; op < 400000; op++) {
                unsigned i = (unsigned) rand() % PATHS;
                path_of(i, p, sizeof(p));
                switch (rand() % 3) {
                case 0: /* a deferred result: a new episode only when not there */
                        ck_assert_int_eq(recheck_add(r, p), !in[i]);
                        n += !in[i];
                        in[i] = true;
                        break;
                case 1: /* measured stably */
                        recheck_remove(r, p);
                        n -= in[i];
                        in[i] = false;
                        break;
                default:
                        ck_assert(!recheck_is_final(r, p)); /* no try has run */
                        ck_assert(!recheck_take_final(r, p));
                        break;
                }
                if (op % 997 == 0) {
                        ck_assert_uint_eq(recheck_count(r), n);
                        ck_assert_int_eq(recheck_pending_soon(r), n > 0);
                }
        }
        /* every member found, every other not, then all removed */
        for (unsigned i = 0; i < PATHS; i++) {
                path_of(i, p, sizeof(p));
                ck_assert_int_eq(recheck_add(r, p), !in[i]);
                recheck_remove(r, p);
        }
        ck_assert_uint_eq(recheck_count(r), 0);
        ck_assert(!recheck_pending_soon(r));
        recheck_free(r);
        sd_event_unref(e);
}
END_TEST

/* 8 tries (20 ms doubling: ~5.1 s), the last marked final; a result that
 * comes meanwhile does not start the episode over; taking the final ends it. */
START_TEST(test_episode) {
        sd_event *e = NULL;
        Recheck *r = NULL;
        ck_assert_int_ge(sd_event_new(&e), 0);
        ck_assert_int_ge(recheck_new(e, &reports, &r), 0);
        checks = 0;
        ck_assert(recheck_add(r, "/tree/busy"));
        ck_assert(recheck_add(r, "/tree/storm"));
        ck_assert(recheck_scheduled(r, "/tree/busy"));
        ck_assert(!recheck_scheduled(r, "/tree/none"));
        ck_assert(recheck_add(r, "/tree/other"));
        recheck_remove(r, "/tree/other"); /* the timer may fire for it: nothing is due */
        uint64_t end = now_usec() + 8 * 1000000ULL;
        while (!recheck_is_final(r, "/tree/busy") && now_usec() < end)
                ck_assert_int_ge(sd_event_run(e, 100000), 0);
        ck_assert(recheck_is_final(r, "/tree/busy"));
        ck_assert(!recheck_scheduled(r, "/tree/busy")); /* its last try is under way: a write asks again */
        ck_assert_uint_eq(checks, 16);
        ck_assert(!recheck_pending_soon(r)); /* its backoff is long past short */
        ck_assert(!recheck_add(r, "/tree/busy")); /* keeps its last try */
        ck_assert(recheck_take_final(r, "/tree/busy")); /* /tree/storm stays */
        ck_assert_uint_eq(recheck_count(r), 1);
        ck_assert(recheck_add(r, "/tree/busy")); /* a new episode */
        ck_assert(recheck_pending_soon(r));
        /* a last try found unstable: listed the first time, and a new
         * episode begins in place; its next last try unstable too is not
         * listed again */
        ck_assert(recheck_is_final(r, "/tree/storm"));
        ck_assert(!recheck_unstable_final(r, "/tree/busy")); /* no last try under way */
        ck_assert(recheck_unstable_final(r, "/tree/storm"));
        ck_assert(!recheck_is_final(r, "/tree/storm"));
        ck_assert(recheck_scheduled(r, "/tree/storm"));
        ck_assert(!recheck_add(r, "/tree/storm")); /* keeps its episode */
        ck_assert_uint_eq(recheck_count(r), 2);
        end = now_usec() + 8 * 1000000ULL;
        while (!recheck_is_final(r, "/tree/storm") && now_usec() < end)
                ck_assert_int_ge(sd_event_run(e, 100000), 0);
        ck_assert(recheck_is_final(r, "/tree/storm"));
        ck_assert(!recheck_unstable_final(r, "/tree/storm")); /* listed once while unstable */
        recheck_remove(r, "/tree/storm"); /* measured stably */
        ck_assert(recheck_add(r, "/tree/storm"));
        ck_assert_uint_eq(recheck_count(r), 2);
        recheck_free(r);
        sd_event_unref(e);
}
END_TEST

int main(void) {
        Suite *s = suite_create("recheck");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_model);
        tcase_add_test(tc, test_episode);
        suite_add_tcase(s, tc);
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
