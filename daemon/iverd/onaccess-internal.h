/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by onaccess.c (the fanotify group: marks, reading, answering at
 * once) and onaccess-held.c (uses held for a measurement: the waiters, the
 * timer thread, handing over to the loop). */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "onaccess.h"

#define MAX_FS 64
#define MAX_WAITERS 4096
#define MAX_UNCHECKED 1024       /* uses allowed unchecked, waiting for their violation entry */
#define FAST_SLOTS 4096          /* cached uses the reading thread answers (a power of 2) */
#define FAST_OFFERS 256          /* uses offered for it in one wake-up of the loop */
#define FAST_OPEN 1
#define FAST_EXEC 2
#define INC(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

typedef enum WaiterState {
        W_NEW,       /* read by the thread; the loop has not looked yet */
        W_BUSY,      /* the loop is looking (checker_use) */
        W_HASHING,   /* its measurement is submitted */
} WaiterState;

typedef struct Waiter {
        uint64_t id;
        int fd;              /* the event's fd: the kernel's key for the answer */
        WaiterState state;
        bool exec;
        int pid;             /* the user (uid= rules) */
        bool answered;       /* the kernel has its answer */
        bool timed_out;      /* answered by the thread at the deadline: a violation to list */
        bool done;           /* measured and recorded: answered after the flush */
        uint64_t deadline;
        CheckerUse use;
        char *path;
} Waiter;

/* A use allowed without a check (no waiter slot): what the thread knew of
 * it, for the violation entry the loop lists. */
typedef struct Unchecked {
        char *path;          /* as the event fd's link showed it, or NULL */
        uint32_t dev;        /* packed as IverStat.dev; 0: unknown */
        uint64_t ino;
        bool exec;
} Unchecked;

/* A use the loop answered from the record, to publish when it sleeps. */
typedef struct FastOffer {
        IverStat st;
} FastOffer;

/* What the reading thread may answer at once (onaccess-fast.c). */
typedef struct FastEntry {
        uint64_t epoch;              /* published in; 0: empty */
        uint32_t dev, mode;
        uint64_t ino, gen, size, ino_version;
        int64_t mtime, ctime;
        bool has_ino_version;
        bool exact;                  /* its filesystem's cookie sees every change (no queue look) */
        uint8_t uses;                /* FAST_OPEN | FAST_EXEC */
} FastEntry;

struct OnAccess {
        sd_event *event;
        OnAccessOps ops;                /* to the checker */
        IverOnAccess mode;
        int fd;
        uint64_t mask, timeout_usec;
        sd_event_source *wake_source, *exit_source;
        uint32_t devs[MAX_FS];       /* packed as IverStat.dev */
        unsigned n_devs;
        pid_t self;

        pthread_mutex_t lock; /* the waiters, the unchecked, stopping, overflowed */
        Waiter *w;
        size_t n, cap;
        Unchecked unchecked_uses[MAX_UNCHECKED];
        size_t n_unchecked;
        uint64_t unchecked_lost;      /* beyond the ring: counted in one entry */
        bool unlimited;               /* FAN_UNLIMITED_QUEUE: the kernel never drops a use */
        uint64_t next_id;             /* relaxed atomic */
        bool stopping, overflowed;
        int loop_efd, thread_efd;
        pthread_t thread;
        bool thread_running;

        /* the thread's fast path (onaccess-fast.c) */
        uint64_t epoch;               /* odd: the loop is awake (atomic; the loop writes) */
        int track_fd;                 /* the change tracker's group, or -1 (atomic) */
        bool want_version;            /* statx asks for the inode version (atomic) */
        pthread_mutex_t fast_lock;    /* fast[] */
        FastEntry fast[FAST_SLOTS];
        FastOffer offers[FAST_OFFERS]; /* the loop only */
        size_t n_offers;

        /* counters (relaxed atomics: both threads count) */
        uint64_t events, self_allowed, cached, measured, timeouts, unchecked, overflows, by_reader;
};

/* FAN_ALLOW for the event whose fd is fd. */
void oa_respond(OnAccess *o, int fd);
int oa_fd_path(int fd, char *buf, size_t n);
/* Under the lock: a new waiter (deadline now + timeout), or NULL (full). */
Waiter *oa_push(OnAccess *o, int fd, WaiterState state, bool exec);
/* A use the daemon cannot wait for (no waiter slot): allowed now; its
 * violation entry is listed by the loop (oa_on_wake). Any thread; not under
 * the lock. */
void oa_allow_unchecked(OnAccess *o, int fd, bool exec);
/* On the thread: read what the group has; uses it cannot answer at once
 * become W_NEW waiters. */
void oa_read_events(OnAccess *o, bool wait);
void *oa_thread_main(void *arg);
/* On the reading thread: whether the use of fd (the event's) is answered at
 * once, from what the loop published (onaccess-fast.c). */
bool oa_fast_use(OnAccess *o, int fd, bool exec);
int oa_on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata);
/* Allow everything held, stop the thread, close the group. */
void oa_stop(OnAccess *o);
