/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverctl hash: offline, version-stable measurement of files. */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "iver/iver.h"
#include "iverctl.h"
#include "output.h"

static void print_json(const char *path, const IverCheckOutcome *o, const IverContext *ctx, IverHashAlgo algo) {
        char hex[2 * IVER_DIGEST_MAX + 1];
        IverCookieTable *t = iver_context_cookies((IverContext *) ctx);
        IverCookieSource src = iver_cookie_table_peek(t, o->id.dev);

        fputs("{\"path\":", stdout);
        json_string(stdout, path, strlen(path));
        printf(",\"result\":\"%s\"", iver_check_result_to_string(o->result));
        if (o->result == IVER_CHECK_MEASURED || o->result == IVER_CHECK_HIT)
                printf(",\"algo\":\"%s\",\"digest\":\"%s\"", iver_hash_algo_to_string(algo),
                       iver_digest_to_hex(&o->digest, hex));
        if (o->result == IVER_CHECK_MEASURED || o->result == IVER_CHECK_UNSTABLE)
                printf(",\"status\":\"%s\"", iver_measure_status_to_string(o->measure_status));
        if (o->result == IVER_CHECK_ERROR)
                printf(",\"error\":\"%s\"", strerror(-o->error));
        else
                printf(",\"identity\":{\"dev\":\"%u:%u\",\"ino\":%" PRIu64 ",\"generation\":%" PRIu64 "}",
                       o->id.dev >> 20, o->id.dev & 0xfffff, o->id.ino, o->id.gen);
        if (src >= 0 && (o->result == IVER_CHECK_MEASURED || o->result == IVER_CHECK_UNSTABLE))
                printf(",\"cookie\":{\"source\":\"%s\",\"ctime\":%" PRId64 ",\"mtime\":%" PRId64
                       ",\"size\":%" PRIu64 ",\"version\":%" PRIu64 "}",
                       iver_cookie_source_to_string(src), o->cookie.ctime, o->cookie.mtime, o->cookie.size,
                       o->cookie.version);
        fputs("}\n", stdout);
}

/* "iverctl hash: PATH: why" on stderr, the path escaped (a name cannot drive the terminal). */
static void warn_path(const char *path, const char *why) {
        fputs("iverctl hash: ", stderr);
        print_path(stderr, path);
        fprintf(stderr, ": %s\n", why);
}

/* Checks and prints one file; returns the exit code so far (ret) updated with its result. */
static int hash_one(IverContext *ctx, const char *path, bool json, IverHashAlgo algo, int ret) {
        IverCheckOutcome o;
        char hex[2 * IVER_DIGEST_MAX + 1];

        (void) iver_check(ctx, AT_FDCWD, path, &o);
        if (json)
                print_json(path, &o, ctx, algo);
        switch (o.result) {
        case IVER_CHECK_HIT:
        case IVER_CHECK_MEASURED:
                if (!json) {
                        printf("%s:%s  ", iver_hash_algo_to_string(algo), iver_digest_to_hex(&o.digest, hex));
                        print_path(stdout, path);
                        putchar('\n');
                }
                if (o.provisional)
                        warn_path(path, "provisional (no read lease: open writers or no permission)");
                break;
        case IVER_CHECK_NOT_REGULAR:
                warn_path(path, "not a regular file (or on a pseudo filesystem such as proc), not measured");
                if (ret == IVERCTL_EXIT_OK)
                        ret = IVERCTL_EXIT_NOT_REGULAR;
                break;
        case IVER_CHECK_UNSTABLE:
                warn_path(path, "kept changing while hashed, no digest");
                if (ret == IVERCTL_EXIT_OK)
                        ret = IVERCTL_EXIT_UNSTABLE;
                break;
        default:
                warn_path(path, strerror(-o.error));
                ret = IVERCTL_EXIT_FAILURE;
        }
        return ret;
}

int verb_hash(int argc, char *argv[]) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "algo", required_argument, NULL, 'a' },
                { "version-source", required_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        IverContextOptions opt = { .version_mode = IVER_VERSION_AUTO, .algo = IVER_HASH_SHA256 };
        bool json = false;
        int c, ret = IVERCTL_EXIT_OK;

        while ((c = getopt_long(argc, argv, "ja:h", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 'a':
                        opt.algo = iver_hash_algo_from_string(optarg);
                        if (opt.algo < 0 || !iver_hash_algo_available(opt.algo)) {
                                fprintf(stderr, "iverctl hash: unknown or unavailable hash algorithm '%s' "
                                                "(expected sha1, sha256, sha384, sha512 or sm3)\n", optarg);
                                return IVERCTL_EXIT_USAGE;
                        }
                        break;
                case 'v':
                        opt.version_mode = iver_version_mode_from_string(optarg);
                        if (opt.version_mode < 0) {
                                fprintf(stderr, "iverctl hash: bad --version-source '%s' (expected auto, statx or ctime)\n",
                                        optarg);
                                return IVERCTL_EXIT_USAGE;
                        }
                        break;
                case 'h':
                        printf("iverctl hash [--json] [--algo ALGO] [--version-source auto|statx|ctime] FILE…\n");
                        return IVERCTL_EXIT_OK;
                default:
                        return IVERCTL_EXIT_USAGE;
                }
        if (optind >= argc) {
                fprintf(stderr, "iverctl hash: no file given\n");
                return IVERCTL_EXIT_USAGE;
        }

        (void) iver_measure_prepare_signals();
        IverContext *ctx = NULL;
        int r = iver_context_new(&opt, &ctx);
        if (r < 0) {
                fprintf(stderr, "iverctl hash: %s\n", strerror(-r));
                return IVERCTL_EXIT_FAILURE;
        }
        for (int i = optind; i < argc; i++)
                ret = hash_one(ctx, argv[i], json, opt.algo, ret);
        iver_context_free(ctx);
        return ret;
}
