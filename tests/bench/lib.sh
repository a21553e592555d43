# tests/bench/lib.sh - sourced by the benchmarks that need sessions; not a
# benchmark itself.

# bench_local_redis WORK: the local backend with its state and an empty
# config below WORK, and a private redis-server on WORK/redis.sock (no
# persistence) that SBX_REDIS_URL names; `rcli` talks to it.  The caller
# stops it (rcli shutdown nosave) and removes WORK.
bench_local_redis() {
	local work=$1
	export SBX_STATE_DIR="$work/state" SBX_CONFIG="$work/config.json" SBX_BACKEND=local
	mkdir -p "$SBX_STATE_DIR"
	echo '{}' >"$SBX_CONFIG"
	redis-server --port 0 --unixsocket "$work/redis.sock" --unixsocketperm 700 --save '' \
		--appendonly no --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log" \
		--dir "$work" >/dev/null
	for _ in $(seq 100); do redis-cli -s "$work/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.05; done
	export SBX_REDIS_URL="unix://$work/redis.sock"
	BENCH_REDIS_SOCK="$work/redis.sock"
}

rcli() { redis-cli -s "$BENCH_REDIS_SOCK" "$@"; }
