#!/usr/bin/env python3
"""tests/lib/hostile-e2b.py - a broken or malicious E2B control plane and
envd in one server, for tests/remote-hostile.bats.  It answers the routes
the e2b backend uses in the shapes of e2b-wire.md §6 (as wire-record.py
does), except where MODE makes it lie, and appends every request it gets
(method, path, headers) to LOG as one JSON line.

    hostile-e2b.py LOG PORTFILE MODE[,MODE...]

Modes:
    id-crlf        the sandbox's sandboxID carries "\\r\\nX-Injected: 1"
    id-other       the detail answers for another sandbox than asked
    token-crlf     envdAccessToken carries "\\r\\nX-Injected: 1"
    domain=D       the sandbox's domain is D
    start-repeat   the exec stream sends its start event three times, then
                   waits for CloseStdin and echoes the stdin it was sent
    stall          the exec stream sends its start event, then nothing
    snap-cycle     /snapshots pages with tokens A, B, A, B, ...
    deep-tar       exec prints a temporary file's name; /files serves a
                   200 KB tar of one entry, 100,000 nested empty folders
"""
import base64, io, json, struct, sys, tarfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, PORTFILE = sys.argv[1], sys.argv[2]
MODES = dict((m.split("=", 1) + [""])[:2] for m in sys.argv[3].split(",") if m)
SID = "sbhostile0123456789"
INJECT = "\r\nX-Injected: 1"
stdin_got = bytearray()
stdin_closed = threading.Event()
lock = threading.Lock()


def frame(flag, obj):
    b = json.dumps(obj).encode()
    return bytes([flag]) + struct.pack(">I", len(b)) + b


def deep_tar():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        info = tarfile.TarInfo("/".join(["a"] * 100000) + "/")
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        t.addfile(info)
    return buf.getvalue()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def reply(self, status, obj=None, ctype="application/json", raw=None, headers=()):
        data = raw if raw is not None else (json.dumps(obj).encode() if obj is not None else b"")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def stream(self, frames, then=None):
        """A Connect server stream: frames now, then() later, to EOF."""
        self.send_response(200)
        self.send_header("Content-Type", "application/connect+json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for f in frames:
            self.wfile.write(f)
        self.wfile.flush()
        if then:
            for f in then():
                self.wfile.write(f)
            self.wfile.flush()

    def sandbox(self, asked):
        sid = SID + INJECT if "id-crlf" in MODES else asked
        if "id-other" in MODES:
            sid = "sbsomeoneelse0000"
        tok = "a" * 64 + (INJECT if "token-crlf" in MODES else "")
        return {"templateID": "base", "sandboxID": sid, "clientID": "6532622b",
                "envdVersion": "0.6.13", "envdAccessToken": tok,
                "domain": MODES.get("domain") or None}

    def handle_any(self):
        b = self.body()
        rec = {"method": self.command, "path": self.path,
               "headers": {k.lower(): v for k, v in self.headers.items()}}
        if self.path.endswith("/process.Process/SendSignal"):
            rec["body"] = json.loads(b or b"{}")
        with open(LOG, "a") as f:
            f.write(json.dumps(rec) + "\n")
        p = self.path.split("?")[0]
        if p.endswith("/process.Process/Start"):
            cmd = json.loads(b[5:] or b"{}").get("process", {})
            start = frame(0, {"event": {"start": {"pid": 7}}})
            if "stall" in MODES:
                return self.stream([start], lambda: (time.sleep(30), [])[1])
            if "deep-tar" in MODES and cmd.get("cmd") == "sh":
                out = base64.b64encode(b"/tmp/.sbx-get.hostile\n").decode()
                return self.stream([start, frame(0, {"event": {"data": {"stdout": out}}}),
                                    frame(0, {"event": {"end": {"exited": True, "status": "exit status 0"}}}),
                                    frame(2, {})])
            if "start-repeat" in MODES:
                def rest():
                    stdin_closed.wait(10)
                    with lock:
                        out = base64.b64encode(bytes(stdin_got)).decode()
                    return [frame(0, {"event": {"data": {"stdout": out}}}),
                            frame(0, {"event": {"end": {"exited": True, "status": "exit status 0"}}}),
                            frame(2, {})]
                return self.stream([start, start, start], rest)
            return self.stream([start, frame(0, {"event": {"end": {"exited": True,
                                                                     "status": "exit status 0"}}}),
                                frame(2, {})])
        if p.endswith("/process.Process/SendInput"):
            got = json.loads(b or b"{}").get("input", {}).get("stdin", "")
            with lock:
                stdin_got.extend(base64.b64decode(got))
            return self.reply(200, {})
        if p.endswith("/process.Process/SendSignal"):
            return self.reply(200, {})
        if p.endswith("/process.Process/CloseStdin"):
            stdin_closed.set()
            return self.reply(200, {})
        if p.endswith("/filesystem.Filesystem/Stat"):
            return self.reply(200, {"entry": {"name": "d", "type": "FILE_TYPE_DIRECTORY",
                                              "path": "/workspace/d", "size": "0", "mode": 493,
                                              "permissions": "drwxr-xr-x", "owner": "user",
                                              "group": "user"}})
        if p.endswith("/filesystem.Filesystem/Remove"):
            return self.reply(200, {})
        if p.endswith("/files") and self.command == "GET" and "deep-tar" in MODES:
            return self.reply(200, raw=deep_tar(), ctype="application/octet-stream")
        if p == "/sandboxes" and self.command == "POST":
            return self.reply(201, self.sandbox(SID))
        if p.startswith("/sandboxes/") and p.count("/") == 2 and self.command == "GET":
            d = dict(self.sandbox(p.split("/")[2]), startedAt="2026-10-03T00:38:42Z", state="running",
                     metadata={}, lifecycle={"autoResume": True, "onTimeout": "pause"})
            return self.reply(200, d)
        if p == "/snapshots":
            tok = (self.path.split("nextToken=") + [""])[1]
            nxt = "B" if tok == "A" else "A"
            return self.reply(200, [], headers=[("X-Next-Token", nxt)] if "snap-cycle" in MODES else [])
        if p == "/templates":
            return self.reply(200, [{"templateID": "base", "aliases": ["base"]}])
        if p == "/v2/sandboxes":
            return self.reply(200, [])
        return self.reply(404, {"code": 404, "message": "no such route"})

    do_GET = do_POST = do_DELETE = do_PUT = handle_any


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
with open(PORTFILE, "w") as f:
    f.write(str(srv.server_address[1]))
import signal
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
srv.serve_forever()
