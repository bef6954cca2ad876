/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement list read back from its file for the verbs that show it:
 * the list lives on disk, the daemon keeps no copy of its entries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evidence-internal.h"
#include "macro.h"

int evidence_list_fd(const Evidence *e) {
        return e && e->file ? iver_imalog_file_fd(e->file) : -EBADF;
}

/* The list served to readers: iverd's own, or where the PCR is shared with
 * the kernel's IMA the one the TPM thread writes in extend order (its length
 * as the thread published it: whole records, extended). */
static int served(const Evidence *e, const IverImaFile **ret_file, uint64_t *ret_bytes, uint64_t *ret_entries) {
        if (!e || !e->file)
                return -ENODATA;
        const IverImaFile *sf = e->shared ? tpm_thread_served(e->tpm) : NULL;
        if (sf) {
                TpmThreadState st;
                tpm_thread_state(e->tpm, &st);
                *ret_file = sf;
                *ret_bytes = st.served_bytes;
                *ret_entries = st.served_entries;
                return 0;
        }
        *ret_file = e->file;
        *ret_bytes = iver_imalog_file_size(e->file);
        *ret_entries = iver_imalog_file_count(e->file);
        return 0;
}

int evidence_list_open(const Evidence *e, int *ret_fd, uint64_t *ret_bytes, uint64_t *ret_entries) {
        const IverImaFile *f;
        uint64_t bytes, entries;
        int r = served(e, &f, &bytes, &entries);
        if (r < 0)
                return r;
        int fd = iver_imalog_file_reopen(f);
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        *ret_bytes = bytes;
        *ret_entries = entries;
        return 0;
}

int evidence_list_extended(const Evidence *e, uint64_t *ret) {
        if (!e || !e->tpm)
                return -ENODEV;
        TpmThreadState st;
        tpm_thread_state(e->tpm, &st);
        /* a served list holds extended entries only */
        *ret = e->shared ? st.served_entries : st.extended;
        return 0;
}
