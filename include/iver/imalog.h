/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iver/digest.h"

/* The IMA measurement list, byte for byte in the kernel's formats
 * (security/integrity/ima/ima_fs.c, ima_template_lib.c), so that evmctl,
 * Keylime-style verifiers and `iverctl verify` can replay it.
 *
 * Binary record (binary_runtime_measurements, x86 = little-endian):
 *   u32 pcr · 20-byte SHA-1 template digest · u32 name_len · name (no NUL)
 *   · u32 template_data_len · template_data
 * template_data is a sequence of fields, each u32 len · bytes:
 *   d-ng: "<algo>:" NUL digest            (ima-ng, ima-sig)
 *   n-ng: path NUL (len includes the NUL) (ima-ng, ima-sig)
 *   sig:  security.ima signature or empty (ima-sig)
 * Template digest of bank H = H(template_data) (field lengths hashed, the outer
 * template_data_len not). The list stores the SHA-1 one; a violation stores 20
 * zero bytes and extends every bank with all-0xFF.
 *
 * ASCII line (ascii_runtime_measurements), what ima_ascii_measurements_show prints:
 *   "%2d <sha1 template digest hex> <template> <algo>:<digest hex> <path>" [" <sig hex>"] "\n"
 * for ima-sig the separator before the signature is always printed, so an
 * entry without a signature ends in "<path> \n".
 *
 * Names: the kernel form, extended. ima_write_template_field_data() stores
 * a name with every ' ' replaced by '_' (in the template data itself, so the
 * binary list, the template digest and the ASCII line agree). We store every
 * name so that no name can break a line-based reader of the list: each byte
 * that is a space, a tab, '\n', '\r', any other C0 control or DEL becomes
 * '_', and so does each byte that is not part of valid (strict) UTF-8. A valid
 * multi-byte UTF-8 character is kept, except those a reader may split or strip
 * on or that change how a terminal shows the line: the C1 controls U+0080..
 * U+009F (U+0085 is a line break for Python's splitlines()), the Unicode white
 * space of Python's str.split()/strip() (U+00A0, U+1680, U+2000..U+200A,
 * U+202F, U+205F, U+3000), U+2028/U+2029 and the bidirectional controls
 * (U+200E, U+200F, U+202A..U+202E, U+2066..U+2069); each of their bytes
 * becomes '_'. So the stored name has the path's length, is valid UTF-8, holds
 * no byte below 0x21 and no DEL, and a line ends at its one '\n': the ASCII
 * list is split by " " (ima-ng: split(" ", 4); ima-sig: the signature after
 * the last " ") and by "\n" without ambiguity, and a name cannot forge a line.
 * The form loses information: "a b" and "a_b" are both listed as "a_b" (as
 * with the kernel); a verifier's allowlist must hold names in this form
 * (`iverctl policy export --keylime` does). Printable ASCII names without a
 * space are stored unchanged, byte for byte what the kernel stores.
 *
 * IVER_IMA_NAME_RAW stores the bytes as given instead (any byte but NUL): the
 * parsers use it, since a list read back keeps the names it holds (a kernel
 * list holds tabs and newlines raw), and tests that need exact round trips.
 *
 * What round-trips: binary — every stored name, every signature. ASCII — every
 * name in the kernel form. A raw name holding '\n' does not: the line breaks
 * and the ASCII parser rejects the broken fragments (their template digest
 * does not match), so a raw list cannot be read back from ASCII. */

#define IVER_IMA_TEMPLATE_DIGEST_SIZE 20   /* SHA-1, as the list stores it */
#define IVER_IMA_NAME_MAX 255              /* template name length we accept */
#define IVER_IMA_TEMPLATE_DATA_MAX (1U << 20)
#define IVER_IMA_SIG_MAX 4096
/* PCR indexes an entry may name: 0..23, the PCRs of a PC-client TPM 2.0
 * (what the TPM layer and the daemon accept). The parsers reject others: such
 * an entry could never replay to a PCR, and the ASCII form could not hold
 * every u32 (format detection relies on a first byte < 0x20 too). */
#define IVER_IMA_PCR_MAX 24

/* The templates iverd writes (ng, sig) and those it reads and replays from a
 * kernel's list (all four; iverd continues the kernel's list in PCR 10):
 *   ima-buf: d-ng|n-ng|buf, the buffer measured (a key, the kernel command
 *            line…), printed in hex after the name like ima-sig's signature;
 *   ima:     the legacy SHA-1 template d|n. Its binary record has no
 *            template_data_len; d is the 20-byte digest without "algo:" or a
 *            length, n is u32 strlen · name (no NUL); its template digest (and
 *            each bank's) is H(digest · name zero-padded to 256 bytes), no
 *            field lengths; the ASCII line shows the digest without "sha1:".
 *            Internally template_data holds the same d-ng/n-ng-shaped fields
 *            as the others (u32 20 · digest, u32 len · name NUL). */
typedef enum IverImaTemplate {
        IVER_IMA_TEMPLATE_NG,   /* "ima-ng": d-ng|n-ng */
        IVER_IMA_TEMPLATE_SIG,  /* "ima-sig": d-ng|n-ng|sig */
        IVER_IMA_TEMPLATE_BUF,  /* "ima-buf": d-ng|n-ng|buf (kernel lists only) */
        IVER_IMA_TEMPLATE_IMA,  /* "ima": d|n, SHA-1 (kernel lists only) */
        _IVER_IMA_TEMPLATE_MAX,
        _IVER_IMA_TEMPLATE_INVALID = -22, /* -EINVAL */
} IverImaTemplate;

enum {
        /* Store the name bytes as given, not in the kernel form (see above). */
        IVER_IMA_NAME_RAW = 1 << 0,
};

/* ---- lib/imalog-name.c: the kernel form of a name ---- */

/* Rewrite name (len bytes, any byte but NUL) in place into the kernel form
 * described above; the length does not change. */
void iver_imalog_name_kernel_form(char *name, size_t len);
/* Whether name is already in the kernel form (iver_imalog_name_kernel_form
 * would not change it). */
bool iver_imalog_name_is_kernel_form(const char *name, size_t len);

const char *iver_imalog_template_to_string(IverImaTemplate t);
IverImaTemplate iver_imalog_template_from_string(const char *s);

/* One entry. Immutable once built; all pointers point into template_data,
 * which the entry owns (one allocation an entry). */
typedef struct IverImaEntry {
        uint32_t pcr;
        IverImaTemplate template;
        bool violation;                 /* template digest all zero; extends 0xFF */
        uint8_t template_digest[IVER_IMA_TEMPLATE_DIGEST_SIZE];
        IverHashAlgo algo;              /* d-ng: file digest algorithm */
        const uint8_t *digest;          /* d-ng: file digest (zeros for a violation) */
        size_t digest_len;
        const char *path;               /* n-ng: NUL-terminated; may hold any other byte */
        size_t path_len;                /* without the NUL */
        const uint8_t *sig;             /* sig field (ima-sig), NULL if empty */
        size_t sig_len;
        const uint8_t *buf;             /* buf field (ima-buf), NULL if empty */
        size_t buf_len;
        size_t template_data_len;
        uint8_t template_data[];
} IverImaEntry;

/* Build an entry from a file digest (algo, digest of that algorithm's size),
 * a path (path_len bytes, no NUL inside; stored in the kernel form unless
 * flags holds IVER_IMA_NAME_RAW) and, for ima-sig, the file's
 * security.ima value: stored only when it is a signature (type 0x03
 * EVM_IMA_XATTR_DIGSIG or 0x06 IMA_VERITY_DIGSIG), else the field is empty,
 * as the kernel's ima_eventsig_init does. Computes the SHA-1 template digest. */
int iver_imalog_entry_new(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo,
                       const uint8_t *digest, size_t digest_len,
                       const char *path, size_t path_len,
                       const uint8_t *sig, size_t sig_len, unsigned flags,
                       IverImaEntry **ret);
/* An ima-buf entry (a kernel's buffer measurement: keys, the command line):
 * file digest of buf, name, buf itself. For tests and tools. */
int iver_imalog_entry_new_buf(uint32_t pcr, IverHashAlgo algo, const char *name, size_t name_len, const uint8_t *buf,
                              size_t buf_len, IverImaEntry **ret);
/* A legacy "ima" entry: a SHA-1 file digest and a name of at most 255 bytes. */
int iver_imalog_entry_new_ima(uint32_t pcr, const uint8_t digest[20], const char *name, size_t name_len,
                              IverImaEntry **ret);
/* A violation entry, as ima_add_violation records it: d-ng "<algo>:" NUL and
 * a zero digest of algo's size, the path, empty sig; template digest zero. */
int iver_imalog_entry_new_violation(IverImaTemplate template, uint32_t pcr, IverHashAlgo algo,
                                 const char *path, size_t path_len, unsigned flags,
                                 IverImaEntry **ret);
IverImaEntry *iver_imalog_entry_free(IverImaEntry *e);
/* Whether e is an entry for path: its name is path's kernel form (or, for a
 * list written with raw names, path itself). */
bool iver_imalog_entry_names(const IverImaEntry *e, const char *path, size_t len);
static inline void iver_imalog_entry_freep(IverImaEntry **e) {
        if (*e)
                *e = iver_imalog_entry_free(*e);
}

/* The digest bank `bank` is extended with for this entry: H_bank(template_data),
 * or all-0xFF for a violation. ret->len = iver_hash_algo_size(bank). */
int iver_imalog_entry_bank_digest(const IverImaEntry *e, IverHashAlgo bank, IverDigest *ret);
/* The kernel's form for a bank it has no hash for (no crypto driver for it
 * when IMA initialised: Debian's 6.1 kernel for sha384 and sha512): the
 * entry's SHA-1 template digest zero-padded to the bank's size
 * (ima_calc_field_array_hash), all-0xFF for a violation. Such a bank has
 * SHA-1's strength only. Equal to the bank digest for sha1. */
int iver_imalog_entry_padded_digest(const IverImaEntry *e, IverHashAlgo bank, IverDigest *ret);
/* One of the two, as `padded` says. */
int iver_imalog_entry_form_digest(const IverImaEntry *e, IverHashAlgo bank, bool padded, IverDigest *ret);

/* Binary record. size = exact encoded length. */
size_t iver_imalog_entry_binary_size(const IverImaEntry *e);
/* Encode into buf (at least iver_imalog_entry_binary_size() bytes); returns bytes written. */
int iver_imalog_entry_to_binary(const IverImaEntry *e, uint8_t *buf, size_t size);
/* Decode one record from the start of buf. Returns the number of bytes it
 * used (> 0); -ENODATA if buf ends inside the record (truncated: more bytes
 * are needed); -EBADMSG if the bytes are not a valid record (bad lengths,
 * fields, or a template digest that does not match the data);
 * -EOPNOTSUPP for a template other than the four above or an unknown hash. */
int iver_imalog_entry_from_binary(const uint8_t *buf, size_t size, IverImaEntry **ret);

/* The length a binary record at the start of buf claims (from its length
 * fields alone, nothing checked): -ENODATA if buf is too short to tell,
 * -EBADMSG if the lengths are out of range. */
int iver_imalog_entry_binary_extent(const uint8_t *buf, size_t size, size_t *ret);

/* ASCII line with the trailing '\n', NUL-terminated (ret_len excludes the NUL).
 * The stored name is printed as it is, as the kernel does (see above for a
 * raw name holding '\n'). */
int iver_imalog_entry_to_ascii(const IverImaEntry *e, char **ret, size_t *ret_len);
/* The same line written into buf, which holds iver_imalog_entry_ascii_size()
 * bytes (an upper bound); returns its length (without the NUL). */
size_t iver_imalog_entry_ascii_size(const IverImaEntry *e);
size_t iver_imalog_entry_ascii_put(const IverImaEntry *e, char *buf);
/* Parse one line (with or without its '\n'); checks the template digest.
 * Leading spaces before the PCR are allowed ("%2d"). -EBADMSG on bad syntax. */
int iver_imalog_entry_from_ascii(const char *line, size_t len, IverImaEntry **ret);

/* The in-memory list: entries in order (a list read back whole). The
 * kernel's dedup rule is kept by the live list (iver_imalog_file_contains). */
typedef struct IverImaLog IverImaLog;

int iver_imalog_new(IverImaLog **ret);
IverImaLog *iver_imalog_free(IverImaLog *l);
static inline void iver_imalog_freep(IverImaLog **l) {
        if (*l)
                *l = iver_imalog_free(*l);
}

size_t iver_imalog_size(const IverImaLog *l);
const IverImaEntry *iver_imalog_get(const IverImaLog *l, size_t i);
/* All entries in order (iver_imalog_size() of them); valid until the next push. */
const IverImaEntry *const *iver_imalog_entries(const IverImaLog *l);
/* Append e, which the list then owns (on failure the caller still does). */
int iver_imalog_push(IverImaLog *l, IverImaEntry *e);

/* Parse a whole buffer in one format, appending to l (no dedup). Returns 0
 * and in *ret_consumed the bytes of complete records: a final binary record
 * that ends past the buffer (or a final ASCII line without '\n') is not
 * consumed, so consumed < size tells the caller the tail is torn. A record
 * that does not decode is -EBADMSG (-EOPNOTSUPP for templates or algorithms
 * we do not know); the entries before it stay in l. */
int iver_imalog_parse_binary(IverImaLog *l, const uint8_t *buf, size_t size, size_t *ret_consumed);
int iver_imalog_parse_ascii(IverImaLog *l, const char *buf, size_t size, size_t *ret_consumed);

typedef enum IverImaFormat {
        IVER_IMA_FORMAT_BINARY,
        IVER_IMA_FORMAT_ASCII,
        _IVER_IMA_FORMAT_MAX,
        _IVER_IMA_FORMAT_INVALID = -22,
} IverImaFormat;

/* Guess the format from the first byte: a binary list starts with a u32 PCR
 * index (< 0x20), an ASCII one with ' ' or a digit. Empty: binary. */
IverImaFormat iver_imalog_format_detect(const uint8_t *buf, size_t size);

/* ---- lib/imalog-gap.c: the name of a restart-gap violation entry ---- */

/* When iverd starts on a boot whose list already exists (a restart, a
 * crash), it lists one violation entry named "iverd-gap:<start>-<end>":
 * Unix seconds from the last moment the previous run is known to have
 * watched to the start of this one; <start> is "unknown" when nothing
 * durable recorded it. No leading '/': it can never be a file's name. */
#define IVER_IMA_GAP_PREFIX "iverd-gap:"
#define IVER_IMA_GAP_NAME_MAX 64
/* Write the name into buf (IVER_IMA_GAP_NAME_MAX bytes); start < 0: unknown.
 * -EINVAL if end < start or a bound is out of range. */
int iver_imalog_gap_name(int64_t start, int64_t end, char buf[static IVER_IMA_GAP_NAME_MAX]);
/* 1 if name (len bytes, not NUL-terminated) is a gap entry's name, with
 * *ret_start (-1: unknown) and *ret_end; 0 if it is not (outputs untouched). */
int iver_imalog_gap_parse(const char *name, size_t len, int64_t *ret_start, int64_t *ret_end);

/* ---- lib/imalog-file.c: the list files in a runtime directory ---- */

#define IVER_IMA_BINARY_FILE "binary_runtime_measurements"
#define IVER_IMA_ASCII_FILE "ascii_runtime_measurements"

/* Read a whole list file (either format, detected), strict: a torn tail is
 * -EBADMSG too. For `iverctl log` / `iverctl verify`. */
int iver_imalog_load(const char *path, IverImaLog **ret);
/* Write the whole list to path (atomically: temp file + rename). */
int iver_imalog_save(const IverImaLog *l, const char *path, IverImaFormat format);

/* The live list of a daemon: binary_runtime_measurements (authoritative,
 * write-ahead) and its ASCII twin in dir. The entries live in the file, not
 * in memory: the file keeps a count, the PCRs used and a dedup index of a few
 * bytes an entry (lib/imalog-index.h); read entries back with an
 * IverImaReader on iver_imalog_file_fd(). */
typedef struct IverImaFile IverImaFile;

/* Open (creating the files, mode 0640, in the existing dir if missing; never
 * through a symlink: O_NOFOLLOW, the ASCII twin a new file renamed into
 * place; a binary list that is not a regular file is -EBADFD), read the
 * binary list back record by record to index it (no dedup, the order kept)
 * and make it durable. A torn trailing record left by a crash is cut off: a
 * last record that ends past EOF, a last record that does not decode (its
 * lengths reach EOF but the data never fully landed), or a tail of zero
 * bytes. A record that decodes is never cut. *ret_truncated (optional)
 * receives the bytes dropped. A bad record followed by more data is
 * corruption, not a torn write: -EBADMSG and nothing is changed. The ASCII
 * twin is rebuilt from the binary list; where the filesystem is full (no room
 * for the new file), in place: the old twin's lines written over themselves,
 * in its own blocks and the reservation past them (only a regular file of
 * ours with one name). */
int iver_imalog_file_open(const char *dir, IverImaFile **ret_file, size_t *ret_truncated);
IverImaFile *iver_imalog_file_free(IverImaFile *f);
static inline void iver_imalog_file_freep(IverImaFile **f) {
        if (*f)
                *f = iver_imalog_file_free(*f);
}
/* Append e to the binary file and fdatasync it: call before extending the
 * PCR (write-ahead). Then append the ASCII line (not synced: it is rebuilt on
 * open). If either write fails (a full directory), both files are cut back
 * to their previous length and the call fails: the ASCII list never misses
 * an entry the binary list (and so the PCR) has. */
int iver_imalog_file_append(IverImaFile *f, const IverImaEntry *e);
/* The same for n entries with one write and one fdatasync (a burst). */
int iver_imalog_file_append_many(IverImaFile *f, const IverImaEntry *const *e, size_t n);
/* The same without the fdatasync: the caller makes the binary list durable
 * (fdatasync of iver_imalog_file_fd(), from any thread) before extending. */
int iver_imalog_file_write_many(IverImaFile *f, const IverImaEntry *const *e, size_t n);
/* The binary list's fd (O_RDWR|O_APPEND; the file owns it). Other threads
 * may pread it and fdatasync it. */
int iver_imalog_file_fd(const IverImaFile *f);
/* -errno of the last ASCII twin write failure (which failed its append), 0 if none. */
int iver_imalog_file_ascii_error(const IverImaFile *f);
/* Bytes in the binary file. */
uint64_t iver_imalog_file_size(const IverImaFile *f);
/* Entries in the list. */
size_t iver_imalog_file_count(const IverImaFile *f);
/* The PCRs the list's entries name (bit n: PCR n). */
uint32_t iver_imalog_file_pcrs(const IverImaFile *f);
/* The kernel's dedup rule on the list: 1 if it holds an entry with e's
 * template digest for e's PCR, 0 if not (always for a violation), -errno if
 * the file could not be read. */
int iver_imalog_file_contains(const IverImaFile *f, const IverImaEntry *e);
/* Memory the list takes beyond the struct (its dedup index), in bytes. */
size_t iver_imalog_file_memory(const IverImaFile *f);
/* Keep bytes allocated beyond the end of each of the two files
 * (fallocate FALLOC_FL_KEEP_SIZE: their sizes, and so every reader, are
 * unchanged), extended a quarter of bytes at a time as the list grows, so
 * that another writer filling the filesystem cannot make the next append
 * fail while the reservation lasts; 0: none (the default). Establishes it
 * now (after open, whose cut of a torn tail or rebuilt ASCII twin may have
 * dropped an earlier one); each append extends it before writing, and the
 * append then writes into what is reserved even where the extension failed.
 * Returns 0, -ENOSPC (the filesystem is full: the reservation is short),
 * -EOPNOTSUPP (the filesystem cannot: no reservation from then on) or
 * another -errno, as iver_imalog_file_reserve_state() does afterwards. */
int iver_imalog_file_reserve(IverImaFile *f, uint64_t bytes);
/* The bytes reserved ahead now, the smaller of the two files'
 * (*ret_ahead), and how the last extension went (0, -ENOSPC, -EOPNOTSUPP,
 * -errno). */
int iver_imalog_file_reserve_state(const IverImaFile *f, uint64_t *ret_ahead);
/* A new read-only fd on the list file with its own file offset (O_CLOEXEC),
 * for a reader elsewhere (the log and quote verbs pass it to their client):
 * -ESTALE if the name no longer leads to the file being written. */
int iver_imalog_file_reopen(const IverImaFile *f);

/* ---- lib/imalog-reader.c: a binary list file, record by record ---- */

typedef struct IverImaReader IverImaReader;

/* Read the binary list in fd (not owned, never moved: pread only, so the fd
 * may be shared with a writer and other readers) from offset on. */
int iver_imalog_reader_new(int fd, uint64_t offset, IverImaReader **ret);
IverImaReader *iver_imalog_reader_free(IverImaReader *r);
static inline void iver_imalog_reader_freep(IverImaReader **r) {
        if (*r)
                *r = iver_imalog_reader_free(*r);
}
/* The next record, if it ends at or before byte end: 1 and *ret (the
 * caller's); 0 when the records end exactly at end (or EOF); -ENODATA when a
 * record starts but ends past end or EOF (torn); -EBADMSG / -EOPNOTSUPP as
 * iver_imalog_entry_from_binary; -errno when the file cannot be read. */
int iver_imalog_reader_next(IverImaReader *r, uint64_t end, IverImaEntry **ret);
/* The offset of the next record. */
uint64_t iver_imalog_reader_offset(const IverImaReader *r);
/* Go on reading at offset (a record boundary). */
void iver_imalog_reader_seek(IverImaReader *r, uint64_t offset);
/* The first size bytes of the binary list on fd in a new buffer; -EIO if
 * the file is shorter, -EFBIG if size does not fit in memory. */
int iver_imalog_read_prefix(int fd, uint64_t size, uint8_t **ret);

/* ---- lib/replay.c: expected PCR values ---- */

/* Replay the first n entries of l (those for pcr) into bank, starting from
 * zeros: v = H(v || bank digest). n larger than the list means all. */
int iver_imalog_replay(const IverImaLog *l, size_t n, uint32_t pcr, IverHashAlgo bank, IverDigest *ret);
/* The same over an array of n entries. */
int iver_imalog_replay_entries(const IverImaEntry *const *ents, size_t n, uint32_t pcr, IverHashAlgo bank,
                               IverDigest *ret);

/* One PCR value of one bank. */
typedef struct IverPcrValue {
        uint32_t pcr;
        IverDigest value;       /* value.algo is the bank */
} IverPcrValue;

/* The search for the prefix, one entry at a time (a list read from a file):
 * values as below; feed the entries in order. */
typedef struct IverImaPrefixMatch IverImaPrefixMatch;
int iver_imalog_prefix_match_new(const IverPcrValue *values, size_t n_values, IverImaPrefixMatch **ret);
IverImaPrefixMatch *iver_imalog_prefix_match_free(IverImaPrefixMatch *m);
static inline void iver_imalog_prefix_match_freep(IverImaPrefixMatch **m) {
        if (*m)
                *m = iver_imalog_prefix_match_free(*m);
}
/* Whether the entries fed so far (none: the empty prefix) replay to every value. */
bool iver_imalog_prefix_match_now(const IverImaPrefixMatch *m);
/* Take in the next entry: 1 if the entries through it replay to every value
 * (an entry of a PCR not among the values never ends a match), 0 if not,
 * -errno. */
int iver_imalog_prefix_match_feed(IverImaPrefixMatch *m, const IverImaEntry *e);
/* From now on (before the first feed) every value may also hold the
 * kernel's padded SHA-1 form of its bank (iver_imalog_entry_padded_digest):
 * each value matches in either, the form fixed per value over the whole
 * prefix, never mixed. */
void iver_imalog_prefix_match_allow_padded(IverImaPrefixMatch *m);
/* The values (bit i: values[i]) the entries fed so far match in the padded
 * form only. */
uint64_t iver_imalog_prefix_match_padded(const IverImaPrefixMatch *m);

/* The prefix of ents (a count of entries, 0..n) whose replay gives every one
 * of values[] (any PCRs, any banks; each (PCR, bank) at most once): the one
 * point of the list the PCRs hold. Give every PCR the list uses: an entry of a
 * PCR not among values moves no value, so it is never counted as extended
 * when it comes last (a later match takes it in). The longest matching prefix
 * wins. -ENOENT if no prefix matches: the PCRs and the list are out of sync. */
int iver_imalog_match_prefix_entries(const IverImaEntry *const *ents, size_t n, const IverPcrValue *values,
                                     size_t n_values, size_t *ret_prefix);
/* The same; with ret_padded, each value matching in its real or the
 * kernel's padded form (above): *ret_padded the values matched in the
 * padded form. */
int iver_imalog_match_prefix_any_form(const IverImaEntry *const *ents, size_t n, const IverPcrValue *values,
                                      size_t n_values, size_t *ret_prefix, uint64_t *ret_padded);
/* The same over l for one PCR (one IverDigest a bank): entries of other
 * PCRs after the last entry of pcr in the prefix are not counted. */
int iver_imalog_match_prefix(const IverImaLog *l, uint32_t pcr, const IverDigest *values, size_t n_values,
                              size_t *ret_prefix);

/* ---- lib/imalog-merge.c: two writers of one PCR (iverd and the kernel) ---- */

/* v = H(v || e's digest for bank v->algo) when e is an entry of pcr (else v
 * is left as it is). */
int iver_imalog_extend_value(IverDigest *v, const IverImaEntry *e, uint32_t pcr);
/* The longest prefix of the kernel's entries k[0..n) that, replayed from
 * start (one bank), gives value: *ret_n entries; -ENOENT if none (the PCR
 * holds an extend the entries do not explain). */
int iver_imalog_place_prefix(const IverDigest *start, const IverImaEntry *const *k, size_t n, uint32_t pcr,
                             const IverDigest *value, size_t *ret_n);
/* Where iverd's extend of e went among the kernel's entries k[0..n) (in the
 * kernel's order), the PCR having been start before the first of them: the
 * first j (fewest kernel entries before e) and then the longest run after it
 * such that replaying k[0..j) · e · k[j..through) from start gives value:
 * *ret_before = j, *ret_through = through. -ENOENT if no order gives value.
 * Byte-identical neighbours make orders equal, never a different list. */
int iver_imalog_place_entry(const IverDigest *start, const IverImaEntry *e, const IverImaEntry *const *k, size_t n,
                            uint32_t pcr, const IverDigest *value, size_t *ret_before, size_t *ret_through);
