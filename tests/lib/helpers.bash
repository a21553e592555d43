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

SBX_TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
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

rcli() { redis-cli -s "$REDIS_SOCK" "$@"; }

sbx_setup_file() {
	export SBX_TEST_DIR
	SBX_TEST_DIR=$(mktemp -d /tmp/sbx-test.XXXXXX)
	export SBX_STATE_DIR="$SBX_TEST_DIR/state"
	export SBX_CONFIG="$SBX_TEST_DIR/config.json"
	echo '{}' >"$SBX_CONFIG"
	export SBX_BACKEND=${SBX_TEST_BACKEND:-local}
	mkdir -p "$SBX_STATE_DIR"
	redis_start "$SBX_TEST_DIR/redis"
}

sbx_teardown_file() {
	[ -n "${SBX_TEST_DIR:-}" ] || return 0
	# Kill every sandbox this file created, then the redis-server.
	if command -v sbx-ls >/dev/null 2>&1; then
		sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	fi
	redis_stop "$SBX_TEST_DIR/redis"
	rm -rf --one-file-system "$SBX_TEST_DIR" 2>/dev/null || true
}

# jq on the last `run` output.
jqo() { printf '%s\n' "$output" | jq -r "$@"; }
