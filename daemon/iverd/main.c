/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverd: command line, then the manager's loop. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "exit-status.h"
#include "log.h"
#include "manager.h"

static void help(void) {
        printf("Usage: iverd [OPTIONS]\n\n"
               "Integrity measurement daemon: measures the files its policy names, re-hashing only\n"
               "when a file's change cookie moves, and extends every new measurement into a TPM PCR.\n\n"
               "  --config FILE                 configuration (default %s)\n"
               "  --policy FILE|DIR             policy file or drop-in directory (overrides the default)\n"
               "  --socket PATH                 control socket\n"
               "  --runtime-dir DIR             measurement list, socket (default /run/iverd)\n"
               "  --state-dir DIR               persistent state (default /var/lib/iverd)\n"
               "  --tpm TCTI|none               TPM (e.g. device:/dev/tpmrm0, swtpm:path=…)\n"
               "  --pcr N|auto                  PCR to extend\n"
               "  --version-source auto|statx|ctime\n"
               "  --workers N                   hashing threads (default: one per CPU)\n"
               "  --on-access none|exec|open    also check files when they are executed / opened (fanotify)\n"
               "  -v, --verbose                 log every measurement\n"
               "  -h, --help                    this help\n",
               IVER_CONF_FILE);
}

/* A numeric option in [min, max]: 0, or -EINVAL with the message printed. */
static int parse_number(const char *opt, const char *arg, long min, long max, const char *expected, int *ret) {
        char *end;
        long v = strtol(arg, &end, 10);
        if (*arg == 0 || *end || v < min || v > max) {
                fprintf(stderr, "iverd: --%s: expected %s, got '%s'\n", opt, expected, arg);
                return -EINVAL;
        }
        *ret = (int) v;
        return 0;
}

/* The command line into o: 1 go on, 0 done (--help), -EINVAL a usage error (printed). */
static int parse_argv(int argc, char *argv[], Overrides *o) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "policy", required_argument, NULL, 'p' },
                { "socket", required_argument, NULL, 's' },
                { "runtime-dir", required_argument, NULL, 'R' },
                { "state-dir", required_argument, NULL, 'S' },
                { "tpm", required_argument, NULL, 't' },
                { "pcr", required_argument, NULL, 'P' },
                { "version-source", required_argument, NULL, 'V' },
                { "workers", required_argument, NULL, 'w' },
                { "on-access", required_argument, NULL, 'A' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "vh", options, NULL)) >= 0) {
                switch (c) {
                case 'c': o->config = optarg; break;
                case 'p': o->policy = optarg; break;
                case 's': o->socket = optarg; break;
                case 'R': o->runtime_dir = optarg; break;
                case 'S': o->state_dir = optarg; break;
                case 't': o->tpm = optarg; break;
                case 'P':
                        if (strcmp(optarg, "auto") == 0)
                                o->pcr = IVER_CONF_PCR_AUTO;
                        else if (parse_number("pcr", optarg, 0, 23, "0..23 or auto", &o->pcr) < 0)
                                return -EINVAL;
                        break;
                case 'V':
                        o->version_source = iver_version_mode_from_string(optarg);
                        if (o->version_source < 0) {
                                fprintf(stderr, "iverd: --version-source: expected auto, statx or ctime, got '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case 'w':
                        if (parse_number("workers", optarg, 1, 256, "1..256", &o->workers) < 0)
                                return -EINVAL;
                        break;
                case 'A':
                        o->on_access = iver_on_access_from_string(optarg);
                        if (o->on_access < 0) {
                                fprintf(stderr, "iverd: --on-access: expected none, exec or open, got '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case 'v': o->verbose = true; break;
                case 'h': help(); return 0;
                default: return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "iverd: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char *argv[]) {
        Overrides o = { .pcr = -2, .version_source = -1, .on_access = -1 };
        int r = parse_argv(argc, argv, &o);
        if (r <= 0)
                return r < 0 ? IVERD_EXIT_USAGE : IVERD_EXIT_OK;

        log_setup(o.verbose);
        /* Tables that grow (the cache's, the arena's chunks) are big blocks: fixed thresholds keep
         * them in their own mappings, returned to the kernel when freed. glibc's default raises the
         * mmap threshold to the size of the first big block freed, after which every doubling of a
         * table lands on the brk heap and leaves its old copy there as a hole the heap cannot give
         * back (test-scale, 50,000 files with no TPM: peak RSS 38 MB with the default, 19 MB so). */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        mallopt(M_TRIM_THRESHOLD, 256 * 1024);
        caps_drop_unneeded(); /* before manager_new() starts the worker threads: capabilities are per thread */
        Manager *m = NULL;
        IverdExit ex = IVERD_EXIT_FAILURE;
        r = manager_new(&o, &m, &ex);
        if (r < 0) {
                log_close();
                return ex; /* logged by manager_new */
        }
        r = manager_start(m);
        if (r >= 0) {
                r = manager_run(m);
                if (r < 0)
                        log_error_errno(r, "The event loop failed: %m");
        }
        manager_free(m);
        log_close();
        return r < 0 ? IVERD_EXIT_FAILURE : IVERD_EXIT_OK;
}
