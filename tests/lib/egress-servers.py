#!/usr/bin/env python3
# tests/lib/egress-servers.py - the "internet" of egress-policy.bats.
#
#   egress-servers.py PIDFILE CERT KEY ADDR...
#
# On every ADDR: HTTP on port 80 and HTTPS (CERT/KEY) on 443 answering
# "answer-<the address it was reached at> host=<Host header>" (HTTP/1.1,
# connections kept open), and a raw
# TCP port 7000 that writes "raw-<address>" and closes.  With EGRESS_ROOT
# set, GET /r/PATH serves the file EGRESS_ROOT/PATH (a directory: its
# index.html), for pip and git's dumb HTTP (404 when missing or not below it).
# With EGRESS_LOG set, every request's line and headers are appended to
# that file (one block per request, ended by a blank line) and GET or
# POST of /v1/... answers "v1 METHOD PATH ok" only: what the server saw
# stays on the host (egress-l7.bats looks for a secret there).
# Writes its pid to
# PIDFILE once every socket is bound; closes inherited descriptors; ends
# itself after 10 minutes.  Standard library only.
import http.server
import os
import signal
import socket
import socketserver
import ssl
import sys
import threading

os.closerange(3, 65536)
signal.alarm(600)
pidfile, cert, key, addrs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive: a test holds a connection open

    def log_seen(self):
        log = os.environ.get("EGRESS_LOG")
        if log:
            with open(log, "a") as f:
                f.write("%s %s host=%s\n%s\n" % (self.command, self.path,
                        self.connection.getsockname()[0], str(self.headers)))

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        self.rfile.read(n)
        self.do_GET()

    def do_GET(self):
        self.log_seen()
        if self.path.startswith("/v1/"):
            body = ("v1 %s %s ok\n" % (self.command, self.path)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = ("answer-%s host=%s\n" % (self.connection.getsockname()[0],
                                         self.headers.get("Host", ""))).encode()
        docroot = os.environ.get("EGRESS_ROOT")
        if docroot and self.path.startswith("/r/"):
            rel = self.path[3:].split("?")[0].split("#")[0]
            f = os.path.realpath(os.path.join(docroot, rel.lstrip("/")))
            if os.path.isdir(f):
                f = os.path.join(f, "index.html")
            # /r//etc/passwd would join to /etc/passwd: only what is below
            if not f.startswith(os.path.realpath(docroot) + "/") or not os.path.isfile(f):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = open(f, "rb").read()
            self.send_response(200)
            if f.endswith(".html"):
                self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
servers = []
for a in addrs:
    servers.append(S((a, 80), H))
    t = S((a, 443), H)
    t.socket = ctx.wrap_socket(t.socket, server_side=True)
    servers.append(t)
    r = socket.socket()
    r.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    r.bind((a, 7000))
    r.listen(16)

    def raw(r=r, a=a):
        while True:
            c, _ = r.accept()
            c.sendall(("raw-%s\n" % a).encode())
            c.close()
    threading.Thread(target=raw, daemon=True).start()
for s in servers:
    threading.Thread(target=s.serve_forever, daemon=True).start()
open(pidfile + ".tmp", "w").write(str(os.getpid()))
os.rename(pidfile + ".tmp", pidfile)
threading.Event().wait()
