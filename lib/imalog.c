/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IMA measurement list entries in the kernel's binary and ASCII formats. The
 * entries and their binary encoder and decoder live here, the ASCII ones in
 * lib/imalog-ascii.c (the in-memory list is lib/imalog-list.c, the files
 * lib/imalog-file.c); see include/iver/imalog.h for the layout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "digest-internal.h"
#include "iver/imalog.h"
#include "imalog-internal.h"
#include "macro.h"

/* security.ima types that the kernel's sig field records (evm_ima_xattr_type). */
#define EVM_IMA_XATTR_DIGSIG 0x03
#define IMA_VERITY_DIGSIG 0x06

static const char *const template_names[_IVER_IMA_TEMPLATE_MAX] = {
        [IVER_IMA_TEMPLATE_NG] = "ima-ng",
        [IVER_IMA_TEMPLATE_SIG] = "ima-sig",
        [IVER_IMA_TEMPLATE_BUF] = "ima-buf",
        [IVER_IMA_TEMPLATE_IMA] = "ima",
};


const char *iver_imalog_template_to_string(IverImaTemplate t) {
        if (t < 0 || t >= _IVER_IMA_TEMPLATE_MAX)
                return NULL;
        return template_names[t];
}

IverImaTemplate iver_imalog_template_from_string(const char *s) {
        for (IverImaTemplate t = 0; t < _IVER_IMA_TEMPLATE_MAX; t++)
                if (s && strcmp(s, template_names[t]) == 0)
                        return t;
        return _IVER_IMA_TEMPLATE_INVALID;
}

static unsigned template_fields(IverImaTemplate t) {
        return t == IVER_IMA_TEMPLATE_SIG || t == IVER_IMA_TEMPLATE_BUF ? 3 : 2;
}

/* The template's third field: ima-sig's signature or ima-buf's buffer. */
bool iver_imalog_has_extra(IverImaTemplate t) {
        return template_fields(t) == 3;
}

static void put_le32(uint8_t *p, uint32_t v) {
        p[0] = v & 0xff;
        p[1] = (v >> 8) & 0xff;
        p[2] = (v >> 16) & 0xff;
        p[3] = (v >> 24) & 0xff;
}

static uint32_t get_le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

bool iver_imalog_all_zero(const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

/* Point e's field pointers into its template_data; validates the fields.
 * -EBADMSG on malformed fields, -EOPNOTSUPP for an unknown digest algorithm. */
static int entry_parse_fields(IverImaEntry *e) {
        const uint8_t *p = e->template_data, *end = p + e->template_data_len;
        unsigned n = template_fields(e->template);

        for (unsigned i = 0; i < n; i++) {
                if ((size_t) (end - p) < 4)
                        return -EBADMSG;
                uint32_t len = get_le32(p);
                p += 4;
                if (len > (size_t) (end - p))
                        return -EBADMSG;

                if (i == 0 && e->template == IVER_IMA_TEMPLATE_IMA) {   /* d: a SHA-1 digest */
                        if (len != IMA_DIGEST_SIZE)
                                return -EBADMSG;
                        e->algo = IVER_HASH_SHA1;
                        e->digest = p;
                        e->digest_len = len;
                } else if (i == 0) {    /* d-ng: "<algo>:" NUL digest */
                        const uint8_t *nul = memchr(p, 0, len);
                        char name[32];
                        if (!nul || nul == p || nul[-1] != ':' || (size_t) (nul - p) > sizeof(name))
                                return -EBADMSG;
                        memcpy(name, p, nul - p - 1);
                        name[nul - p - 1] = 0;
                        if (strchr(name, ':'))          /* "ima:sha256:" (ima-ngv2) */
                                return -EOPNOTSUPP;
                        IverHashAlgo a = iver_hash_algo_from_string(name);
                        if (a < 0)
                                return -EOPNOTSUPP;
                        size_t dlen = len - (nul + 1 - p);
                        if (dlen != iver_hash_algo_size(a))
                                return -EBADMSG;
                        e->algo = a;
                        e->digest = nul + 1;
                        e->digest_len = dlen;
                } else if (i == 1) {    /* n-ng: path NUL */
                        if (len < 1 || p[len - 1] != 0 || memchr(p, 0, len - 1))
                                return -EBADMSG;
                        if (e->template == IVER_IMA_TEMPLATE_IMA && len > IMA_NAME_HASHED)
                                return -EBADMSG;
                        e->path = (const char *) p;
                        e->path_len = len - 1;
                } else if (e->template == IVER_IMA_TEMPLATE_SIG) {
                        e->sig = len > 0 ? p : NULL;
                        e->sig_len = len;
                } else {                /* buf */
                        e->buf = len > 0 ? p : NULL;
                        e->buf_len = len;
                }
                p += len;
        }
        if (p != end)
                return -EBADMSG;
        return 0;
}

/* H_algo of the entry's template data as the kernel hashes it
 * (ima_calc_field_array_hash): every field with its u32 length, or for the
 * "ima" template the digest and the name zero-padded to 256 bytes. */
static int template_hash(const IverImaEntry *e, IverHashAlgo algo, uint8_t *ret) {
        if (e->template != IVER_IMA_TEMPLATE_IMA)
                return iver_hash_buf(algo, e->template_data, e->template_data_len, ret);
        uint8_t b[IMA_DIGEST_SIZE + IMA_NAME_HASHED] = {};
        memcpy(b, e->digest, IMA_DIGEST_SIZE);
        memcpy(b + IMA_DIGEST_SIZE, e->path, e->path_len);
        return iver_hash_buf(algo, b, sizeof(b), ret);
}

int iver_imalog_entry_build(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo,
                       const uint8_t *digest, size_t digest_len,
                       const char *path, size_t path_len,
                       const uint8_t *sig, size_t sig_len,
                       unsigned flags, bool violation, IverImaEntry **ret) {
        const char *aname;
        size_t alen, size;

        if (template < 0 || template >= _IVER_IMA_TEMPLATE_MAX || pcr >= IVER_IMA_PCR_MAX)
                return -EINVAL;
        aname = iver_hash_algo_to_string(algo);
        if (!aname || iver_hash_algo_size(algo) == 0)
                return -EINVAL;
        if (!violation && (!digest || digest_len != iver_hash_algo_size(algo)))
                return -EINVAL;
        if (!path || memchr(path, 0, path_len))
                return -EINVAL;
        if (!iver_imalog_has_extra(template) || !sig)
                sig_len = 0;
        if ((template == IVER_IMA_TEMPLATE_SIG && sig_len > IVER_IMA_SIG_MAX) || path_len > IVER_IMA_TEMPLATE_DATA_MAX ||
            sig_len > IVER_IMA_TEMPLATE_DATA_MAX)
                return -E2BIG;
        if (template == IVER_IMA_TEMPLATE_IMA && (algo != IVER_HASH_SHA1 || path_len >= IMA_NAME_HASHED))
                return -EINVAL;

        /* "ima": d holds the digest alone */
        alen = template == IVER_IMA_TEMPLATE_IMA ? 0 : strlen(aname);
        digest_len = iver_hash_algo_size(algo);
        size = 4 + (alen ? alen + 2 : 0) + digest_len + 4 + path_len + 1;
        if (iver_imalog_has_extra(template))
                size += 4 + sig_len;
        if (size > IVER_IMA_TEMPLATE_DATA_MAX)
                return -E2BIG;

        _cleanup_free_ IverImaEntry *e = calloc(1, sizeof(IverImaEntry) + size);
        if (!e)
                return -ENOMEM;
        e->pcr = pcr;
        e->template = template;
        e->template_data_len = size;

        uint8_t *p = e->template_data;
        put_le32(p, (alen ? alen + 2 : 0) + digest_len);
        p += 4;
        if (alen) {
                memcpy(p, aname, alen);
                p[alen] = ':';
                p[alen + 1] = 0;
                p += alen + 2;
        }
        if (!violation)
                memcpy(p, digest, digest_len);          /* else left zero */
        p += digest_len;

        put_le32(p, path_len + 1);
        p += 4;
        memcpy(p, path, path_len);
        if (!(flags & IVER_IMA_NAME_RAW))
                iver_imalog_name_kernel_form((char *) p, path_len);
        p += path_len + 1;                              /* NUL from calloc */

        if (iver_imalog_has_extra(template)) {
                put_le32(p, sig_len);
                p += 4;
                if (sig_len > 0)
                        memcpy(p, sig, sig_len);
        }

        int r = entry_parse_fields(e);
        if (r < 0)
                return r;
        e->violation = violation;
        if (!violation) {
                r = template_hash(e, IVER_HASH_SHA1, e->template_digest);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(e);
        return 0;
}

int iver_imalog_entry_new(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo,
                          const uint8_t *digest, size_t digest_len,
                          const char *path, size_t path_len,
                          const uint8_t *sig, size_t sig_len, unsigned flags,
                          IverImaEntry **ret) {
        /* The kernel records only signatures in the sig field; a hash-type
         * security.ima leaves it empty. */
        if (template == IVER_IMA_TEMPLATE_SIG && sig && sig_len > 0 && sig[0] != EVM_IMA_XATTR_DIGSIG && sig[0] != IMA_VERITY_DIGSIG)
                sig_len = 0;
        return iver_imalog_entry_build(template, pcr, algo, digest, digest_len, path, path_len, sig, sig_len,
                           flags, false, ret);
}

int iver_imalog_entry_new_buf(uint32_t pcr, IverHashAlgo algo, const char *name, size_t name_len, const uint8_t *buf,
                              size_t buf_len, IverImaEntry **ret) {
        uint8_t d[IVER_DIGEST_MAX];
        int r = iver_hash_buf(algo, buf, buf_len, d);
        if (r < 0)
                return r;
        return iver_imalog_entry_build(IVER_IMA_TEMPLATE_BUF, pcr, algo, d, iver_hash_algo_size(algo), name, name_len, buf, buf_len,
                           0, false, ret);
}

int iver_imalog_entry_new_ima(uint32_t pcr, const uint8_t digest[20], const char *name, size_t name_len,
                              IverImaEntry **ret) {
        return iver_imalog_entry_build(IVER_IMA_TEMPLATE_IMA, pcr, IVER_HASH_SHA1, digest, IMA_DIGEST_SIZE, name, name_len, NULL, 0,
                           0, false, ret);
}

int iver_imalog_entry_new_violation(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo,
                                    const char *path, size_t path_len, unsigned flags,
                                    IverImaEntry **ret) {
        return iver_imalog_entry_build(template, pcr, algo, NULL, 0, path, path_len, NULL, 0, flags, true, ret);
}

IverImaEntry *iver_imalog_entry_free(IverImaEntry *e) {
        free(e);
        return NULL;
}

int iver_imalog_entry_bank_digest(const IverImaEntry *e, IverHashAlgo bank, IverDigest *ret) {
        IverDigest d = { .algo = bank };
        size_t n = iver_hash_algo_size(bank);
        int r;

        if (!e || n == 0)
                return -EINVAL;
        d.len = n;
        if (e->violation)
                memset(d.bytes, 0xff, n);
        else {
                r = template_hash(e, bank, d.bytes);
                if (r < 0)
                        return r;
        }
        *ret = d;
        return 0;
}

int iver_imalog_entry_padded_digest(const IverImaEntry *e, IverHashAlgo bank, IverDigest *ret) {
        IverDigest d = { .algo = bank };
        size_t n = iver_hash_algo_size(bank);

        if (!e || n < IMA_DIGEST_SIZE)
                return -EINVAL;
        d.len = n;
        if (e->violation)
                memset(d.bytes, 0xff, n);
        else {
                int r = template_hash(e, IVER_HASH_SHA1, d.bytes);
                if (r < 0)
                        return r;
        }
        *ret = d;
        return 0;
}

int iver_imalog_entry_form_digest(const IverImaEntry *e, IverHashAlgo bank, bool padded, IverDigest *ret) {
        return padded ? iver_imalog_entry_padded_digest(e, bank, ret) : iver_imalog_entry_bank_digest(e, bank, ret);
}

/* ---- binary ---- */

/* The "ima" template's binary record after its name: digest, u32 strlen,
 * name (ima_measurements_show: no template_data_len, no field length for d). */
static size_t ima_body_size(const IverImaEntry *e) {
        return IMA_DIGEST_SIZE + 4 + e->path_len;
}

size_t iver_imalog_entry_binary_size(const IverImaEntry *e) {
        const char *name = iver_imalog_template_to_string(e->template);
        size_t body = e->template == IVER_IMA_TEMPLATE_IMA ? ima_body_size(e) : 4 + e->template_data_len;
        return 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE + 4 + strlen(name) + body;
}

int iver_imalog_entry_to_binary(const IverImaEntry *e, uint8_t *buf, size_t size) {
        const char *name = iver_imalog_template_to_string(e->template);
        size_t n = iver_imalog_entry_binary_size(e), nlen = strlen(name);
        uint8_t *p = buf;

        if (size < n)
                return -ENOBUFS;
        put_le32(p, e->pcr);
        p += 4;
        memcpy(p, e->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE);
        p += IVER_IMA_TEMPLATE_DIGEST_SIZE;
        put_le32(p, nlen);
        p += 4;
        memcpy(p, name, nlen);
        p += nlen;
        if (e->template == IVER_IMA_TEMPLATE_IMA) {
                memcpy(p, e->digest, IMA_DIGEST_SIZE);
                put_le32(p + IMA_DIGEST_SIZE, e->path_len);
                memcpy(p + IMA_DIGEST_SIZE + 4, e->path, e->path_len);
                return (int) n;
        }
        put_le32(p, e->template_data_len);
        p += 4;
        memcpy(p, e->template_data, e->template_data_len);
        return (int) n;
}

/* One binary record's framing, checked the same way for every reader: the
 * header, the template name's length, the body's length field and bound.
 * "ima" records carry no template data length: their body is the SHA-1
 * digest, a name length and the name. */
typedef struct Frame {
        uint32_t pcr;
        const uint8_t *tdigest;
        const char *name;       /* the template name, name_len bytes, not terminated */
        size_t name_len;
        bool ima;
        size_t body, body_len;  /* the template data (for "ima": digest, length, name) */
} Frame;

static int frame_parse(const uint8_t *buf, size_t size, Frame *f) {
        const size_t head = 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE + 4;
        if (size < head)
                return -ENODATA;
        uint32_t nlen = get_le32(buf + 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE);
        if (nlen == 0 || nlen > IVER_IMA_NAME_MAX)
                return -EBADMSG;
        *f = (Frame) {
                .pcr = get_le32(buf),
                .tdigest = buf + 4,
                .name = (const char *) buf + head,
                .name_len = nlen,
                .ima = nlen == 3 && memcmp(buf + head, "ima", 3) == 0,
        };
        size_t len_at = head + nlen + (f->ima ? IMA_DIGEST_SIZE : 0);
        if (size < len_at + 4)
                return -ENODATA;
        uint32_t tlen = get_le32(buf + len_at);
        if (f->ima ? tlen >= IMA_NAME_HASHED : tlen > IVER_IMA_TEMPLATE_DATA_MAX)
                return -EBADMSG;
        f->body = f->ima ? head + nlen : len_at + 4;
        f->body_len = f->ima ? IMA_DIGEST_SIZE + 4 + tlen : tlen;
        return 0;
}

int iver_imalog_entry_binary_extent(const uint8_t *buf, size_t size, size_t *ret) {
        Frame f;
        int r = frame_parse(buf, size, &f);
        if (r < 0)
                return r;
        *ret = f.body + f.body_len;
        return 0;
}

/* A zero template digest is a violation, accepted only with a zero file
 * digest (as ima_add_violation writes it); otherwise the template digest must
 * be the data's. */
int iver_imalog_check_template_digest(IverImaEntry *e, const uint8_t *tdigest) {
        if (iver_imalog_all_zero(tdigest, IVER_IMA_TEMPLATE_DIGEST_SIZE)) {
                if (!iver_imalog_all_zero(e->digest, e->digest_len))
                        return -EBADMSG;
                e->violation = true;
                memset(e->template_digest, 0, IVER_IMA_TEMPLATE_DIGEST_SIZE);
                return 0;
        }
        if (memcmp(e->template_digest, tdigest, IVER_IMA_TEMPLATE_DIGEST_SIZE) != 0)
                return -EBADMSG;
        return 0;
}

/* The body of an "ima" record (framed by f: its name length is bounded). */
static int ima_from_binary(const uint8_t *buf, const Frame *f, IverImaEntry **ret) {
        char name[IMA_NAME_HASHED];
        IverImaEntry *e = NULL;
        const uint8_t *body = buf + f->body;
        size_t nlen = f->body_len - IMA_DIGEST_SIZE - 4;

        memcpy(name, body + IMA_DIGEST_SIZE + 4, nlen);
        if (memchr(name, 0, nlen))
                return -EBADMSG;
        if (f->pcr >= IVER_IMA_PCR_MAX)
                return -EBADMSG;
        bool zero = iver_imalog_all_zero(f->tdigest, IVER_IMA_TEMPLATE_DIGEST_SIZE);
        if (zero && !iver_imalog_all_zero(body, IMA_DIGEST_SIZE))
                return -EBADMSG;
        int r = iver_imalog_entry_build(IVER_IMA_TEMPLATE_IMA, f->pcr, IVER_HASH_SHA1, body, IMA_DIGEST_SIZE, name, nlen, NULL, 0,
                            IVER_IMA_NAME_RAW, zero, &e);
        if (r < 0)
                return r == -EINVAL || r == -E2BIG ? -EBADMSG : r;
        r = iver_imalog_check_template_digest(e, f->tdigest);
        if (r < 0) {
                iver_imalog_entry_free(e);
                return r;
        }
        *ret = e;
        return (int) (f->body + f->body_len);
}

int iver_imalog_entry_from_binary(const uint8_t *buf, size_t size, IverImaEntry **ret) {
        char name[IVER_IMA_NAME_MAX + 1];
        Frame f;
        int r = frame_parse(buf, size, &f);
        if (r < 0)
                return r;
        memcpy(name, f.name, f.name_len);
        name[f.name_len] = 0;
        if (memchr(name, 0, f.name_len))
                return -EBADMSG;
        IverImaTemplate t = iver_imalog_template_from_string(name);
        if (t < 0)
                return -EOPNOTSUPP;     /* e.g. ima-modsig, ima-ngv2 */
        if (size - f.body < f.body_len)
                return -ENODATA;
        if (t == IVER_IMA_TEMPLATE_IMA)
                return ima_from_binary(buf, &f, ret);
        size_t off = f.body, tlen = f.body_len;

        _cleanup_free_ IverImaEntry *e = calloc(1, sizeof(IverImaEntry) + tlen);
        if (!e)
                return -ENOMEM;
        e->pcr = f.pcr;
        if (e->pcr >= IVER_IMA_PCR_MAX)
                return -EBADMSG;
        e->template = t;
        memcpy(e->template_digest, f.tdigest, IVER_IMA_TEMPLATE_DIGEST_SIZE);
        e->template_data_len = tlen;
        memcpy(e->template_data, buf + off, tlen);
        r = entry_parse_fields(e);
        if (r < 0)
                return r;

        /* A violation's template data is bound by nothing (every bank is
         * extended with 0xFF): accept it only in the form ima_add_violation
         * writes, a zero file digest, as the ASCII parser does. Otherwise any
         * digest could ride on a zero template digest, and the ASCII twin
         * would not parse back. */
        uint8_t want[IVER_IMA_TEMPLATE_DIGEST_SIZE];
        memcpy(want, e->template_digest, sizeof(want));
        if (!iver_imalog_all_zero(want, sizeof(want))) {
                r = template_hash(e, IVER_HASH_SHA1, e->template_digest);
                if (r < 0)
                        return r;
        }
        r = iver_imalog_check_template_digest(e, want);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(e);
        return (int) (off + tlen);
}
