/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* iverctl exit codes, documented in iverctl(1). */
typedef enum IverctlExit {
        IVERCTL_EXIT_OK = 0,
        IVERCTL_EXIT_FAILURE = 1,       /* the operation failed (some file could not be hashed…), out of memory */
        IVERCTL_EXIT_USAGE = 2,         /* bad command line */
        IVERCTL_EXIT_NOT_REGULAR = 3,   /* hash: a named file is not a regular file */
        IVERCTL_EXIT_UNSTABLE = 4,      /* hash: a file kept changing while hashed */
        IVERCTL_EXIT_DAEMON = 5,        /* the daemon could not be reached or refused */
        IVERCTL_EXIT_VERIFY = 6,        /* verify: evidence did not verify */
} IverctlExit;

int verb_hash(int argc, char *argv[]);
int verb_status(int argc, char *argv[]);
int verb_stats(int argc, char *argv[]);
int verb_list(int argc, char *argv[]);
int verb_log(int argc, char *argv[]);
int verb_remeasure(int argc, char *argv[]);
int verb_rescan(int argc, char *argv[]);
int verb_reload(int argc, char *argv[]);
int verb_settle(int argc, char *argv[]);
int verb_quote(int argc, char *argv[]);
int verb_policy(int argc, char *argv[]);
int verb_policy_export(int argc, char *argv[]);
int verb_verify(int argc, char *argv[]);
int verb_explain(int argc, char *argv[]);
