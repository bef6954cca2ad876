/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A whole IMA list: replaying it against PCR values (the matching prefix),
 * recovering a torn tail of the live list on disk, and load/save of the
 * binary and ASCII files. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "iver/imalog.h"
#include "imalog-fixtures.h"
#include "check-run.h"
static void extend(const char *name, uint8_t *pcr, size_t n, const uint8_t *d) {
        uint8_t buf[128];
        memcpy(buf, pcr, n);
        memcpy(buf + n, d, n);
        md(name, buf, 2 * n, pcr);
}

START_TEST(test_replay_prefix) {
        IverImaLog *l = NULL;
        uint8_t p1[20] = {}, p256[32] = {}, h[64];
        IverDigest vals[12][2];
        size_t prefix;

        ck_assert_int_eq(iver_imalog_new(&l), 0);
        for (unsigned i = 0; i < 10; i++) {
                IverImaEntry *e;
                char p[16];
                snprintf(p, sizeof(p), "/r/%u", i);
                if (i == 4)
                        ck_assert_int_eq(iver_imalog_entry_new_violation(IVER_IMA_TEMPLATE_NG, 16, IVER_HASH_SHA256,
                                                                         p, strlen(p), 0, &e), 0);
                else
                        e = mk(i == 7 ? 10 : 16, i, p);        /* entry 7 goes to another PCR */
                ck_assert_int_eq(iver_imalog_push(l, e), 0);
        }
        /* expected values by hand; vals[k] = after the first k entries */
        for (unsigned k = 0; k <= 10; k++) {
                if (k > 0) {
                        const IverImaEntry *e = iver_imalog_get(l, k - 1);
                        if (e->pcr == 16) {
                                if (e->violation) {
                                        memset(h, 0xff, 64);
                                        extend("SHA1", p1, 20, h);
                                        extend("SHA256", p256, 32, h);
                                } else {
                                        md("SHA1", e->template_data, e->template_data_len, h);
                                        extend("SHA1", p1, 20, h);
                                        md("SHA256", e->template_data, e->template_data_len, h);
                                        extend("SHA256", p256, 32, h);
                                }
                        }
                }
                vals[k][0] = (IverDigest) { .algo = IVER_HASH_SHA1, .len = 20 };
                memcpy(vals[k][0].bytes, p1, 20);
                vals[k][1] = (IverDigest) { .algo = IVER_HASH_SHA256, .len = 32 };
                memcpy(vals[k][1].bytes, p256, 32);
        }
        IverDigest got;
        ck_assert_int_eq(iver_imalog_replay(l, SIZE_MAX, 16, IVER_HASH_SHA256, &got), 0);
        ck_assert_mem_eq(got.bytes, vals[10][1].bytes, 32);
        ck_assert_int_eq(iver_imalog_replay(l, 3, 16, IVER_HASH_SHA1, &got), 0);
        ck_assert_mem_eq(got.bytes, vals[3][0].bytes, 20);

        for (unsigned k = 0; k <= 10; k++) {
                ck_assert_int_eq(iver_imalog_match_prefix(l, 16, vals[k], 2, &prefix), 0);
                /* entry 7 (PCR 10) does not move PCR 16: nothing says it was
                 * extended, so the prefix after entry 6 ends before it */
                ck_assert_uint_eq(prefix, k == 8 ? 7 : k);
        }
        /* banks that disagree: no prefix */
        IverDigest mixed[2] = { vals[3][0], vals[5][1] };
        ck_assert_int_eq(iver_imalog_match_prefix(l, 16, mixed, 2, &prefix), -ENOENT);
        vals[11][0] = vals[10][0];
        vals[11][0].bytes[0] ^= 1;
        ck_assert_int_eq(iver_imalog_match_prefix(l, 16, &vals[11][0], 1, &prefix), -ENOENT);
        iver_imalog_free(l);
}
END_TEST

static char *mkdir_tmp(void) {
        char *d = strdup("/tmp/test-imalog.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d));
        return d;
}

static void rm_tmp(char *d) {
        char p[512];
        const char *names[] = { IVER_IMA_BINARY_FILE, IVER_IMA_ASCII_FILE, "saved.bin", "saved.txt" };
        for (size_t i = 0; i < 4; i++) {
                snprintf(p, sizeof(p), "%s/%s", d, names[i]);
                (void) unlink(p);
        }
        ck_assert_int_eq(rmdir(d), 0);
        free(d);
}

static off_t file_size(const char *dir, const char *name) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        ck_assert_int_eq(stat(p, &st), 0);
        return st.st_size;
}

static unsigned count_lines(const char *dir, const char *name) {
        char p[512];
        unsigned n = 0;
        int c;
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        FILE *f = fopen(p, "re");
        ck_assert_ptr_nonnull(f);
        while ((c = fgetc(f)) != EOF)
                n += c == '\n';
        fclose(f);
        return n;
}

/* Open the live list in dir and read what it holds back whole (*l). */
static int open_list(const char *dir, IverImaFile **f, IverImaLog **l, size_t *trunc) {
        char p[512];
        int r = iver_imalog_file_open(dir, f, trunc);
        if (r < 0)
                return r;
        snprintf(p, sizeof(p), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        ck_assert_int_eq(iver_imalog_load(p, l), 0);
        ck_assert_uint_eq(iver_imalog_size(*l), iver_imalog_file_count(*f));
        return 0;
}

START_TEST(test_file_torn_tail) {
        char *dir = mkdir_tmp(), p[512];
        IverImaFile *f = NULL;
        IverImaLog *l = NULL;
        size_t trunc = 99;
        off_t sizes[6];

        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 0);
        ck_assert_uint_eq(iver_imalog_size(l), 0);
        sizes[0] = 0;
        for (unsigned i = 0; i < 5; i++) {
                char path[32];
                snprintf(path, sizeof(path), "/torn/%u name", i);
                IverImaEntry *e = mk(16, i, path);
                ck_assert_int_eq(iver_imalog_file_append(f, e), 0);
                ck_assert_int_eq(iver_imalog_push(l, e), 0);
                sizes[i + 1] = (off_t) iver_imalog_file_size(f);
        }
        ck_assert_int_eq(iver_imalog_file_ascii_error(f), 0);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), sizes[5]);
        ck_assert_uint_eq(count_lines(dir, IVER_IMA_ASCII_FILE), 5);
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* the last record torn in the middle */
        snprintf(p, sizeof(p), "%s/%s", dir, IVER_IMA_BINARY_FILE);
        ck_assert_int_eq(truncate(p, sizes[5] - 7), 0);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, sizes[5] - 7 - sizes[4]);
        ck_assert_uint_eq(iver_imalog_size(l), 4);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), sizes[4]);
        ck_assert_uint_eq(count_lines(dir, IVER_IMA_ASCII_FILE), 4);
        ck_assert_str_eq(iver_imalog_get(l, 3)->path, "/torn/3_name"); /* kernel form */
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* a tail of zeros (size grew, data never landed), and a tail of 3 bytes */
        int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        uint8_t zeros[100] = {};
        ck_assert_int_eq(write(fd, zeros, sizeof(zeros)), (ssize_t) sizeof(zeros));
        close(fd);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 100);
        ck_assert_uint_eq(iver_imalog_size(l), 4);
        iver_imalog_free(l);
        IverImaEntry *e = mk(16, 0x77, "/after");
        ck_assert_int_eq(iver_imalog_file_append(f, e), 0);
        iver_imalog_entry_free(e);
        iver_imalog_file_free(f);
        ck_assert_int_eq(truncate(p, file_size(dir, IVER_IMA_BINARY_FILE) + 3), 0);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 3);
        ck_assert_uint_eq(iver_imalog_size(l), 5);
        ck_assert_str_eq(iver_imalog_get(l, 4)->path, "/after");
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* the last record complete in length but its data garbled (the write
         * landed partly): not a record, cut; the one before stays */
        off_t full = file_size(dir, IVER_IMA_BINARY_FILE);
        e = mk(16, 0x78, "/garbled");
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_int_eq(iver_imalog_file_append(f, e), 0);
        iver_imalog_entry_free(e);
        iver_imalog_file_free(f);
        iver_imalog_free(l);
        off_t garbled = file_size(dir, IVER_IMA_BINARY_FILE);
        fd = open(p, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(pwrite(fd, zeros, 20, full + 40), 20);
        close(fd);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, garbled - full);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), full);
        ck_assert_uint_eq(iver_imalog_size(l), 5);
        ck_assert_str_eq(iver_imalog_get(l, 4)->path, "/after");
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* a burst in one write + one fdatasync */
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        IverImaEntry *burst[3] = { mk(16, 0x81, "/b1"), mk(16, 0x82, "/b2"), mk(16, 0x83, "/b 3") };
        ck_assert_int_eq(iver_imalog_file_append_many(f, (const IverImaEntry *const *) burst, 3), 0);
        ck_assert_int_eq(iver_imalog_file_append_many(f, NULL, 0), 0);
        for (size_t i = 0; i < 3; i++)
                iver_imalog_entry_free(burst[i]);
        iver_imalog_file_free(f);
        iver_imalog_free(l);
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), 0);
        ck_assert_uint_eq(trunc, 0);
        ck_assert_uint_eq(iver_imalog_size(l), 8);
        ck_assert_str_eq(iver_imalog_get(l, 7)->path, "/b_3");
        ck_assert_uint_eq(count_lines(dir, IVER_IMA_ASCII_FILE), 8);
        iver_imalog_file_free(f);
        iver_imalog_free(l);

        /* a corrupt record that is not a torn tail: refused, nothing cut */
        off_t before = file_size(dir, IVER_IMA_BINARY_FILE);
        fd = open(p, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        uint8_t byte;
        ck_assert_int_eq(pread(fd, &byte, 1, sizes[1] + 40), 1);
        byte ^= 0x20;
        ck_assert_int_eq(pwrite(fd, &byte, 1, sizes[1] + 40), 1);
        close(fd);
        l = NULL;
        f = NULL;
        ck_assert_int_eq(open_list(dir, &f, &l, &trunc), -EBADMSG);
        ck_assert_ptr_null(f);
        ck_assert_ptr_null(l);
        ck_assert_int_eq(file_size(dir, IVER_IMA_BINARY_FILE), before);
        rm_tmp(dir);
}
END_TEST

START_TEST(test_load_save) {
        char *dir = mkdir_tmp(), pb[512], pa[512];
        IverImaLog *l = NULL, *lb = NULL, *la = NULL;

        ck_assert_int_eq(iver_imalog_new(&l), 0);
        for (size_t i = 0; i < sizeof(weird) / sizeof(weird[0]); i++) {
                if (!weird[i].ascii_ok)
                        continue;
                IverImaEntry *e = NULL;
                uint8_t d[20];
                memset(d, (int) i, sizeof(d));
                ck_assert_int_eq(iver_imalog_entry_new(i % 2 ? IVER_IMA_TEMPLATE_SIG : IVER_IMA_TEMPLATE_NG, 16,
                                                       IVER_HASH_SHA1, d, 20, weird[i].s, weird[i].n, NULL, 0, 0, &e), 0);
                ck_assert_int_eq(iver_imalog_push(l, e), 0);
        }
        snprintf(pb, sizeof(pb), "%s/saved.bin", dir);
        snprintf(pa, sizeof(pa), "%s/saved.txt", dir);
        ck_assert_int_eq(iver_imalog_save(l, pb, IVER_IMA_FORMAT_BINARY), 0);
        ck_assert_int_eq(iver_imalog_save(l, pa, IVER_IMA_FORMAT_ASCII), 0);
        ck_assert_int_eq(iver_imalog_load(pb, &lb), 0);
        ck_assert_int_eq(iver_imalog_load(pa, &la), 0);
        ck_assert_uint_eq(iver_imalog_size(lb), iver_imalog_size(l));
        ck_assert_uint_eq(iver_imalog_size(la), iver_imalog_size(l));
        for (size_t i = 0; i < iver_imalog_size(l); i++) {
                const IverImaEntry *a = iver_imalog_get(l, i), *b = iver_imalog_get(lb, i), *c = iver_imalog_get(la, i);
                ck_assert_uint_eq(a->template_data_len, b->template_data_len);
                ck_assert_mem_eq(a->template_data, b->template_data, a->template_data_len);
                ck_assert_uint_eq(a->template_data_len, c->template_data_len);
                ck_assert_mem_eq(a->template_data, c->template_data, a->template_data_len);
                ck_assert_int_eq(a->template, c->template);
        }
        /* strict load: a torn tail is an error */
        ck_assert_int_eq(truncate(pb, 10), 0);
        IverImaLog *lt = NULL;
        ck_assert_int_eq(iver_imalog_load(pb, &lt), -EBADMSG);
        ck_assert_ptr_null(lt);
        ck_assert_int_eq(iver_imalog_format_detect((const uint8_t *) "10 ab", 5), IVER_IMA_FORMAT_ASCII);
        ck_assert_int_eq(iver_imalog_format_detect((const uint8_t *) " 9 ab", 5), IVER_IMA_FORMAT_ASCII);
        ck_assert_int_eq(iver_imalog_format_detect((const uint8_t *) "\x0a\0\0\0", 4), IVER_IMA_FORMAT_BINARY);
        iver_imalog_free(l);
        iver_imalog_free(la);
        iver_imalog_free(lb);
        rm_tmp(dir);
}
END_TEST

static Suite *imalog_list_suite(void) {
        Suite *s = suite_create("imalog-list");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_replay_prefix);
        tcase_add_test(tc, test_file_torn_tail);
        tcase_add_test(tc, test_load_save);
        tcase_set_timeout(tc, 120);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return iver_run_suite(imalog_list_suite());
}
