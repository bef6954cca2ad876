/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared by fstrack.c (filesystems, coverage, status), fstrack-event.c
 * (decoding and dispatching fanotify events) and fstrack-overlay.c (overlay
 * layers: their filesystems marked, their paths mapped to merged ones). */
#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "brake.h"

#include "fstrack.h"
#include "overlay.h"

#define FSTRACK_MASK                                                                                       \
        (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE | \
         FAN_DELETE_SELF | FAN_ONDIR)
#define FSTRACK_MAX_FS 64
#define FSTRACK_RECENT 256        /* last write events, for explain */
#define FSTRACK_SLOTS 1024        /* direct-mapped handle caches */
#define FSTRACK_IGNORES_MAX 8192  /* ignore marks on unmeasured directories */
#define FSTRACK_OVERFLOW_RESCAN_USEC (30 * 1000000ULL) /* at most one rescan for lost events per 30 s */

/* An object handle layout (type, length) of a filesystem whose inode number
 * iverd reads from the handle's bytes once it has agreed with
 * open_by_handle_at for FSTRACK_FORM_CHECKS handles; one that disagrees is
 * never read so again. */
typedef struct HandleForm {
        int32_t type;
        uint16_t bytes;
        int16_t checks;           /* agreements so far; -1: disagreed */
} HandleForm;
#define FSTRACK_FORM_CHECKS 64

typedef struct TrackedFs {
        uint32_t dev;
        fsid_t fsid;
        fsid_t alias[4];          /* other fsids its events carried (btrfs subvolumes) */
        unsigned n_alias;
        char *mount;              /* mount point: status, and mount_fd for open_by_handle_at */
        char fstype[32];
        FsTrackMode mode;
        const char *why;          /* why not fanotify (static text) */
        uint64_t coverage_since;  /* realtime µs */
        uint64_t events, writes;
        int mount_fd;             /* open during one batch of events only: never pins a mount */
        bool measured;            /* holds a measured directory (not only overlay layers) */
        unsigned layers;          /* layers of measured overlays on it (fstrack-overlay.c) */
        HandleForm forms[4];      /* object handle layouts read without the kernel (fstrack-handle.c) */
        uint64_t handles_read;    /* object handles whose inode was read from their bytes */
} TrackedFs;

/* An overlay mount of the mount table; active: it holds or is below a
 * measured directory, its layers' paths are canonical and mapped. */
typedef struct OverlayMap {
        IverOverlay *o;
        uint64_t id;              /* of the mount point and layers as the table gave them */
        bool active;
        bool known;               /* active in the table before (the table changed elsewhere) */
        bool seen;                /* in the table before: what it lacks was logged */
} OverlayMap;

typedef struct RecentWrite {
        uint32_t dev;
        uint64_t ino;
        uint64_t usec;
        bool close;
        char through[96];         /* the name the write came through (truncated) */
} RecentWrite;

/* A handle → (directory path, wanted) or (dev, ino) cache slot. */
typedef struct HandleSlot {
        void *key;                /* fs index, handle type, bytes */
        size_t key_len;
        char *path;               /* directory caches */
        bool wanted;
        bool in_layer;            /* below a layer of a measured overlay, merged dir wanted */
        uint32_t dev;             /* inode caches */
        uint64_t ino;
} HandleSlot;

struct FsTrack {
        sd_event *event;
        IverContext *ctx;
        Rest *rest;
        const Reports *reports;
        int fd;
        int init_error;
        sd_event_source *source;
        TrackedFs fs[FSTRACK_MAX_FS];
        unsigned n_fs;
        HandleSlot dirs[FSTRACK_SLOTS], inodes[FSTRACK_SLOTS];
        RecentWrite recent[FSTRACK_RECENT];
        unsigned recent_next;
        unsigned ignores;
        bool ignores_ok;
        bool warned_fsid;
        fsid_t retired[16];       /* filesystems that left: their mark stays, their events are dropped */
        unsigned n_retired;
        uint64_t drain_seq, flagged_seq; /* one coverage break per drain flags the cache once */
        uint64_t events, overflows;
        bool unlimited;           /* FAN_UNLIMITED_QUEUE: no overflow (CAP_SYS_ADMIN) */
        uint64_t overflow_rescan_usec; /* monotonic: the last rescan for lost events */
        unsigned overflows_pending;    /* overflows since, waiting for rescan_timer */
        sd_event_source *rescan_timer;
        Brake brake;              /* of source (brake.h) */
        OverlayMap *overlays;
        size_t n_overlays;
};

uint32_t fstrack_pack_dev(dev_t d);
TrackedFs *fstrack_find_dev(FsTrack *t, uint32_t dev);
/* Track the filesystem holding dir (marked when it can be): for a measured
 * directory (not marked when it holds nothing measured: an ancestor) or an
 * overlay layer (layer: always). NULL when it is not tracked. */
TrackedFs *fstrack_track(FsTrack *t, const char *dir, bool layer);
/* Drop t->fs[i] (the last one takes its place); its events are dropped. */
void fstrack_retire(FsTrack *t, unsigned i);

/* fstrack-overlay.c. Which overlays hold measured directories (after a
 * mount or policy change): their layers' filesystems are marked, those
 * marked for layers only that no longer hold one are unmarked. */
void fstrack_overlays_refresh(FsTrack *t);
void fstrack_overlays_free(FsTrack *t);
/* Whether dir is a layer of a measured overlay or below one, and the policy
 * may measure below its merged directory (else an ignore mark may keep its
 * namespace events in the kernel). */
bool fstrack_overlay_wanted(FsTrack *t, const char *dir);
/* An event (mask) on path below a layer: the merged path of every measured
 * overlay that has it is checked like a path of a measured tree. */
void fstrack_overlay_event(FsTrack *t, uint64_t mask, const char *path, int pid);

/* fstrack-event.c: an event on path in a measured tree (rest, check). */
void fstrack_dispatch(FsTrack *t, uint64_t mask, const char *path, int pid);

int fstrack_on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata);
/* Read and apply queued events (at most rounds reads). Returns 0 when the
 * queue is empty, -EAGAIN when events are left, -errno on error. */
int fstrack_drain(FsTrack *t, unsigned rounds);
void fstrack_caches_clear(FsTrack *t);
/* fstrack-handle.c: the inode an object handle names, read from its bytes
 * where the layout is known and has agreed with the kernel (true), else
 * false (ask open_by_handle_at); and what the kernel said, to check it. */
bool fstrack_handle_ino(TrackedFs *f, const struct file_handle *fh, uint32_t *ret_dev, uint64_t *ret_ino);
void fstrack_handle_learn(TrackedFs *f, const struct file_handle *fh, uint32_t dev, uint64_t ino);
/* The queue overflowed: coverage restarts (every entry counts as written, so
 * a moved cookie re-hashes) and a rescan finds what else was missed, at most
 * one per FSTRACK_OVERFLOW_RESCAN_USEC however often it overflows. */
void fstrack_overflowed(FsTrack *t);
void fstrack_flush_ignores(FsTrack *t);
