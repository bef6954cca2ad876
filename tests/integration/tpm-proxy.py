#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A slow or hung TPM for tests: relays the swtpm TCTI's unix sockets.

tpm-proxy.py LISTEN SWTPM CONTROL_DIR

LISTEN (the TCTI's path=) and LISTEN.ctrl are relayed to SWTPM and SWTPM.ctrl.
On the data socket every TPM command (read whole, by the size in its header)
is held before it is passed on:
  CONTROL_DIR/delay_ms   if present: milliseconds to wait per command
  CONTROL_DIR/hang       while present: commands wait (the TPM is hung)
  CONTROL_DIR/retry      if present, a count N: the next N commands are answered
                         TPM_RC_RETRY (0x922: the TPM could not start the
                         command) without reaching the TPM; counted down
Read for every command, so a test changes them while iverd runs. Counts go to
CONTROL_DIR/commands (commands relayed so far), rewritten as they pass.
Standard library only; stopped by SIGTERM."""
import os
import signal
import socket
import struct
import sys
import threading
import time

listen, target, ctl = sys.argv[1], sys.argv[2], sys.argv[3]
count = 0
count_lock = threading.Lock()


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def hold():
    while os.path.exists(os.path.join(ctl, "hang")):
        time.sleep(0.01)
    try:
        with open(os.path.join(ctl, "delay_ms")) as f:
            ms = float(f.read().strip() or 0)
    except (OSError, ValueError):
        ms = 0
    if ms > 0:
        time.sleep(ms / 1000.0)


def take_retry():
    """True if this command is to be answered TPM_RC_RETRY (one of the N left)."""
    path = os.path.join(ctl, "retry")
    with count_lock:
        try:
            with open(path) as f:
                n = int(f.read().strip() or 0)
        except (OSError, ValueError):
            return False
        if n <= 0:
            return False
        with open(path + ".tmp", "w") as f:
            f.write("%d\n" % (n - 1))
        os.replace(path + ".tmp", path)
        return True


def pump(src, dst):
    """Server → client: bytes as they come."""
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve_data(client):
    global count
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(target)
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(server, client), daemon=True).start()
    try:
        while True:
            hdr = recv_exact(client, 10)
            if hdr is None:
                break
            size = struct.unpack(">I", hdr[2:6])[0]
            body = recv_exact(client, max(size - 10, 0)) if size > 10 else b""
            if body is None:
                break
            hold()
            if take_retry():
                # TPM_ST_NO_SESSIONS, size 10, TPM_RC_RETRY: nothing ran
                client.sendall(struct.pack(">HII", 0x8001, 10, 0x922))
                continue
            server.sendall(hdr + body)
            with count_lock:    # one writer at a time: connections overlap
                count += 1
                with open(os.path.join(ctl, "commands.tmp"), "w") as f:
                    f.write("%d\n" % count)
                os.replace(os.path.join(ctl, "commands.tmp"), os.path.join(ctl, "commands"))
    except OSError:
        pass
    for s in (client, server):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve_ctrl(client):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(target + ".ctrl")
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(server, client), daemon=True).start()
    pump(client, server)


def listener(path, handler):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handler, args=(c,), daemon=True).start()


signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
threading.Thread(target=listener, args=(listen + ".ctrl", serve_ctrl), daemon=True).start()
listener(listen, serve_data)
