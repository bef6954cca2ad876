/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* After setup keep only what measuring needs: reading any file
 * (CAP_DAC_READ_SEARCH), O_NOATIME and leases on others' files (CAP_FOWNER,
 * CAP_LEASE), fanotify (CAP_SYS_ADMIN), audit records (CAP_AUDIT_WRITE).
 * Drops the rest from the effective, permitted and bounding sets. */
void caps_drop_unneeded(void);
