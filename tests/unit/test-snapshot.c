/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshot round trip and tamper detection; the HMAC key in the real kernel keyring. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <keyutils.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iver/snapshot.h"
#include "check-run.h"

static const uint8_t boot[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t key[32] = { 0x42 };

static IverCache *sample(unsigned n) {
        IverCache *c = NULL;
        ck_assert_int_eq(iver_cache_new(&c), 0);
        for (unsigned i = 0; i < n; i++) {
                IverEntry e = {
                        .id = { .dev = 7, .ino = 1000 + i, .gen = 99 * i },
                        .source = i % 4 ? IVER_COOKIE_CTIME : IVER_COOKIE_STATX_VERSION,
                        .version = i % 4 ? 0 : 77 + i,
                        .size = i * 10,
                        .mtime = 1000000000LL * i, .ctime = 1000000001LL * i,
                        .mode = 0100644,
                        .flags = i % 3 ? IVER_ENTRY_MEASURED : IVER_ENTRY_UNSTABLE,
                        .shadow_atime = ~(uint32_t) i, .shadow_mtime = i * 3,
                        .digest = { .algo = i % 2 ? IVER_HASH_SHA256 : IVER_HASH_SHA512, .len = i % 2 ? 32 : 64 },
                };
                memset(e.digest.bytes, (int) i, e.digest.len);
                char path[64];
                int len = snprintf(path, sizeof(path), "/srv/f\n%u\xff", i); /* bytes, not text */
                ck_assert_int_eq(iver_cache_put(c, &e, path, (size_t) len, NULL), 0);
        }
        return c;
}

static void assert_same(IverCache *a, IverCache *b) {
        ck_assert_uint_eq(iver_cache_size(a), iver_cache_size(b));
        for (uint32_t i = 0; i < iver_cache_size(a); i++) {
                IverEntry x, y;
                char px[IVER_CACHE_PATH_MAX], py[IVER_CACHE_PATH_MAX];
                iver_cache_get(a, i, &x);
                size_t lx = iver_cache_path(a, i, px, sizeof(px));
                uint32_t j = iver_cache_find_path(b, px, lx);
                ck_assert_uint_ne(j, IVER_CACHE_NONE);
                iver_cache_get(b, j, &y);
                size_t ly = iver_cache_path(b, j, py, sizeof(py));
                ck_assert_uint_eq(lx, ly);
                ck_assert_mem_eq(px, py, lx);
                ck_assert(iver_identity_equal(&x.id, &y.id));
                ck_assert_int_eq(x.ctime, y.ctime);
                ck_assert_int_eq(x.mtime, y.mtime);
                ck_assert_uint_eq(x.size, y.size);
                ck_assert_uint_eq(x.source, y.source);
                ck_assert_uint_eq(x.version, y.version);
                ck_assert_uint_eq(x.flags, y.flags);
                ck_assert_uint_eq(x.shadow_atime, y.shadow_atime);
                if (x.flags & IVER_ENTRY_MEASURED)
                        ck_assert(iver_digest_equal(&x.digest, &y.digest));
        }
}

START_TEST(test_roundtrip) {
        IverCache *c = sample(500), *d = NULL;
        IverLedgerCounters k = { .checks = 77, .missed_by_mtime = 3, .bytes_hashed = 1ULL << 40 }, k2;
        uint8_t *buf;
        size_t len;
        IverSnapshotError err;
        ck_assert_int_eq(iver_snapshot_encode(c, &k, boot, key, &buf, &len), 0);
        ck_assert_int_eq(iver_cache_new(&d), 0);
        ck_assert_int_eq(iver_snapshot_decode(buf, len, boot, key, d, &k2, &err), 0);
        ck_assert_int_eq(err, IVER_SNAPSHOT_OK);
        ck_assert_mem_eq(&k, &k2, sizeof(k));
        assert_same(c, d);
        free(buf);
        iver_cache_free(c);
        iver_cache_free(d);
}
END_TEST

static IverSnapshotError decode_err(const uint8_t *buf, size_t len, const uint8_t *b, const uint8_t *k) {
        IverCache *d = NULL;
        IverSnapshotError err = IVER_SNAPSHOT_OK;
        ck_assert_int_eq(iver_cache_new(&d), 0);
        int r = iver_snapshot_decode(buf, len, b, k, d, NULL, &err);
        iver_cache_free(d);
        ck_assert(r == 0 ? err == IVER_SNAPSHOT_OK : r == -EBADMSG);
        return r == 0 ? IVER_SNAPSHOT_OK : err;
}

START_TEST(test_every_flipped_byte_detected) {
        IverCache *c = sample(40);
        IverLedgerCounters k = { .checks = 1 };
        uint8_t *buf;
        size_t len;
        ck_assert_int_eq(iver_snapshot_encode(c, &k, boot, key, &buf, &len), 0);
        for (size_t i = 0; i < len; i++)
                for (int bit = 0; bit < 8; bit += 3) {
                        buf[i] ^= (uint8_t) (1 << bit);
                        ck_assert_int_ne(decode_err(buf, len, boot, key), IVER_SNAPSHOT_OK);
                        buf[i] ^= (uint8_t) (1 << bit);
                }
        for (size_t l = 0; l < len; l++)
                ck_assert_int_ne(decode_err(buf, l, boot, key), IVER_SNAPSHOT_OK);
        ck_assert_int_eq(decode_err(buf, len, boot, key), IVER_SNAPSHOT_OK);
        free(buf);
        iver_cache_free(c);
}
END_TEST

START_TEST(test_other_key_boot_version) {
        IverCache *c = sample(10);
        IverLedgerCounters k = {};
        uint8_t *buf, other_key[32] = { 0x43 }, other_boot[16] = { 9 };
        size_t len;
        ck_assert_int_eq(iver_snapshot_encode(c, &k, boot, key, &buf, &len), 0);
        ck_assert_int_eq(decode_err(buf, len, boot, other_key), IVER_SNAPSHOT_BAD_MAC);
        /* the boot id is checked after the MAC; a snapshot under this key but another boot id */
        uint8_t *buf2;
        size_t len2;
        ck_assert_int_eq(iver_snapshot_encode(c, &k, other_boot, key, &buf2, &len2), 0);
        ck_assert_int_eq(decode_err(buf2, len2, boot, key), IVER_SNAPSHOT_OTHER_BOOT);
        buf[8] = 2; /* format version */
        ck_assert_int_eq(decode_err(buf, len, boot, key), IVER_SNAPSHOT_BAD_VERSION);
        buf[0] = 'X';
        ck_assert_int_eq(decode_err(buf, len, boot, key), IVER_SNAPSHOT_BAD_MAGIC);
        free(buf);
        free(buf2);
        iver_cache_free(c);
}
END_TEST

START_TEST(test_kernel_keyring) {
        char desc[64];
        uint8_t k1[32], k2[32];
        snprintf(desc, sizeof(desc), "iverd:test-%d", (int) getpid());
        ck_assert_int_eq(iver_bootkey_get(desc, 0, k1), -ENOKEY);
        ck_assert_int_eq(iver_bootkey_get(desc, 1, k1), 0);  /* created */
        ck_assert_int_eq(iver_bootkey_get(desc, 0, k2), 1);  /* found again */
        ck_assert_mem_eq(k1, k2, 32);
        long id = keyctl_search(KEY_SPEC_USER_KEYRING, "user", desc, 0);
        ck_assert_int_ge(id, 0);
        ck_assert_int_eq(keyctl_invalidate((key_serial_t) id), 0);
        ck_assert_int_eq(iver_bootkey_get(desc, 0, k2), -ENOKEY);
}
END_TEST

/* A new directory (dir: "/tmp/iver-test-snap-XXXXXX") and the snapshot path in it. */
static void snap_path(char *dir, char path[static 128]) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, 128, "%s/cache.snap", dir);
}

START_TEST(test_file_roundtrip) {
        char dir[] = "/tmp/iver-test-snap-XXXXXX", path[128];
        snap_path(dir, path);
        IverCache *c = sample(100), *d = NULL;
        IverLedgerCounters k = { .checks = 5 }, k2;
        IverSnapshotError err;
        ck_assert_int_eq(iver_snapshot_write(path, c, &k, boot, key), 0);
        ck_assert_int_eq(iver_cache_new(&d), 0);
        ck_assert_int_eq(iver_snapshot_read(path, boot, key, d, &k2, &err), 0);
        assert_same(c, d);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(iver_snapshot_read(path, boot, key, d, &k2, &err), -ENOENT);
        ck_assert_int_eq(rmdir(dir), 0);
        iver_cache_free(c);
        iver_cache_free(d);
}
END_TEST

static long vm_kb(const char *field) {
        char line[256];
        long v = -1;
        FILE *f = fopen("/proc/self/status", "re");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, field, strlen(field)) == 0)
                        v = strtol(line + strlen(field), NULL, 10);
        fclose(f);
        ck_assert_int_ge(v, 0);
        return v;
}

/* Reset the peak RSS to the current RSS (clear_refs 5) and return it. */
static long hwm_reset_kb(void) {
        FILE *f = fopen("/proc/self/clear_refs", "we");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fputs("5", f) >= 0, 1);
        ck_assert_int_eq(fclose(f), 0);
        return vm_kb("VmHWM:");
}

/* A snapshot bigger than the writer's 1 MiB window: written out in pieces as
 * it is encoded (the MAC fed piece by piece), the file is byte for byte what
 * the in-memory encoder gives, and reads back whole. */
START_TEST(test_file_streamed) {
        char dir[] = "/tmp/iver-test-snap-XXXXXX", path[128];
        snap_path(dir, path);
        IverCache *c = sample(100000), *d = NULL;
        IverLedgerCounters k = { .checks = 7 }, k2;
        IverSnapshotError err;
        uint8_t *buf = NULL;
        size_t len = 0;
        /* the write's peak memory is its 1 MiB window (and OpenSSL's first MAC:
         * 3.6 MB in all here, 4.5 under ASan), not the snapshot (13 MB) */
        long hwm0 = hwm_reset_kb();
        ck_assert_int_eq(iver_snapshot_write(path, c, &k, boot, key), 0);
        long grew = vm_kb("VmHWM:") - hwm0;
        ck_assert_int_eq(iver_snapshot_encode(c, &k, boot, key, &buf, &len), 0);
        ck_assert_uint_gt(len, 8u << 20);
        ck_assert_int_lt(grew, (long) (len / 1024 / 2));
        FILE *f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        uint8_t *file = malloc(len + 1);
        ck_assert_uint_eq(fread(file, 1, len + 1, f), len);
        fclose(f);
        ck_assert_mem_eq(file, buf, len);
        /* read back through the reader's window: its peak beyond the cache it
         * fills is the window (and the MAC), not the file */
        ck_assert_int_eq(iver_cache_new(&d), 0);
        hwm_reset_kb();
        ck_assert_int_eq(iver_snapshot_read(path, boot, key, d, &k2, &err), 0);
        long transient = vm_kb("VmHWM:") - vm_kb("VmRSS:");
        ck_assert_int_lt(transient, (long) (len / 1024 / 2));
        ck_assert_uint_eq(k2.checks, 7);
        assert_same(c, d);
        /* one byte changed in the middle of the file: refused as a whole */
        IverCache *e = NULL;
        int fd = open(path, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        uint8_t byte;
        ck_assert_int_eq(pread(fd, &byte, 1, (off_t) (len / 2)), 1);
        byte ^= 0x20;
        ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t) (len / 2)), 1);
        close(fd);
        ck_assert_int_eq(iver_cache_new(&e), 0);
        ck_assert_int_eq(iver_snapshot_read(path, boot, key, e, &k2, &err), -EBADMSG);
        ck_assert_int_eq(err, IVER_SNAPSHOT_BAD_MAC);
        ck_assert_uint_eq(iver_cache_size(e), 0);
        iver_cache_free(e);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(rmdir(dir), 0);
        free(file);
        free(buf);
        iver_cache_free(c);
        iver_cache_free(d);
}
END_TEST

int main(void) {
        Suite *s = suite_create("snapshot");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_roundtrip);
        tcase_add_test(tc, test_every_flipped_byte_detected);
        tcase_add_test(tc, test_other_key_boot_version);
        tcase_add_test(tc, test_kernel_keyring);
        tcase_add_test(tc, test_file_roundtrip);
        tcase_add_test(tc, test_file_streamed);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
