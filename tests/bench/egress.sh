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
# Written to docs/bench/egress.md.  Needs root.
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
echo '{"profiles": {"default": {"egress_allow": ["10.98.0.0/16"], "egress_resolver": "10.98.0.53"}}}' >"$SBX_CONFIG"
NS=$W/ns
cleanup() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	[ -s "$W/srv.pid" ] && kill "$(cat "$W/srv.pid")" 2>/dev/null || true
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
SLIRP=$(in_ns sbx-create --allow-internet | jq -r .sandbox.id)
BROKER=$(in_ns sbx-create --allow-out 10.98.0.1/32 | jq -r .sandbox.id)
inside() { sbx-exec --id "$1" --timeout 600s -- sh -c "$2" | jq -r .exec.stdout; }

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

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
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
