/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <systemd/sd-event.h>

/* Defer source: take queued paths while workers have room; hits and files
 * the policy does not measure finish here, misses go to the pool. */
int checker_dispatch(sd_event_source *s, void *userdata);
/* Worker eventfd: finish the jobs the pool has done. */
int checker_workers_done(sd_event_source *s, int fd, uint32_t revents, void *userdata);
