/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IMA measurement list entries in the kernel's binary and ASCII formats. The
 * one encoder and one decoder of each format live here (the in-memory list is
 * lib/imalog-list.c, the files lib/imalog-file.c); see include/iver/imalog.h
 * for the layout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "digest-internal.h"
#include "iver/imalog.h"
#include "macro.h"

/* security.ima types that the kernel's sig field records (evm_ima_xattr_type). */
#define EVM_IMA_XATTR_DIGSIG 0x03
#define IMA_VERITY_DIGSIG 0x06

static const char *const template_names[_IVER_IMA_TEMPLATE_MAX] = {
        [IVER_IMA_TEMPLATE_NG] = "ima-ng",
        [IVER_IMA_TEMPLATE_SIG] = "ima-sig",
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
        return t == IVER_IMA_TEMPLATE_SIG ? 3 : 2;
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

static bool all_zero(const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

static int hash_buf(IverHashAlgo algo, const uint8_t *data, size_t size, uint8_t *ret) {
        const EVP_MD *md = iver_hash_algo_md(algo);
        if (!md)
                return -EOPNOTSUPP;
        if (EVP_Digest(data, size, ret, NULL, md, NULL) != 1)
                return -EIO;
        return 0;
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

                if (i == 0) {           /* d-ng: "<algo>:" NUL digest */
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
                        e->path = (const char *) p;
                        e->path_len = len - 1;
                } else {                /* sig */
                        e->sig = len > 0 ? p : NULL;
                        e->sig_len = len;
                }
                p += len;
        }
        if (p != end)
                return -EBADMSG;
        return 0;
}

static int entry_build(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo,
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
        if (template != IVER_IMA_TEMPLATE_SIG || !sig)
                sig_len = 0;
        if (sig_len > IVER_IMA_SIG_MAX || path_len > IVER_IMA_TEMPLATE_DATA_MAX)
                return -E2BIG;

        alen = strlen(aname);
        digest_len = iver_hash_algo_size(algo);
        size = 4 + alen + 2 + digest_len + 4 + path_len + 1;
        if (template == IVER_IMA_TEMPLATE_SIG)
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
        put_le32(p, alen + 2 + digest_len);
        p += 4;
        memcpy(p, aname, alen);
        p[alen] = ':';
        p[alen + 1] = 0;
        p += alen + 2;
        if (!violation)
                memcpy(p, digest, digest_len);          /* else left zero */
        p += digest_len;

        put_le32(p, path_len + 1);
        p += 4;
        memcpy(p, path, path_len);
        if (!(flags & IVER_IMA_NAME_RAW))
                iver_imalog_name_kernel_form((char *) p, path_len);
        p += path_len + 1;                              /* NUL from calloc */

        if (template == IVER_IMA_TEMPLATE_SIG) {
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
                r = hash_buf(IVER_HASH_SHA1, e->template_data, e->template_data_len, e->template_digest);
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
        if (sig && sig_len > 0 && sig[0] != EVM_IMA_XATTR_DIGSIG && sig[0] != IMA_VERITY_DIGSIG)
                sig_len = 0;
        return entry_build(template, pcr, algo, digest, digest_len, path, path_len, sig, sig_len,
                           flags, false, ret);
}

int iver_imalog_entry_new_violation(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo,
                                    const char *path, size_t path_len, unsigned flags,
                                    IverImaEntry **ret) {
        return entry_build(template, pcr, algo, NULL, 0, path, path_len, NULL, 0, flags, true, ret);
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
                r = hash_buf(bank, e->template_data, e->template_data_len, d.bytes);
                if (r < 0)
                        return r;
        }
        *ret = d;
        return 0;
}

/* ---- binary ---- */

size_t iver_imalog_entry_binary_size(const IverImaEntry *e) {
        const char *name = iver_imalog_template_to_string(e->template);
        return 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE + 4 + strlen(name) + 4 + e->template_data_len;
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
        put_le32(p, e->template_data_len);
        p += 4;
        memcpy(p, e->template_data, e->template_data_len);
        return (int) n;
}

int iver_imalog_entry_binary_extent(const uint8_t *buf, size_t size, size_t *ret) {
        const size_t head = 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE + 4;
        uint32_t nlen, tlen;

        if (size < head)
                return -ENODATA;
        nlen = get_le32(buf + 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE);
        if (nlen == 0 || nlen > IVER_IMA_NAME_MAX)
                return -EBADMSG;
        if (size < head + nlen + 4)
                return -ENODATA;
        tlen = get_le32(buf + head + nlen);
        if (tlen > IVER_IMA_TEMPLATE_DATA_MAX)
                return -EBADMSG;
        *ret = head + nlen + 4 + tlen;
        return 0;
}

int iver_imalog_entry_from_binary(const uint8_t *buf, size_t size, IverImaEntry **ret) {
        const size_t head = 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE + 4;
        char name[IVER_IMA_NAME_MAX + 1];
        uint32_t nlen, tlen;
        size_t off;
        int r;

        if (size < head)
                return -ENODATA;
        nlen = get_le32(buf + 4 + IVER_IMA_TEMPLATE_DIGEST_SIZE);
        if (nlen == 0 || nlen > IVER_IMA_NAME_MAX)
                return -EBADMSG;
        if (size < head + nlen + 4)
                return -ENODATA;
        memcpy(name, buf + head, nlen);
        name[nlen] = 0;
        if (memchr(name, 0, nlen))
                return -EBADMSG;
        IverImaTemplate t = iver_imalog_template_from_string(name);
        if (t < 0)
                return -EOPNOTSUPP;     /* e.g. the legacy "ima" template */
        off = head + nlen;
        tlen = get_le32(buf + off);
        off += 4;
        if (tlen > IVER_IMA_TEMPLATE_DATA_MAX)
                return -EBADMSG;
        if (size - off < tlen)
                return -ENODATA;

        _cleanup_free_ IverImaEntry *e = calloc(1, sizeof(IverImaEntry) + tlen);
        if (!e)
                return -ENOMEM;
        e->pcr = get_le32(buf);
        if (e->pcr >= IVER_IMA_PCR_MAX)
                return -EBADMSG;
        e->template = t;
        memcpy(e->template_digest, buf + 4, IVER_IMA_TEMPLATE_DIGEST_SIZE);
        e->template_data_len = tlen;
        memcpy(e->template_data, buf + off, tlen);
        r = entry_parse_fields(e);
        if (r < 0)
                return r;

        if (all_zero(e->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE)) {
                /* A violation's template data is bound by nothing (every bank
                 * is extended with 0xFF): accept it only in the form
                 * ima_add_violation writes, a zero file digest, as the ASCII
                 * parser does. Otherwise any digest could ride on a zero
                 * template digest, and the ASCII twin would not parse back. */
                if (!all_zero(e->digest, e->digest_len))
                        return -EBADMSG;
                e->violation = true;
        } else {
                uint8_t h[IVER_IMA_TEMPLATE_DIGEST_SIZE];
                r = hash_buf(IVER_HASH_SHA1, e->template_data, tlen, h);
                if (r < 0)
                        return r;
                if (memcmp(h, e->template_digest, sizeof(h)) != 0)
                        return -EBADMSG;
        }
        *ret = TAKE_PTR(e);
        return (int) (off + tlen);
}

/* ---- ASCII ---- */

static char *hex_put(char *p, const uint8_t *b, size_t n) {
        static const char x[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                *p++ = x[b[i] >> 4];
                *p++ = x[b[i] & 15];
        }
        return p;
}

static int hex_get(const char *s, size_t n, uint8_t *out) {
        return iver_hex_decode(s, n, out, n / 2, NULL) < 0 ? -EBADMSG : 0;
}

int iver_imalog_entry_to_ascii(const IverImaEntry *e, char **ret, size_t *ret_len) {
        const char *tname = iver_imalog_template_to_string(e->template);
        const char *aname = iver_hash_algo_to_string(e->algo);
        size_t size;
        char *p;

        size = 12 + 1 + 2 * IVER_IMA_TEMPLATE_DIGEST_SIZE + 1 + strlen(tname) + 1 + strlen(aname) + 1 +
               2 * e->digest_len + 1 + e->path_len + 1 + 2 * e->sig_len + 2;
        _cleanup_free_ char *s = malloc(size);
        if (!s)
                return -ENOMEM;
        p = s + sprintf(s, "%2u ", e->pcr);
        p = hex_put(p, e->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE);
        p += sprintf(p, " %s %s:", tname, aname);
        p = hex_put(p, e->digest, e->digest_len);
        *p++ = ' ';
        memcpy(p, e->path, e->path_len);
        p += e->path_len;
        if (e->template == IVER_IMA_TEMPLATE_SIG) {
                *p++ = ' ';     /* printed even for an empty field */
                p = hex_put(p, e->sig, e->sig_len);
        }
        *p++ = '\n';
        *p = 0;
        if (ret_len)
                *ret_len = p - s;
        *ret = TAKE_PTR(s);
        return 0;
}

/* Next space-separated token of [*p, end); advances past one separator. */
static int token(const char **p, const char *end, const char **ret_tok, size_t *ret_len) {
        const char *s = *p, *sp = memchr(s, ' ', end - s);
        if (!sp || sp == s)
                return -EBADMSG;
        *ret_tok = s;
        *ret_len = sp - s;
        *p = sp + 1;
        return 0;
}

int iver_imalog_entry_from_ascii(const char *line, size_t len, IverImaEntry **ret) {
        const char *p = line, *end = line + len, *tok;
        uint8_t tdigest[IVER_IMA_TEMPLATE_DIGEST_SIZE], digest[IVER_DIGEST_MAX];
        char buf[IVER_IMA_NAME_MAX + 1];
        size_t tl;
        uint32_t pcr = 0;
        int r;

        if (len > 0 && end[-1] == '\n')
                end--;
        if (memchr(line, '\n', end - line))
                return -EBADMSG;
        while (p < end && *p == ' ')
                p++;
        r = token(&p, end, &tok, &tl);
        if (r < 0)
                return r;
        if (tl > 9)
                return -EBADMSG;
        for (size_t i = 0; i < tl; i++) {
                if (tok[i] < '0' || tok[i] > '9')
                        return -EBADMSG;
                pcr = pcr * 10 + (tok[i] - '0');
        }
        if (pcr >= IVER_IMA_PCR_MAX)
                return -EBADMSG;

        r = token(&p, end, &tok, &tl);
        if (r < 0)
                return r;
        if (tl != 2 * sizeof(tdigest) || hex_get(tok, tl, tdigest) < 0)
                return -EBADMSG;

        r = token(&p, end, &tok, &tl);
        if (r < 0)
                return r;
        if (tl > IVER_IMA_NAME_MAX)
                return -EBADMSG;
        memcpy(buf, tok, tl);
        buf[tl] = 0;
        IverImaTemplate t = iver_imalog_template_from_string(buf);
        if (t < 0)
                return -EOPNOTSUPP;

        /* "<algo>:<hex>" */
        r = token(&p, end, &tok, &tl);
        if (r < 0)
                return r;
        const char *colon = memchr(tok, ':', tl);
        if (!colon || (size_t) (colon - tok) >= sizeof(buf))
                return -EBADMSG;
        memcpy(buf, tok, colon - tok);
        buf[colon - tok] = 0;
        IverHashAlgo algo = iver_hash_algo_from_string(buf);
        if (algo < 0)
                return -EOPNOTSUPP;
        size_t hl = tl - (colon + 1 - tok), dlen = iver_hash_algo_size(algo);
        if (hl != 2 * dlen || hex_get(colon + 1, hl, digest) < 0)
                return -EBADMSG;

        /* The rest is the path; for ima-sig, then " " and the signature's hex
         * (empty for no signature): the path ends at the last space. */
        const char *path = p, *path_end = end;
        _cleanup_free_ uint8_t *sig = NULL;
        size_t sig_len = 0;
        if (t == IVER_IMA_TEMPLATE_SIG) {
                const char *sp = memrchr(p, ' ', end - p);
                if (!sp)
                        return -EBADMSG;
                path_end = sp;
                sig_len = (end - sp - 1) / 2;
                if (sig_len > IVER_IMA_SIG_MAX)
                        return -EBADMSG;
                if (sig_len > 0) {
                        sig = malloc(sig_len);
                        if (!sig)
                                return -ENOMEM;
                        if (hex_get(sp + 1, end - sp - 1, sig) < 0)
                                return -EBADMSG;
                }
        }
        if (memchr(path, 0, path_end - path))
                return -EBADMSG;

        bool violation = all_zero(tdigest, sizeof(tdigest));
        _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
        r = entry_build(t, pcr, algo, digest, dlen, path, path_end - path, sig, sig_len, IVER_IMA_NAME_RAW, violation,
                        &e);
        if (r == -E2BIG)
                return -EBADMSG;
        if (r < 0)
                return r;
        if (violation) {
                if (!all_zero(digest, dlen))
                        return -EBADMSG;
        } else if (memcmp(e->template_digest, tdigest, sizeof(tdigest)) != 0)
                return -EBADMSG;
        *ret = TAKE_PTR(e);
        return 0;
}

IverImaFormat iver_imalog_format_detect(const uint8_t *buf, size_t size) {
        if (size == 0 || buf[0] < 0x20)
                return IVER_IMA_FORMAT_BINARY;
        if (buf[0] == ' ' || (buf[0] >= '0' && buf[0] <= '9'))
                return IVER_IMA_FORMAT_ASCII;
        return _IVER_IMA_FORMAT_INVALID;
}

