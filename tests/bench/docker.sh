#!/usr/bin/env bash
# tests/bench/docker.sh - the docker backend against the docker CLI, side by
# side in the same run, on the same daemon and image.
#
#   exec    sbx-exec --id ID -- true          vs  docker exec ID true
#   create  sbx-create (started, ready)       vs  docker run -d (same image,
#           --network none, a sleeping PID 1: the same work for the daemon)
#   pause   sbx-ctl pause + sbx-ctl resume    vs  docker pause + docker unpause
#   commit  sbx-snap (commit, labelled)       vs  docker commit
#
# Both sides are whole processes (a program start + Engine API calls), so
# the ratio is what a shell script sees.  Medians of RUNS runs (hyperfine
# -N), printed as a table with ratios; BENCH_OUT=FILE also writes it there.
# Uses the daemon DOCKER_HOST names, else (as root) starts a private one
# with tests/lib/dockerd.sh.  Needs hyperfine, jq and the docker CLI (only
# here, as the baseline).  Nothing here is a pass/fail test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
RUNS=${RUNS:-20}
export PATH="$BUILD/bin:$PATH"
dsh=$top/tests/lib/dockerd.sh

command -v hyperfine >/dev/null || { echo "docker.sh: needs hyperfine" >&2; exit 1; }
command -v docker >/dev/null || { echo "docker.sh: needs the docker CLI (baseline)" >&2; exit 1; }

W=$(mktemp -d /tmp/sbx-bench-docker.XXXXXX)
DD=""
export SBX_STATE_DIR=$W/state SBX_CONFIG=$W/config.json SBX_BACKEND=docker
export SBX_DOCKER_NO_SWEEP=1
mkdir -p "$SBX_STATE_DIR"
echo '{}' >"$SBX_CONFIG"
LABEL="bench.run=$$"
cleanup() {
	if [ -n "${DOCKER_HOST:-}" ]; then
		docker ps -aq --filter "label=$LABEL" | xargs -r docker rm -f >/dev/null 2>&1 || true
		docker images -q --filter "label=bench.run" | xargs -r docker rmi -f >/dev/null 2>&1 || true
		docker images -q --filter "label=sbx.snapshot.name=bench-$$" | xargs -r docker rmi -f >/dev/null 2>&1 || true
	fi
	[ -z "$DD" ] || "$dsh" stop "$DD" || true
	rm -rf "$W"
}
trap cleanup EXIT

if ! "$dsh" ping; then
	[ "$(id -u)" = 0 ] || { echo "docker.sh: no dockerd at DOCKER_HOST and not root" >&2; exit 1; }
	DD=$(mktemp -d /tmp/sbxd.XXXXXX)
	eval "$("$dsh" start "$DD")"
fi
export DOCKER_HOST
"$dsh" image

bench() {   # name, commands...
	local name=$1
	shift
	hyperfine -N -w 2 -r "$RUNS" --export-json "$W/$name.json" "$@" >"$W/$name.log" 2>&1 || {
		cat "$W/$name.log" >&2
		exit 1
	}
}
median_ms() { jq -r ".results[$2].median * 1000 | . * 100 | round / 100" "$W/$1.json"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

ID=$(sbx-create --label "$LABEL" | jq -r .sandbox.id)
bench exec "sbx-exec --id $ID -- true" "docker exec $ID true" "sbx-exec --version"
bench create "sbx-create --label $LABEL" \
	"docker run -d --label $LABEL --label sbx.managed=1 --network none --init --entrypoint /bin/sh sbx/base:latest -c 'exec sleep 2147483647'"
bench pause "sh -c 'sbx-ctl pause --id $ID && sbx-ctl resume --id $ID'" \
	"sh -c 'docker pause $ID && docker unpause $ID'"
RUNS=$(( RUNS < 10 ? RUNS : 10 )) bench commit "sbx-snap --id $ID --name bench-$$" \
	"docker commit -c 'LABEL bench.run=$$' $ID sbx-bench:$$"

e_sbx=$(median_ms exec 0); e_cli=$(median_ms exec 1); e_start=$(median_ms exec 2)
c_sbx=$(median_ms create 0); c_cli=$(median_ms create 1)
p_sbx=$(median_ms pause 0); p_cli=$(median_ms pause 1)
s_sbx=$(median_ms commit 0); s_cli=$(median_ms commit 1)
ver=$(curl -s --unix-socket "${DOCKER_HOST#unix://}" http://d/version | jq -r .Version 2>/dev/null || echo "?")

report=$(cat <<EOF
## Docker backend vs the docker CLI ($(date -u +%Y-%m-%d), dockerd $ver, $(nproc) CPUs)

| what | sbx median ms | docker CLI | CLI median ms | ratio sbx/CLI |
| --- | --- | --- | --- | --- |
| exec \`true\` (\`sbx-exec --id ID -- true\`) | $e_sbx | \`docker exec ID true\` | $e_cli | $(ratio "$e_sbx" "$e_cli") |
| create, started (\`sbx-create\`) | $c_sbx | \`docker run -d --network none --init …\` | $c_cli | $(ratio "$c_sbx" "$c_cli") |
| pause + resume | $p_sbx | \`docker pause\` + \`docker unpause\` | $p_cli | $(ratio "$p_sbx" "$p_cli") |
| snapshot (\`sbx-snap\`) | $s_sbx | \`docker commit\` | $s_cli | $(ratio "$s_sbx" "$s_cli") |
| program start alone (\`sbx-exec --version\`) | $e_start | | | |

Medians of $RUNS runs (commit: at most 10), hyperfine -N, 2 warm-up runs, same daemon,
same image, measured side by side in one run.  sbx-exec also inspects the container
first (auto-resume) and reads the exit code; sbx-create also inspects after start.
EOF
)
printf '%s\n' "$report"
[ -z "${BENCH_OUT:-}" ] || printf '%s\n' "$report" >>"$BENCH_OUT"
