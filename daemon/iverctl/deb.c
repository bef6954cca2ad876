/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The files a Debian binary package installs, read from its own archive
 * (deb(5): an ar archive of debian-binary, control.tar[.EXT], data.tar[.EXT])
 * with libarchive: the reference digests of `iverctl policy export --keylime
 * --from-deb` come from the package as its vendor built it, not from the disk
 * being attested.
 *
 * The data member is read as a stream out of the outer archive (nothing is
 * unpacked). Each entry is named as dpkg installs it ("./usr/bin/x" →
 * ROOT/usr/bin/x) in the kernel form of a list name, and hashed as iverd
 * measures it: a regular file's content, a symlink's target string
 * (lib/measure-link.c), a hard link as the file it names. Directories,
 * device nodes and FIFOs are not listed by iverd and are left out.
 *
 * Damage: libarchive checks the ar and tar headers (tar header checksums),
 * the lengths, and the compressed stream (xz's check, gzip's CRC); where the
 * package carries md5sums (dh_md5sums writes it for nearly every Debian
 * package) each file's MD5 is compared too, which also covers an
 * uncompressed member or a zstd frame written without a checksum. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "client.h"
#include "deb.h"
#include "deb-gzip.h"
#include "digest-internal.h"
#include "iver/imalog.h"
#include "iverctl.h"
#include "macro.h"
#include "output.h"

#define MD5SUMS_MAX (64U << 20) /* a package of ~500,000 files */

typedef struct Md5Sum {
        char *name; /* as in md5sums: "usr/bin/x" */
        uint8_t md5[16];
        bool seen;
} Md5Sum;

/* One member of the outer archive, the input of an inner one. */
typedef struct Member {
        struct archive *outer;
        GzCheck gz;
} Member;

typedef struct DebReader {
        const char *path;
        const EVP_MD *md;
        const char *root;
        DebContents *c;
        size_t first;   /* this package's first entry in c */
        Md5Sum *sums;
        size_t n_sums;
        Member member; /* the member being read */
} DebReader;

static void archive_freep(struct archive **a) {
        if (*a)
                archive_read_free(*a);
}

static void evp_md_ctx_freep(EVP_MD_CTX **c) {
        EVP_MD_CTX_free(*c);
}

__attribute__((format(printf, 2, 3))) static int deb_error(const char *path, const char *fmt, ...) {
        va_list ap;
        fputs("iverctl policy export: ", stderr);
        print_path(stderr, path);
        fputs(": ", stderr);
        _cleanup_free_ char *msg = NULL;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        /* the message may quote names from the archive: escaped as paths are */
        print_text(stderr, r < 0 ? "(out of memory)" : msg);
        fputc('\n', stderr);
        return IVERCTL_EXIT_FAILURE;
}

static int cmp_sum(const void *a, const void *b) {
        return strcmp(((const Md5Sum *) a)->name, ((const Md5Sum *) b)->name);
}

/* The archive name without "./" and leading slashes ("" for the root
 * directory), or NULL for a name dpkg would refuse (a ".." component). */
static const char *relative_name(const char *s) {
        if (s[0] == '.' && (s[1] == '/' || s[1] == 0))
                s++;
        while (*s == '/')
                s++;
        for (const char *p = s; p;) {
                if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == 0))
                        return NULL;
                p = strchr(p, '/');
                p = p ? p + 1 : NULL;
        }
        return s;
}

static void member_donep(Member **m) {
        if (*m)
                gz_check_done(&(*m)->gz);
}

static int member_open(Member *m, struct archive *outer, const char *name) {
        size_t n = strlen(name);
        *m = (Member) { .outer = outer };
        return n > 3 && strcmp(name + n - 3, ".gz") == 0 ? gz_check_init(&m->gz) : 0;
}

static la_ssize_t member_read(struct archive *inner, void *userdata, const void **buf) {
        Member *m = userdata;
        size_t size;
        la_int64_t offset;
        int r = archive_read_data_block(m->outer, buf, &size, &offset);
        if (r == ARCHIVE_EOF)
                return 0;
        if (r < ARCHIVE_OK) {
                archive_set_error(inner, archive_errno(m->outer) ?: EIO, "%s",
                                  archive_error_string(m->outer) ?: "read error");
                return -1;
        }
        if (gz_check_feed(&m->gz, *buf, size) < 0) {
                archive_set_error(inner, EILSEQ, "gzip stream damaged (deflate data, CRC-32 or length)");
                return -1;
        }
        return (la_ssize_t) size;
}

/* Why reading the inner archive a failed: libarchive's gzip reader reports
 * a source that fails as "truncated", so the check's finding comes first. */
static const char *why(const DebReader *d, struct archive *a) {
        if (d->member.gz.failed)
                return "gzip stream damaged (deflate data, CRC-32 or length)";
        return archive_error_string(a) ?: "read error";
}

/* The rest of the member after the tar's end marker: it must be there
 * (a truncated file fails here) and complete the gzip stream, whose
 * trailer comes after the last byte libarchive needed. NULL, or the reason. */
static const char *member_finish(Member *m) {
        for (;;) {
                const void *buf;
                size_t size;
                la_int64_t offset;
                int r = archive_read_data_block(m->outer, &buf, &size, &offset);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_OK)
                        return archive_error_string(m->outer) ?: "truncated";
                if (gz_check_feed(&m->gz, buf, size) < 0)
                        return "gzip stream damaged (deflate data, CRC-32 or length)";
        }
        return gz_check_complete(&m->gz) ? NULL : "gzip stream incomplete or damaged (CRC-32 or length)";
}

/* The tar inside member (named name) of outer, opened on d->member, in
 * *ret (set before any failure: the caller's cleanup frees it). what names
 * the member in the error ("control", "data"). 0, or iverctl's exit code. */
static int open_tar_member(DebReader *d, struct archive *outer, const char *name, const char *what,
                           struct archive **ret) {
        if (member_open(&d->member, outer, name) < 0)
                return oom();
        struct archive *a = archive_read_new();
        *ret = a;
        if (!a)
                return oom();
        archive_read_support_format_tar(a);
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_xz(a);
        archive_read_support_filter_lzma(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_filter_bzip2(a);
        if (archive_read_open(a, &d->member, NULL, member_read, NULL) != ARCHIVE_OK)
                return deb_error(d->path, "damaged %s member: %s", what, why(d, a));
        return 0;
}

/* A small member (debian-binary, md5sums) into memory, NUL-terminated. */
static int read_small(struct archive *a, la_int64_t size, size_t max, char **ret, size_t *ret_len) {
        if (size < 0 || (uint64_t) size > max)
                return -EFBIG;
        _cleanup_free_ char *buf = malloc((size_t) size + 1);
        if (!buf)
                return -ENOMEM;
        size_t have = 0;
        for (;;) {
                la_ssize_t n = archive_read_data(a, buf + have, (size_t) size - have);
                if (n < 0)
                        return -EIO;
                if (n == 0)
                        break;
                have += (size_t) n;
        }
        if (have != (size_t) size)
                return -EIO;
        buf[have] = 0;
        *ret_len = have;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* md5sums: "HEX32  path" lines (dpkg(1) --verify reads them the same way). */
static int parse_md5sums(DebReader *d, char *text, size_t len) {
        size_t lines = 1;
        for (size_t i = 0; i < len; i++)
                lines += text[i] == '\n';
        d->sums = calloc(lines, sizeof(Md5Sum));
        if (!d->sums)
                return oom();
        for (char *line = text, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (!*line)
                        continue; /* the end, or a blank line */
                size_t n;
                Md5Sum *s = &d->sums[d->n_sums];
                if (strlen(line) < 35 || line[32] != ' ' || line[33] != ' ' ||
                    iver_hex_decode(line, 32, s->md5, sizeof(s->md5), &n) < 0)
                        return deb_error(d->path, "damaged md5sums in the control member: \"%.40s\"", line);
                const char *name = relative_name(line + 34);
                if (!name || !*name)
                        return deb_error(d->path, "md5sums names an unsafe path");
                s->name = strdup(name);
                if (!s->name)
                        return oom();
                d->n_sums++;
        }
        qsort(d->sums, d->n_sums, sizeof(Md5Sum), cmp_sum);
        return 0;
}

static int read_control(DebReader *d, struct archive *outer, const char *member) {
        _cleanup_(member_donep) Member *m = &d->member;
        _cleanup_(archive_freep) struct archive *a = NULL;
        struct archive_entry *e;
        int r = open_tar_member(d, outer, member, "control", &a);
        if (r != 0)
                return r;
        while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
                const char *name = relative_name(archive_entry_pathname(e) ?: "");
                if (!name || strcmp(name, "md5sums") != 0 || archive_entry_filetype(e) != AE_IFREG)
                        continue;
                _cleanup_free_ char *text = NULL;
                size_t len;
                int k = read_small(a, archive_entry_size(e), MD5SUMS_MAX, &text, &len);
                if (k == -ENOMEM)
                        return oom();
                if (k < 0)
                        return deb_error(d->path, "control member: md5sums: %s",
                                         k == -EFBIG ? "too large" : why(d, a));
                k = parse_md5sums(d, text, len);
                if (k)
                        return k;
        }
        if (r != ARCHIVE_EOF)
                return deb_error(d->path, "damaged control member: %s", why(d, a));
        const char *why = member_finish(m);
        if (why)
                return deb_error(d->path, "damaged control member: %s", why);
        return 0;
}

static DebFile *add_file(DebReader *d, const char *rel) {
        DebContents *c = d->c;
        if (c->n == c->allocated) {
                size_t m = MAX(c->allocated * 2, (size_t) 64);
                DebFile *f = reallocarray(c->files, m, sizeof(DebFile));
                if (!f)
                        return NULL;
                c->files = f, c->allocated = m;
        }
        DebFile *f = &c->files[c->n];
        *f = (DebFile) {};
        if (asprintf(&f->name, "%s/%s", d->root, rel) < 0)
                return f->name = NULL, NULL;
        iver_imalog_name_kernel_form(f->name, strlen(f->name));
        c->n++;
        return f;
}

/* Hash a regular file's content (and its MD5 where md5sums has it). */
static int hash_content(DebReader *d, struct archive *a, struct archive_entry *e, const char *rel, DebFile *f) {
        _cleanup_(evp_md_ctx_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new(), *md5 = NULL;
        Md5Sum key = { .name = (char *) rel }, *sum = d->n_sums ? bsearch(&key, d->sums, d->n_sums, sizeof(Md5Sum), cmp_sum) : NULL;
        uint8_t buf[65536];
        uint64_t total = 0;
        if (!ctx || EVP_DigestInit_ex(ctx, d->md, NULL) != 1)
                return oom();
        if (sum && (!(md5 = EVP_MD_CTX_new()) || EVP_DigestInit_ex(md5, EVP_md5(), NULL) != 1))
                return oom();
        for (;;) {
                la_ssize_t n = archive_read_data(a, buf, sizeof(buf));
                if (n < 0)
                        return deb_error(d->path, "damaged data member at %s: %s", rel, why(d, a));
                if (n == 0)
                        break;
                total += (uint64_t) n;
                if (EVP_DigestUpdate(ctx, buf, (size_t) n) != 1 || (md5 && EVP_DigestUpdate(md5, buf, (size_t) n) != 1))
                        return oom();
        }
        if (archive_entry_size_is_set(e) && total != (uint64_t) archive_entry_size(e))
                return deb_error(d->path, "truncated data member at %s", rel);
        if (EVP_DigestFinal_ex(ctx, f->digest, NULL) != 1)
                return oom();
        if (md5) {
                uint8_t m[16];
                if (EVP_DigestFinal_ex(md5, m, NULL) != 1)
                        return oom();
                if (memcmp(m, sum->md5, sizeof(m)) != 0)
                        return deb_error(d->path, "damaged data member: %s does not have the MD5 the package's md5sums gives", rel);
                sum->seen = true;
                d->c->n_md5sums++;
        }
        return 0;
}

/* A hard link: the digest of the file it names, which the archive holds earlier. */
static int hash_hardlink(DebReader *d, const char *self, const char *target, DebFile *f) {
        const char *rel = relative_name(target);
        _cleanup_free_ char *name = NULL;
        if (!rel || asprintf(&name, "%s/%s", d->root, rel) < 0)
                return rel ? oom() : deb_error(d->path, "hard link to an unsafe path");
        iver_imalog_name_kernel_form(name, strlen(name));
        for (size_t i = d->c->n - 1; i-- > d->first;)
                if (!d->c->files[i].symlink && strcmp(d->c->files[i].name, name) == 0) {
                        memcpy(f->digest, d->c->files[i].digest, sizeof(f->digest));
                        d->c->n_hardlinks++;
                        /* md5sums lists both names with the same MD5 */
                        Md5Sum k1 = { .name = (char *) self }, k2 = { .name = (char *) rel };
                        Md5Sum *s1 = d->n_sums ? bsearch(&k1, d->sums, d->n_sums, sizeof(Md5Sum), cmp_sum) : NULL,
                               *s2 = d->n_sums ? bsearch(&k2, d->sums, d->n_sums, sizeof(Md5Sum), cmp_sum) : NULL;
                        if (s1 && s2 && memcmp(s1->md5, s2->md5, sizeof(s1->md5)) != 0)
                                return deb_error(d->path, "damaged data member: md5sums gives hard link %s another MD5 than %s",
                                                 self, rel);
                        if (s1)
                                s1->seen = true;
                        return 0;
                }
        return deb_error(d->path, "damaged data member: hard link to %s, which it does not hold before", rel);
}

static int read_entry(DebReader *d, struct archive *a, struct archive_entry *e) {
        const char *raw = archive_entry_pathname(e) ?: "", *rel = relative_name(raw);
        mode_t type = archive_entry_filetype(e);
        const char *hardlink = archive_entry_hardlink(e), *symlink = archive_entry_symlink(e);
        if (!rel)
                return deb_error(d->path, "data member names an unsafe path (a \"..\" component)");
        if (!*rel || type == AE_IFDIR)
                return 0;
        if (!hardlink && type != AE_IFREG && type != AE_IFLNK) {
                d->c->n_other++;
                return 0;
        }
        DebFile *f = add_file(d, rel);
        if (!f)
                return oom();
        if (hardlink)
                return hash_hardlink(d, rel, hardlink, f);
        if (type == AE_IFREG)
                return hash_content(d, a, e, rel, f);
        if (!symlink)
                return deb_error(d->path, "damaged data member: symlink %s without a target", rel);
        unsigned len = 0;
        if (EVP_Digest(symlink, strlen(symlink), f->digest, &len, d->md, NULL) != 1)
                return oom();
        f->symlink = true;
        d->c->n_symlinks++;
        return 0;
}

static int read_data(DebReader *d, struct archive *outer, const char *member) {
        _cleanup_(member_donep) Member *m = &d->member;
        _cleanup_(archive_freep) struct archive *a = NULL;
        struct archive_entry *e;
        int r = open_tar_member(d, outer, member, "data", &a);
        if (r != 0)
                return r;
        while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
                int k = read_entry(d, a, e);
                if (k)
                        return k;
        }
        if (r != ARCHIVE_EOF)
                return deb_error(d->path, "damaged data member: %s", why(d, a));
        const char *why = member_finish(m);
        if (why)
                return deb_error(d->path, "damaged data member: %s", why);
        for (size_t i = 0; i < d->n_sums; i++)
                if (!d->sums[i].seen)
                        return deb_error(d->path, "damaged data member: md5sums names %s, which it does not hold as a file",
                                         d->sums[i].name);
        return 0;
}

/* debian-binary: the format version, "2.x" (deb(5)). */
static int read_version(DebReader *d, struct archive *outer, struct archive_entry *e) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_small(outer, archive_entry_size(e), 64, &text, &len);
        if (r == -ENOMEM)
                return oom();
        if (r < 0 || len < 4 || strncmp(text, "2.", 2) != 0 || text[len - 1] != '\n')
                return deb_error(d->path, "not a Debian binary package of format 2.x (debian-binary)");
        return 0;
}

/* "data.tar" + what libarchive can undo; NULL for another name. */
static const char *data_compression(const char *name) {
        static const char *const ext[] = { "", ".gz", ".xz", ".zst", ".bz2", ".lzma" };
        if (strncmp(name, "data.tar", 8) != 0)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(ext); i++)
                if (strcmp(name + 8, ext[i]) == 0)
                        return i == 0 ? "none" : ext[i] + 1;
        return NULL;
}

static int read_members(DebReader *d, struct archive *outer) {
        struct archive_entry *e;
        bool have_data = false;
        int r;
        for (size_t i = 0; (r = archive_read_next_header(outer, &e)) == ARCHIVE_OK; i++) {
                const char *name = archive_entry_pathname(e), *z;
                if (!name)
                        return deb_error(d->path, "a member without a name");
                int k = 0;
                if (i == 0 && strcmp(name, "debian-binary") != 0)
                        return deb_error(d->path, "not a Debian binary package (its first member is not debian-binary)");
                if (i == 0)
                        k = read_version(d, outer, e);
                else if (strncmp(name, "control.tar", 11) == 0 && !have_data)
                        k = read_control(d, outer, name);
                else if ((z = data_compression(name))) {
                        if (have_data)
                                return deb_error(d->path, "two data members");
                        have_data = true;
                        snprintf(d->c->compression, sizeof(d->c->compression), "%s", z);
                        k = read_data(d, outer, name);
                } else if (strncmp(name, "data.tar", 8) == 0)
                        return deb_error(d->path, "data member %s: a compression iverctl cannot read", name);
                if (k)
                        return k;
        }
        if (r != ARCHIVE_EOF)
                return deb_error(d->path, "%s", archive_error_string(outer) ?: "read error");
        if (!have_data)
                return deb_error(d->path, "no data member (data.tar, data.tar.gz, .xz, .zst, .bz2, .lzma): "
                                          "truncated, or not a binary package");
        return 0;
}

int deb_read(const char *path, IverHashAlgo algo, const char *root, DebContents *c) {
        _cleanup_(archive_freep) struct archive *outer = archive_read_new();
        DebReader d = { .path = path, .md = iver_hash_algo_md(algo), .root = root, .c = c, .first = c->n };
        if (!outer)
                return oom();
        if (!d.md)
                return deb_error(path, "hash algorithm %s is not available", iver_hash_algo_to_string(algo));
        archive_read_support_format_ar(outer);
        int r = archive_read_open_filename(outer, path, 65536);
        if (r != ARCHIVE_OK && archive_errno(outer) > 0 && archive_errno(outer) != EILSEQ /* libarchive's format error */)
                r = deb_error(path, "cannot open: %s", strerror(archive_errno(outer)));
        else if (r != ARCHIVE_OK)
                r = deb_error(path, "not a Debian binary package: %s", archive_error_string(outer) ?: "cannot open");
        else
                r = read_members(&d, outer);
        for (size_t i = 0; i < d.n_sums; i++)
                free(d.sums[i].name);
        free(d.sums);
        return r;
}

void deb_contents_done(DebContents *c) {
        for (size_t i = 0; c && i < c->n; i++)
                free(c->files[i].name);
        if (c)
                free(c->files), *c = (DebContents) {};
}
