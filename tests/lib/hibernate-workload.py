# tests/lib/hibernate-workload.py - the sandbox workload of issue 33's test
# (tests/hibernate-vm.bats) and bench (tests/bench/hibernate-guest): 200
# blocks of 1 MiB, each a different SHA-512 chain value repeated (computed,
# distinct, every page written), their CRC taken once at start; a thread
# counts every 0.2 s.  GET / answers "<pid> <count> <crc at start>"; GET
# /crc recomputes the CRC over the memory as it is now.  /tmp/w.ready
# appears once it serves on 127.0.0.1:8081.
import hashlib, http.server, os, threading, time, zlib
blocks, h = [], b"sbx"
for _ in range(200):
    h = hashlib.sha512(h).digest()
    blocks.append(bytearray(h * 16384))
def crc():
    c = 0
    for b in blocks:
        c = zlib.crc32(b, c)
    return c
crc0, count = crc(), 0
def tick():
    global count
    while True:
        count += 1
        time.sleep(0.2)
threading.Thread(target=tick, daemon=True).start()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("%d %d %d" % (os.getpid(), count, crc() if self.path == "/crc" else crc0)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 8081), H)
open("/tmp/w.ready", "w").close()
s.serve_forever()
