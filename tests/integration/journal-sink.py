#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stand-in for journald's native socket, for tests: binds a SOCK_DGRAM
unix socket at PATH, parses each datagram as the journal's native protocol
(KEY=value lines; KEY\\n<le64 size><bytes>\\n for binary values) and keeps
counts. It rewrites COUNTS (JSON) after every datagram:
  {"datagrams": N, "by_message_id": {...}, "by_priority": {...},
   "messages": [last 50 MESSAGE= values], "bad": N}
With --slow SECONDS it sleeps that long before each receive, so the queue
fills and a non-blocking sender has to drop.
Usage: journal-sink.py PATH COUNTS [--slow S] [--rcvbuf BYTES]"""
import json
import os
import socket
import struct
import sys
import time


def parse(d):
    fields, i = {}, 0
    while i < len(d):
        nl = d.find(b"\n", i)
        if nl < 0:
            raise ValueError("no newline")
        line = d[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            (n,) = struct.unpack("<Q", d[nl + 1:nl + 9])
            v = d[nl + 9:nl + 9 + n]
            if d[nl + 9 + n:nl + 10 + n] != b"\n":
                raise ValueError("binary field without newline")
            i = nl + 10 + n
        fields[k.decode()] = v
    return fields


def main():
    path, counts = sys.argv[1], sys.argv[2]
    slow = float(sys.argv[sys.argv.index("--slow") + 1]) if "--slow" in sys.argv else 0.0
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if "--rcvbuf" in sys.argv:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[sys.argv.index("--rcvbuf") + 1]))
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s.bind(path)
    st = {"datagrams": 0, "by_message_id": {}, "by_priority": {}, "messages": [], "bad": 0}

    def dump():
        tmp = counts + ".tmp"
        with open(tmp, "w") as f:
            json.dump(st, f)
        os.replace(tmp, counts)

    dump()
    while True:
        if slow:
            time.sleep(slow)
        d = s.recv(1 << 20)
        st["datagrams"] += 1
        try:
            f = parse(d)
        except (ValueError, struct.error):
            st["bad"] += 1
            dump()
            continue
        mid = f.get("MESSAGE_ID", b"").decode(errors="replace")
        pr = f.get("PRIORITY", b"?").decode(errors="replace")
        st["by_message_id"][mid] = st["by_message_id"].get(mid, 0) + 1
        st["by_priority"][pr] = st["by_priority"].get(pr, 0) + 1
        st["messages"] = (st["messages"] + [f.get("MESSAGE", b"").decode(errors="replace")])[-50:]
        dump()


if __name__ == "__main__":
    main()
