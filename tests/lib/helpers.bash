# tests/lib/helpers.bash - loaded by every bats file.
#
# Gives each test file its own redis-server on a unix socket in a temp
# folder (started in setup_file, always stopped in teardown_file), its own
# SBX_STATE_DIR, and the build's programs first on PATH.
#
#   setup_file()    { sbx_setup_file; }
#   teardown_file() { sbx_teardown_file; }

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

sbx_setup_file() {
	export SBX_TEST_DIR
	SBX_TEST_DIR=$(mktemp -d /tmp/sbx-test.XXXXXX)
	export SBX_STATE_DIR="$SBX_TEST_DIR/state"
	export SBX_CONFIG="$SBX_TEST_DIR/config.json"
	export SBX_BACKEND=${SBX_TEST_BACKEND:-local}
	case "$SBX_BACKEND" in
	local) echo '{}' >"$SBX_CONFIG" ;;
	docker)
		# The busybox base image as the profile's template, and kill as the
		# idle action: docker refuses pause (docs/docker.md).  tests/run
		# starts the daemon (DOCKER_HOST) and builds the image.
		"$SBX_TOP/tests/lib/dockerd.sh" ping ||
			{ echo "SBX_TEST_BACKEND=docker: no dockerd at DOCKER_HOST='${DOCKER_HOST:-}' (run through tests/run)" >&2; return 1; }
		printf '{"profiles": {"default": {"backend": "docker", "template": "%s", "on_timeout": "kill"}}}\n' \
			"$SBX_TEST_DOCKER_IMAGE" >"$SBX_CONFIG"
		;;
	*) echo "SBX_TEST_BACKEND must be local or docker (got '$SBX_BACKEND')" >&2; return 1 ;;
	esac
	mkdir -p "$SBX_STATE_DIR"
	if [ "${SBX_TEST_REDIS:-}" = cluster ]; then redis_cluster_start "$SBX_TEST_DIR/redis"
	else redis_start "$SBX_TEST_DIR/redis"; fi
}

# The backend-neutral tests run on both backends (SBX_TEST_BACKEND=local,
# the default, or docker).  Per-backend knobs live here, not in the tests.
SBX_TEST_DOCKER_IMAGE=${SBX_TEST_DOCKER_IMAGE:-sbx/base:latest}
# Extra sbx-create flags for every test sandbox, per backend.  None so far:
# the docker profile written by sbx_setup_file carries the template and the
# kill idle action, so a bare `sbx-create` (the man pages' examples) works too.
SBX_TEST_CREATE_ARGS=()

# sbx-create with the backend's knobs; prints the sandbox document.
sbx_new() { sbx-create "${SBX_TEST_CREATE_ARGS[@]}" "$@"; }
# ... and only its id.
sbx_new_id() { sbx_new "$@" | jq -r .sandbox.id; }

is_docker() { [ "${SBX_BACKEND:-${SBX_TEST_BACKEND:-local}}" = docker ]; }
# Skip a test that checks the local backend's own mechanics.
local_only() { is_docker && skip "local only: $*"; return 0; }
# A sandbox id that names nothing, in the backend's id format.
missing_id() { if is_docker; then printf '%064d\n' 0; else echo sb-000000000000; fi; }

sbx_teardown_file() {
	[ -n "${SBX_TEST_DIR:-}" ] || return 0
	# Kill every sandbox this file created, then the redis-server.
	if command -v sbx-ls >/dev/null 2>&1; then
		sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	fi
	redis_stop "$SBX_TEST_DIR/redis"
	[ -z "${REDIS_CLUSTER_DIR:-}" ] || "$SBX_TOP/tests/lib/cluster.sh" stop "$REDIS_CLUSTER_DIR"
	rm -rf --one-file-system "$SBX_TEST_DIR" 2>/dev/null || true
}

# jq on the last `run` output.
jqo() { printf '%s\n' "$output" | jq -r "$@"; }
