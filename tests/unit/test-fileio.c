/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/fileio.c: safe opens of regular files, whole reads/writes, atomic replace. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-run.h"
#include "fileio.h"
#include "conf.h"
#include "iver/policy.h"

static char dir[] = "/tmp/iver-test-fileio.XXXXXX";

static const char *at(const char *name) {
        static char p[4][512];
        static unsigned k;
        char *s = p[k++ % 4];
        snprintf(s, 512, "%s/%s", dir, name);
        return s;
}

static void put(const char *name, const char *content) {
        FILE *f = fopen(at(name), "we");
        ck_assert_ptr_nonnull(f);
        fputs(content, f);
        fclose(f);
}

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(dir, "/tmp/iver-test-fileio.XXXXXX");
}

START_TEST(test_open_regular_kinds) {
        struct stat st;
        char *buf = NULL;
        size_t len;

        put("f", "hello");
        int fd = iver_open_regular(at("f"), 0, &st);
        ck_assert_int_ge(fd, 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_int_eq(iver_read_fd_max(fd, 100, &buf, &len), 0);
        ck_assert_str_eq(buf, "hello");
        free(buf);
        close(fd);

        /* a FIFO nobody writes: refused at once, never blocks */
        ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
        ck_assert_int_eq(iver_open_regular(at("fifo"), 0, NULL), -EBADFD);
        ck_assert_int_eq(iver_read_file(at("fifo"), 100, &buf, &len), -EBADFD);
        /* a symlink, even to a regular file: not followed */
        ck_assert_int_eq(symlink(at("f"), at("link")), 0);
        ck_assert_int_eq(iver_open_regular(at("link"), 0, NULL), -ELOOP);
        ck_assert_str_eq(iver_file_strerror(-ELOOP), "a symbolic link (not followed)");
        /* a directory only when asked */
        ck_assert_int_eq(mkdir(at("d"), 0700), 0);
        ck_assert_int_eq(iver_open_regular(at("d"), 0, NULL), -EISDIR);
        fd = iver_open_regular(at("d"), IVER_OPEN_DIR_OK, &st);
        ck_assert_int_ge(fd, 0);
        ck_assert(S_ISDIR(st.st_mode));
        close(fd);
        /* /dev/null only when asked; other devices never */
        ck_assert_int_eq(iver_open_regular("/dev/null", 0, NULL), -EBADFD);
        ck_assert_int_eq(iver_read_file("/dev/null", 100, &buf, &len), 0);
        ck_assert_uint_eq(len, 0);
        free(buf);
        ck_assert_int_eq(iver_open_regular("/dev/zero", IVER_OPEN_DEV_NULL_OK, NULL), -EBADFD);
        ck_assert_int_eq(iver_open_regular(at("missing"), 0, NULL), -ENOENT);
}
END_TEST

START_TEST(test_read_max) {
        char *buf = NULL, big[40000];
        size_t len;

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        put("big", big);
        ck_assert_int_eq(iver_read_file(at("big"), sizeof(big) - 2, &buf, &len), -EFBIG);
        ck_assert_int_eq(iver_read_file(at("big"), sizeof(big) - 1, &buf, &len), 0);
        ck_assert_uint_eq(len, sizeof(big) - 1);
        ck_assert_str_eq(buf, big);
        free(buf);
        put("empty", "");
        ck_assert_int_eq(iver_read_file(at("empty"), 0, &buf, &len), 0);
        ck_assert_uint_eq(len, 0);
        free(buf);
}
END_TEST

START_TEST(test_write_atomic) {
        char *buf = NULL;
        size_t len;
        struct stat st;

        put("victim", "precious");
        put("target", "old");
        /* the target itself a planted symlink: replaced by a file, the victim untouched */
        ck_assert_int_eq(symlink(at("victim"), at("planted")), 0);
        ck_assert_int_eq(iver_write_file_atomic(at("planted"), "new", 3, 0600, IVER_WRITE_SYNC), 0);
        ck_assert_int_eq(lstat(at("planted"), &st), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_int_eq(iver_read_file(at("victim"), 100, &buf, &len), 0);
        ck_assert_str_eq(buf, "precious");
        free(buf);

        mode_t old = umask(077);
        ck_assert_int_eq(iver_write_file_atomic(at("target"), "fresh\n", 6, 0644, IVER_WRITE_EXACT_MODE), 0);
        umask(old);
        ck_assert_int_eq(stat(at("target"), &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0644);
        ck_assert_int_eq(iver_read_file(at("target"), 100, &buf, &len), 0);
        ck_assert_str_eq(buf, "fresh\n");
        free(buf);
        /* no temporary left behind */
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | grep -c tmp) -eq 0", dir);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_int_eq(iver_write_file_atomic(at("nodir/x"), "a", 1, 0644, 0), -ENOENT);
}
END_TEST

START_TEST(test_full_io) {
        int p[2];
        char out[100000], in[100001];
        size_t len;

        memset(out, 'q', sizeof(out));
        put("io", "");
        int fd = open(at("io"), O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(iver_write_full(fd, out, sizeof(out)), 0);
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
        ck_assert_int_eq(iver_read_full(fd, in, sizeof(in), &len), 0);
        ck_assert_uint_eq(len, sizeof(out));
        ck_assert_mem_eq(in, out, sizeof(out));
        close(fd);
        ck_assert_int_eq(pipe(p), 0);
        close(p[0]);
        signal(SIGPIPE, SIG_IGN);
        ck_assert_int_eq(iver_write_full(p[1], "x", 1), -EPIPE);
        close(p[1]);
}
END_TEST

/* The users: a FIFO or symlink as configuration or policy is a clear error, at once. */
/* iver_pread_full: exact reads at an offset; a file that ends first is -EIO
 * without ret_len and a short count with it; the file position stays. */
START_TEST(test_pread_full) {
        char path[] = "/tmp/iver-pread-XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        unlink(path);
        ck_assert_int_eq(iver_write_full(fd, "0123456789", 10), 0);
        char buf[16] = {};
        size_t got = 99;
        ck_assert_int_eq(iver_pread_full(fd, buf, 4, 3, NULL), 0);
        ck_assert(memcmp(buf, "3456", 4) == 0);
        ck_assert_int_eq(iver_pread_full(fd, buf, 8, 6, NULL), -EIO);
        ck_assert_int_eq(iver_pread_full(fd, buf, 8, 6, &got), 0);
        ck_assert_uint_eq(got, 4);
        ck_assert(memcmp(buf, "6789", 4) == 0);
        ck_assert_int_eq(iver_pread_full(fd, buf, 4, 20, &got), 0);
        ck_assert_uint_eq(got, 0);
        ck_assert_int_eq((int) lseek(fd, 0, SEEK_CUR), 10);
        close(fd);
        ck_assert_int_eq(iver_pread_full(fd, buf, 1, 0, NULL), -EBADF);
}
END_TEST

START_TEST(test_conf_policy_fifo) {
        IverConf c;
        IverConfError err = {};
        IverPolicyDiags diags = {};
        IverPolicy *pol = NULL;

        ck_assert_int_eq(mkfifo(at("conf"), 0600), 0);
        ck_assert_int_eq(iver_conf_init(&c), 0);
        ck_assert_int_eq(iver_conf_load_file(&c, at("conf"), 0, &err), -EBADFD);
        ck_assert_ptr_nonnull(strstr(err.message, "not a regular file"));
        iver_conf_error_done(&err);
        iver_conf_done(&c);

        const char *paths[] = { at("conf") };
        ck_assert_int_lt(iver_policy_load(paths, 1, 0, &diags, &pol), 0);
        ck_assert_uint_ge(diags.n_items, 1);
        char *msg = NULL;
        ck_assert_int_ge(iver_policy_diag_format(&diags.items[0], &msg), 0);
        ck_assert_ptr_nonnull(strstr(msg, "not a regular file"));
        free(msg);
        iver_policy_diags_done(&diags);

        /* a drop-in dir: a symlink to /dev/null masks, a symlink elsewhere is refused */
        ck_assert_int_eq(mkdir(at("p.d"), 0700), 0);
        put("p.d/10-a.policy", "measure path=/usr/bin/**\n");
        ck_assert_int_eq(symlink("/dev/null", at("p.d/20-masked.policy")), 0);
        const char *dpaths[] = { at("p.d") };
        ck_assert_int_eq(iver_policy_load(dpaths, 1, 0, &diags, &pol), 0);
        iver_policy_free(pol);
        pol = NULL;
        iver_policy_diags_done(&diags);
        put("elsewhere", "measure path=/etc/**\n");
        ck_assert_int_eq(symlink(at("elsewhere"), at("p.d/30-link.policy")), 0);
        ck_assert_int_lt(iver_policy_load(dpaths, 1, 0, &diags, &pol), 0);
        iver_policy_diags_done(&diags);
}
END_TEST

int main(void) {
        Suite *s = suite_create("fileio");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_open_regular_kinds);
        tcase_add_test(tc, test_read_max);
        tcase_add_test(tc, test_pread_full);
        tcase_add_test(tc, test_write_atomic);
        tcase_add_test(tc, test_full_io);
        tcase_add_test(tc, test_conf_policy_fifo);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
