#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# Stall iverd's event loop inside a callback, its other threads running on
# (test-exec's "stuck loop" step):
#   stall-loop.py PID SOCKET READY
# ptrace-seizes only the loop's thread (the main thread, tid PID), connects to
# the control socket and lets the thread run until it enters accept: it is
# then held there, in the control socket's callback (the loop's epoch busy,
# onaccess-fast.c), and READY is created. On SIGTERM/SIGINT, or after 60 s,
# the thread is let go (the accept proceeds) and the connection closed. If
# this process dies, the kernel lets the thread go as well.
import ctypes
import os
import platform
import signal
import socket
import sys

PTRACE_SYSCALL, PTRACE_DETACH = 24, 17
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_GET_SYSCALL_INFO = 0x4206, 0x4207, 0x420e
PTRACE_O_TRACESYSGOOD, PTRACE_EVENT_STOP, WALL = 1, 128, 0x40000000
SYSCALL_INFO_ENTRY = 1
ACCEPT = {"x86_64": (43, 288), "aarch64": (202, 242)}[platform.machine()]

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, tid, addr=None, data=None):
    if libc.ptrace(req, tid, addr, data) < 0:
        e = ctypes.get_errno()
        raise OSError(e, "ptrace(%#x): %s" % (req, os.strerror(e)))


def syscall_entry_nr(tid):
    info = (ctypes.c_uint64 * 11)()
    ptrace(PTRACE_GET_SYSCALL_INFO, tid, ctypes.c_void_p(ctypes.sizeof(info)), ctypes.addressof(info))
    return info[3] if info[0] & 0xff == SYSCALL_INFO_ENTRY else None


def main():
    pid, sock_path, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    ptrace(PTRACE_SEIZE, pid, None, ctypes.c_void_p(PTRACE_O_TRACESYSGOOD))
    ptrace(PTRACE_INTERRUPT, pid)
    os.waitpid(pid, WALL)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)  # queued: the loop wakes for it and accepts in its callback
    inject = 0
    for _ in range(100000):
        ptrace(PTRACE_SYSCALL, pid, None, ctypes.c_void_p(inject))
        _, st = os.waitpid(pid, WALL)
        if not os.WIFSTOPPED(st):
            sys.exit("thread %d ended" % pid)
        sig, inject = os.WSTOPSIG(st), 0
        if sig == signal.SIGTRAP | 0x80:
            if syscall_entry_nr(pid) in ACCEPT:
                break
        elif st >> 16 != PTRACE_EVENT_STOP:
            inject = sig  # a signal for the thread: passed on
    else:
        ptrace(PTRACE_DETACH, pid)
        sys.exit("the loop did not accept the connection")
    open(ready, "w").close()
    signal.sigtimedwait({signal.SIGTERM, signal.SIGINT}, 60)
    ptrace(PTRACE_DETACH, pid)
    s.close()


main()
