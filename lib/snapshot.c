/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshot of cache and ledger: the one encoder and decoder of the format,
 * authenticated with HMAC-SHA256 under a key that dies with the boot. */
#include <endian.h>
#include <fcntl.h>
#include <keyutils.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "iver/snapshot.h"
#include "grow.h"
#include "fileio.h"
#include "macro.h"

#define MAGIC "IVERSNP1"
#define FORMAT_VERSION 1U
#define MAC_SIZE 32
#define HEADER_SIZE (8 + 4 + 4 + 16 + 8 + 4)
/* dev u32, ino u64, gen u64, source u8, flags u8, algo u8, dlen u8, mode u32, uid u32 and gid u32 (0: no longer kept),
 * version u64, size u64, atime (0) mtime ctime i64, shadows 2×u64 (32-bit values), path_len u16 */
#define RECORD_FIXED (4 + 8 + 8 + 4 + 4 + 4 + 4 + 8 + 8 + 8 * 3 + 8 * 2 + 2)
#define N_COUNTERS (sizeof(IverLedgerCounters) / sizeof(uint64_t))

_Static_assert(sizeof(IverLedgerCounters) % sizeof(uint64_t) == 0, "counters are u64s");

static const char *const error_names[_IVER_SNAPSHOT_ERROR_MAX] = {
        [IVER_SNAPSHOT_OK] = "ok",
        [IVER_SNAPSHOT_TRUNCATED] = "truncated",
        [IVER_SNAPSHOT_BAD_MAGIC] = "not a snapshot",
        [IVER_SNAPSHOT_BAD_VERSION] = "another format version",
        [IVER_SNAPSHOT_BAD_MAC] = "authentication failed (tampered, or written under another key)",
        [IVER_SNAPSHOT_OTHER_BOOT] = "from another boot",
        [IVER_SNAPSHOT_CORRUPT] = "corrupt record",
};

const char *iver_snapshot_error_to_string(IverSnapshotError e) {
        return e >= 0 && e < _IVER_SNAPSHOT_ERROR_MAX ? error_names[e] : NULL;
}

int iver_boot_id(uint8_t ret[16]) {
        char s[64];
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (!f)
                return negative_errno();
        bool ok = fgets(s, sizeof(s), f) != NULL;
        fclose(f);
        if (!ok)
                return -EIO;
        uint8_t id[16];
        unsigned n = 0;
        for (const char *p = s; *p && n < 16; p++) {
                if (*p == '-')
                        continue;
                unsigned v;
                if (sscanf(p, "%2x", &v) != 1)
                        return -EINVAL;
                id[n++] = (uint8_t) v;
                p++;
        }
        if (n != 16)
                return -EINVAL;
        memcpy(ret, id, 16);
        return 0;
}

int iver_bootkey_get(const char *desc, int create, uint8_t ret[IVER_SNAPSHOT_KEY_SIZE]) {
        uint8_t key[IVER_SNAPSHOT_KEY_SIZE];
        long id = keyctl_search(KEY_SPEC_USER_KEYRING, "user", desc, 0);
        if (id >= 0) {
                long n = keyctl_read(id, (char *) key, sizeof(key));
                if (n != (long) sizeof(key))
                        return n < 0 ? negative_errno() : -EBADMSG;
                memcpy(ret, key, sizeof(key));
                OPENSSL_cleanse(key, sizeof(key));
                return 1;
        }
        if (errno != ENOKEY && errno != EKEYREVOKED && errno != EKEYEXPIRED)
                return negative_errno();
        if (!create)
                return -ENOKEY;
        if (RAND_priv_bytes(key, sizeof(key)) != 1)
                return -EIO;
        key_serial_t k = add_key("user", desc, key, sizeof(key), KEY_SPEC_USER_KEYRING);
        if (k < 0) {
                OPENSSL_cleanse(key, sizeof(key));
                return negative_errno();
        }
        /* possessor: all; owner (root): view, read, search; nobody else */
        (void) keyctl_setperm(k, 0x3f0b0000);
        memcpy(ret, key, sizeof(key));
        OPENSSL_cleanse(key, sizeof(key));
        return 0;
}

/* ---- encoding ---- */

/* The encoder's output: a growing buffer, or with fd >= 0 a window of it
 * written out every FLUSH_AT bytes, so a snapshot of a million files costs a
 * megabyte, not its size. Bytes are fed to the MAC as they leave the window
 * (or at the end). */
#define FLUSH_AT (1U << 20)
/* The reader's window: a whole record (up to a 64 KiB path) always fits. */
#define READ_WINDOW (1U << 20)

typedef struct Buf {
        uint8_t *p;
        size_t len, cap;
        size_t macd;            /* bytes of p already fed to the MAC */
        EVP_MAC_CTX *mac;
        int fd;
        int error;              /* the first failure: -ENOMEM, -EIO, a write's -errno */
} Buf;

static int write_out(int fd, const uint8_t *p, size_t len) {
        int r = iver_write_full(fd, p, len);
        return r < 0 ? r : 0;
}

static void flush(Buf *b) {
        if (b->error)
                return;
        if (b->mac && EVP_MAC_update(b->mac, b->p + b->macd, b->len - b->macd) != 1)
                b->error = -EIO;
        b->macd = b->len;
        if (b->fd >= 0 && !b->error) {
                b->error = write_out(b->fd, b->p, b->len);
                b->len = b->macd = 0;
        }
}

static void put(Buf *b, const void *data, size_t n) {
        if (b->error)
                return;
        if (GROW(b->p, b->cap, b->len + n, 65536) < 0) {
                b->error = -ENOMEM;
                return;
        }
        memcpy(b->p + b->len, data, n);
        b->len += n;
        if (b->fd >= 0 && b->len >= FLUSH_AT)
                flush(b);
}

static void put_u8(Buf *b, uint8_t v) {
        put(b, &v, 1);
}
static void put_u16(Buf *b, uint16_t v) {
        v = htole16(v);
        put(b, &v, 2);
}
static void put_u32(Buf *b, uint32_t v) {
        v = htole32(v);
        put(b, &v, 4);
}
static void put_u64(Buf *b, uint64_t v) {
        v = htole64(v);
        put(b, &v, 8);
}


static EVP_MAC_CTX *mac_new(const uint8_t *key) {
        EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
        EVP_MAC_CTX *ctx = m ? EVP_MAC_CTX_new(m) : NULL;
        OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0), OSSL_PARAM_construct_end() };
        EVP_MAC_free(m);        /* the context holds its own reference */
        if (ctx && EVP_MAC_init(ctx, key, IVER_SNAPSHOT_KEY_SIZE, params) != 1) {
                EVP_MAC_CTX_free(ctx);
                return NULL;
        }
        return ctx;
}

/* HMAC-SHA256 of data under key, in one go (a snapshot in memory). */
static int mac(const uint8_t *key, const uint8_t *data, size_t len, uint8_t out[MAC_SIZE]) {
        EVP_MAC_CTX *ctx = mac_new(key);
        size_t ml = 0;
        bool ok = ctx && EVP_MAC_update(ctx, data, len) == 1 && EVP_MAC_final(ctx, out, &ml, MAC_SIZE) == 1;
        EVP_MAC_CTX_free(ctx);
        return ok && ml == MAC_SIZE ? 0 : -EIO;
}

/* The whole snapshot into b (b->fd set: written out as it goes), MAC last. */
static int encode(const IverCache *c, const IverLedgerCounters *counters, const uint8_t boot_id[16],
                  const uint8_t key[IVER_SNAPSHOT_KEY_SIZE], Buf *b) {
        size_t n = iver_cache_size(c);
        _cleanup_free_ char *path = malloc(IVER_CACHE_PATH_MAX);
        b->mac = mac_new(key);
        if (!path || !b->mac) {
                EVP_MAC_CTX_free(b->mac);
                return -ENOMEM;
        }

        put(b, MAGIC, 8);
        put_u32(b, FORMAT_VERSION);
        put_u32(b, RECORD_FIXED);
        put(b, boot_id, 16);
        put_u64(b, n);
        put_u32(b, (uint32_t) N_COUNTERS);
        const uint64_t *cv = (const uint64_t *) counters;
        for (size_t i = 0; i < N_COUNTERS; i++)
                put_u64(b, cv[i]);
        for (size_t i = 0; i < n && !b->error; i++) {
                IverEntry e;
                iver_cache_get(c, (uint32_t) i, &e);
                size_t plen = iver_cache_path(c, (uint32_t) i, path, IVER_CACHE_PATH_MAX);
                uint8_t dlen = (e.flags & IVER_ENTRY_MEASURED) ? e.digest.len : 0;
                put_u32(b, e.id.dev);
                put_u64(b, e.id.ino);
                put_u64(b, e.id.gen);
                put_u8(b, (uint8_t) e.source);
                put_u8(b, (uint8_t) e.flags);
                put_u8(b, dlen ? (uint8_t) e.digest.algo : 0xff);
                put_u8(b, dlen);
                put_u32(b, e.mode);
                put_u32(b, 0); /* uid, gid, atime: no longer kept, 0 (the format stays) */
                put_u32(b, 0);
                put_u64(b, e.version);
                put_u64(b, e.size);
                put_u64(b, 0);
                put_u64(b, (uint64_t) e.mtime);
                put_u64(b, (uint64_t) e.ctime);
                put_u64(b, e.shadow_atime);
                put_u64(b, e.shadow_mtime);
                put_u16(b, (uint16_t) plen);
                put(b, path, plen);
                put(b, e.digest.bytes, dlen);
        }
        /* the MAC covers everything before it */
        int fd = b->fd;
        b->fd = -1;
        flush(b);
        uint8_t m[MAC_SIZE];
        size_t ml = 0;
        if (!b->error && (EVP_MAC_final(b->mac, m, &ml, sizeof(m)) != 1 || ml != MAC_SIZE))
                b->error = -EIO;
        EVP_MAC_CTX_free(TAKE_PTR(b->mac));
        put(b, m, MAC_SIZE);
        if (fd >= 0 && !b->error)
                b->error = write_out(fd, b->p, b->len);
        return b->error;
}

int iver_snapshot_encode(const IverCache *c, const IverLedgerCounters *counters, const uint8_t boot_id[16],
                         const uint8_t key[IVER_SNAPSHOT_KEY_SIZE], uint8_t **ret, size_t *ret_len) {
        Buf b = { .fd = -1 };
        int r = encode(c, counters, boot_id, key, &b);
        if (r < 0) {
                free(b.p);
                return r;
        }
        *ret = b.p;
        *ret_len = b.len;
        return 0;
}

/* ---- decoding ---- */

/* The records after the MAC check: from a buffer, or from a file through a
 * window that refills (a snapshot of a million files is read a megabyte at
 * a time). left counts the bytes to the MAC, window and file together. */
typedef struct Reader {
        const uint8_t *p;
        size_t avail;           /* bytes at p */
        uint64_t left;
        int fd;                 /* >= 0: refill from fd at off */
        uint8_t *win;
        size_t win_size;
        uint64_t off;
        EVP_MAC_CTX *mac;       /* with fd: the bytes read again are MAC'd again */
        int error;              /* a read failed: -errno, -EIO */
} Reader;

static bool refill(Reader *r, size_t n) {
        if (r->fd < 0 || n > r->win_size)
                return false;
        memmove(r->win, r->p, r->avail);
        r->p = r->win;
        uint64_t want = MIN((uint64_t) (r->win_size - r->avail), r->left - r->avail);
        if (want > 0) {
                size_t k = (size_t) want;
                int e = iver_pread_full(r->fd, r->win + r->avail, k, r->off, NULL); /* -EIO: shrank under us */
                if (e < 0) {
                        r->error = e;
                        return false;
                }
                if (r->mac && EVP_MAC_update(r->mac, r->win + r->avail, k) != 1) {
                        r->error = -EIO;
                        return false;
                }
                r->avail += k;
                r->off += (uint64_t) k;
        }
        return r->avail >= n;
}

static bool get(Reader *r, void *out, size_t n) {
        if (r->left < n || (r->avail < n && !refill(r, n)))
                return false;
        memcpy(out, r->p, n);
        r->p += n;
        r->avail -= n;
        r->left -= n;
        return true;
}
#define GET_LE(r, bits, out)                                      \
        ({                                                        \
                uint##bits##_t _v;                                \
                bool _ok = get((r), &_v, sizeof(_v));             \
                if (_ok)                                          \
                        *(out) = le##bits##toh(_v);               \
                _ok;                                              \
        })

static int fail(IverSnapshotError e, IverSnapshotError *ret_error) {
        if (ret_error)
                *ret_error = e;
        return -EBADMSG;
}

/* The header's first 12 bytes (magic, version) of a snapshot of len bytes. */
static int check_head(const uint8_t head[12], uint64_t len, IverSnapshotError *ret_error) {
        uint32_t version;
        if (len < 8 || memcmp(head, MAGIC, 8) != 0)
                return fail(len < 8 ? IVER_SNAPSHOT_TRUNCATED : IVER_SNAPSHOT_BAD_MAGIC, ret_error);
        if (len < HEADER_SIZE + MAC_SIZE)
                return fail(IVER_SNAPSHOT_TRUNCATED, ret_error);
        memcpy(&version, head + 8, 4);
        if (le32toh(version) != FORMAT_VERSION)
                return fail(IVER_SNAPSHOT_BAD_VERSION, ret_error);
        return 0;
}

/* Everything after magic and version, once authenticated. */
static int decode_records(Reader *r, const uint8_t boot_id[16], IverCache *c, IverLedgerCounters *ret_counters,
                          IverSnapshotError *ret_error) {
        uint32_t fixed, n_counters;
        uint64_t n;
        uint8_t bid[16];
        if (!GET_LE(r, 32, &fixed) || !get(r, bid, 16) || !GET_LE(r, 64, &n) || !GET_LE(r, 32, &n_counters))
                return r->error ?: fail(IVER_SNAPSHOT_TRUNCATED, ret_error);
        if (memcmp(bid, boot_id, 16) != 0)
                return fail(IVER_SNAPSHOT_OTHER_BOOT, ret_error);
        if (fixed != RECORD_FIXED || n_counters != N_COUNTERS || n > r->left / RECORD_FIXED)
                return fail(IVER_SNAPSHOT_CORRUPT, ret_error);
        IverLedgerCounters counters;
        uint64_t *cv = (uint64_t *) &counters;
        for (size_t i = 0; i < N_COUNTERS; i++)
                if (!GET_LE(r, 64, &cv[i]))
                        return r->error ?: fail(IVER_SNAPSHOT_TRUNCATED, ret_error);
        for (uint64_t i = 0; i < n; i++) {
                IverEntry e = {};
                uint8_t source, flags, algo, dlen;
                uint32_t uid, gid;
                uint64_t atime, mtime, ctime, shadow_atime, shadow_mtime;
                uint16_t plen;
                char path[UINT16_MAX + 1];
                if (!GET_LE(r, 32, &e.id.dev) || !GET_LE(r, 64, &e.id.ino) || !GET_LE(r, 64, &e.id.gen) ||
                    !get(r, &source, 1) || !get(r, &flags, 1) || !get(r, &algo, 1) || !get(r, &dlen, 1) ||
                    !GET_LE(r, 32, &e.mode) || !GET_LE(r, 32, &uid) || !GET_LE(r, 32, &gid) ||
                    !GET_LE(r, 64, &e.version) || !GET_LE(r, 64, &e.size) || !GET_LE(r, 64, &atime) ||
                    !GET_LE(r, 64, &mtime) || !GET_LE(r, 64, &ctime) || !GET_LE(r, 64, &shadow_atime) ||
                    !GET_LE(r, 64, &shadow_mtime) || !GET_LE(r, 16, &plen) || !get(r, path, plen))
                        return r->error ?: fail(IVER_SNAPSHOT_CORRUPT, ret_error);
                path[plen] = 0;
                /* an older snapshot's generation: the btime itself, folded today */
                if (e.id.gen > UINT32_MAX)
                        e.id.gen = iver_gen_of_btime((int64_t) e.id.gen);
                e.source = (IverCookieSource) source;
                e.flags = flags;
                e.mtime = (int64_t) mtime;
                /* an older snapshot's 64-bit shadows: their low half is today's */
                e.shadow_atime = (uint32_t) shadow_atime;
                e.shadow_mtime = (uint32_t) shadow_mtime;
                e.ctime = (int64_t) ctime;
                if (source >= _IVER_COOKIE_MAX || plen == 0 || memchr(path, 0, plen))
                        return fail(IVER_SNAPSHOT_CORRUPT, ret_error);
                if (flags & IVER_ENTRY_MEASURED) {
                        if (algo >= _IVER_HASH_MAX || dlen != iver_hash_algo_size((IverHashAlgo) algo) ||
                            !get(r, e.digest.bytes, dlen))
                                return fail(IVER_SNAPSHOT_CORRUPT, ret_error);
                        e.digest.algo = (IverHashAlgo) algo;
                        e.digest.len = dlen;
                } else if (dlen != 0)
                        return fail(IVER_SNAPSHOT_CORRUPT, ret_error);
                int k = iver_cache_put(c, &e, path, plen, NULL);
                if (k < 0)
                        return k;
        }
        if (r->left != 0)
                return fail(IVER_SNAPSHOT_CORRUPT, ret_error);
        if (ret_counters)
                *ret_counters = counters;
        if (ret_error)
                *ret_error = IVER_SNAPSHOT_OK;
        return 0;
}

int iver_snapshot_decode(const uint8_t *buf, size_t len, const uint8_t boot_id[16],
                         const uint8_t key[IVER_SNAPSHOT_KEY_SIZE], IverCache *c, IverLedgerCounters *ret_counters,
                         IverSnapshotError *ret_error) {
        int r = check_head(buf, len, ret_error);
        if (r < 0)
                return r;
        /* authenticate before interpreting anything else */
        uint8_t m[MAC_SIZE];
        if (mac(key, buf, len - MAC_SIZE, m) < 0)
                return -EIO;
        if (CRYPTO_memcmp(m, buf + len - MAC_SIZE, MAC_SIZE) != 0)
                return fail(IVER_SNAPSHOT_BAD_MAC, ret_error);
        Reader rd = { .p = buf + 12, .avail = len - MAC_SIZE - 12, .left = len - MAC_SIZE - 12, .fd = -1 };
        return decode_records(&rd, boot_id, c, ret_counters, ret_error);
}

/* ---- files ---- */

struct IverSnapshotWrite {
        int dir_fd;
        IverAtomicFile f;
        char name[NAME_MAX + 1];
};

static IverSnapshotWrite *write_free(IverSnapshotWrite *w) {
        if (w) {
                if (w->dir_fd >= 0)
                        close(w->dir_fd);
                free(w);
        }
        return NULL;
}

int iver_snapshot_write_begin(const char *path, const IverCache *c, const IverLedgerCounters *counters,
                              const uint8_t boot_id[16], const uint8_t key[IVER_SNAPSHOT_KEY_SIZE],
                              IverSnapshotWrite **ret) {
        const char *name;
        IverSnapshotWrite *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->dir_fd = iver_open_dir_of(path, &name);
        if (w->dir_fd < 0 || strlen(name) > NAME_MAX) {
                int r = w->dir_fd < 0 ? w->dir_fd : -ENAMETOOLONG;
                w->dir_fd = -EBADF;
                write_free(w);
                return r;
        }
        strcpy(w->name, name);
        /* a new temporary (O_EXCL|O_NOFOLLOW) written as it is encoded */
        int r = iver_atomic_open(w->dir_fd, w->name, 0600, &w->f);
        if (r < 0) {
                write_free(w);
                return r;
        }
        /* the window at its full size at once: one allocation, never a realloc */
        Buf b = { .fd = w->f.fd, .cap = FLUSH_AT + RECORD_FIXED + IVER_CACHE_PATH_MAX + IVER_DIGEST_MAX };
        b.p = malloc(b.cap);
        r = b.p ? encode(c, counters, boot_id, key, &b) : -ENOMEM;
        free(b.p);
        if (r < 0) {
                (void) iver_atomic_commit(&w->f, w->name, 0600, 0, r); /* removes the temporary */
                write_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

int iver_snapshot_commit(IverSnapshotWrite *w) {
        int r = iver_atomic_commit(&w->f, w->name, 0600, IVER_WRITE_SYNC | IVER_WRITE_EXACT_MODE, 0);
        write_free(w);
        return r;
}

int iver_snapshot_write(const char *path, const IverCache *c, const IverLedgerCounters *counters,
                        const uint8_t boot_id[16], const uint8_t key[IVER_SNAPSHOT_KEY_SIZE]) {
        IverSnapshotWrite *w;
        int r = iver_snapshot_write_begin(path, c, counters, boot_id, key, &w);
        return r < 0 ? r : iver_snapshot_commit(w);
}

/* The MAC of fd's first len bytes, read through win. */
static int mac_file(int fd, uint64_t len, const uint8_t *key, uint8_t *win, size_t win_size, uint8_t out[MAC_SIZE]) {
        EVP_MAC_CTX *ctx = mac_new(key);
        size_t ml = 0;
        int r = ctx ? 0 : -ENOMEM;
        for (uint64_t off = 0; r == 0 && off < len;) {
                size_t k = (size_t) MIN(len - off, (uint64_t) win_size);
                r = iver_pread_full(fd, win, k, off, NULL);
                if (r == 0 && EVP_MAC_update(ctx, win, k) != 1)
                        r = -EIO;
                off += k;
        }
        if (r == 0 && (EVP_MAC_final(ctx, out, &ml, MAC_SIZE) != 1 || ml != MAC_SIZE))
                r = -EIO;
        EVP_MAC_CTX_free(ctx);
        return r;
}

int iver_snapshot_read(const char *path, const uint8_t boot_id[16], const uint8_t key[IVER_SNAPSHOT_KEY_SIZE],
                       IverCache *c, IverLedgerCounters *ret_counters, IverSnapshotError *ret_error) {
        _cleanup_close_ int fd = iver_open_regular(path, 0, NULL);
        if (fd == -ELOOP || fd == -EBADFD || fd == -EISDIR)
                return -EINVAL;
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        uint64_t len = (uint64_t) st.st_size;
        uint8_t head[12] = {}, m[MAC_SIZE], stored[MAC_SIZE];
        size_t got;
        int r = iver_pread_full(fd, head, sizeof(head), 0, &got); /* a short file: check_head says so */
        if (r < 0)
                return r;
        r = check_head(head, len, ret_error);
        if (r < 0)
                return r;
        /* a window, not the file: read twice, authenticated before interpreted */
        size_t win_size = READ_WINDOW;
        _cleanup_free_ uint8_t *win = malloc(win_size);
        if (!win)
                return -ENOMEM;
        r = mac_file(fd, len - MAC_SIZE, key, win, win_size, m);
        if (r < 0)
                return r;
        r = iver_pread_full(fd, stored, MAC_SIZE, len - MAC_SIZE, NULL);
        if (r < 0)
                return r;
        if (CRYPTO_memcmp(m, stored, MAC_SIZE) != 0)
                return fail(IVER_SNAPSHOT_BAD_MAC, ret_error);
        /* The second read is MAC'd too and must give the same MAC: bytes
         * that changed between the reads are not trusted (the caller drops
         * what was decoded). */
        Reader rd = { .p = win, .left = len - MAC_SIZE - 12, .fd = fd, .win = win, .win_size = win_size, .off = 12,
                      .mac = mac_new(key) };
        if (!rd.mac)
                return -ENOMEM;
        size_t ml = 0;
        if (EVP_MAC_update(rd.mac, head, sizeof(head)) != 1)
                r = -EIO;
        if (r >= 0)
                r = decode_records(&rd, boot_id, c, ret_counters, ret_error);
        if (r >= 0 && (EVP_MAC_final(rd.mac, m, &ml, MAC_SIZE) != 1 || ml != MAC_SIZE))
                r = -EIO;
        if (r >= 0 && CRYPTO_memcmp(m, stored, MAC_SIZE) != 0)
                r = fail(IVER_SNAPSHOT_BAD_MAC, ret_error);
        EVP_MAC_CTX_free(rd.mac);
        return r;
}
