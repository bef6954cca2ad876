/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/overlay.c: overlay layers from mountinfo lines, escapes, bad input,
 * and the merged path of a path below a layer. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check-run.h"
#include "overlay.h"

static IverOverlay *parse_ok(const char *line) {
        IverOverlay *o = NULL;
        ck_assert_int_eq(iver_overlay_from_mountinfo(line, &o), 0);
        ck_assert_ptr_nonnull(o);
        return o;
}

START_TEST(test_line) {
        IverOverlay *o = parse_ok("49 26 0:40 / /tmp/x/merged rw,relatime shared:5 - overlay overlay "
                                  "rw,lowerdir=/l/a:/l/b,upperdir=/u/up,workdir=/u/work,uuid=on\n");
        ck_assert_str_eq(o->mount, "/tmp/x/merged");
        ck_assert_str_eq(o->upper, "/u/up");
        ck_assert_str_eq(o->work, "/u/work");
        ck_assert_uint_eq(o->n_lower, 2);
        ck_assert_str_eq(o->lower[0], "/l/a");
        ck_assert_str_eq(o->lower[1], "/l/b");
        ck_assert_ptr_null(o->lower[2]);
        ck_assert_uint_eq(o->n_data, 0);
        ck_assert_uint_eq(iver_overlay_layers(o), 3);
        ck_assert_str_eq(iver_overlay_layer(o, 0), "/u/up");
        ck_assert_str_eq(iver_overlay_layer(o, 2), "/l/b");
        ck_assert_ptr_null(iver_overlay_layer(o, 3));
        iver_overlay_free(o);

        /* another type: nothing, no error */
        o = (IverOverlay *) 1;
        ck_assert_int_eq(iver_overlay_from_mountinfo("22 1 8:1 / / rw - ext4 /dev/sda1 rw", &o), 0);
        ck_assert_ptr_null(o);
        ck_assert_int_eq(iver_overlay_from_mountinfo("22 1 8:1 / / rw - overlayfs x rw,lowerdir=/a", &o), 0);
        ck_assert_ptr_null(o);
}
END_TEST

START_TEST(test_escapes) {
        /* a mount point with a space; layers with a comma, a space, a colon
         * ("\:" from the mounter, its backslash \134 in mountinfo) and a
         * backslash ("\\" → \134\134) */
        IverOverlay *o = parse_ok("50 26 0:41 / /m\\040n rw - overlay overlay "
                                  "rw,lowerdir=/l/a\\054b:/l/c\\040d:/l/e\\134:f:/l/g\\134\\134h,"
                                  "upperdir=/u/x\\134:y,workdir=/u/w");
        ck_assert_str_eq(o->mount, "/m n");
        ck_assert_uint_eq(o->n_lower, 4);
        ck_assert_str_eq(o->lower[0], "/l/a,b");
        ck_assert_str_eq(o->lower[1], "/l/c d");
        ck_assert_str_eq(o->lower[2], "/l/e:f");
        ck_assert_str_eq(o->lower[3], "/l/g\\h");
        /* upperdir= is one path: no ':' escaping there, the backslash stays */
        ck_assert_str_eq(o->upper, "/u/x\\:y");
        iver_overlay_free(o);
}
END_TEST

START_TEST(test_forms) {
        /* read-only: lower layers only */
        IverOverlay *o = parse_ok("51 26 0:42 / /ro ro - overlay none ro,lowerdir=/a:/b");
        ck_assert_ptr_null(o->upper);
        ck_assert_uint_eq(iver_overlay_layers(o), 2);
        ck_assert_str_eq(iver_overlay_layer(o, 0), "/a");
        iver_overlay_free(o);
        /* data-only layers after "::" */
        o = parse_ok("52 26 0:43 / /d rw - overlay none rw,lowerdir=/a:/b::/data1::/data2,upperdir=/u,workdir=/w");
        ck_assert_uint_eq(o->n_lower, 2);
        ck_assert_uint_eq(o->n_data, 2);
        ck_assert_str_eq(o->data[0], "/data1");
        ck_assert_str_eq(o->data[1], "/data2");
        ck_assert_uint_eq(iver_overlay_layers(o), 3);
        iver_overlay_free(o);
        /* Linux 6.8+: lowerdir+= / datadir+= one layer each, no ':' escapes */
        o = parse_ok("53 26 0:44 / /n rw - overlay none rw,lowerdir+=/a:b,lowerdir+=/c,datadir+=/d,"
                     "upperdir=/u,workdir=/w");
        ck_assert_uint_eq(o->n_lower, 2);
        ck_assert_str_eq(o->lower[0], "/a:b");
        ck_assert_str_eq(o->lower[1], "/c");
        ck_assert_uint_eq(o->n_data, 1);
        ck_assert_str_eq(o->data[0], "/d");
        ck_assert_uint_eq(iver_overlay_layers(o), 3); /* data layers are not mapped */
        iver_overlay_free(o);
}
END_TEST

START_TEST(test_bad) {
        static const char *const bad[] = {
                "",
                "garbage",
                "49 26 0:40 / /m rw",                                         /* no " - " */
                "49 26 0:40 / /m rw - overlay",                               /* no source, no options */
                "49 26 0:40 / /m rw - overlay overlay",
                "49 26 0:40 / /m rw - overlay overlay rw",                    /* no lowerdir */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=",          /* empty */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=:/a",       /* empty first layer */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a:",       /* empty last layer */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a:::/b",   /* empty layer after "::" */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a::/b::/c::/d:",
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a\\134",   /* escapes nothing */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a,lowerdir=/b", /* twice */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a,upperdir=/u", /* no workdir */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a,workdir=/w",
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a,upperdir=,workdir=/w",
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir=/a,upperdir=/u,upperdir=/v,workdir=/w",
                "49 26 0:40 / /m rw - overlay overlay rw,datadir+=/d,lowerdir+=/a", /* data first */
                "49 26 0:40 / /m rw - overlay overlay rw,datadir+=/d",        /* data only */
                "49 26 0:40 / /m rw - overlay overlay rw,lowerdir+=",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                IverOverlay *o = (IverOverlay *) 1;
                int r = iver_overlay_from_mountinfo(bad[i], &o);
                if (r != -EINVAL)
                        ck_abort_msg("accepted (%d): %s", r, bad[i]);
                ck_assert_ptr_eq(o, (IverOverlay *) 1); /* untouched on failure */
        }
}
END_TEST

static void map_is(const IverOverlay *o, const char *path, int layer, const char *merged) {
        char *m = NULL;
        int r = iver_overlay_map(o, path, &m);
        if (r != layer)
                ck_abort_msg("%s: layer %d, expected %d", path, r, layer);
        if (merged)
                ck_assert_str_eq(m, merged);
        else
                ck_assert_ptr_null(m);
        free(m);
}

START_TEST(test_map) {
        IverOverlay *o = parse_ok("49 26 0:40 / /srv/m rw - overlay overlay "
                                  "rw,lowerdir=/l/low:/l/low2,upperdir=/u/up/,workdir=/u/work");
        map_is(o, "/u/up", 0, "/srv/m");
        map_is(o, "/u/up/a/b", 0, "/srv/m/a/b");
        map_is(o, "/u/upx/a", -ENOENT, NULL);
        map_is(o, "/u/work/a", -ENOENT, NULL);        /* the work dir is not a layer */
        map_is(o, "/l/low/bin/sh", 1, "/srv/m/bin/sh");
        map_is(o, "/l/low2/x", 2, "/srv/m/x");
        map_is(o, "/l", -ENOENT, NULL);
        ck_assert_int_eq(iver_overlay_map(o, "/l/low2", NULL), 2);
        iver_overlay_set_layer(o, 1, strdup("/real/low"));
        map_is(o, "/real/low/y", 1, "/srv/m/y");
        map_is(o, "/l/low/y", -ENOENT, NULL);
        iver_overlay_free(o);

        /* an overlay on "/" (a container's root) and a layer at "/" */
        o = parse_ok("1 0 0:40 / / rw - overlay overlay rw,lowerdir=/,upperdir=/u,workdir=/w");
        map_is(o, "/u", 0, "/");
        map_is(o, "/u/etc/passwd", 0, "/etc/passwd");
        map_is(o, "/usr/bin/sh", 1, "/usr/bin/sh");
        iver_overlay_free(o);
}
END_TEST

int main(void) {
        Suite *s = suite_create("overlay");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_line);
        tcase_add_test(tc, test_escapes);
        tcase_add_test(tc, test_forms);
        tcase_add_test(tc, test_bad);
        tcase_add_test(tc, test_map);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
