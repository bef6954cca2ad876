/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LD_PRELOAD shim: fanotify_init fails as without CAP_SYS_ADMIN, so iverd
 * tracks with inotify watches and has no on-access listener. Built by the
 * tests and benches that need it (cc -shared -fPIC). */
#include <errno.h>

int fanotify_init(unsigned flags, unsigned event_f_flags) {
        (void) flags;
        (void) event_f_flags;
        errno = EPERM;
        return -1;
}
