/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Between the manager's lifecycle (manager.c) and its scans (manager-scan.c). */
#include "manager.h"

/* The service manager's status line: the initial scan's progress, then what
 * is watched and cached. */
void manager_send_status(Manager *m);
/* The status timer (1 s: status line, watchdog) and the periodic rescan. */
int manager_scan_timers(Manager *m);
