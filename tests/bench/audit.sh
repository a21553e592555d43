#!/usr/bin/env bash
# tests/bench/audit.sh - what the session record (issue 29 part 3) costs
# egress: the connection rate of a sandbox with a network policy whose
# profile records (the default) against one whose profile does not
# (audit_maxlen 0), side by side in one run, alternating; and the memory
# of an egress record in Redis (MEMORY USAGE of the stream and INFO
# memory's used_memory, over the records of N connections).  A private
# redis-server on a unix socket; nothing leaves the machine (a network
# namespace of its own, a server on 10.98.0.1).
#
#   tests/bench/audit.sh        RUNS=N (default 5 rounds of 1000 connections), N (default 10000)
#
# Written to docs/bench/audit.md.  Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
OUT=${OUT:-$top/docs/bench/audit.md}
RUNS=${RUNS:-5}
N=${N:-10000}
export PATH="$BUILD/bin:$PATH" SBX_BACKEND=local
[ "$(id -u)" = 0 ] || { echo "audit.sh: needs root" >&2; exit 1; }

W=$(mktemp -d /tmp/sbx-bench-audit.XXXXXX)
export SBX_STATE_DIR=$W/state SBX_CONFIG=$W/config.json
mkdir -p "$SBX_STATE_DIR"
redis-server --port 0 --unixsocket "$W/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
	--daemonize yes --pidfile "$W/redis.pid" --logfile "$W/redis.log" --dir "$W" >/dev/null
for _ in $(seq 1 100); do redis-cli -s "$W/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.05; done
rc() { redis-cli -s "$W/redis.sock" "$@"; }
cat >"$SBX_CONFIG" <<JSON
{"profiles": {
  "on": {"redis_url": "unix://$W/redis.sock", "egress_allow": ["10.98.0.0/16"], "egress_resolver": "10.98.0.53"},
  "off": {"redis_url": "unix://$W/redis.sock", "egress_allow": ["10.98.0.0/16"], "egress_resolver": "10.98.0.53",
          "audit_maxlen": 0}}}
JSON
NS=$W/ns
cleanup() {
	for p in on off; do sbx-ls --profile $p --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true; done
	[ -s "$W/srv.pid" ] && kill "$(cat "$W/srv.pid")" 2>/dev/null || true
	[ -s "$W/redis.pid" ] && kill "$(cat "$W/redis.pid")" 2>/dev/null || true
	umount "$NS" 2>/dev/null || true
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT
touch "$NS"
unshare --net="$NS" true
in_ns() { nsenter --net="$NS" "$@"; }
in_ns ip link set lo up
in_ns ip addr add 10.98.0.1/32 dev lo
# 7101: accepts, writes one byte, closes.
in_ns setsid python3 -c '
import os, socket, sys, threading
os.closerange(3, 65536)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.98.0.1", 7101)); s.listen(512)
def one(c):
    c.sendall(b"x"); c.close()
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid())); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept(); threading.Thread(target=one, args=(c,), daemon=True).start()' "$W/srv.pid" >/dev/null 2>&1 3>&- &
for _ in $(seq 1 200); do [ -s "$W/srv.pid" ] && break; sleep 0.05; done

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ON=$(in_ns sbx-create --profile on --tenant bench --session on --allow-out 10.98.0.1/32 | jq -r .sandbox.id)
OFF=$(in_ns sbx-create --profile off --tenant bench --session off --allow-out 10.98.0.1/32 | jq -r .sandbox.id)
inside() { sbx-exec --profile "$1" --id "$2" --timeout 600s -- sh -c "$3" | jq -r .exec.stdout; }

# Connections per second: $1 sequential connect + first byte + close.
conns() { echo "python3 -c \"
import socket, time
s = time.perf_counter()
for _ in range($1):
    c = socket.create_connection((\\\"10.98.0.1\\\", 7101)); c.recv(1); c.close()
print(int($1 / (time.perf_counter() - s)))\""; }
: >"$W/on"; : >"$W/off"
for _ in $(seq 1 "$RUNS"); do
	inside on "$ON" "$(conns 1000)" >>"$W/on"
	inside off "$OFF" "$(conns 1000)" >>"$W/off"
done
con=$(median <"$W/on"); coff=$(median <"$W/off")

# Memory: the records of N connections, taken into a fresh stream.
sleep 0.5
sbx-exec --profile on --id "$ON" -- true >/dev/null
rc DEL 'sbx:{bench}:audit' 'sbx:{bench}:audit-head' >/dev/null
before=$(rc INFO memory | awk -F: '/^used_memory:/ {print $2+0}')
inside on "$ON" "$(conns "$N")" >/dev/null
sleep 0.5
sbx-exec --profile on --id "$ON" -- true >/dev/null
after=$(rc INFO memory | awk -F: '/^used_memory:/ {print $2+0}')
len=$(rc XLEN 'sbx:{bench}:audit')
usage=$(rc MEMORY USAGE 'sbx:{bench}:audit' SAMPLES 0)
sample=$(rc XRANGE 'sbx:{bench}:audit' - + COUNT 1 | paste -sd' ' | cut -c1-400)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
mkdir -p "$(dirname "$OUT")"
{
	echo "# The session record's cost to egress (tests/bench/audit.sh)"
	echo
	echo "One run, $(date -u +%Y-%m-%d), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg). Two sandboxes"
	echo "with \`--allow-out 10.98.0.1/32\` (sbx-egress), one of a profile that records"
	echo "(the default, audit_maxlen 100000), one of a profile with audit_maxlen 0; a"
	echo "python3 client inside opens 1000 connections one after another (connect, first"
	echo "byte, close), rounds alternating, median of $RUNS; Redis 7 on a unix socket."
	echo
	echo "| measure | audit off | audit on | ratio on/off | issue 29's bound |"
	echo "| --- | --- | --- | --- | --- |"
	echo "| connections per second (median of $RUNS rounds of 1000) | $coff | $con | $(ratio "$con" "$coff") | >= 0.9 |"
	echo
	echo "Memory in Redis: the records of $N connections ($len records kept): MEMORY USAGE"
	echo "of the stream $usage bytes, $(ratio "$usage" "$len") bytes a record; used_memory grew by"
	echo "$((after - before)) bytes, $(ratio "$((after - before))" "$len") a record.  So the default audit_maxlen"
	echo "(100000) costs a tenant about $(awk -v u="$usage" -v l="$len" 'BEGIN {printf "%.0f", u / l * 100000 / 1048576}') MB."
} >"$OUT"
cat "$OUT"
