#!/usr/bin/env bash
# tests/bench/egress.sh - what egress through the broker (a sandbox with a
# network policy, issue 28) costs against today's path (slirp4netns with
# the egress table), side by side in one run: a 1 GB download, connection
# setup, create, and the memory of the host-side helper of an idle
# sandbox.  Nothing leaves the machine: a network namespace of its own
# with a server on 10.98.0.1 (the profile's egress_allow opens it).
#
#   tests/bench/egress.sh        RUNS=N (default 5 downloads, 200 connects, 10 creates)
#
# Written to docs/bench/egress.md.  Then (issue 29) HTTPS: a 256 MB
# download over TLS by the unfiltered path (slirp), spliced by SNI through
# the broker, and intercepted by it (an L7 rule: TLS terminated and made
# again), written to docs/bench/egress-l7.md.  ONLY=l7 runs that part
# alone.  Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
OUT=${OUT:-$top/docs/bench/egress.md}
RUNS=${RUNS:-5}
export PATH="$BUILD/bin:$PATH" SBX_BACKEND=local
[ "$(id -u)" = 0 ] || { echo "egress.sh: needs root" >&2; exit 1; }

W=$(mktemp -d /tmp/sbx-bench-egress.XXXXXX)
export SBX_STATE_DIR=$W/state SBX_CONFIG=$W/config.json
mkdir -p "$SBX_STATE_DIR"
echo '{"profiles": {"default": {"egress_allow": ["10.98.0.0/16"], "egress_resolver": "10.98.0.53",
  "egress_upstream_ca": "'"$W"'/ca.pem"}}}' >"$SBX_CONFIG"
NS=$W/ns
cleanup() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	local f
	for f in srv.pid tls.pid dns.pid; do
		[ -s "$W/$f" ] && kill "$(cat "$W/$f")" 2>/dev/null || true
	done
	umount "$NS" 2>/dev/null || true
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT
touch "$NS"
unshare --net="$NS" true
in_ns() { nsenter --net="$NS" "$@"; }
in_ns ip link set lo up
in_ns ip addr add 10.98.0.1/32 dev lo
truncate -s 1G "$W/zero"
# 7100: sends the 1 GB file (sendfile) and closes; 7101: accepts, writes
# one byte, closes.
in_ns setsid python3 -c '
import os, socket, sys, threading
os.closerange(3, 65536)
def srv(port, fn):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.98.0.1", port)); s.listen(128)
    def loop():
        while True:
            c, _ = s.accept(); threading.Thread(target=fn, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
def big(c):
    with open(sys.argv[1], "rb") as f:
        c.sendfile(f)
    c.close()
def one(c):
    c.sendall(b"x"); c.close()
srv(7100, big); srv(7101, one)
open(sys.argv[2] + ".tmp", "w").write(str(os.getpid())); os.rename(sys.argv[2] + ".tmp", sys.argv[2])
threading.Event().wait()' "$W/zero" "$W/srv.pid" >/dev/null 2>&1 3>&- &
for _ in $(seq 1 200); do [ -s "$W/srv.pid" ] && break; sleep 0.05; done

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
inside() { sbx-exec --id "$1" --timeout 600s -- sh -c "$2" | jq -r .exec.stdout; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
if [ "${ONLY:-}" != l7 ]; then
SLIRP=$(in_ns sbx-create --allow-internet | jq -r .sandbox.id)
BROKER=$(in_ns sbx-create --allow-out 10.98.0.1/32 | jq -r .sandbox.id)

# 1 GB download, MB/s, medians of RUNS (alternating).
dl() { inside "$1" 's=$(date +%s%N); busybox nc 10.98.0.1 7100 </dev/null | wc -c >/dev/null; e=$(date +%s%N); echo $(( 1073741824 * 1000 / (e - s) ))'; }
: >"$W/dl.slirp"; : >"$W/dl.broker"
for _ in $(seq 1 "$RUNS"); do dl "$SLIRP" >>"$W/dl.slirp"; dl "$BROKER" >>"$W/dl.broker"; done
dls=$(median <"$W/dl.slirp"); dlb=$(median <"$W/dl.broker")

# Connection setup: connect + first byte, microseconds, median of 200.
CONN='python3 -c "
import socket, time
t = []
for _ in range(200):
    s = time.perf_counter(); c = socket.create_connection((\"10.98.0.1\", 7101)); c.recv(1); t.append(time.perf_counter() - s); c.close()
t.sort(); print(int(t[100] * 1e6))"'
cs=$(inside "$SLIRP" "$CONN"); cb=$(inside "$BROKER" "$CONN")

# Memory of the host-side helper of an idle sandbox: Pss, kB.
pss_of() {
	local p
	for p in $(cat /sys/fs/cgroup/unified/sbx/"$1"/cgroup.procs 2>/dev/null || cat /sys/fs/cgroup/sbx/"$1"/cgroup.procs); do
		[ "$(cat /proc/"$p"/comm)" = "$2" ] && awk '/^Pss:/ {print $2}' /proc/"$p"/smaps_rollup
	done
}
ms=$(pss_of "$SLIRP" slirp4netns); mb=$(pss_of "$BROKER" sbx-egress)

# Create, ms, medians of 10 (alternating).
: >"$W/cr.slirp"; : >"$W/cr.broker"
for _ in $(seq 1 10); do
	for kind in slirp broker; do
		if [ $kind = slirp ]; then a=(--allow-internet); else a=(--allow-out 10.98.0.1/32); fi
		s=$(date +%s%N)
		id=$(in_ns sbx-create "${a[@]}" | jq -r .sandbox.id)
		e=$(date +%s%N)
		echo $(( (e - s) / 1000000 )) >>"$W/cr.$kind"
		sbx-ctl kill --id "$id" >/dev/null
	done
done
crs=$(median <"$W/cr.slirp"); crb=$(median <"$W/cr.broker")

mkdir -p "$(dirname "$OUT")"
{
	echo "# Egress through the broker against slirp4netns (tests/bench/egress.sh)"
	echo
	echo "One run, $(date -u +%Y-%m-%d), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg). The server is"
	echo "python3 in a network namespace of the bench's (10.98.0.1, opened by egress_allow);"
	echo "\"slirp\" is \`--allow-internet\` (slirp4netns + the egress table), \"broker\" is"
	echo "\`--allow-out 10.98.0.1/32\` (sbx-egress)."
	echo
	echo "| measure | slirp | broker | ratio broker/slirp | issue 28's bound |"
	echo "| --- | --- | --- | --- | --- |"
	echo "| 1 GB download (MB/s, median of $RUNS) | $dls | $dlb | $(ratio "$dlb" "$dls") | >= 0.8 |"
	echo "| connect + first byte (µs, median of 200) | $cs | $cb | $(ratio "$cb" "$cs") | broker - slirp <= 1000 µs: $((cb - cs)) µs |"
	echo "| create (ms, median of 10) | $crs | $crb | $(ratio "$crb" "$crs") | <= 1.1 |"
	echo "| host-side helper of an idle sandbox (Pss, kB) | $ms | $mb | $(ratio "$mb" "$ms") | broker <= +200 kB |"
} >"$OUT"
cat "$OUT"
sbx-ctl kill --id "$SLIRP" >/dev/null; sbx-ctl kill --id "$BROKER" >/dev/null
fi

# ---- issue 29: HTTPS, unfiltered, spliced, intercepted ----------------------
OUT7=${OUT7:-$top/docs/bench/egress-l7.md}
RUNS7=${RUNS7:-3}
in_ns ip addr add 10.98.0.53/32 dev lo
in_ns setsid python3 "$top/tests/lib/dns-server.py" "$W/dns.pid" 10.98.0.53 \
	"bench.sbx.test=10.98.0.1" >/dev/null 2>&1 3>&- &
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca -keyout "$W/ca.key" \
	-out "$W/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=bench.sbx.test \
	-keyout "$W/srv.key" -out "$W/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:bench.sbx.test\n' >"$W/ext"
openssl x509 -req -in "$W/srv.csr" -CA "$W/ca.pem" -CAkey "$W/ca.key" -CAcreateserial -days 2 \
	-extfile "$W/ext" -out "$W/srv.pem" 2>/dev/null
mkdir -p "$W/www"
truncate -s 256M "$W/www/big"
# python3's TLS server: HTTP/1.1, the file in 1 MB writes.
in_ns setsid python3 -c '
import http.server, os, socketserver, ssl, sys
os.chdir(sys.argv[1]); os.closerange(3, 65536)
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def copyfile(self, src, dst):
        while True:
            b = src.read(1 << 20)
            if not b: break
            dst.write(b)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s = S(("10.98.0.1", 443), H); s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(sys.argv[4] + ".tmp", "w").write(str(os.getpid())); os.rename(sys.argv[4] + ".tmp", sys.argv[4])
s.serve_forever()' "$W/www" "$W/srv.pem" "$W/srv.key" "$W/tls.pid" >/dev/null 2>&1 3>&- &
for _ in $(seq 1 200); do [ -s "$W/tls.pid" ] && [ -s "$W/dns.pid" ] && break; sleep 0.05; done
printf '{"rules": [{"action": "allow", "to": "bench.sbx.test", "methods": ["GET"], "path": "/"}], "default": "deny"}' >"$W/l7.json"
U=$(in_ns sbx-create --allow-internet | jq -r .sandbox.id)
SP=$(in_ns sbx-create --allow-out bench.sbx.test | jq -r .sandbox.id)
IC=$(in_ns sbx-create --network-policy "$W/l7.json" | jq -r .sandbox.id)
for id in "$U" "$SP"; do sbx-fs --id "$id" put - /tmp/ca.pem <"$W/ca.pem" >/dev/null; done
# MB/s of one download, as curl measures it (bytes over the transfer's time).
get() { inside "$1" "curl -sS $2 --resolve bench.sbx.test:443:10.98.0.1 -o /dev/null -w '%{speed_download}' https://bench.sbx.test/big" | awk '{printf "%.1f", $1 / 1048576}'; }
: >"$W/h.u"; : >"$W/h.sp"; : >"$W/h.ic"
for _ in $(seq 1 "$RUNS7"); do
	get "$U" "--cacert /tmp/ca.pem" >>"$W/h.u"; echo >>"$W/h.u"
	get "$SP" "--cacert /tmp/ca.pem" >>"$W/h.sp"; echo >>"$W/h.sp"
	get "$IC" "" >>"$W/h.ic"; echo >>"$W/h.ic"
done
hu=$(median <"$W/h.u"); hs=$(median <"$W/h.sp"); hi=$(median <"$W/h.ic")
mkdir -p "$(dirname "$OUT7")"
{
	echo "# HTTPS through the broker: spliced and intercepted (tests/bench/egress.sh, issue 29)"
	echo
	echo "One run, $(date -u +%Y-%m-%d), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg). A 256 MB"
	echo "file over HTTPS (python3's TLS server, P-256 certificate, in the bench's namespace),"
	echo "fetched by curl inside: \"unfiltered\" is \`--allow-internet\` (slirp4netns + the"
	echo "egress table), \"spliced\" \`--allow-out bench.sbx.test\` (the broker relays the TLS"
	echo "bytes by SNI), \"intercepted\" an L7 rule on the name (the broker terminates TLS with"
	echo "the profile's CA, judges the request and makes a TLS connection of its own)."
	echo
	echo "| measure | unfiltered | spliced | intercepted | spliced/unfiltered | intercepted/unfiltered | issue 29's bound |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	echo "| 256 MB HTTPS download (MB/s, median of $RUNS7) | $hu | $hs | $hi | $(ratio "$hs" "$hu") | $(ratio "$hi" "$hu") | spliced >= 0.9, intercepted >= 0.5 |"
} >"$OUT7"
cat "$OUT7"
