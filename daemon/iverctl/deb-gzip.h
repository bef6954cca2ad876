/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <zlib.h>

typedef struct GzCheck {
        z_stream z;
        bool active, ended, failed;
} GzCheck;

/* Start checking a gzip stream; -ENOMEM. */
int gz_check_init(GzCheck *g);
/* The next bytes of the compressed stream; -EBADMSG once it is damaged
 * (bad deflate data, CRC-32 or length mismatch in a trailer). A GzCheck
 * never started (zeroed) accepts everything. */
int gz_check_feed(GzCheck *g, const void *buf, size_t len);
/* Whether the stream so far ends with a complete, matching gzip member. */
bool gz_check_complete(const GzCheck *g);
void gz_check_done(GzCheck *g);
