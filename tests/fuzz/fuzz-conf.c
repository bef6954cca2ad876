/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the configuration parser (iver_conf_load_string).
 * Any input either applies whole or fails with one error; on failure the
 * configuration must be exactly as before (all or nothing). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int streq0(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        IverConf c, before;
        if (iver_conf_init(&c) < 0)
                return 0;
        if (iver_conf_init(&before) < 0) {
                iver_conf_done(&c);
                return 0;
        }
        IverConfError e = {};
        int r = iver_conf_load_string(&c, "fuzz.conf", data, size, &e);
        if (r < 0) {
                char *s = NULL;
                if (iver_conf_error_format(&e, &s) == 0)
                        free(s);
                if (r == -EINVAL &&
                    (c.pcr != before.pcr || c.banks != before.banks || c.hash != before.hash ||
                     c.version_source != before.version_source || c.rescan_interval_usec != before.rescan_interval_usec ||
                     c.workers != before.workers || c.on_access != before.on_access ||
                     !streq0(c.tpm_tcti, before.tpm_tcti) || !streq0(c.runtime_directory, before.runtime_directory) ||
                     !streq0(c.state_directory, before.state_directory) || !streq0(c.socket_path, before.socket_path)))
                        abort(); /* a failed load changed the configuration */
        } else {
                if (c.pcr != IVER_CONF_PCR_AUTO && (c.pcr < 0 || c.pcr > 23))
                        abort();
                if (iver_hash_algo_size(c.hash) == 0)
                        abort();
                (void) iver_version_mode_to_string(c.version_source);
                (void) iver_on_access_to_string(c.on_access);
        }
        iver_conf_error_done(&e);
        iver_conf_done(&c);
        iver_conf_done(&before);
        return 0;
}
