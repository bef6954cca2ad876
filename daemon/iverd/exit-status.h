/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* iverd's exit status (man/iverd.8, EXIT STATUS): one value per kind of
 * failure, so that a unit or a script can tell a typo in the policy from a
 * missing TPM. The failure itself is in the log, once. */
typedef enum IverdExit {
        IVERD_EXIT_OK = 0,              /* clean stop (SIGTERM, SIGINT), --help */
        IVERD_EXIT_FAILURE = 1,         /* failure while running, or a start-up failure of the
                                         * daemon itself (out of memory, event loop, threads) */
        IVERD_EXIT_USAGE = 2,           /* bad command line */
        IVERD_EXIT_CONFIG = 3,          /* configuration or policy unreadable or invalid */
        IVERD_EXIT_DIRECTORY = 4,       /* runtime or state directory unusable or unsafe, control socket */
        IVERD_EXIT_EVIDENCE = 5,        /* measurement list, TPM setting or PCR choice */
} IverdExit;
