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

int evidence_list_foreach(const Evidence *e, EvidenceEntryFunc f, void *userdata) {
        _cleanup_(iver_imalog_reader_freep) IverImaReader *rd = NULL;
        const IverImaFile *lf;
        uint64_t end, entries;
        int r;

        r = served(e, &lf, &end, &entries);
        if (r < 0)
                return r;
        r = iver_imalog_reader_new(iver_imalog_file_fd(lf), 0, &rd);
        if (r < 0)
                return r;
        for (size_t i = 0;; i++) {
                _cleanup_(iver_imalog_entry_freep) IverImaEntry *ent = NULL;
                r = iver_imalog_reader_next(rd, end, &ent);
                if (r <= 0)
                        return r;
                r = f(i, ent, userdata);
                if (r < 0)
                        return r;
        }
}

typedef struct EntriesFor {
        const char *path;
        size_t len;
        size_t extended;
        bool tpm;
        json_object *array;
} EntriesFor;

static int entry_for(size_t i, const IverImaEntry *ent, void *userdata) {
        EntriesFor *w = userdata;
        _cleanup_free_ char *line = NULL;
        size_t len;

        if (!iver_imalog_entry_names(ent, w->path, w->len) || iver_imalog_entry_to_ascii(ent, &line, &len) < 0)
                return 0;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "index", json_object_new_uint64(i));
        json_object_object_add(o, "line", json_object_new_string_len(line, (int) (len && line[len - 1] == '\n' ? len - 1 : len)));
        json_object_object_add(o, "extended", json_object_new_boolean(w->tpm && i < w->extended));
        json_object_array_add(w->array, o);
        return 0;
}

void evidence_entries_for(const Evidence *e, const char *path, json_object *array) {
        TpmThreadState st = {};
        if (e->tpm)
                tpm_thread_state(e->tpm, &st);
        /* a served list holds extended entries only */
        EntriesFor w = { .path = path, .len = strlen(path), .extended = e->shared ? st.served_entries : st.extended,
                         .tpm = e->tpm != NULL, .array = array };
        (void) evidence_list_foreach(e, entry_for, &w);
}
