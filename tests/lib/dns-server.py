#!/usr/bin/env python3
# tests/lib/dns-server.py - a small authoritative DNS server for tests.
#
#   dns-server.py PIDFILE LISTEN[,LISTEN...] NAME=ADDR [NAME=ADDR...]
#
# Listens on UDP and TCP port 53 of every LISTEN address and answers A
# queries for each NAME with its ADDR (exact match, case-insensitive).
# The name "via.<anything>" answers with the address the query reached,
# so a test can tell which resolver answered.  Other names: NXDOMAIN; other
# types of a known name: no data.  Writes its pid to PIDFILE once every
# socket is bound; closes inherited descriptors; ends itself after 10
# minutes.  Standard library only: it runs wherever python3 does.
import os
import select
import signal
import socket
import struct
import sys

os.closerange(3, 65536)
signal.alarm(600)
pidfile, listen, table = sys.argv[1], sys.argv[2].split(","), {}
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    table[k.lower().rstrip(".")] = v


def answer(q, local):
    if len(q) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    if qd != 1 or flags & 0x8000:
        return None
    i, labels = 12, []
    while i < len(q) and q[i]:
        n = q[i]
        labels.append(q[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    i += 1
    if i + 4 > len(q):
        return None
    qtype, _ = struct.unpack("!HH", q[i:i + 4])
    question = q[12:i + 4]
    name = ".".join(labels).lower()
    addr = local if labels and labels[0].lower() == "via" else table.get(name)
    rcode = 0 if addr else 3
    ans = b""
    if addr and qtype == 1:
        ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_aton(addr)
    hdr = struct.pack("!HHHHHH", qid, 0x8400 | (flags & 0x0100) | rcode, 1,
                      1 if ans else 0, 0, 0)
    return hdr + question + ans


socks = []
for a in listen:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((a, 53))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((a, 53))
    t.listen(16)
    socks += [u, t]
open(pidfile + ".tmp", "w").write(str(os.getpid()))
os.rename(pidfile + ".tmp", pidfile)
while True:
    for s in select.select(socks, [], [])[0]:
        local = s.getsockname()[0]
        if s.type == socket.SOCK_DGRAM:
            q, peer = s.recvfrom(4096)
            r = answer(q, local)
            if r:
                s.sendto(r, peer)
            continue
        c, _ = s.accept()
        c.settimeout(5)
        try:
            n = struct.unpack("!H", c.recv(2, socket.MSG_WAITALL))[0]
            r = answer(c.recv(n, socket.MSG_WAITALL), local)
            if r:
                c.sendall(struct.pack("!H", len(r)) + r)
        except (OSError, struct.error):
            pass
        c.close()
