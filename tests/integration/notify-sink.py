#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The service manager's side of sd_notify, for tests: notify-sink.py SOCKET LOG
binds a datagram socket at SOCKET and appends every line of every message to
LOG as "MONOTONIC-SECONDS LINE" (WATCHDOG=1, READY=1, STATUS=...), until
killed."""
import socket
import sys
import time

s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        m = s.recv(4096).decode(errors="replace")
        for line in m.split("\n"):
            if line:
                f.write("%.3f %s\n" % (time.monotonic(), line))
