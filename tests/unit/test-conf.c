/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iverd.conf: defaults, every key, empty values resetting to the default,
 * every error with its FILE:LINE:COLUMN, and all-or-nothing application. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "check-run.h"

static void apply_ok(IverConf *c, const char *text) {
        IverConfError e = {};
        int r = iver_conf_load_string(c, "t.conf", text, strlen(text), &e);
        ck_assert_msg(r == 0, "unexpected error: %s", e.message ? e.message : "(none)");
        ck_assert_ptr_null(e.message);
}

static char *apply_error(const char *text) {
        IverConf c;
        IverConfError e = {};
        char *m = NULL;
        ck_assert_int_eq(iver_conf_init(&c), 0);
        ck_assert_int_eq(iver_conf_load_string(&c, "t.conf", text, strlen(text), &e), -EINVAL);
        ck_assert_int_eq(iver_conf_error_format(&e, &m), 0);
        iver_conf_error_done(&e);
        iver_conf_done(&c);
        return m;
}

START_TEST(test_defaults) {
        IverConf c;
        ck_assert_int_eq(iver_conf_init(&c), 0);
        ck_assert_str_eq(c.tpm_tcti, "device:/dev/tpmrm0");
        ck_assert_int_eq(c.pcr, IVER_CONF_PCR_AUTO);
        ck_assert_uint_eq(c.banks, (1u << IVER_HASH_SHA1) | (1u << IVER_HASH_SHA256));
        ck_assert_int_eq(c.hash, IVER_HASH_SHA256);
        ck_assert_int_eq(c.version_source, IVER_VERSION_AUTO);
        ck_assert_uint_eq(c.rescan_interval_usec, 3600ull * 1000000ull);
        ck_assert_uint_eq(c.workers, 0);
        ck_assert_int_eq(c.on_access, IVER_ON_ACCESS_EXEC);
        ck_assert_uint_eq(c.on_access_timeout_usec, 2000000ull);
        ck_assert_str_eq(c.runtime_directory, "/run/iverd");
        ck_assert_str_eq(c.state_directory, "/var/lib/iverd");
        ck_assert_str_eq(c.socket_path, "/run/iverd/iverd.sock");
        iver_conf_done(&c);
        iver_conf_done(NULL);
}
END_TEST

START_TEST(test_every_key) {
        IverConf c;
        ck_assert_int_eq(iver_conf_init(&c), 0);
        apply_ok(&c,
                 "# comment\n"
                 "; also a comment\n"
                 "\n"
                 "[TPM]\n"
                 "TCTI = swtpm:host=127.0.0.1,port=2321\n"
                 "PCR=14\n"
                 "Banks=sha256, sha384 sha512\n"
                 "  [Measure]  \n"
                 "Hash=sha512\n"
                 "VersionSource=ctime\n"
                 "RescanIntervalSec=1h 30min\n"
                 "Workers=8\n"
                 "OnAccess=exec\n"
                 "[Paths]\n"
                 "RuntimeDirectory=/run/iverd-test\n"
                 "StateDirectory=/var/lib/iverd-test\r\n"
                 "Socket=/run/iverd-test/s.sock\n");
        ck_assert_str_eq(c.tpm_tcti, "swtpm:host=127.0.0.1,port=2321");
        ck_assert_int_eq(c.pcr, 14);
        ck_assert_uint_eq(c.banks, (1u << IVER_HASH_SHA256) | (1u << IVER_HASH_SHA384) | (1u << IVER_HASH_SHA512));
        ck_assert_int_eq(c.hash, IVER_HASH_SHA512);
        ck_assert_int_eq(c.version_source, IVER_VERSION_CTIME);
        ck_assert_uint_eq(c.rescan_interval_usec, 5400ull * 1000000ull);
        ck_assert_uint_eq(c.workers, 8);
        ck_assert_int_eq(c.on_access, IVER_ON_ACCESS_EXEC);
        ck_assert_str_eq(c.runtime_directory, "/run/iverd-test");
        ck_assert_str_eq(c.state_directory, "/var/lib/iverd-test");
        ck_assert_str_eq(c.socket_path, "/run/iverd-test/s.sock");

        /* A second file changes only what it sets; the last assignment wins; empty resets. */
        apply_ok(&c, "[TPM]\nTCTI=none\nPcr=auto\nPCR=7\n[Measure]\nWorkers=auto\nOnAccess=open\nVersionSource=statx\n"
                     "RescanIntervalSec=0\n[Paths]\nSocket=\n");
        ck_assert_ptr_null(c.tpm_tcti);
        ck_assert_int_eq(c.pcr, 7);
        ck_assert_uint_eq(c.workers, 0);
        ck_assert_int_eq(c.on_access, IVER_ON_ACCESS_OPEN);
        ck_assert_int_eq(c.version_source, IVER_VERSION_STATX);
        ck_assert_uint_eq(c.rescan_interval_usec, 0);
        ck_assert_str_eq(c.socket_path, "/run/iverd/iverd.sock");
        ck_assert_str_eq(c.runtime_directory, "/run/iverd-test");
        ck_assert_int_eq(c.hash, IVER_HASH_SHA512);

        apply_ok(&c, "[TPM]\nTCTI=\nBanks=\n[Measure]\nRescanIntervalSec=90\n");
        ck_assert_str_eq(c.tpm_tcti, "device:/dev/tpmrm0");
        ck_assert_uint_eq(c.banks, (1u << IVER_HASH_SHA1) | (1u << IVER_HASH_SHA256));
        ck_assert_uint_eq(c.rescan_interval_usec, 90ull * 1000000ull);
        apply_ok(&c, "[Measure]\nRescanIntervalSec=2d\n");
        ck_assert_uint_eq(c.rescan_interval_usec, 2ull * 86400 * 1000000ull);
        apply_ok(&c, "[Measure]\nRescanIntervalSec=500ms\n");
        ck_assert_uint_eq(c.rescan_interval_usec, 500000ull);
        apply_ok(&c, "");
        ck_assert_uint_eq(c.rescan_interval_usec, 500000ull);
        apply_ok(&c, "[Measure]\nOnAccessTimeoutSec=250ms\n");
        ck_assert_uint_eq(c.on_access_timeout_usec, 250000ull);
        apply_ok(&c, "[Measure]\nOnAccessTimeoutSec=\n");
        ck_assert_uint_eq(c.on_access_timeout_usec, 2000000ull);
        iver_conf_done(&c);
}
END_TEST

static const struct {
        const char *text, *error;
} error_cases[] = {
        { "Workers=4\n", "t.conf:1:1: key 'Workers' outside a section, expected a [Section] header first" },
        { "[TPM]\n[Daemon]\n", "t.conf:2:1: unknown section '[Daemon]', expected [TPM], [Measure], [Paths] or [Appraise]" },
        { "[TPM\n", "t.conf:1:4: section header without ']', expected [TPM], [Measure], [Paths] or [Appraise]" },
        { "[TPM]\nbogus line\n", "t.conf:2:1: 'bogus line' is not Key=value, expected a key such as Workers=4" },
        { "[TPM]\nWorkers=4\n", "t.conf:2:1: unknown key 'Workers' in [TPM], expected TCTI=, PCR= or Banks=" },
        { "[Measure]\n  TCTI=none\n",
          "t.conf:2:3: unknown key 'TCTI' in [Measure], expected Hash=, VersionSource=, RescanIntervalSec=, Workers=, OnAccess= or OnAccessTimeoutSec=" },
        { "[Measure]\nOnAccessTimeoutSec=0\n",
          "t.conf:2:20: on-access timeout '0' out of range, expected 1ms to 10min (e.g. 2s or 500ms)" },
        { "[Paths]\nSocketPath=/x\n",
          "t.conf:2:1: unknown key 'SocketPath' in [Paths], expected RuntimeDirectory=, StateDirectory= or Socket=" },
        { "[TPM]\nTCTI=device /dev/tpm0\n",
          "t.conf:2:6: invalid TCTI 'device /dev/tpm0', expected none or NAME[:CONFIG] such as device:/dev/tpmrm0" },
        { "[TPM]\nPCR=24\n", "t.conf:2:5: invalid PCR '24', expected auto or a number from 0 to 23" },
        { "[TPM]\nPCR = ten\n", "t.conf:2:7: invalid PCR 'ten', expected auto or a number from 0 to 23" },
        { "[TPM]\nBanks=sha256 md5\n", "t.conf:2:14: unknown bank 'md5', expected sha1, sha256, sha384, sha512 or sm3" },
        { "[TPM]\nBanks= , \n", "t.conf:2:8: no bank in ',', expected one or more of sha1, sha256, sha384, sha512 and sm3" },
        { "[Measure]\nHash=crc32\n", "t.conf:2:6: unknown hash algorithm 'crc32', expected sha1, sha256, sha384, sha512 or sm3" },
        { "[Measure]\nVersionSource=mtime\n", "t.conf:2:15: invalid version source 'mtime', expected auto, statx or ctime" },
        { "[Measure]\nRescanIntervalSec=1 fortnight\n",
          "t.conf:2:19: invalid time span '1 fortnight', expected seconds or a span such as 90s, 15min or 1h" },
        { "[Measure]\nRescanIntervalSec=-5\n",
          "t.conf:2:19: invalid time span '-5', expected seconds or a span such as 90s, 15min or 1h" },
        { "[Measure]\nWorkers=0\n", "t.conf:2:9: invalid worker count '0', expected auto or a number from 1 to 1024" },
        { "[Measure]\nWorkers=4096\n", "t.conf:2:9: invalid worker count '4096', expected auto or a number from 1 to 1024" },
        { "[Measure]\nOnAccess=write\n", "t.conf:2:10: invalid on-access mode 'write', expected none, exec or open" },
        { "[Paths]\nRuntimeDirectory=run/iverd\n",
          "t.conf:2:18: path 'run/iverd' is not absolute, expected a path starting with '/'" },
        { "[Paths]\nStateDirectory=/var/../etc\n",
          "t.conf:2:16: path '/var/../etc' has a '..' component, expected a canonical path" },
        { "[Paths]\nSocket=/run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\n",
          "t.conf:2:8: path '/run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock' is longer than 107 bytes, expected a shorter path" },
};

START_TEST(test_error_messages) {
        for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
                char *m = apply_error(error_cases[i].text);
                ck_assert_msg(strcmp(m, error_cases[i].error) == 0, "case %zu:\n got: %s\nwant: %s", i, m, error_cases[i].error);
                free(m);
        }
        static const char nul[] = "[TPM]\nPCR=1\0\n";
        IverConf c;
        IverConfError e = {};
        ck_assert_int_eq(iver_conf_init(&c), 0);
        ck_assert_int_eq(iver_conf_load_string(&c, "t.conf", nul, sizeof nul - 1, &e), -EINVAL);
        ck_assert_uint_eq(e.line, 2);
        ck_assert_uint_eq(e.column, 6);
        ck_assert_str_eq(e.message, "NUL byte, expected text");
        iver_conf_error_done(&e);
        /* NULL error pointer is allowed. */
        ck_assert_int_eq(iver_conf_load_string(&c, "t.conf", "x", 1, NULL), -EINVAL);
        iver_conf_done(&c);
}
END_TEST

START_TEST(test_all_or_nothing) {
        IverConf c;
        IverConfError e = {};
        const char *text = "[Measure]\nWorkers=3\nHash=sha1\n[Paths]\nSocket=relative\n";
        ck_assert_int_eq(iver_conf_init(&c), 0);
        ck_assert_int_eq(iver_conf_load_string(&c, "t.conf", text, strlen(text), &e), -EINVAL);
        ck_assert_uint_eq(e.line, 5);
        ck_assert_uint_eq(c.workers, 0);
        ck_assert_int_eq(c.hash, IVER_HASH_SHA256);
        ck_assert_str_eq(c.socket_path, "/run/iverd/iverd.sock");
        iver_conf_error_done(&e);
        iver_conf_done(&c);
}
END_TEST

START_TEST(test_files) {
        char dir[] = "/tmp/test-conf-XXXXXX", path[64], missing[64];
        IverConf c;
        IverConfError e = {};
        char *m = NULL;
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/iverd.conf", dir);
        snprintf(missing, sizeof missing, "%s/none.conf", dir);
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs("[TPM]\nPCR=16\n[Measure]\nWorkers=x\n", f);
        ck_assert_int_eq(fclose(f), 0);

        ck_assert_int_eq(iver_conf_init(&c), 0);
        ck_assert_int_eq(iver_conf_load_file(&c, path, 0, &e), -EINVAL);
        ck_assert_int_eq(iver_conf_error_format(&e, &m), 0);
        char want[256];
        snprintf(want, sizeof want, "%s:4:9: invalid worker count 'x', expected auto or a number from 1 to 1024", path);
        ck_assert_str_eq(m, want);
        free(m);
        iver_conf_error_done(&e);
        ck_assert_int_eq(c.pcr, IVER_CONF_PCR_AUTO);

        f = fopen(path, "we");
        fputs("[TPM]\nPCR=16\n", f);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(iver_conf_load_file(&c, path, 0, &e), 0);
        ck_assert_int_eq(c.pcr, 16);

        ck_assert_int_eq(iver_conf_load_file(&c, missing, IVER_CONF_LOAD_MISSING_OK, &e), 0);
        ck_assert_int_eq(iver_conf_load_file(&c, missing, 0, &e), -ENOENT);
        ck_assert_int_eq(iver_conf_error_format(&e, &m), 0);
        snprintf(want, sizeof want, "%s: cannot open: No such file or directory, expected a readable configuration file", missing);
        ck_assert_str_eq(m, want);
        free(m);
        iver_conf_error_done(&e);
        ck_assert_int_eq(iver_conf_load_file(&c, dir, 0, &e), -EISDIR);
        iver_conf_error_done(&e);
        ck_assert_int_eq(c.pcr, 16);
        iver_conf_done(&c);
        unlink(path);
        rmdir(dir);
}
END_TEST

START_TEST(test_enum_names) {
        for (int i = 0; i < _IVER_VERSION_MAX; i++)
                ck_assert_int_eq(iver_version_mode_from_string(iver_version_mode_to_string(i)), i);
        for (int i = 0; i < _IVER_ON_ACCESS_MAX; i++)
                ck_assert_int_eq(iver_on_access_from_string(iver_on_access_to_string(i)), i);
        ck_assert_int_eq(iver_version_mode_from_string("x"), _IVER_VERSION_INVALID);
        ck_assert_int_eq(iver_on_access_from_string(NULL), _IVER_ON_ACCESS_INVALID);
        ck_assert_ptr_null(iver_on_access_to_string(_IVER_ON_ACCESS_MAX));
}
END_TEST

int main(void) {
        Suite *s = suite_create("conf");
        TCase *tc = tcase_create("conf");
        tcase_add_test(tc, test_defaults);
        tcase_add_test(tc, test_every_key);
        tcase_add_test(tc, test_error_messages);
        tcase_add_test(tc, test_all_or_nothing);
        tcase_add_test(tc, test_files);
        tcase_add_test(tc, test_enum_names);
        suite_add_tcase(s, tc);

        return iver_run_suite(s);
}
