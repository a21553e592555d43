#!/usr/bin/env bash
# tests/bench/local.sh - the local backend against its physical floor.
#
#   create  sbx-create (returns when the sandbox is ready for exec)
#           vs a floor program: unshare the same six namespaces, mount the
#           same overlay (lower = /), mount /proc, pivot_root, exec true
#           vs bwrap --ro-bind / / true
#   exec    sbx-exec --id ID -- true  vs  nsenter -a -t INIT true
#           (and sbx-exec --version: what starting the program costs)
#   pause   sbx-ctl pause + sbx-ctl resume (two program starts)
#   idle    Pss of a fresh sandbox's own processes
#
# Medians of >= RUNS runs (hyperfine -N), printed as a table with ratios
# and written to docs/bench/local.md.  Needs root, hyperfine, gcc.
# BUILD names the build directory (make bench sets it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
RUNS=${RUNS:-30}
OUT=${OUT:-$top/docs/bench/local.md}
export PATH="$BUILD/bin:$PATH"

[ "$(id -u)" = 0 ] || { echo "local.sh: needs root" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "local.sh: needs hyperfine" >&2; exit 1; }

W=$(mktemp -d /tmp/sbx-bench.XXXXXX)
export SBX_STATE_DIR=$W/state SBX_CONFIG=$W/config.json SBX_BACKEND=local
echo '{}' >"$SBX_CONFIG"
cleanup() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT

# The floor: what any namespace + overlay sandbox must do at least.
cat >"$W/floor.c" <<'EOF'
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	char opts[4096], root[4096], proc[4200];
	if (argc < 2) return 2;
	snprintf(opts, sizeof(opts), "lowerdir=/,upperdir=%s/upper,workdir=%s/work", argv[1], argv[1]);
	snprintf(root, sizeof(root), "%s/root", argv[1]);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET |
		    CLONE_NEWCGROUP) < 0) { perror("unshare"); return 1; }
	pid_t p = fork();
	if (p == 0) {
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("overlay", root, "overlay", 0, opts) < 0 ||
		    mount("proc", proc, "proc", 0, NULL) < 0 || chdir(root) < 0 ||
		    syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0) {
			perror("floor");
			_exit(1);
		}
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
EOF
gcc -O2 -o "$W/floor" "$W/floor.c"
mkdir -p "$W/fl/upper" "$W/fl/work" "$W/fl/root"
"$W/floor" "$W/fl" || { echo "local.sh: the floor program does not run" >&2; exit 1; }

SB=$(sbx-create | jq -r .sandbox.id)
INIT=$(jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$SB/sandbox.json")

bench() {   # name, then commands
	local name=$1
	shift
	hyperfine -N -w 3 -r "$RUNS" --export-json "$W/$name.json" "$@" >"$W/$name.log" 2>&1 || {
		cat "$W/$name.log" >&2
		exit 1
	}
}
median_ms() {   # json, index
	jq -r ".results[$2].median * 1000 | . * 100 | round / 100" "$W/$1.json"
}

echo "# measuring (RUNS=$RUNS) ..." >&2
bench create "sbx-create" "$W/floor $W/fl" "bwrap --ro-bind / / --unshare-all --proc /proc --dev /dev /bin/true"
bench exec "sbx-exec --id $SB -- true" "nsenter -a -t $INIT /bin/true" "sbx-exec --version"
bench pause "sh -c 'sbx-ctl pause --id $SB >/dev/null && sbx-ctl resume --id $SB >/dev/null'" \
	"sh -c 'sbx-ctl --version >/dev/null && sbx-ctl --version >/dev/null'"

# Idle memory: the sandbox's own processes (the init alone when idle).
IDLE=$(sbx-create | jq -r .sandbox.id)
pss=0 nproc=0
for p in $(cat /sys/fs/cgroup/unified/sbx/"$IDLE"/cgroup.procs \
	/sys/fs/cgroup/unified/sbx/"$IDLE"/work/cgroup.procs 2>/dev/null); do
	kb=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
	pss=$((pss + kb)); nproc=$((nproc + 1))
done
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$(jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$IDLE/sandbox.json")/status")

c_sbx=$(median_ms create 0); c_floor=$(median_ms create 1); c_bwrap=$(median_ms create 2)
e_sbx=$(median_ms exec 0); e_ns=$(median_ms exec 1); e_start=$(median_ms exec 2)
p_sbx=$(median_ms pause 0); p_start=$(median_ms pause 1)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

table=$(cat <<EOF
| what | median ms | baseline | baseline ms | ratio |
| --- | ---: | --- | ---: | ---: |
| create, ready for exec (\`sbx-create\`) | $c_sbx | floor: unshare 6 ns + overlay + /proc + pivot_root + exec true | $c_floor | $(ratio "$c_sbx" "$c_floor") |
| create | $c_sbx | \`bwrap --ro-bind / / --unshare-all --proc /proc --dev /dev true\` | $c_bwrap | $(ratio "$c_sbx" "$c_bwrap") |
| exec (\`sbx-exec --id ID -- true\`) | $e_sbx | \`nsenter -a -t INIT true\` | $e_ns | $(ratio "$e_sbx" "$e_ns") |
| program start alone (\`sbx-exec --version\`) | $e_start | \`nsenter -a -t INIT true\` | $e_ns | $(ratio "$e_start" "$e_ns") |
| pause + resume (two \`sbx-ctl\` runs) | $p_sbx | two \`sbx-ctl --version\` runs | $p_start | $(ratio "$p_sbx" "$p_start") |
EOF
)
load=$(cut -d' ' -f1-3 /proc/loadavg)
report=$(cat <<EOF
# Local backend benchmarks

Generated by \`tests/bench/local.sh\` (\`make bench\`) on $(date -u +%Y-%m-%dT%H:%MZ),
kernel $(uname -r), $(nproc) CPUs, load average $load.  Medians of $RUNS runs
(hyperfine -N, 3 warm-up runs), all measured side by side in the same run.

$table

Idle footprint of a fresh sandbox: $nproc process(es), Pss $pss kB
(the init's VmRSS $rss kB, mostly pages shared with the sbx binaries).

Reading the table: every sbx program starts by loading libsbx's shared
libraries (libcurl pulls in some 30 more), which the "program start alone"
row isolates; the sandbox work itself is the difference between a row and
that start-up cost.  A load average above the CPU count inflates every
number (the baselines too, but not equally): compare runs on an idle machine.
EOF
)
mkdir -p "$(dirname "$OUT")"
printf '%s\n' "$report" >"$OUT"
printf '%s\n' "$table"
echo "idle: $nproc process(es), Pss $pss kB, init VmRSS $rss kB"
echo "# written to $OUT" >&2
