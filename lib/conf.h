/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdint.h>
#include "iver/cookie.h"   /* IverVersionMode */
#include "iver/digest.h"

/* Not a public header: every setting here is iverd's alone (iverctl and other
 * programs read none of them), so it is not installed with include/iver/;
 * the parser stays in libiver, pure logic with its unit test and fuzz target,
 * and iverd, the tests and the fuzzer include it from lib/.
 *
 * iverd.conf(5): systemd-style "[Section]" headers and "Key=value" lines.
 * A configuration starts from the built-in defaults (iver_conf_init());
 * each file applied over it changes only the keys it sets; a key set twice
 * keeps the last value. Command-line options of iverd are applied after the
 * files, by the daemon, straight into the fields. */

/* The sysconfdir the build was configured for (cmake/paths.cmake: /etc for a
 * /usr build, PREFIX/etc otherwise). */
#ifndef IVER_SYSCONFDIR
#define IVER_SYSCONFDIR "/etc"
#endif
#define IVER_CONF_FILE IVER_SYSCONFDIR "/iverd/iverd.conf"

typedef enum IverOnAccess {
        IVER_ON_ACCESS_NONE,
        IVER_ON_ACCESS_EXEC,
        IVER_ON_ACCESS_OPEN,
        _IVER_ON_ACCESS_MAX,
        _IVER_ON_ACCESS_INVALID = -22,
} IverOnAccess;

#define IVER_CONF_PCR_AUTO (-1)

typedef struct IverConf {
        /* [TPM] */
        char *tpm_tcti;              /* TCTI string; NULL means "none" (list only, no TPM) */
        int pcr;                     /* 0..23, or IVER_CONF_PCR_AUTO */
        uint32_t banks;              /* 1u << IverHashAlgo for each bank to extend */
        /* [Measure] */
        IverHashAlgo hash;           /* file digest algorithm of list entries */
        IverVersionMode version_source;
        uint64_t rescan_interval_usec; /* 0: no periodic rescan */
        unsigned workers;            /* 0: one per online CPU */
        IverOnAccess on_access;      /* default exec (iverd falls back to none where fanotify is missing) */
        uint64_t on_access_timeout_usec; /* bounded wait of an exec for its measurement */
        /* [Paths] */
        char *runtime_directory;
        char *state_directory;
        char *socket_path;
        /* [Appraise] */
        char *appraise_keys;         /* PEM/DER public keys or certificates, paths separated by spaces; NULL: none */
        char *appraise_keyring;      /* kernel keyring name (e.g. %keyring:_ima); NULL: none */
} IverConf;

#define IVER_CONF_DEFAULT_TCTI        "device:/dev/tpmrm0"
#define IVER_CONF_DEFAULT_RUNTIME_DIR "/run/iverd"
#define IVER_CONF_DEFAULT_STATE_DIR   "/var/lib/iverd"
#define IVER_CONF_DEFAULT_SOCKET      "/run/iverd/iverd.sock"
#define IVER_CONF_DEFAULT_RESCAN_USEC (3600ull * 1000000ull)
#define IVER_CONF_DEFAULT_ON_ACCESS_TIMEOUT_USEC (2ull * 1000000ull)
#define IVER_CONF_FILE_MAX            (1024u * 1024u)

/* Where a file went wrong: "FILE:LINE:COLUMN: message" through
 * iver_conf_error_format(). Line 0: the file as a whole (could not be read). */
typedef struct IverConfError {
        char *file;
        unsigned line;
        unsigned column;
        char *message;
} IverConfError;

void iver_conf_error_done(IverConfError *e);
int iver_conf_error_format(const IverConfError *e, char **ret);

/* Fill c with the built-in defaults. -ENOMEM. */
int iver_conf_init(IverConf *c);
void iver_conf_done(IverConf *c);

enum {
        IVER_CONF_LOAD_MISSING_OK = 1 << 0, /* a file that does not exist changes nothing */
};

/* Apply a file over c. All or nothing: c changes only when the whole file is
 * valid. Stops at the first error, which goes to *ret_error (when not NULL;
 * release with iver_conf_error_done()) and returns -EINVAL; other -errno when
 * the file cannot be read (also described in *ret_error), -ENOMEM. */
int iver_conf_load_file(IverConf *c, const char *path, unsigned flags, IverConfError *ret_error);
/* The same for text in memory; name is used in the error. */
int iver_conf_load_string(IverConf *c, const char *name, const void *data, size_t len, IverConfError *ret_error);

const char *iver_on_access_to_string(IverOnAccess a);
IverOnAccess iver_on_access_from_string(const char *s);
