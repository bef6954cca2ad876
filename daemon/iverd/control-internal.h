/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The control socket's connection and listener, shared by control.c
 * (accept, requests, dispatch) and control-reply.c (replies). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "control.h"

/* Silence allowed before a complete request, and between the chunks a peer
 * takes of a reply. */
#define REQUEST_TIMEOUT_USEC (10ULL * 1000000ULL)

struct Conn {
        Conn *next, *prev;
        Control *control;
        int fd;
        struct ucred peer;
        gid_t groups[64];       /* SO_PEERGROUPS: supplementary groups count for the stats group */
        int n_groups;
        sd_event_source *io, *timer;
        char *buf;
        size_t len;
        bool waiting;           /* parked: settle, or a reply that comes later (quote) */
        bool settle;            /* parked for settle */
        uint64_t id;            /* parked: how a later reply finds it (control_parked) */
        char *out;              /* reply being written */
        size_t out_len, out_off;
        int out_fd;             /* sent with the reply's first byte (SCM_RIGHTS), then closed */
        ConnFill fill;          /* streamed reply: the next chunk, when out is sent */
        void *fill_state;
        void (*fill_free)(void *state);
};

/* Refusals a peer can repeat at will: counted, logged one line per 10 s. */
typedef struct Refusals {
        uint64_t count, logged;
        uint64_t logged_at;             /* CLOCK_MONOTONIC usec */
} Refusals;

struct Control {
        sd_event *event;
        ControlHandler handler;
        uint64_t gid_stats;             /* group allowed to read (UINT64_MAX: none) */
        int fd;
        bool own_socket;        /* created by us: unlink on exit */
        char *path;
        sd_event_source *source;
        sd_event_source *pause;        /* re-enables source after an accept failure */
        Conn *conns;
        unsigned n_conns;
        Refusals conns_refused;         /* connections over the caps */
        Refusals requests_refused;      /* verbs the peer may not use */
        uint64_t accept_failures;
        int fd_limit;                   /* RLIMIT_NOFILE soft limit */
        uint64_t next_id;
};

/* Unlink from the listener, close, free (the fd passed along and a stream's state too). */
void conn_free(Conn *c);
/* A connection's timer: a parked one gets {"error":"timeout"}, any other is
 * silent or slow and is dropped (control-reply.c). */
int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata);
