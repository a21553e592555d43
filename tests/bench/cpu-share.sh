#!/usr/bin/env bash
# tests/bench/cpu-share.sh - does the CPU limit hold a busy loop to its
# share?  For each --cpus value, a sandbox runs two busy loops (more work
# than the limit allows, on a 2-CPU machine) for SECONDS of wall time; the
# CPU time its cgroup used (usage_usec in its cgroup2 cpu.stat, which
# hybrid hosts have too) divided by the wall time is the share it got.  Printed as
# "limit, share, share/limit": a ratio, never pass/fail, and never a timed
# assertion.  A sandbox with no --cpus gets the profile's default (1).
# Needs root.  BUILD names the build directory.  Used by make bench and by
# make check-vm (tests/vm-run), which prints it for the stock layout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
SECONDS_RUN=${CPU_SHARE_SECONDS:-5}
export PATH="$BUILD/bin:$PATH"
[ "$(id -u)" = 0 ] || { echo "cpu-share.sh: needs root" >&2; exit 1; }

W=$(mktemp -d /tmp/sbx-bench.XXXXXX)
export SBX_STATE_DIR=$W/state SBX_CONFIG=$W/config.json SBX_BACKEND=local
echo '{}' >"$SBX_CONFIG"
cleanup() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT

usage_us() { # sandbox id -> CPU time of its cgroup, microseconds (cgroup2's
	# cpu.stat has usage_usec with or without the cpu controller: hybrid too)
	local v2
	v2=$(jq -r .cgroups.v2 "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json")
	awk '$1 == "usage_usec" {print $2}' "$v2/cpu.stat"
}

printf '%-8s %-8s %s\n' limit share share/limit
for cpus in 0.25 0.5 1; do
	id=$(sbx-create --cpus "$cpus" | jq -r .sandbox.id)
	u0=$(usage_us "$id")
	t0=$(date +%s%N)
	sbx-exec --id "$id" --timeout "${SECONDS_RUN}s" -- \
		sh -c 'while :; do :; done & while :; do :; done' >/dev/null 2>&1 || true
	t1=$(date +%s%N)
	u1=$(usage_us "$id")
	awk -v l="$cpus" -v u=$((u1 - u0)) -v w=$(((t1 - t0) / 1000)) \
		'BEGIN { s = u / w; printf "%-8s %-8.3f %.2f\n", l, s, s / l }'
	sbx-ctl kill --id "$id" >/dev/null
done
