# tests/lib/helpers.bash - loaded by every bats file.
#
# Gives each test file its own redis-server on a unix socket in a temp
# folder (started in setup_file, always stopped in teardown_file), its own
# SBX_STATE_DIR, the build's programs first on PATH, and the backend under
# test (SBX_TEST_BACKEND: local, the default, docker or podman) through its
# fixture file tests/lib/fixture-<backend>.bash: the profile, the base
# template ($SBX_TEST_TEMPLATE) and the facts a test may compare against.
#
#   setup_file()    { sbx_setup_file; }
#   teardown_file() { sbx_teardown_file; }
#
# Suites.  A file's first lines say which runs take it:
#   # suite: conformance     every backend: what a user does through the
#                            programs; gated by capabilities (need_cap)
#   # suite: local           (or docker, ...) that backend's own mechanics;
#                            several names: `# suite: local docker`
# A file without the line is a local suite.  tests/run picks the files.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

SBX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export BUILD=${BUILD:-$SBX_TOP/build}
export PATH="$BUILD/bin:$PATH"

# Start a private redis-server; exports SBX_REDIS_URL and REDIS_SOCK.
redis_start() {
	local dir=$1
	mkdir -p "$dir"
	redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
		--logfile "$dir/redis.log" --dir "$dir" >/dev/null
	local i
	for i in $(seq 1 100); do
		[ -S "$dir/redis.sock" ] && redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	export REDIS_SOCK="$dir/redis.sock"
	export SBX_REDIS_URL="unix://$dir/redis.sock"
}

redis_stop() {
	local dir=$1
	[ -f "$dir/redis.pid" ] || return 0
	local pid
	pid=$(cat "$dir/redis.pid" 2>/dev/null) || return 0
	redis-cli -s "$dir/redis.sock" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null
	local i
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		grep -q zombie "/proc/$pid/status" 2>/dev/null && break
		sleep 0.05
	done
}

# SBX_TEST_REDIS=cluster (make check-scale): the file's Redis is a 6-node
# cluster (tests/lib/cluster.sh) instead; rcli follows redirections, and
# FLUSHALL and --scan go to every master.
redis_cluster_start() {
	export REDIS_CLUSTER_DIR=$1 SBX_REDIS_URL      # set first: teardown stops a partial one
	"$SBX_TOP/tests/lib/cluster.sh" start "$1" || return 1
	SBX_REDIS_URL=$(cat "$1/url")
}

rcli() {
	[ -n "${REDIS_CLUSTER_DIR:-}" ] || { redis-cli -s "$REDIS_SOCK" "$@"; return; }
	local p
	case "$1" in
	FLUSHALL | flushall | --scan)
		for p in $(cat "$REDIS_CLUSTER_DIR/ports"); do
			[ "$(redis-cli -p "$p" role 2>/dev/null | head -1)" = master ] && redis-cli -p "$p" "$@"
		done | awk '!seen[$0]++' ;;
	*) redis-cli -c -p "$(head -1 "$REDIS_CLUSTER_DIR/ports")" "$@" ;;
	esac
}

# ---- the backend under test: its one fixture file ----------------------
export SBX_TEST_BACKEND=${SBX_TEST_BACKEND:-local}
if [ -f "$SBX_TOP/tests/lib/fixture-$SBX_TEST_BACKEND.bash" ]; then
	# shellcheck source=tests/lib/fixture-local.bash
	. "$SBX_TOP/tests/lib/fixture-$SBX_TEST_BACKEND.bash"
else
	echo "SBX_TEST_BACKEND=$SBX_TEST_BACKEND: no tests/lib/fixture-$SBX_TEST_BACKEND.bash" >&2
	FIXTURE_BACKEND=
fi

sbx_setup_file() {
	export SBX_TEST_DIR
	SBX_TEST_DIR=$(mktemp -d /tmp/sbx-test.XXXXXX)
	export SBX_STATE_DIR="$SBX_TEST_DIR/state"
	export SBX_CONFIG="$SBX_TEST_DIR/config.json"
	[ -n "$FIXTURE_BACKEND" ] || return 1
	export SBX_BACKEND=$FIXTURE_BACKEND
	fixture_profile "$SBX_CONFIG" || return 1
	mkdir -p "$SBX_STATE_DIR"
	if [ "${SBX_TEST_REDIS:-}" = cluster ]; then redis_cluster_start "$SBX_TEST_DIR/redis"
	else redis_start "$SBX_TEST_DIR/redis"; fi
}

# Extra sbx-create flags for every test sandbox.  None so far: the profile
# the fixture writes carries the template and the idle action, so a bare
# `sbx-create` (the man pages' examples) works too.
SBX_TEST_CREATE_ARGS=()

# ---- capabilities --------------------------------------------------------
# has_cap NAME: `sbx-ctl caps` of the profile under test says NAME.
has_cap() {
	local f=${SBX_TEST_DIR:-/tmp}/caps.json
	[ -s "$f" ] || sbx-ctl caps >"$f" 2>/dev/null || { rm -f "$f"; return 1; }
	[ "$(jq -r --arg c "$1" '.caps[$c] // false' "$f")" = true ]
}
# need_cap NAME...: skip the test unless the backend has every one.  The
# reason names the capability; tests/run checks that each one is listed
# as missing in the backend's docs (FIXTURE_DOC).
need_cap() {
	local c
	for c; do has_cap "$c" || skip "missing capability: $c"; done
	return 0
}

# sbx-create with the backend's knobs; prints the sandbox document.
sbx_new() { sbx-create "${SBX_TEST_CREATE_ARGS[@]}" "$@"; }
# ... and only its id.
sbx_new_id() { sbx_new "$@" | jq -r .sandbox.id; }

# A sandbox id that names nothing, in the backend's id format.
missing_id() { fixture_missing_id; }
# Kept for backend suites written before the split (a backend suite runs
# on its backend only, so these are no-ops there).  In a conformance
# suite their skip names no capability, and tests/run counts it a failure.
is_docker() { [ "$FIXTURE_BACKEND" = docker ]; }
local_only() { [ "$FIXTURE_BACKEND" = local ] || skip "local only: $*"; }

sbx_teardown_file() {
	[ -n "${SBX_TEST_DIR:-}" ] || return 0
	# Kill every sandbox this file created, delete its snapshots and
	# templates (an engine outlives the file: the next file must find it
	# as clean as this one did), then stop the redis-server.
	if command -v sbx-ls >/dev/null 2>&1; then
		sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
		sbx_clean_images
	fi
	redis_stop "$SBX_TEST_DIR/redis"
	[ -z "${REDIS_CLUSTER_DIR:-}" ] || "$SBX_TOP/tests/lib/cluster.sh" stop "$REDIS_CLUSTER_DIR"
	rm -rf --one-file-system "$SBX_TEST_DIR" 2>/dev/null || true
}

# Delete every snapshot, and every template but the base ones.
sbx_clean_images() {
	local id
	sbx-snap ls 2>/dev/null | jq -r '.snapshot.id // empty' 2>/dev/null |
		while read -r id; do sbx-snap rm --force "$id" >/dev/null 2>&1 || true; done
	sbx-tpl ls 2>/dev/null | jq -r '.template.id // empty' 2>/dev/null |
		while read -r id; do
			case "$id" in host | "$SBX_TEST_TEMPLATE") continue ;; esac
			sbx-tpl rm "$id" >/dev/null 2>&1 || true
		done
	return 0
}

# jq on the last `run` output.
jqo() { printf '%s\n' "$output" | jq -r "$@"; }

# Wait until process $1 is stopped (state T), e.g. by SBX_STOP; $2 tries
# 50 ms apart (400: 20 s).
wait_stopped() {
	local i
	for i in $(seq 1 "${2:-400}"); do
		[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
		sleep 0.05
	done
	return 1
}
