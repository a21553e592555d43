#!/usr/bin/env python3
"""tests/lib/fake-redis-node.py - a small Redis node speaking RESP, for the
tests of what sbx sends to nodes that a cluster or a sentinel names.

    fake-redis-node.py ROLE HOST DIR [TARGET]

listens on HOST (port 0: the kernel picks one, written to DIR/port once it
listens; its pid to DIR/pid) and serves, one connection at a time:

  seed      a cluster node that hands its slots away to TARGET (host:port):
            CLUSTER SLOTS names itself for every slot the first time and
            TARGET after that (or TARGET always, given as "slots=host:port"),
            and every keyed command is answered "MOVED <its slot> TARGET"
  seed-ask  the same, migrating: CLUSTER SLOTS names itself, and every keyed
            command is answered "ASK <its slot> TARGET"
  sink      a cluster node that serves everything: CLUSTER SLOTS names
            itself for every slot, PING is PONG, ROLE is master, others +OK
  sentinel  SENTINEL get-master-addr-by-name answers TARGET
  drop-once a sink whose first script (EVALSHA/EVAL) is read and then the
            connection closed without a reply, as a master killed after
            the command reached it; later scripts answer :1

Every connection is logged to DIR/log as "CONNECT", and every command as
its name ("AUTH" for a password, never the password itself), so a test can
show that a node never saw a connection or a credential."""
import os
import socket
import sys


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    o = key.find(b"{")
    if o >= 0:
        c = key.find(b"}", o + 1)
        if c > o + 1:
            key = key[o + 1:c]
    return crc16(key) & 16383


def bulk(s):
    s = s if isinstance(s, bytes) else str(s).encode()
    return b"$%d\r\n%s\r\n" % (len(s), s)


def read_command(f):
    """One RESP array of bulk strings, or None at EOF.  Bounded: at most
    64 arguments of at most 64 kB each."""
    line = f.readline(100)
    if not line:
        return None
    if not line.startswith(b"*"):
        return [w for w in line.split()]       # inline command
    n = int(line[1:])
    if n < 0 or n > 64:
        raise ValueError("too many arguments")
    argv = []
    for _ in range(n):
        h = f.readline(100)
        ln = int(h[1:])
        if ln < 0 or ln > 65536:
            raise ValueError("argument too long")
        argv.append(f.read(ln + 2)[:-2])
    return argv


def main():
    role, host, d = sys.argv[1], sys.argv[2], sys.argv[3]
    target = sys.argv[4] if len(sys.argv) > 4 else ""
    slots_to = target.startswith("slots=")
    if slots_to:
        target = target[len("slots="):]
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, 0))
    srv.listen(16)
    me_port = srv.getsockname()[1]
    log = open(os.path.join(d, "log"), "a", buffering=1)
    with open(os.path.join(d, "pid"), "w") as f:
        f.write("%d\n" % os.getpid())
    with open(os.path.join(d, "port.tmp"), "w") as f:
        f.write("%d\n" % me_port)
    os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
    th, tp = (target.rsplit(":", 1) + [""])[:2] if target else ("", "")
    slots_asked = 0
    dropped = False
    while True:
        c, _ = srv.accept()
        log.write("CONNECT\n")
        f = c.makefile("rwb")
        try:
            while True:
                argv = read_command(f)
                if argv is None:
                    break
                if not argv:
                    continue
                name = argv[0].upper()
                log.write(name.decode("ascii", "replace") + "\n")
                if role == "drop-once" and name in (b"EVALSHA", b"EVAL"):
                    if not dropped:
                        dropped = True
                        break
                    f.write(b":1\r\n")
                elif name == b"CLUSTER" and len(argv) > 1 and argv[1].upper() == b"SLOTS":
                    away = role == "seed" and (slots_to or slots_asked > 0)
                    slots_asked += 1
                    h, p = (th, int(tp)) if away else (host, me_port)
                    f.write(b"*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n" + bulk(h) + b":%d\r\n" % p)
                elif role == "sentinel" and name == b"SENTINEL":
                    f.write(b"*2\r\n" + bulk(th) + bulk(tp))
                elif name == b"PING":
                    f.write(b"+PONG\r\n")
                elif name == b"ROLE":
                    f.write(b"*3\r\n" + bulk("master") + b":0\r\n*0\r\n")
                elif role.startswith("seed") and len(argv) > 1 and name not in (b"AUTH", b"SELECT"):
                    f.write(b"-%s %d %s\r\n" % (b"ASK" if role == "seed-ask" else b"MOVED",
                                                  key_slot(argv[1]), target.encode()))
                else:
                    f.write(b"+OK\r\n")
                f.flush()
        except (ValueError, OSError):
            pass
        finally:
            try:
                f.close()
                c.close()
            except OSError:
                pass


if __name__ == "__main__":
    main()
