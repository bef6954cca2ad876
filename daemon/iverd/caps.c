/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Capability dropping with the raw syscalls (no libcap dependency). */
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "log.h"

static const int keep[] = { CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_LEASE, CAP_SYS_ADMIN, CAP_AUDIT_WRITE };

void caps_drop_unneeded(void) {
        uint64_t mask = 0;
        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
                mask |= 1ULL << keep[i];

        for (int c = 0; c <= CAP_LAST_CAP; c++)
                if (!(mask & (1ULL << c)))
                        (void) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);

        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        if (syscall(SYS_capget, &h, d) < 0) {
                log_warning_errno(errno, "capget failed: %m; keeping capabilities");
                return;
        }
        uint64_t eff = ((uint64_t) d[1].effective << 32 | d[0].effective) & mask;
        uint64_t perm = ((uint64_t) d[1].permitted << 32 | d[0].permitted) & mask;
        d[0].effective = (uint32_t) eff;
        d[1].effective = (uint32_t) (eff >> 32);
        d[0].permitted = (uint32_t) perm;
        d[1].permitted = (uint32_t) (perm >> 32);
        d[0].inheritable = d[1].inheritable = 0;
        if (syscall(SYS_capset, &h, d) < 0)
                log_warning_errno(errno, "Failed to drop capabilities: %m");
        else
                log_debug("Capabilities reduced to 0x%llx", (unsigned long long) eff);
}
