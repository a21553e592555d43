#!/usr/bin/env python3
"""tests/lib/wire-record.py - a recording E2B/Cube server for the wire
fixtures: it answers the few routes a test drives with canned replies in
the shapes e2b-wire.md §6 and cube-wire.md show, and appends every request
it gets (method, path with query, headers, body) to LOG as one JSON line.

    wire-record.py LOG PORTFILE    serves on 127.0.0.1, a free port
                                   written to PORTFILE; stops on SIGTERM
"""
import base64, json, struct, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, PORTFILE = sys.argv[1], sys.argv[2]
SID = "sbwire0123456789abcdef"
TOKEN = "a" * 64


def frame(flag, obj):
    b = json.dumps(obj).encode()
    return bytes([flag]) + struct.pack(">I", len(b)) + b


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
        if data or status != 204:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        b = self.body()
        rec = {"method": self.command, "path": self.path,
               "headers": {k.lower(): v for k, v in self.headers.items()}}
        try:
            rec["body"] = b.decode()
        except UnicodeDecodeError:
            rec["body_b64"] = base64.b64encode(b).decode()
        with open(LOG, "a") as f:
            f.write(json.dumps(rec) + "\n")
        p = self.path.split("?")[0]
        sb = {"templateID": "base", "sandboxID": SID, "clientID": "6532622b",
              "envdVersion": "0.6.13", "envdAccessToken": TOKEN, "domain": None}
        if p.endswith("/process.Process/Start"):
            raw = (frame(0, {"event": {"start": {"pid": 7}}}) +
                   frame(0, {"event": {"data": {"stdout": base64.b64encode(b"hi\n").decode()}}}) +
                   frame(0, {"event": {"end": {"exited": True, "status": "exit status 0"}}}) +
                   frame(2, {}))
            return self.reply(200, raw=raw, ctype="application/connect+json")
        if p.endswith("/filesystem.Filesystem/Stat"):
            return self.reply(200, {"entry": {"name": "a.txt", "type": "FILE_TYPE_FILE",
                                              "path": "/workspace/a.txt", "size": "5", "mode": 420,
                                              "permissions": "-rw-r--r--", "owner": "user",
                                              "group": "user", "modifiedTime": "2026-10-03T00:38:42Z"}})
        if p.endswith("/files"):
            if self.command == "GET":
                return self.reply(200, raw=b"hello", ctype="application/octet-stream")
            return self.reply(200, [{"name": "a.txt", "type": "file", "path": "/workspace/a.txt"}],
                              ctype="text/plain; charset=utf-8")
        if p == "/sandboxes" and self.command == "POST":
            req = json.loads(b or b"{}")
            if not (req.get("network") or {}).get("allowPublicTraffic", True):
                sb = dict(sb, trafficAccessToken="tok-wire")
            return self.reply(201, sb)
        if p == f"/sandboxes/{SID}" and self.command == "GET":
            d = dict(sb, startedAt="2026-10-03T00:38:42.322085214Z", endAt="2026-10-03T01:38:42Z",
                     state="running", metadata={}, cpuCount=1, memoryMB=512, diskSizeMB=1024,
                     lifecycle={"autoResume": True, "onTimeout": "pause"})
            return self.reply(200, d)
        if p == "/v2/sandboxes":
            return self.reply(200, [])
        if p == f"/sandboxes/{SID}/snapshots":
            return self.reply(201, {"snapshotID": "snap-wire", "names": ["snap"]})
        if p.startswith(f"/sandboxes/{SID}/"):
            return self.reply(204)
        if p == f"/sandboxes/{SID}" and self.command == "DELETE":
            return self.reply(204)
        if p == "/volumes" and self.command == "POST":
            n = json.loads(b or b"{}").get("name", "")
            return self.reply(201, {"volumeID": n, "name": n, "token": ""})
        if p.startswith("/volumes/") and self.command == "DELETE":
            return self.reply(204)
        return self.reply(404, {"code": 404, "message": "no such route"})

    do_GET = do_POST = do_DELETE = do_PUT = handle_any


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(PORTFILE, "w") as f:
    f.write(str(srv.server_address[1]))
import signal
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
srv.serve_forever()
