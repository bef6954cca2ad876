/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/imalog-file.c, imalog-index.c, imalog-reader.c: the live list kept on
 * disk. The dedup index must answer like the in-memory list it replaced
 * (the kernel's rule: a (PCR, template digest) pair listed once, violations
 * always), across table growth and a reopen, without keeping the entries;
 * the reader gives the records back in order, stops at an end offset and
 * tells a torn record from a clean end. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iver/imalog.h"
#include "check-run.h"

#define N 20000
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static IverImaEntry *mk(uint32_t pcr, unsigned i) {
        IverImaEntry *e = NULL;
        uint8_t d[32] = {};
        char p[64];
        memcpy(d, &i, sizeof(i));
        snprintf(p, sizeof(p), "/usr/lib/file-%u", i);
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_NG, pcr, IVER_HASH_SHA256, d, 32, p, strlen(p), NULL, 0,
                                               0, &e), 0);
        return e;
}

static char *mkdir_tmp(void) {
        char *d = strdup("/tmp/test-imalog-file.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d));
        return d;
}

static void rm_tmp(char *d) {
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", d, IVER_IMA_BINARY_FILE);
        (void) unlink(p);
        snprintf(p, sizeof(p), "%s/%s", d, IVER_IMA_ASCII_FILE);
        (void) unlink(p);
        ck_assert_int_eq(rmdir(d), 0);
        free(d);
}

/* Append entries i ∈ [from, to) of PCR pcr, in bursts of 1000. */
static void append_range(IverImaFile *f, uint32_t pcr, unsigned from, unsigned to) {
        IverImaEntry *burst[1000];
        for (unsigned i = from; i < to;) {
                size_t n = 0;
                for (; n < 1000 && i < to; i++)
                        burst[n++] = mk(pcr, i);
                ck_assert_int_eq(iver_imalog_file_write_many(f, (const IverImaEntry *const *) burst, n), 0);
                for (size_t k = 0; k < n; k++)
                        iver_imalog_entry_free(burst[k]);
        }
}

static int contains(IverImaFile *f, uint32_t pcr, unsigned i) {
        IverImaEntry *e = mk(pcr, i);
        int r = iver_imalog_file_contains(f, e);
        iver_imalog_entry_free(e);
        return r;
}

START_TEST(test_dedup_index) {
        char *dir = mkdir_tmp();
        IverImaFile *f = NULL;
        IverImaEntry *v = NULL;

        ck_assert_int_eq(iver_imalog_file_open(dir, &f, NULL), 0);
        ck_assert_int_eq(contains(f, 16, 0), 0);
        append_range(f, 16, 0, N);
        ck_assert_uint_eq(iver_imalog_file_count(f), N);
        ck_assert_uint_eq(iver_imalog_file_pcrs(f), 1u << 16);
        for (unsigned i = 0; i < N; i++)
                ck_assert_int_eq(contains(f, 16, i), 1);
        for (unsigned i = N; i < 2 * N; i++)
                ck_assert_int_eq(contains(f, 16, i), 0);
        /* the same file digest and name for another PCR is another pair */
        ck_assert_int_eq(contains(f, 23, 7), 0);
        /* a violation is never "contained", and listing one indexes nothing */
        ck_assert_int_eq(iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, 16, IVER_HASH_SHA256, "/v", 2, 0, &v), 0);
        ck_assert_int_eq(iver_imalog_file_append(f, v), 0);
        ck_assert_int_eq(iver_imalog_file_contains(f, v), 0);
        iver_imalog_entry_free(v);
        /* a few bytes an entry: 8-byte slots at a load of 3/8..3/4 */
        ck_assert_uint_le(iver_imalog_file_memory(f), (size_t) N * 8 * 8 / 3 + 8192);
        ck_assert_uint_ge(iver_imalog_file_memory(f), (size_t) N * 8);
        uint64_t size = iver_imalog_file_size(f);
        iver_imalog_file_free(f);

        /* reopened: the index is rebuilt from the file */
        size_t trunc = 1;
        ck_assert_int_eq(iver_imalog_file_open(dir, &f, &trunc), 0);
        ck_assert_uint_eq(trunc, 0);
        ck_assert_uint_eq(iver_imalog_file_count(f), N + 1);
        ck_assert_uint_eq(iver_imalog_file_size(f), size);
        for (unsigned i = 0; i < N; i += 7)
                ck_assert_int_eq(contains(f, 16, i), 1);
        ck_assert_int_eq(contains(f, 16, N), 0);
        append_range(f, 23, 0, 10);
        ck_assert_uint_eq(iver_imalog_file_pcrs(f), (1u << 16) | (1u << 23));
        ck_assert_int_eq(contains(f, 23, 7), 1);

        /* the whole list back, byte for byte what a reader decodes */
        uint8_t *buf = NULL;
        size_t len = 0;
        int rfd = iver_imalog_file_reopen(f);
        ck_assert_int_ge(rfd, 0);
        len = (size_t) iver_imalog_file_size(f);
        ck_assert_int_eq(iver_imalog_read_prefix(rfd, len, &buf), 0);
        /* the reopened fd reads, never writes, and has its own offset */
        ck_assert_int_eq(write(rfd, "x", 1), -1);
        ck_assert_int_eq(lseek(rfd, 0, SEEK_CUR), 0);
        /* a prefix longer than the file is an error, not a short buffer */
        uint8_t *toolong = NULL;
        ck_assert_int_eq(iver_imalog_read_prefix(rfd, len + 1, &toolong), -EIO);
        ck_assert_ptr_null(toolong);
        close(rfd);
        IverImaLog *l = NULL;
        size_t used = 0;
        ck_assert_int_eq(iver_imalog_new(&l), 0);
        ck_assert_int_eq(iver_imalog_parse_binary(l, buf, len, &used), 0);
        ck_assert_uint_eq(used, len);
        ck_assert_uint_eq(iver_imalog_size(l), N + 11);
        ck_assert_str_eq(iver_imalog_get(l, N)->path, "/v");
        ck_assert(iver_imalog_get(l, N)->violation);
        iver_imalog_free(l);
        free(buf);
        /* a file renamed over the list's name is not the list: no fd to it */
        char p[512], q[512];
        snprintf(p, sizeof(p), "%s/planted", dir);
        snprintf(q, sizeof(q), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        int pfd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(pfd, 0);
        close(pfd);
        ck_assert_int_eq(rename(p, q), 0);
        ck_assert_int_eq(iver_imalog_file_reopen(f), -ESTALE);
        iver_imalog_file_free(f);
        rm_tmp(dir);
}
END_TEST

/* The kernel's rule on small cases: A→B→A lists two entries, the same
 * digest for another PCR is another pair, every violation is listed. */
START_TEST(test_dedup_rule) {
        char *dir = mkdir_tmp();
        IverImaFile *f = NULL;
        IverImaEntry *a = mk(16, 1), *b = mk(16, 2), *a2 = mk(16, 1), *a3 = mk(23, 1), *v1 = NULL, *v2 = NULL;

        ck_assert_int_eq(iver_imalog_file_open(dir, &f, NULL), 0);
        ck_assert_int_eq(iver_imalog_file_contains(f, a), 0);
        ck_assert_int_eq(iver_imalog_file_append(f, a), 0);
        ck_assert_int_eq(iver_imalog_file_contains(f, b), 0);
        ck_assert_int_eq(iver_imalog_file_append(f, b), 0);
        ck_assert_int_eq(iver_imalog_file_contains(f, a2), 1);     /* A→B→A: two entries */
        ck_assert_int_eq(iver_imalog_file_contains(f, a3), 0);     /* same digest, other PCR */
        ck_assert_int_eq(iver_imalog_file_append(f, a3), 0);
        ck_assert_int_eq(iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, 16, IVER_HASH_SHA256, "/v", 2, 0, &v1), 0);
        ck_assert_int_eq(iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, 16, IVER_HASH_SHA256, "/v", 2, 0, &v2), 0);
        ck_assert_int_eq(iver_imalog_file_append(f, v1), 0);
        ck_assert_int_eq(iver_imalog_file_contains(f, v2), 0);     /* every violation is recorded */
        ck_assert_int_eq(iver_imalog_file_append(f, v2), 0);
        ck_assert_uint_eq(iver_imalog_file_count(f), 5);
        IverImaEntry *all[] = { a, b, a2, a3, v1, v2 };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                iver_imalog_entry_free(all[i]);
        iver_imalog_file_free(f);
        rm_tmp(dir);
}
END_TEST

START_TEST(test_reader) {
        char *dir = mkdir_tmp(), p[512];
        IverImaFile *f = NULL;
        IverImaReader *rd = NULL;
        IverImaEntry *e = NULL;
        uint64_t ends[4];

        ck_assert_int_eq(iver_imalog_file_open(dir, &f, NULL), 0);
        for (unsigned i = 0; i < 3; i++) {
                append_range(f, 16, i * 1000, (i + 1) * 1000);
                ends[i] = iver_imalog_file_size(f);
        }
        /* one record bigger than the reader's buffer (a long signature) */
        uint8_t sig[IVER_IMA_SIG_MAX], d[32] = { 9 };
        sig[0] = 0x03;
        memset(sig + 1, 0x5a, sizeof(sig) - 1);
        ck_assert_int_eq(iver_imalog_entry_new(IVER_IMA_TEMPLATE_SIG, 16, IVER_HASH_SHA256, d, 32, "/big", 4, sig,
                                               sizeof(sig), 0, &e), 0);
        ck_assert_int_eq(iver_imalog_file_append(f, e), 0);
        iver_imalog_entry_free(e);
        ends[3] = iver_imalog_file_size(f);

        ck_assert_int_eq(iver_imalog_reader_new(iver_imalog_file_fd(f), 0, &rd), 0);
        /* up to the end of the second burst: exactly 2000 records, then a clean end */
        for (unsigned i = 0; i < 2000; i++) {
                char want[64];
                ck_assert_int_eq(iver_imalog_reader_next(rd, ends[1], &e), 1);
                snprintf(want, sizeof(want), "/usr/lib/file-%u", i);
                ck_assert_str_eq(e->path, want);
                iver_imalog_entry_free(e);
        }
        ck_assert_uint_eq(iver_imalog_reader_offset(rd), ends[1]);
        ck_assert_int_eq(iver_imalog_reader_next(rd, ends[1], &e), 0);
        /* the end moves on (more became durable): reading goes on */
        for (unsigned i = 2000; i < 3000; i++) {
                ck_assert_int_eq(iver_imalog_reader_next(rd, ends[3], &e), 1);
                iver_imalog_entry_free(e);
        }
        ck_assert_int_eq(iver_imalog_reader_next(rd, ends[3], &e), 1);
        ck_assert_str_eq(e->path, "/big");
        ck_assert_uint_eq(e->sig_len, sizeof(sig));
        iver_imalog_entry_free(e);
        ck_assert_int_eq(iver_imalog_reader_next(rd, ends[3], &e), 0);
        /* an end inside a record: torn, not a clean end */
        iver_imalog_reader_seek(rd, ends[2]);
        ck_assert_int_eq(iver_imalog_reader_next(rd, ends[3] - 1, &e), -ENODATA);
        /* an end before what the buffer holds: records past it stay unread */
        iver_imalog_reader_seek(rd, 0);
        ck_assert_int_eq(iver_imalog_reader_next(rd, ends[3], &e), 1);
        iver_imalog_entry_free(e);
        uint64_t second = iver_imalog_reader_offset(rd);
        ck_assert_int_eq(iver_imalog_reader_next(rd, second, &e), 0);
        ck_assert_int_eq(iver_imalog_reader_next(rd, second + 1, &e), -ENODATA);
        /* seek back to a boundary */
        iver_imalog_reader_seek(rd, ends[0]);
        ck_assert_int_eq(iver_imalog_reader_next(rd, ends[3], &e), 1);
        ck_assert_str_eq(e->path, "/usr/lib/file-1000");
        iver_imalog_entry_free(e);
        iver_imalog_reader_free(rd);
        iver_imalog_file_free(f);

        /* a corrupt record in the middle: -EBADMSG, and the file refuses to open */
        snprintf(p, sizeof(p), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        int fd = open(p, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        uint8_t byte = 0;
        ck_assert_int_eq(pread(fd, &byte, 1, (off_t) ends[0] + 40), 1);
        byte ^= 0x20;
        ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t) ends[0] + 40), 1);
        ck_assert_int_eq(iver_imalog_reader_new(fd, ends[0], &rd), 0);
        ck_assert_int_eq(iver_imalog_reader_next(rd, ends[3], &e), -EBADMSG);
        iver_imalog_reader_free(rd);
        close(fd);
        f = NULL;
        ck_assert_int_eq(iver_imalog_file_open(dir, &f, NULL), -EBADMSG);
        ck_assert_ptr_null(f);
        rm_tmp(dir);
}
END_TEST

/* A reservation past the end of both files: kept ahead as the list grows,
 * never counted as list data (sizes, readers, the reopen and its cut of a
 * torn tail), and established again after the reopen. On tmpfs where there
 * is one (fallocate works there), else /tmp. */
START_TEST(test_reserve) {
        char *dir = strdup(access("/dev/shm", W_OK) == 0 ? "/dev/shm/test-imalog-file.XXXXXX" : "/tmp/test-imalog-file.XXXXXX");
        char bp[512], ap[512];
        IverImaFile *f = NULL;
        IverImaLog *l = NULL;
        uint64_t ahead = 0, size;
        size_t truncated = 0;
        struct stat st;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(bp, sizeof(bp), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        snprintf(ap, sizeof(ap), "%s/%s", dir, IVER_IMA_ASCII_FILE);
        ck_assert_int_eq(iver_imalog_file_open(dir, &f, NULL), 0);
        int r = iver_imalog_file_reserve(f, 1 << 20);
        if (r == -EOPNOTSUPP) {
                /* no reservation, the list as before */
                ck_assert_int_eq(iver_imalog_file_reserve_state(f, &ahead), -EOPNOTSUPP);
                ck_assert_uint_eq(ahead, 0);
                append_range(f, 16, 0, 100);
                ck_assert_uint_eq(iver_imalog_file_count(f), 100);
                iver_imalog_file_free(f);
                rm_tmp(dir);
                return;
        }
        ck_assert_int_eq(r, 0);
        ck_assert_int_eq(stat(bp, &st), 0);
        ck_assert_int_eq(st.st_size, 0);
        ck_assert_int_ge((int64_t) st.st_blocks * 512, 1 << 20);
        for (unsigned i = 0; i < 20; i++) {
                append_range(f, 16, i * 1000, (i + 1) * 1000);
                ck_assert_int_eq(iver_imalog_file_reserve_state(f, &ahead), 0);
                ck_assert_uint_ge(ahead, 1 << 20);
                ck_assert_int_eq(stat(bp, &st), 0);
                ck_assert_uint_eq((uint64_t) st.st_size, iver_imalog_file_size(f));
                ck_assert_int_ge((int64_t) st.st_blocks * 512, st.st_size + (1 << 20));
        }
        size = iver_imalog_file_size(f);
        iver_imalog_file_free(f);
        /* the whole-file readers stop at the size, not at the allocated blocks */
        ck_assert_int_eq(iver_imalog_load(bp, &l), 0);
        ck_assert_uint_eq(iver_imalog_size(l), 20000);
        l = iver_imalog_free(l);
        ck_assert_int_eq(iver_imalog_load(ap, &l), 0);
        ck_assert_uint_eq(iver_imalog_size(l), 20000);
        l = iver_imalog_free(l);
        /* a torn tail of zeros (a crash), inside the reserved blocks: cut on reopen */
        int fd = open(bp, O_WRONLY | O_APPEND | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        uint8_t zero[100] = {};
        ck_assert_int_eq(write(fd, zero, sizeof(zero)), (ssize_t) sizeof(zero));
        close(fd);
        ck_assert_int_eq(iver_imalog_file_open(dir, &f, &truncated), 0);
        ck_assert_uint_eq(truncated, sizeof(zero));
        ck_assert_uint_eq(iver_imalog_file_size(f), size);
        ck_assert_uint_eq(iver_imalog_file_count(f), 20000);
        ck_assert_int_eq(iver_imalog_file_reserve(f, 1 << 20), 0);
        ck_assert_int_eq(iver_imalog_file_reserve_state(f, &ahead), 0);
        ck_assert_uint_ge(ahead, 1 << 20);
        ck_assert_int_eq(stat(bp, &st), 0);
        ck_assert_uint_eq((uint64_t) st.st_size, size);
        ck_assert_int_eq(stat(ap, &st), 0);
        ck_assert_int_ge((int64_t) st.st_blocks * 512, st.st_size + (1 << 20));
        append_range(f, 16, 20000, 20100);
        ck_assert_uint_eq(iver_imalog_file_count(f), 20100);
        iver_imalog_file_free(f);
        ck_assert_int_eq(iver_imalog_load(ap, &l), 0);
        ck_assert_uint_eq(iver_imalog_size(l), 20100);
        l = iver_imalog_free(l);
        rm_tmp(dir);
}
END_TEST

int main(void) {
        Suite *s = suite_create("imalog-file");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_dedup_index);
        tcase_add_test(tc, test_dedup_rule);
        tcase_add_test(tc, test_reader);
        tcase_add_test(tc, test_reserve);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
