# tests/lib/fixture-e2b.bash - the e2b backend's fixture: a private
# sbx-serve (the E2B-compatible server of this tree) over the local
# backend, with its own state dir and key file, started once per run; the
# profile points the e2b backend at it.  The contract of a fixture file is
# in tests/lib/fixture-local.bash; fixture-cube.bash reuses this one with
# `sbx-serve --flavor cube` and Cube's data plane (a domain reached
# through a proxy node).
#
# What a test sees inside a sandbox is the local backend's (the server
# runs sandboxes there), so the facts below are local's.

_e2b_backend=${FIXTURE_BACKEND:-e2b} _e2b_doc=${FIXTURE_DOC:-docs/e2b.md}
# shellcheck source=tests/lib/fixture-local.bash
. "$(dirname "${BASH_SOURCE[0]}")/fixture-local.bash"
unset -f fixture_plant_node          # the server's state is not ours to enter
FIXTURE_BACKEND=$_e2b_backend
FIXTURE_DOC=$_e2b_doc
SBX_TEST_TEMPLATE=base
FIXTURE_SERVE_FLAGS=${FIXTURE_SERVE_FLAGS:-}
FIXTURE_KEY=e2b_0123456789abcdef0123456789abcdef

fixture_top() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }

# Start sbx-serve in DIR on a free loopback port (state, key file and the
# server's own configuration there); prints the exports tests/run evals.
# --max-body 160M: tests/volumes.bats puts a 100 MB file into a volume,
# which on these backends is one /files upload (volume.h).
fixture_engine_start() {
	local dir=$1 top bin i port=
	top=$(fixture_top)
	bin=${BUILD:-$top/build}/bin
	printf '%s\n' "$FIXTURE_KEY" >"$dir/key"
	chmod 600 "$dir/key"
	echo '{}' >"$dir/serve-config.json"
	# The server's own Redis (its keys' volumes and events), apart from
	# every test file's: the client's state is not the server's.
	redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
		--logfile "$dir/redis.log" --dir "$dir" >/dev/null || return 1
	for i in $(seq 1 100); do
		redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	# shellcheck disable=SC2086
	env -u SBX_FAULT -u SBX_STOP -u SBX_PROFILE SBX_CONFIG="$dir/serve-config.json" \
		SBX_STATE_DIR="$dir/state" SBX_BACKEND=local SBX_REDIS_URL="unix://$dir/redis.sock" \
		"$bin/sbx-serve" --listen 127.0.0.1:0 --api-key-file "$dir/key" \
		--state-dir "$dir/serve" --quiet --max-body 160M $FIXTURE_SERVE_FLAGS </dev/null >"$dir/serve.log" 2>&1 &
	echo $! >"$dir/serve.pid"
	for i in $(seq 1 200); do
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$dir/serve.log" | head -1)
		[ -n "$port" ] && break
		kill -0 "$(cat "$dir/serve.pid")" 2>/dev/null || break
		sleep 0.05
	done
	[ -n "$port" ] || { cat "$dir/serve.log" >&2; return 1; }
	printf 'export SBX_TEST_SERVE_URL=http://127.0.0.1:%s SBX_TEST_SERVE_KEY=%s SBX_TEST_SERVE_DIR=%s\n' \
		"$port" "$dir/key" "$dir"
}

# Stop the server (by its pid), then kill what it left on the local backend.
fixture_engine_stop() {
	local dir=$1 top bin pid i
	top=$(fixture_top)
	bin=${BUILD:-$top/build}/bin
	pid=$(cat "$dir/serve.pid" 2>/dev/null) || pid=
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	pid=$(cat "$dir/redis.pid" 2>/dev/null) || pid=
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 200); do        # gone before its folder is removed
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
	fi
	SBX_CONFIG="$dir/serve-config.json" SBX_STATE_DIR="$dir/state" SBX_BACKEND=local \
		"$bin/sbx-ls" --all 2>/dev/null |
		SBX_CONFIG="$dir/serve-config.json" SBX_STATE_DIR="$dir/state" SBX_BACKEND=local \
			"$bin/sbx-ctl" kill >/dev/null 2>&1 || true
	rm -rf "$dir"
}

fixture_profile() {
	[ -n "${SBX_TEST_SERVE_URL:-}" ] || {
		echo "SBX_TEST_BACKEND=$SBX_TEST_BACKEND: no server (run through tests/run)" >&2
		return 1
	}
	jq -n --arg b "$FIXTURE_BACKEND" --arg e "$SBX_TEST_SERVE_URL" --arg k "$SBX_TEST_SERVE_KEY" \
		'{profiles: {default: {backend: $b, endpoint: $e, api_key_file: $k, allow_private: true,
		  template: "base"}}}' >"$1"
	fixture_profile_extra "$1"
}
fixture_profile_extra() { :; }
fixture_missing_id() { echo sb-000000000000; }
fixture_hostname() { echo "$1"; }
# The fingerprint is taken over the endpoint as configured: the same
# server spelt with a trailing slash is another identity.
fixture_other_identity() {
	jq '.profiles.default.endpoint += "/"' "$SBX_CONFIG" >"$SBX_TEST_DIR/other-identity.json"
	SBX_CONFIG=$SBX_TEST_DIR/other-identity.json "$@"
}
# The settings the server's local backend runs sandbox ID with (the
# service's view: what the create sent, as the service granted it).
fixture_settings() {
	jq -S '{limits, timeout, network, resume_on_use}' \
		"$SBX_TEST_SERVE_DIR/state/local/sandboxes/$1/sandbox.json"
}
