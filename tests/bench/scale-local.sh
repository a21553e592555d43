#!/usr/bin/env bash
# tests/bench/scale-local.sh - what create, exec, kill and sbx-ls cost as the
# number of running sandboxes grows (issue 20), and what an idle sandbox
# costs the whole system.
#
# For each point N of POINTS (default 0 500 1000 2000) the state dir is
# topped up to N running sandboxes, then RUNS rounds each run, in turn:
#   bwrap     bwrap --ro-bind / / --unshare-all ... true  (the control: it
#             does not depend on N, so it shows the machine's load drift)
#   create    sbx-create
#   exec      sbx-exec --id <the one just made> -- true
#   ls        sbx-ls --id <it>   (one sandbox: should be flat)
#   ls-all    sbx-ls             (every sandbox: O(N) output by nature,
#             reported per listed sandbox too)
#   kill      sbx-ctl kill --id <it>   (so the count stays at N)
# Medians per point, the curve, and the ratio of the last point to the
# first.  Memory: /proc/meminfo before the first sandbox and at the last
# point (used = MemTotal - MemFree - Buffers - Cached, and its kernel parts
# Slab, SUnreclaim, PageTables, KernelStack), divided by the count; also the
# sum of the sandboxes' own Pss.  Other work on the machine moves those
# numbers: they are system-wide by design.
#
# Writes docs/bench/scale-local.md (OUT overrides; docs/bench/scale.md reads
# it) and stdout.  Needs root, bwrap, jq.  At the end every sandbox it made is
# killed and the state dir and cgroups are checked empty.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
export PATH="$BUILD/bin:$PATH"
RUNS=${RUNS:-15}
POINTS=${POINTS:-0 500 1000 2000}
OUT=${OUT:-$top/docs/bench/scale-local.md}

[ "$(id -u)" = 0 ] || { echo "scale-local.sh: needs root" >&2; exit 1; }
command -v bwrap >/dev/null || { echo "scale-local.sh: needs bwrap" >&2; exit 1; }

W=$(mktemp -d /tmp/sbx-bench-scale.XXXXXX)
chmod 755 "$W"
export SBX_STATE_DIR=$W/state SBX_CONFIG=$W/config.json SBX_BACKEND=local
mkdir -p "$SBX_STATE_DIR"
echo '{}' >"$SBX_CONFIG"
SBDIR=$SBX_STATE_DIR/local/sandboxes
cleanup() {
	set +e
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1
	left=$(count)
	cg=0
	for c in /sys/fs/cgroup/*/sbx /sys/fs/cgroup/unified/sbx; do
		for id in $(cat "$W/ids" 2>/dev/null); do [ -d "$c/$id" ] && cg=$((cg + 1)); done
	done
	echo "# scale-local.sh: after cleanup: $left sandbox dir(s), $cg cgroup(s) of ours left" >&2
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT

# top_up N: create sandboxes until N run (two at a time: 2 cores).
top_up() {
	local have
	have=$(count)
	while [ "$have" -lt "$1" ]; do
		sbx-create | jq -r .sandbox.id >>"$W/ids" &
		if [ $((have + 1)) -lt "$1" ]; then sbx-create | jq -r .sandbox.id >>"$W/ids"; have=$((have + 1)); fi
		wait
		have=$((have + 1))
	done
}
count() { local a; shopt -s nullglob; a=("$SBDIR"/sb-*); shopt -u nullglob; echo "${#a[@]}"; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# timed NAME CMD...: run CMD (its output to $W/out), append its wall ms to
# $W/NAME.$N
timed() {
	local name=$1 t0 t1
	shift
	t0=$EPOCHREALTIME
	"$@" >"$W/out" 2>&1 || { echo "scale-local.sh: failed: $*" >&2; exit 1; }
	t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$W/$name.$N"
}
meminfo() { awk '{ m[$1] = $2 } END { printf "%d %d %d %d %d\n", m["MemTotal:"] - m["MemFree:"] - m["Buffers:"] - m["Cached:"], m["Slab:"], m["SUnreclaim:"], m["PageTables:"], m["KernelStack:"] }' /proc/meminfo; }
pss_sum() {   # the Pss of every process in our sandboxes' cgroups, kB
	local total=0 kb p
	for id in $(cat "$W/ids"); do
		for p in $(cat /sys/fs/cgroup/unified/sbx/"$id"/cgroup.procs /sys/fs/cgroup/unified/sbx/"$id"/work/cgroup.procs 2>/dev/null); do
			kb=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
			total=$((total + kb))
		done
	done
	echo "$total"
}

sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
MEM0=$(meminfo)
names="bwrap create exec ls ls-all kill"
for N in $POINTS; do
	echo "# point $N: topping up ..." >&2
	top_up "$N"
	for ((i = 0; i < RUNS + 2; i++)); do
		timed bwrap bwrap --ro-bind / / --unshare-all --proc /proc --dev /dev /bin/true
		timed create sbx-create
		id=$(jq -r .sandbox.id <"$W/out")
		timed exec sbx-exec --id "$id" -- true
		timed ls sbx-ls --id "$id"
		timed ls-all sbx-ls
		timed kill sbx-ctl kill --id "$id"
		if [ "$i" -lt 2 ]; then   # warm-up rounds
			for n in $names; do sed -i '$d' "$W/$n.$N"; done
		fi
	done
	LAST=$N
done
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
COUNT=$(count)
MEM1=$(meminfo)
PSS=$(pss_sum)

FIRST=${POINTS%% *}
header="| what |"
sep="| --- |"
for N in $POINTS; do header="$header $N ms |"; sep="$sep ---: |"; done
table="$header last/first | last/first over bwrap's |
$sep ---: | ---: |"
for n in $names; do
	row="| $n |"
	for N in $POINTS; do
		row="$row $(median <"$W/$n.$N") |"
	done
	f=$(median <"$W/$n.$FIRST") l=$(median <"$W/$n.$LAST")
	bf=$(median <"$W/bwrap.$FIRST") bl=$(median <"$W/bwrap.$LAST")
	table="$table
$row $(ratio "$l" "$f") | $(ratio "$(ratio "$l" "$f")" "$(ratio "$bl" "$bf")") |"
done
# memory per sandbox, kB
read -r u0 s0 su0 pt0 ks0 <<<"$MEM0"
read -r u1 s1 su1 pt1 ks1 <<<"$MEM1"
per() { awk -v a="$1" -v b="$2" -v n="$COUNT" 'BEGIN { printf "%.0f", (n > 0 ? (b - a) / n : 0) }'; }
mem=$(cat <<EOF
| per idle sandbox, at $COUNT running | kB |
| --- | ---: |
| system memory used (MemTotal - MemFree - Buffers - Cached) | $(per "$u0" "$u1") |
| of which Slab (kernel objects) | $(per "$s0" "$s1") |
| of which SUnreclaim | $(per "$su0" "$su1") |
| of which PageTables | $(per "$pt0" "$pt1") |
| of which KernelStack | $(per "$ks0" "$ks1") |
| the sandboxes' own processes, Pss | $(awk -v p="$PSS" -v n="$COUNT" 'BEGIN { printf "%.0f", (n > 0 ? p / n : 0) }') |
EOF
)
load=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
Generated by \`tests/bench/scale-local.sh\` (\`make bench\`) on $(date -u +%Y-%m-%dT%H:%MZ),
kernel $(uname -r), $(nproc) CPUs, load average $load.  Medians of $RUNS rounds
per point (each round runs every row once, in turn; 2 warm-up rounds).
The last column divides the row's last/first by bwrap's last/first, which
does not depend on the number of sandboxes: it takes out the drift of the
machine's load between points.

$table

$mem
EOF
printf '%s\n\n%s\n' "$table" "$mem"
echo "# written to $OUT" >&2
