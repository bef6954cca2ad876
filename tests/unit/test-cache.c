/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cache insert / lookup / replace / remove / grow, at 1M entries. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seed.h"
#include "iver/cache.h"
#include "cache-internal.h"
#include "table.h"
#include "check-run.h"

/* A passing ck_assert() writes its location to Check's pipe (a write(2)
 * each): the million-entry tests would spend minutes in syscalls. */
#define REQUIRE(cond)                                                                           \
        do {                                                                                    \
                if (!(cond))                                                                    \
                        ck_abort_msg("%s:%d: assertion '%s' failed", __FILE__, __LINE__, #cond); \
        } while (0)

static IverEntry mkentry(uint32_t dev, uint64_t ino, uint64_t gen, uint8_t seed) {
        IverEntry e = {
                .id = { .dev = dev, .ino = ino, .gen = gen },
                .source = IVER_COOKIE_CTIME,
                .size = ino * 3,
                .mtime = (int64_t) ino + 2,
                .ctime = (int64_t) ino + 3,
                .mode = 0100644,
                .flags = IVER_ENTRY_MEASURED,
                .shadow_atime = (uint32_t) (ino ^ 0xabc),
                .shadow_mtime = (uint32_t) (ino ^ 0xdef),
                .digest = { .algo = IVER_HASH_SHA256, .len = 32 },
        };
        for (int i = 0; i < 32; i++)
                e.digest.bytes[i] = (uint8_t) (seed + i + ino);
        if (seed % 3 == 0) { /* a third with a version, kept apart from the entry */
                e.source = IVER_COOKIE_STATX_VERSION;
                e.version = ino * 7 + seed + 1;
        }
        return e;
}

static int path_of(char *buf, size_t n, uint64_t ino) {
        return snprintf(buf, n, "/usr/lib/x86_64-linux-gnu/pkg%06llu/file-%llu.so", (unsigned long long) (ino / 97),
                        (unsigned long long) ino);
}

static void assert_entry(IverCache *c, uint32_t idx, const IverEntry *want) {
        IverEntry got;
        iver_cache_get(c, idx, &got);
        REQUIRE(iver_identity_equal(&got.id, &want->id));
        REQUIRE((got.size) == (want->size));
        REQUIRE((got.ctime) == (want->ctime));
        REQUIRE((got.mtime) == (want->mtime));
        REQUIRE((got.source) == (want->source));
        REQUIRE((got.version) == (want->version));
        REQUIRE((got.mode) == (want->mode));
        REQUIRE((got.shadow_atime) == (want->shadow_atime));
        REQUIRE((got.shadow_mtime) == (want->shadow_mtime));
        REQUIRE((got.flags) == (want->flags));
        REQUIRE(iver_digest_equal(&got.digest, &want->digest));
}

START_TEST(test_basic) {
        IverCache *c = NULL;
        REQUIRE((iver_cache_new(&c)) == (0));
        REQUIRE((iver_cache_find_inode(c, 1, 2)) == (IVER_CACHE_NONE));
        REQUIRE((iver_cache_find_path(c, "/a", 2)) == (IVER_CACHE_NONE));

        IverEntry a = mkentry(1, 100, 7, 1);
        uint32_t ia;
        REQUIRE((iver_cache_put(c, &a, "/a", 2, &ia)) == (0));
        REQUIRE((iver_cache_find_inode(c, 1, 100)) == (ia));
        REQUIRE((iver_cache_find_path(c, "/a", 2)) == (ia));
        REQUIRE((iver_cache_find_inode(c, 2, 100)) == (IVER_CACHE_NONE)); /* other dev */
        assert_entry(c, ia, &a);

        /* paths are bytes: embedded newline and non-UTF-8 */
        IverEntry b = mkentry(1, 101, 7, 2);
        const char weird[] = "/x\ny\xff z";
        uint32_t ib;
        REQUIRE((iver_cache_put(c, &b, weird, sizeof(weird) - 1, &ib)) == (0));
        char p[IVER_CACHE_PATH_MAX];
        size_t len = iver_cache_path(c, ib, p, sizeof(p));
        REQUIRE((len) == (sizeof(weird) - 1));
        ck_assert_mem_eq(p, weird, len);

        /* replace: new generation for the same (dev, ino) replaces the entry */
        IverEntry a2 = mkentry(1, 100, 8, 9);
        uint32_t ia2;
        REQUIRE((iver_cache_put(c, &a2, "/a", 2, &ia2)) == (0));
        REQUIRE((ia2) == (ia));
        REQUIRE((iver_cache_size(c)) == (2));
        assert_entry(c, ia2, &a2);

        /* rename: the same inode under a new path moves its path */
        REQUIRE((iver_cache_put(c, &a2, "/a-renamed", 10, &ia2)) == (0));
        REQUIRE((iver_cache_find_path(c, "/a", 2)) == (IVER_CACHE_NONE));
        REQUIRE((iver_cache_find_path(c, "/a-renamed", 10)) == (ia2));

        /* rename-over: another inode takes b's path; b's entry goes */
        IverEntry n = mkentry(1, 555, 1, 3);
        uint32_t in;
        REQUIRE((iver_cache_put(c, &n, weird, sizeof(weird) - 1, &in)) == (0));
        REQUIRE((iver_cache_find_inode(c, 1, 101)) == (IVER_CACHE_NONE));
        REQUIRE((iver_cache_find_path(c, weird, sizeof(weird) - 1)) == (in));
        REQUIRE((iver_cache_size(c)) == (2));

        /* an unmeasured entry has no digest */
        IverEntry u = mkentry(3, 1, 1, 0);
        u.flags = IVER_ENTRY_UNSTABLE;
        uint32_t iu;
        REQUIRE((iver_cache_put(c, &u, "/u", 2, &iu)) == (0));
        IverEntry got;
        iver_cache_get(c, iu, &got);
        REQUIRE((got.digest.algo) == (_IVER_HASH_INVALID));

        /* a different algorithm changes the digest length */
        IverEntry s = a2;
        s.digest = (IverDigest) { .algo = IVER_HASH_SHA512, .len = 64 };
        memset(s.digest.bytes, 0x5a, 64);
        REQUIRE((iver_cache_put(c, &s, "/a-renamed", 10, &ia2)) == (0));
        assert_entry(c, ia2, &s);

        iver_cache_free(c);
}
END_TEST

START_TEST(test_touch) {
        IverCache *c = NULL;
        REQUIRE((iver_cache_new(&c)) == (0));
        IverEntry a = mkentry(1, 100, 7, 1);
        uint32_t i;
        REQUIRE((iver_cache_put(c, &a, "/a", 2, &i)) == (0));
        IverStat st = { .atime = 999, .mode = 0100600, .uid = 4, .gid = 4 };
        iver_cache_touch(c, i, 11, 22, &st);
        IverEntry got;
        iver_cache_get(c, i, &got);
        REQUIRE((got.shadow_atime) == (11));
        REQUIRE((got.shadow_mtime) == (22));
        REQUIRE((got.mode) == (0100600));
        REQUIRE((got.ctime) == (a.ctime)); /* the cookie is not touched */
        REQUIRE(iver_digest_equal(&got.digest, &a.digest));
        iver_cache_free(c);
}
END_TEST

/* A STATX_VERSION cookie's version lives beside the digest: it follows every
 * change of the entry (measured or not, a new cookie, a new algorithm, the
 * source given up) and no neighbour's record is overwritten. */
START_TEST(test_version) {
        IverCache *c = NULL;
        REQUIRE((iver_cache_new(&c)) == (0));
        IverEntry a = mkentry(1, 100, 7, 3), b = mkentry(1, 101, 7, 6);
        REQUIRE((a.source) == (IVER_COOKIE_STATX_VERSION));
        uint32_t ia, ib;
        REQUIRE((iver_cache_put(c, &a, "/a", 2, &ia)) == (0));
        REQUIRE((iver_cache_put(c, &b, "/b", 2, &ib)) == (0));
        assert_entry(c, ia, &a);
        assert_entry(c, ib, &b);

        IverCookie k = { .source = IVER_COOKIE_STATX_VERSION, .ctime = 5, .mtime = 6, .size = 7, .version = 0xfeedULL };
        iver_cache_set_cookie(c, ia, &k);
        IverCookie got = iver_cache_cookie(c, ia);
        REQUIRE((got.version) == (0xfeedULL));
        REQUIRE((got.ctime) == (5));
        assert_entry(c, ib, &b);

        a.flags = IVER_ENTRY_UNSTABLE; /* no digest: the record is the version alone */
        a.digest = (IverDigest) { .algo = _IVER_HASH_INVALID };
        a.version = 41;
        REQUIRE((iver_cache_put(c, &a, "/a", 2, &ia)) == (0));
        IverEntry e;
        iver_cache_get(c, ia, &e);
        REQUIRE((e.version) == (41));
        REQUIRE((e.flags) == (IVER_ENTRY_UNSTABLE));

        a.flags = IVER_ENTRY_MEASURED; /* sha512 and a version */
        a.digest = (IverDigest) { .algo = IVER_HASH_SHA512, .len = 64 };
        memset(a.digest.bytes, 0x5a, 64);
        a.version = 42;
        REQUIRE((iver_cache_put(c, &a, "/a", 2, &ia)) == (0));
        assert_entry(c, ia, &a);

        a.source = IVER_COOKIE_CTIME; /* the source given up: no version */
        a.version = 0;
        REQUIRE((iver_cache_put(c, &a, "/a", 2, &ia)) == (0));
        assert_entry(c, ia, &a);
        assert_entry(c, ib, &b);

        iver_cache_remove(c, ia);
        ib = iver_cache_find_path(c, "/b", 2);
        assert_entry(c, ib, &b);
        iver_cache_free(c);
}
END_TEST

#define MANY 1000000U

START_TEST(test_million) {
        IverCache *c = NULL;
        char path[128];
        REQUIRE((iver_cache_new(&c)) == (0));
        for (uint32_t i = 0; i < MANY; i++) {
                IverEntry e = mkentry(1 + (i & 3), i, i * 7ULL, 1);
                int n = path_of(path, sizeof(path), i);
                uint32_t idx;
                REQUIRE((iver_cache_put(c, &e, path, (size_t) n, &idx)) == (0));
                REQUIRE((idx) == (i));
        }
        REQUIRE((iver_cache_size(c)) == (MANY));
        size_t mem = iver_cache_memory(c), paths = iver_cache_path_bytes(c);
        fprintf(stderr, "cache: %u entries, %.1f bytes/entry + %.1f bytes/entry of paths\n", MANY,
                (double) (mem - paths) / MANY, (double) paths / MANY);

        /* every entry findable both ways, intact */
        for (uint32_t i = 0; i < MANY; i += 7) {
                IverEntry e = mkentry(1 + (i & 3), i, i * 7ULL, 1);
                int n = path_of(path, sizeof(path), i);
                uint32_t idx = iver_cache_find_inode(c, 1 + (i & 3), i);
                REQUIRE((idx) == (i));
                REQUIRE((iver_cache_find_path(c, path, (size_t) n)) == (i));
                assert_entry(c, idx, &e);
        }
        /* replace a tenth, remove a tenth */
        for (uint32_t i = 0; i < MANY; i += 10) {
                IverEntry e = mkentry(1 + (i & 3), i, i * 7ULL + 1, 2);
                int n = path_of(path, sizeof(path), i);
                REQUIRE((iver_cache_put(c, &e, path, (size_t) n, NULL)) == (0));
        }
        for (uint32_t i = 5; i < MANY; i += 10)
                iver_cache_remove(c, iver_cache_find_inode(c, 1 + (i & 3), i));
        REQUIRE((iver_cache_size(c)) == (MANY - MANY / 10));
        for (uint32_t i = 0; i < MANY; i++) {
                uint32_t idx = iver_cache_find_inode(c, 1 + (i & 3), i);
                int n = path_of(path, sizeof(path), i);
                if (i % 10 == 5) {
                        REQUIRE((idx) == (IVER_CACHE_NONE));
                        REQUIRE((iver_cache_find_path(c, path, (size_t) n)) == (IVER_CACHE_NONE));
                        continue;
                }
                REQUIRE((idx) != (IVER_CACHE_NONE));
                REQUIRE((iver_cache_find_path(c, path, (size_t) n)) == (idx));
                IverEntry want = i % 10 == 0 ? mkentry(1 + (i & 3), i, i * 7ULL + 1, 2) : mkentry(1 + (i & 3), i, i * 7ULL, 1);
                if (i % 4000 == 0 || i % 10 == 0)
                        assert_entry(c, idx, &want);
        }
        iver_cache_free(c);
}
END_TEST

/* dpkg-style replacement: a new inode under NAME.dpkg-new renamed over NAME,
 * many times over a few files: memory stays where it was (freed names and
 * digests are reused), every path still resolves to its newest inode. */
START_TEST(test_churn_flat) {
        IverCache *c = NULL;
        char p[128], tmp[128];
        REQUIRE((iver_cache_new(&c)) == (0));
        for (uint32_t i = 0; i < 500; i++) {
                IverEntry e = mkentry(1, i, 1, 1);
                int n = snprintf(p, sizeof(p), "/usr/share/pkg%u/file-%u", i / 20, i);
                REQUIRE((iver_cache_put(c, &e, p, (size_t) n, NULL)) == (0));
        }
        size_t mem0 = 0;
        uint64_t ino = 1000000;
        for (uint32_t r = 0; r < 50000; r++) {
                uint32_t i = r % 500;
                if (r == 500)
                        mem0 = iver_cache_memory(c);
                IverEntry e = mkentry(1, ino++, 1, (uint8_t) r);
                int tn = snprintf(tmp, sizeof(tmp), "/usr/share/pkg%u/file-%u.dpkg-new", i / 20, i);
                int n = snprintf(p, sizeof(p), "/usr/share/pkg%u/file-%u", i / 20, i);
                REQUIRE((iver_cache_put(c, &e, tmp, (size_t) tn, NULL)) == (0));
                REQUIRE((iver_cache_put(c, &e, p, (size_t) n, NULL)) == (0));
        }
        REQUIRE((iver_cache_size(c)) == (500));
        REQUIRE((iver_cache_memory(c)) == (mem0));
        for (uint32_t i = 0; i < 500; i++) {
                int n = snprintf(p, sizeof(p), "/usr/share/pkg%u/file-%u", i / 20, i);
                uint32_t idx = iver_cache_find_path(c, p, (size_t) n);
                REQUIRE((idx) != (IVER_CACHE_NONE));
                IverEntry got;
                iver_cache_get(c, idx, &got);
                REQUIRE((got.id.ino) >= (1000000));
                char q[IVER_CACHE_PATH_MAX];
                REQUIRE((iver_cache_path(c, idx, q, sizeof(q))) == ((size_t) n));
                ck_assert_str_eq(q, p);
        }
        iver_cache_free(c);
}
END_TEST

/* Long names are not on free lists: removing most of them leaves garbage
 * that compaction gives back, and every survivor keeps its path and digest. */
START_TEST(test_compaction) {
        IverCache *c = NULL;
        char p[2048];
        REQUIRE((iver_cache_new(&c)) == (0));
        const uint32_t n = 6000;
        for (uint32_t i = 0; i < n; i++) {
                IverEntry e = mkentry(1, i, 1, 1);
                int l = snprintf(p, sizeof(p), "/d%u/%0900u", i % 7, i);
                REQUIRE((iver_cache_put(c, &e, p, (size_t) l, NULL)) == (0));
        }
        size_t full = iver_cache_memory(c);
        for (uint32_t i = 0; i < n; i++)
                if (i % 10 != 0)
                        iver_cache_remove(c, iver_cache_find_inode(c, 1, i));
        REQUIRE((iver_cache_size(c)) == (n / 10));
        REQUIRE((iver_cache_memory(c)) < (full / 2));
        for (uint32_t i = 0; i < n; i += 10) {
                int l = snprintf(p, sizeof(p), "/d%u/%0900u", i % 7, i);
                uint32_t idx = iver_cache_find_path(c, p, (size_t) l);
                REQUIRE((idx) == (iver_cache_find_inode(c, 1, i)));
                IverEntry want = mkentry(1, i, 1, 1);
                assert_entry(c, idx, &want);
                char q[IVER_CACHE_PATH_MAX];
                REQUIRE((iver_cache_path(c, idx, q, sizeof(q))) == ((size_t) l));
                ck_assert_str_eq(q, p);
        }
        iver_cache_free(c);
}
END_TEST

/* One copy of a directory: path bytes follow basenames, not full paths; a
 * path without '/' and a short buffer work. */
START_TEST(test_directories) {
        IverCache *c = NULL;
        char p[256];
        REQUIRE((iver_cache_new(&c)) == (0));
        const char *dir = "/usr/lib/x86_64-linux-gnu/a-rather-long-package-directory-name/";
        for (uint32_t i = 0; i < 1000; i++) {
                IverEntry e = mkentry(1, i, 1, 1);
                int l = snprintf(p, sizeof(p), "%sf%u", dir, i);
                REQUIRE((iver_cache_put(c, &e, p, (size_t) l, NULL)) == (0));
        }
        /* dir once + 1000 × (header + "fNNN", 8-byte granules) */
        REQUIRE((iver_cache_path_bytes(c)) <= (1000 * 16 + 128));
        IverEntry e = mkentry(2, 1, 1, 1);
        uint32_t idx;
        REQUIRE((iver_cache_put(c, &e, "relative", 8, &idx)) == (0));
        REQUIRE((iver_cache_find_path(c, "relative", 8)) == (idx));
        REQUIRE((iver_cache_find_path(c, "/relative", 9)) == (IVER_CACHE_NONE));
        char small[5];
        REQUIRE((iver_cache_path(c, idx, small, sizeof(small))) == (8));
        ck_assert_str_eq(small, "rela");
        /* emptying a directory frees it; the same directory comes back */
        for (uint32_t i = 0; i < 1000; i++)
                iver_cache_remove(c, iver_cache_find_inode(c, 1, i));
        REQUIRE((iver_cache_size(c)) == (1));
        int l = snprintf(p, sizeof(p), "%sagain", dir);
        REQUIRE((iver_cache_put(c, &e, p, (size_t) l, &idx)) == (0));
        REQUIRE((iver_cache_find_path(c, p, (size_t) l)) == (idx));
        REQUIRE((iver_cache_find_path(c, "relative", 8)) == (IVER_CACHE_NONE));
        iver_cache_free(c);
}
END_TEST

/* Random puts (new files, renames, rename-overs, re-measures with another
 * algorithm), removals and path moves over a small namespace with short and
 * very long names (free lists and compaction both in play), checked after
 * every step batch against a plain reference table. */
#define RND_PATHS 64
typedef struct Ref {
        bool used;
        uint64_t ino;
        uint8_t seed;
        IverHashAlgo algo;
        bool measured;
} Ref;

static uint64_t rnd_state = 0x1234567;
static uint32_t rnd(uint32_t n) {
        rnd_state ^= rnd_state << 13;
        rnd_state ^= rnd_state >> 7;
        rnd_state ^= rnd_state << 17;
        return (uint32_t) (rnd_state % n);
}

static int rnd_path(char *buf, size_t n, uint32_t k) {
        /* 8 directories; names short, or ~2 kB (not on free lists) */
        if (k % 5 == 0) {
                int l = snprintf(buf, n, "/r/d%u/", k % 8);
                memset(buf + l, 'a' + (int) (k % 26), 2000);
                return l + snprintf(buf + l + 2000, n - (size_t) l - 2000, "%u", k);
        }
        return snprintf(buf, n, "/r/d%u/n%u", k % 8, k);
}

static void check_ref(IverCache *c, const Ref *ref) {
        char p[4096], q[IVER_CACHE_PATH_MAX];
        size_t used = 0;
        for (uint32_t k = 0; k < RND_PATHS; k++) {
                int l = rnd_path(p, sizeof(p), k);
                uint32_t idx = iver_cache_find_path(c, p, (size_t) l);
                if (!ref[k].used) {
                        REQUIRE((idx) == (IVER_CACHE_NONE));
                        continue;
                }
                used++;
                REQUIRE((idx) != (IVER_CACHE_NONE));
                REQUIRE((iver_cache_find_inode(c, 9, ref[k].ino)) == (idx));
                IverEntry want = mkentry(9, ref[k].ino, 1, ref[k].seed);
                if (ref[k].algo == IVER_HASH_SHA512) {
                        want.digest = (IverDigest) { .algo = IVER_HASH_SHA512, .len = 64 };
                        memset(want.digest.bytes, ref[k].seed, 64);
                }
                if (!ref[k].measured) {
                        want.flags = IVER_ENTRY_UNSTABLE;
                        want.digest = (IverDigest) { .algo = _IVER_HASH_INVALID };
                }
                IverEntry got;
                iver_cache_get(c, idx, &got);
                REQUIRE((got.flags) == (want.flags));
                if (ref[k].measured)
                        REQUIRE(iver_digest_equal(&got.digest, &want.digest));
                REQUIRE((iver_cache_path(c, idx, q, sizeof(q))) == ((size_t) l));
                ck_assert_mem_eq(q, p, (size_t) l);
        }
        REQUIRE((iver_cache_size(c)) == (used));
}

/* Basenames around the record's one-byte length (254, 255, 256: a longer
 * header from 255 on) and beyond NAME_MAX, renamed from short to long and
 * back: each found by its path, its path and entry read back whole. */
START_TEST(test_long_names) {
        static const size_t lens[] = { 1, 254, 255, 256, 1000, 4000 };
        IverCache *c = NULL;
        char p[5000];
        REQUIRE((iver_cache_new(&c)) == (0));
        for (size_t round = 0; round < 2; round++)
                for (size_t i = 0; i < (sizeof(lens) / sizeof(lens[0])); i++) {
                        /* round 1: each inode renamed to the next length's name */
                        size_t blen = lens[(i + round) % (sizeof(lens) / sizeof(lens[0]))];
                        int l = snprintf(p, sizeof(p), "/srv/long/");
                        memset(p + l, 'a' + (int) i, blen);
                        size_t len = (size_t) l + blen;
                        IverEntry e = mkentry(3, 100 + i, 1, (uint8_t) (i * 3 + round));
                        uint32_t idx;
                        REQUIRE((iver_cache_put(c, &e, p, len, &idx)) == (0));
                        REQUIRE((iver_cache_find_path(c, p, len)) == (idx));
                        char got[IVER_CACHE_PATH_MAX];
                        REQUIRE((iver_cache_path(c, idx, got, sizeof(got))) == (len));
                        REQUIRE(memcmp(got, p, len) == 0);
                        assert_entry(c, idx, &e);
                }
        REQUIRE((iver_cache_size(c)) == ((sizeof(lens) / sizeof(lens[0]))));
        for (size_t i = 0; i < (sizeof(lens) / sizeof(lens[0])); i++) {
                uint32_t idx = iver_cache_find_inode(c, 3, 100 + i);
                REQUIRE((idx) != (IVER_CACHE_NONE));
                iver_cache_remove(c, idx);
        }
        REQUIRE((iver_cache_size(c)) == (0));
        REQUIRE((iver_cache_path_bytes(c)) == (0));
        iver_cache_free(c);
}
END_TEST

/* ---- an attack on the path index: names that share one hash ---- */

static uint64_t unxorshift(uint64_t y, unsigned k) {
        uint64_t x = y;
        for (unsigned i = 0; i < 64 / k + 1; i++)
                x = y ^ (x >> k);
        return x;
}

static uint64_t inverse_mod64(uint64_t a) { /* a odd: Newton's iteration */
        uint64_t x = a;
        for (int i = 0; i < 6; i++)
                x *= 2 - a * x;
        return x;
}

static uint64_t unmix64(uint64_t x) {
        x = unxorshift(x, 31);
        x *= inverse_mod64(0x94d049bb133111ebULL);
        x = unxorshift(x, 27);
        x *= inverse_mod64(0xbf58476d1ce4e5b9ULL);
        return unxorshift(x, 30);
}

static bool name_byte_ok(uint64_t w) {
        for (int i = 0; i < 8; i++, w >>= 8)
                if ((w & 0xff) == 0 || (w & 0xff) == '/')
                        return false;
        return true;
}

/* Names of 16 bytes that hash_bytes() under key maps to one value: the
 * second word undoes the first (mix64 is a bijection), what a local user can
 * do against any fixed function of this kind. */
static size_t colliding_names(uint64_t key, char (*names)[16], size_t n) {
        uint64_t c = 0x0123456789abcdefULL, w1 = 0x2121212121212121ULL;
        size_t k = 0;
        while (k < n) {
                w1++;
                if (!name_byte_ok(w1))
                        continue;
                uint64_t w2 = unmix64(c) ^ mix64((key ^ 16) ^ w1);
                if (!name_byte_ok(w2))
                        continue;
                memcpy(names[k], &w1, 8);
                memcpy(names[k] + 8, &w2, 8);
                k++;
        }
        return k;
}

/* Mean distance of the path index's entries from their home slots. */
static double mean_displacement(const IverCache *c) {
        double sum = 0;
        for (uint32_t j = 0; j < c->by_path.cap; j++) {
                uint32_t s = c->by_path.slots[j];
                if (s == SLOT_EMPTY)
                        continue;
                uint32_t home = (uint32_t) iver_table_home((uint32_t) hash_entry_path(c, entry(c, slot_num(s))),
                                                           c->by_path.cap);
                sum += j >= home ? j - home : j + c->by_path.cap - home;
        }
        return sum / c->n;
}

static double insert_names(IverCache *c, char (*names)[16], size_t n) {
        char p[64];
        for (size_t i = 0; i < n; i++) {
                int l = snprintf(p, sizeof(p), "/srv/up/%.16s", names[i]);
                IverEntry e = mkentry(4, 10 + i, 1, 1);
                REQUIRE((iver_cache_put(c, &e, p, (size_t) l, NULL)) == (0));
        }
        REQUIRE((iver_cache_size(c)) == (n));
        return mean_displacement(c);
}

/* The names of a user who knows the hash function pile into one probe
 * chain (every lookup in the directory walks it); with the cache's random
 * key the same names spread like any others. */
START_TEST(test_colliding_names) {
        enum { N = 6000 };
        const uint64_t known = 0x9e3779b97f4a7c15ULL; /* the function's constant before it was keyed */
        char (*names)[16] = malloc(sizeof(*names) * N);
        REQUIRE(names != NULL);
        REQUIRE((colliding_names(known, names, N)) == (N));

        IverCache *c = NULL;
        REQUIRE((iver_cache_new(&c)) == (0));
        c->key = known; /* the attack as it was */
        uint64_t h0 = hash_bytes(c, names[0], 16);
        for (size_t i = 1; i < N; i++)
                REQUIRE((hash_bytes(c, names[i], 16)) == (h0));
        double fixed = insert_names(c, names, N);
        iver_cache_free(c);

        REQUIRE((iver_cache_new(&c)) == (0)); /* a random key */
        double keyed = insert_names(c, names, N);
        iver_cache_free(c);
        free(names);
        ck_assert_msg(fixed > N / 4, "the crafted names did not collide (mean displacement %.1f)", fixed);
        ck_assert_msg(keyed < 10, "names a user crafted still pile up (mean displacement %.1f)", keyed);
}
END_TEST

START_TEST(test_random_against_reference) {
        IverCache *c = NULL;
        Ref ref[RND_PATHS] = {};
        char p[4096];
        uint64_t next_ino = 1;
        /* xorshift: a zero state stays zero */
        rnd_state = test_seed("cache against a reference", 0x1234567) ?: 0x1234567;
        REQUIRE((iver_cache_new(&c)) == (0));
        for (unsigned step = 0; step < 200000; step++) {
                uint32_t k = rnd(RND_PATHS), op = rnd(10);
                int l = rnd_path(p, sizeof(p), k);
                if (op < 4) { /* a new file at k (rename-over when k is taken) */
                        Ref r = { .used = true, .ino = next_ino++, .seed = (uint8_t) rnd(256), .algo = IVER_HASH_SHA256,
                                  .measured = rnd(8) != 0 };
                        IverEntry e = mkentry(9, r.ino, 1, r.seed);
                        if (!r.measured)
                                e.flags = IVER_ENTRY_UNSTABLE;
                        REQUIRE((iver_cache_put(c, &e, p, (size_t) l, NULL)) == (0));
                        ref[k] = r;
                } else if (op < 6 && ref[k].used) { /* re-measured, maybe with sha512 */
                        ref[k].seed = (uint8_t) rnd(256);
                        ref[k].algo = rnd(2) ? IVER_HASH_SHA512 : IVER_HASH_SHA256;
                        ref[k].measured = true;
                        IverEntry e = mkentry(9, ref[k].ino, 1, ref[k].seed);
                        if (ref[k].algo == IVER_HASH_SHA512) {
                                e.digest = (IverDigest) { .algo = IVER_HASH_SHA512, .len = 64 };
                                memset(e.digest.bytes, ref[k].seed, 64);
                        }
                        REQUIRE((iver_cache_put(c, &e, p, (size_t) l, NULL)) == (0));
                } else if (op < 8 && ref[k].used) { /* moved to path j (over whatever was there) */
                        uint32_t j = rnd(RND_PATHS);
                        if (j != k) {
                                char pj[4096];
                                int lj = rnd_path(pj, sizeof(pj), j);
                                IverEntry e = mkentry(9, ref[k].ino, 1, ref[k].seed);
                                if (ref[k].algo == IVER_HASH_SHA512) {
                                        e.digest = (IverDigest) { .algo = IVER_HASH_SHA512, .len = 64 };
                                        memset(e.digest.bytes, ref[k].seed, 64);
                                }
                                if (!ref[k].measured)
                                        e.flags = IVER_ENTRY_UNSTABLE;
                                REQUIRE((iver_cache_put(c, &e, pj, (size_t) lj, NULL)) == (0));
                                ref[j] = ref[k];
                                ref[k].used = false;
                        }
                } else if (ref[k].used) { /* deleted */
                        iver_cache_remove(c, iver_cache_find_path(c, p, (size_t) l));
                        ref[k].used = false;
                }
                if (step % 997 == 0)
                        check_ref(c, ref);
        }
        check_ref(c, ref);
        /* a bounded namespace keeps bounded memory whatever the history */
        REQUIRE((iver_cache_memory(c)) < (8u << 20));
        iver_cache_free(c);
}
END_TEST

int main(void) {
        Suite *s = suite_create("cache");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_basic);
        tcase_add_test(tc, test_touch);
        tcase_add_test(tc, test_version);
        tcase_add_test(tc, test_million);
        tcase_add_test(tc, test_churn_flat);
        tcase_add_test(tc, test_compaction);
        tcase_add_test(tc, test_directories);
        tcase_add_test(tc, test_long_names);
        tcase_add_test(tc, test_colliding_names);
        tcase_add_test(tc, test_random_against_reference);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
