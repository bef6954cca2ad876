/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The check libarchive's gzip reader leaves out: it never compares the
 * trailer's CRC-32 and length with what it inflated, so a flipped byte in a
 * stored (incompressible) block of a data.tar.gz goes unnoticed there. zlib
 * does compare them: the compressed member is inflated a second time here, as
 * it streams past, and must end with a gzip trailer that matches. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "deb-gzip.h"

int gz_check_init(GzCheck *g) {
        *g = (GzCheck) {};
        /* 16 + MAX_WBITS: gzip framing, header and trailer checked */
        if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK)
                return -ENOMEM;
        g->active = true;
        return 0;
}

int gz_check_feed(GzCheck *g, const void *buf, size_t len) {
        uint8_t out[16384];
        if (!g->active)
                return 0;
        if (g->failed)
                return -EBADMSG;
        g->z.next_in = (Bytef *) buf;
        g->z.avail_in = (uInt) len;
        while (g->z.avail_in > 0) {
                if (g->ended) {
                        /* a second gzip member follows (gzip allows concatenation) */
                        if (inflateReset(&g->z) != Z_OK)
                                return g->failed = true, -EBADMSG;
                        g->ended = false;
                }
                g->z.next_out = out;
                g->z.avail_out = sizeof(out);
                int r = inflate(&g->z, Z_NO_FLUSH);
                if (r == Z_STREAM_END)
                        g->ended = true;
                else if (r != Z_OK && !(r == Z_BUF_ERROR && g->z.avail_in == 0))
                        return g->failed = true, -EBADMSG;
        }
        return 0;
}

bool gz_check_complete(const GzCheck *g) {
        return !g->active || (g->ended && !g->failed);
}

void gz_check_done(GzCheck *g) {
        if (g->active)
                inflateEnd(&g->z);
        g->active = false;
}
