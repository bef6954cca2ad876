/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IMA measurement list entries in the kernel's ASCII format
 * (ascii_runtime_measurements): the one encoder and one decoder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "digest-internal.h"
#include "imalog-internal.h"
#include "iver/imalog.h"
#include "macro.h"


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

size_t iver_imalog_entry_ascii_size(const IverImaEntry *e) {
        return 12 + 1 + 2 * IVER_IMA_TEMPLATE_DIGEST_SIZE + 1 + strlen(iver_imalog_template_to_string(e->template)) + 1 +
               strlen(iver_hash_algo_to_string(e->algo)) + 1 + 2 * e->digest_len + 1 + e->path_len + 1 +
               2 * (e->sig_len + e->buf_len) + 2;
}

static char *str_put(char *p, const char *s) {
        size_t n = strlen(s);
        memcpy(p, s, n);
        return p + n;
}

size_t iver_imalog_entry_ascii_put(const IverImaEntry *e, char *buf) {
        char *p = buf;
        /* "%2u ": the kernel's PCR column */
        char num[12], *q = num + sizeof(num);
        uint32_t v = e->pcr;
        do
                *--q = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        if (num + sizeof(num) - q < 2)
                *p++ = ' ';
        memcpy(p, q, (size_t) (num + sizeof(num) - q));
        p += num + sizeof(num) - q;
        *p++ = ' ';
        p = hex_put(p, e->template_digest, IVER_IMA_TEMPLATE_DIGEST_SIZE);
        *p++ = ' ';
        p = str_put(p, iver_imalog_template_to_string(e->template));
        *p++ = ' ';
        if (e->template != IVER_IMA_TEMPLATE_IMA) { /* "ima": d is the hex digest alone */
                p = str_put(p, iver_hash_algo_to_string(e->algo));
                *p++ = ':';
        }
        p = hex_put(p, e->digest, e->digest_len);
        *p++ = ' ';
        memcpy(p, e->path, e->path_len);
        p += e->path_len;
        if (iver_imalog_has_extra(e->template)) {
                *p++ = ' ';     /* printed even for an empty field */
                p = e->template == IVER_IMA_TEMPLATE_SIG ? hex_put(p, e->sig, e->sig_len) : hex_put(p, e->buf, e->buf_len);
        }
        *p++ = '\n';
        *p = 0;
        return (size_t) (p - buf);
}

int iver_imalog_entry_to_ascii(const IverImaEntry *e, char **ret, size_t *ret_len) {
        char *s = malloc(iver_imalog_entry_ascii_size(e));
        if (!s)
                return -ENOMEM;
        size_t n = iver_imalog_entry_ascii_put(e, s);
        if (ret_len)
                *ret_len = n;
        *ret = s;
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

/* "<pcr>": decimal, below IVER_IMA_PCR_MAX. */
static int parse_pcr(const char **p, const char *end, uint32_t *ret_pcr) {
        const char *tok;
        size_t tl;
        uint32_t pcr = 0;
        int r;

        r = token(p, end, &tok, &tl);
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
        *ret_pcr = pcr;
        return 0;
}

/* The template digest's hex. */
static int parse_template_digest(const char **p, const char *end,
                                 uint8_t ret_tdigest[static IVER_IMA_TEMPLATE_DIGEST_SIZE]) {
        const char *tok;
        size_t tl;
        int r;

        r = token(p, end, &tok, &tl);
        if (r < 0)
                return r;
        if (tl != 2 * IVER_IMA_TEMPLATE_DIGEST_SIZE || hex_get(tok, tl, ret_tdigest) < 0)
                return -EBADMSG;
        return 0;
}

/* The template's name, one we know. */
static int parse_template(const char **p, const char *end, IverImaTemplate *ret_t) {
        char buf[IVER_IMA_NAME_MAX + 1];
        const char *tok;
        size_t tl;
        int r;

        r = token(p, end, &tok, &tl);
        if (r < 0)
                return r;
        if (tl > IVER_IMA_NAME_MAX)
                return -EBADMSG;
        memcpy(buf, tok, tl);
        buf[tl] = 0;
        IverImaTemplate t = iver_imalog_template_from_string(buf);
        if (t < 0)
                return -EOPNOTSUPP;
        *ret_t = t;
        return 0;
}

/* "<algo>:<hex>" ("ima": the SHA-1 hex alone) */
static int parse_file_digest(const char **p, const char *end, IverImaTemplate t, IverHashAlgo *ret_algo,
                             uint8_t ret_digest[static IVER_DIGEST_MAX], size_t *ret_dlen) {
        char buf[IVER_IMA_NAME_MAX + 1];
        const char *tok;
        size_t tl;
        int r;

        r = token(p, end, &tok, &tl);
        if (r < 0)
                return r;
        const char *colon = tok - 1;
        IverHashAlgo algo = IVER_HASH_SHA1;
        if (t != IVER_IMA_TEMPLATE_IMA) {
                colon = memchr(tok, ':', tl);
                if (!colon || (size_t) (colon - tok) >= sizeof(buf))
                        return -EBADMSG;
                memcpy(buf, tok, colon - tok);
                buf[colon - tok] = 0;
                algo = iver_hash_algo_from_string(buf);
                if (algo < 0)
                        return -EOPNOTSUPP;
        }
        size_t hl = tl - (colon + 1 - tok), dlen = iver_hash_algo_size(algo);
        if (hl != 2 * dlen || hex_get(colon + 1, hl, ret_digest) < 0)
                return -EBADMSG;
        *ret_algo = algo;
        *ret_dlen = dlen;
        return 0;
}

/* The rest is the path; for ima-sig, then " " and the signature's hex
 * (empty for no signature): the path ends at the last space. */
static int parse_path_and_extra(const char *p, const char *end, IverImaTemplate t, const char **ret_path_end,
                                uint8_t **ret_sig, size_t *ret_sig_len) {
        const char *path_end = end;
        _cleanup_free_ uint8_t *sig = NULL;
        size_t sig_len = 0;

        if (iver_imalog_has_extra(t)) {
                const char *sp = memrchr(p, ' ', end - p);
                if (!sp)
                        return -EBADMSG;
                path_end = sp;
                sig_len = (end - sp - 1) / 2;
                if (sig_len > (t == IVER_IMA_TEMPLATE_SIG ? IVER_IMA_SIG_MAX : IVER_IMA_TEMPLATE_DATA_MAX))
                        return -EBADMSG;
                if (sig_len > 0) {
                        sig = malloc(sig_len);
                        if (!sig)
                                return -ENOMEM;
                        if (hex_get(sp + 1, end - sp - 1, sig) < 0)
                                return -EBADMSG;
                }
        }
        if (memchr(p, 0, path_end - p))
                return -EBADMSG;
        *ret_path_end = path_end;
        *ret_sig = TAKE_PTR(sig);
        *ret_sig_len = sig_len;
        return 0;
}

int iver_imalog_entry_from_ascii(const char *line, size_t len, IverImaEntry **ret) {
        const char *p = line, *end = line + len;
        uint8_t tdigest[IVER_IMA_TEMPLATE_DIGEST_SIZE], digest[IVER_DIGEST_MAX];
        IverImaTemplate t;
        IverHashAlgo algo;
        size_t dlen;
        uint32_t pcr = 0;
        int r;

        if (len > 0 && end[-1] == '\n')
                end--;
        if (memchr(line, '\n', end - line))
                return -EBADMSG;
        while (p < end && *p == ' ')
                p++;
        r = parse_pcr(&p, end, &pcr);
        if (r < 0)
                return r;
        r = parse_template_digest(&p, end, tdigest);
        if (r < 0)
                return r;
        r = parse_template(&p, end, &t);
        if (r < 0)
                return r;
        r = parse_file_digest(&p, end, t, &algo, digest, &dlen);
        if (r < 0)
                return r;

        const char *path = p, *path_end;
        _cleanup_free_ uint8_t *sig = NULL;
        size_t sig_len = 0;
        r = parse_path_and_extra(p, end, t, &path_end, &sig, &sig_len);
        if (r < 0)
                return r;

        bool violation = iver_imalog_all_zero(tdigest, sizeof(tdigest));
        _cleanup_(iver_imalog_entry_freep) IverImaEntry *e = NULL;
        r = iver_imalog_entry_build(t, pcr, algo, digest, dlen, path, path_end - path, sig, sig_len, IVER_IMA_NAME_RAW, violation,
                        &e);
        if (r == -E2BIG || (r == -EINVAL && t == IVER_IMA_TEMPLATE_IMA))
                return -EBADMSG;
        if (r < 0)
                return r;
        if (violation && !iver_imalog_all_zero(digest, dlen))
                return -EBADMSG;
        r = iver_imalog_check_template_digest(e, tdigest);
        if (r < 0)
                return r;
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

