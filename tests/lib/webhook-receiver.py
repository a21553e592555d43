#!/usr/bin/env python3
"""A webhook receiver for tests/serve-webhooks.bats.

    webhook-receiver.py DIR [--fail-first N]

Listens on 127.0.0.1 (a free port, written to DIR/port) and appends each
request it gets to DIR/log as one JSON line, before it answers:
{"n", "path", "headers" (names lower-cased), "body" (the raw body as text)}.
The first N requests are answered 500, the rest 200.  While DIR/hold
exists a request is recorded and then held unanswered (a delivery in
flight, for a kill -9 of the sender); it is answered once the file goes.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
FAIL = int(sys.argv[sys.argv.index("--fail-first") + 1]) if "--fail-first" in sys.argv else 0
lock = threading.Lock()
count = [0]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with lock:
            count[0] += 1
            k = count[0]
            rec = {"n": k, "path": self.path,
                   "headers": {h.lower(): v for h, v in self.headers.items()},
                   "body": body.decode("utf-8", "replace")}
            with open(os.path.join(DIR, "log"), "a") as f:
                f.write(json.dumps(rec) + "\n")
        while os.path.exists(os.path.join(DIR, "hold")):
            time.sleep(0.05)
        code = 500 if k <= FAIL else 200
        try:
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        except OSError:
            pass                       # the sender is gone

    def log_message(self, *a):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
srv.serve_forever()
