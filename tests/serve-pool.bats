#!/usr/bin/env bats
# sbx-serve's worker pool (common/serve/serve-pool.c): workers forked ahead and
# kept, one request at a time each, real concurrent clients, a worker
# killed with SIGKILL while idle and while it serves a stream, and a
# worker replaced after SERVE_POOL_REQUESTS (256) requests.  A real server
# on the real backend.

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start main
	serve_sandbox
	local out
	out=$(api2 POST /v2/sandboxes -d '{}' | head -1)
	SB2=$(printf '%s' "$out" | jq -r .sandboxID)
	[ -n "$SB2" ] && [ "$SB2" != null ] || { printf '%s\n' "$out" >&2; return 1; }
	export SB2
}

teardown_file() {
	serve_stop main
	sbx_teardown_file
}

# The forker is the server's child named sbx-serve-fork (the other is the
# webhook deliverer's keeper); the workers are its children (serve-pool.c),
# sorted, one a line.
forker() { pgrep -x -P "$SERVE_PID_main" sbx-serve-fork; }
workers() { pgrep -P "$(forker)" | sort -n; }
# Those of them that are zombies (dead, not reaped).
zombies() {
	local p
	for p in $(workers); do
		[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] || echo "$p"
	done
}
# wait_for CMD...: up to 10 s for CMD to succeed (the test asserts after).
wait_for() {
	local i
	for i in $(seq 1 100); do "$@" && return 0; sleep 0.1; done
	return 1
}
no_zombies() { [ -z "$(zombies)" ]; }
# get_many KEY ID N: N GETs of sandbox ID on one keep-alive connection;
# prints each status, one a line.
get_many() {
	local urls=() i
	for i in $(seq 1 "$3"); do urls+=(-o /dev/null "$SERVE_URL/sandboxes/$2"); done
	curl -sS -H "X-API-Key: $1" -w '%{http_code}\n' "${urls[@]}"
}

# A fork from the threaded server copies the locks its other threads hold
# at that instant, held for good: under ASan a kept worker hung at its
# first malloc with a request taken.  Workers come from a process of one
# thread, a child of the server's made before it has a thread.
@test "workers are forked by a one-thread forker, not by the threaded server" {
	get_many "$SERVE_KEY" "$SB" 3 >/dev/null
	local f p
	f=$(forker)
	[ "$(printf '%s\n' "$f" | wc -l)" -eq 1 ]
	[ "$(awk '/^Threads:/{print $2}' "/proc/$f/status")" -eq 1 ]
	[ "$(awk '/^Threads:/{print $2}' "/proc/$SERVE_PID_main/status")" -gt 1 ]
	[ -n "$(workers)" ]
	for p in $(workers); do
		[ "$(awk '/^PPid:/{print $2}' "/proc/$p/status")" -eq "$f" ]
	done
}

@test "requests and the once-a-second sweep are served by the same workers: no fork per request" {
	get_many "$SERVE_KEY" "$SB" 3 >/dev/null
	local before after
	before=$(workers)
	[ -n "$before" ]
	run get_many "$SERVE_KEY" "$SB" 40
	assert_success
	assert_equal "$(printf '%s\n' "$output" | sort -u)" 200
	sleep 2.5                     # two sweeps
	after=$(workers)
	assert_equal "$after" "$before"
}

@test "48 concurrent clients of two keys: every request is answered 200" {
	# 24 per key: within --max-workers-per-key (32), so none is refused
	run bash -c "
		{ for i in \$(seq 1 240); do echo '$SERVE_KEY $SB'; echo '$SERVE_KEY2 $SB2'; done; } |
		xargs -P 48 -L 1 sh -c 'curl -sS -o /dev/null -w \"%{http_code}\n\" -H \"X-API-Key: \$0\" $SERVE_URL/sandboxes/\$1'"
	assert_success
	assert_equal "$(printf '%s\n' "$output" | wc -l)" 480
	assert_equal "$(printf '%s\n' "$output" | sort -u)" 200
	# no more workers than requests could be in flight, and the spare
	[ "$(workers | wc -l)" -le 51 ]
}

# A worker killed a moment ago still takes a request on its control
# socket until the kernel closes its fds (under ASan that moment is long:
# red in the sanitized subset).  Here the first worker of the run dies
# holding its first request, before it said it took it: the request goes
# to another worker, and is answered 200, not 500.
@test "a worker that dies with a request it did not acknowledge: the request goes to another worker" {
	SBX_FAULT=serve:worker-dies-taking serve_start taking
	local url=$SERVE_URL_taking
	run curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -H "X-API-Key: $SERVE_KEY" "$url/sandboxes"
	assert_output 200
	[ -e "$SBX_TEST_DIR/serve-taking/fault-worker-dies-taking" ]
	run curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -H "X-API-Key: $SERVE_KEY" "$url/sandboxes"
	assert_output 200
	serve_stop taking
}

@test "a worker killed with SIGKILL while idle: it is reaped and the next requests are served" {
	get_many "$SERVE_KEY" "$SB" 2 >/dev/null
	local victims
	victims=$(workers)
	# every idle worker: whichever the next request would have taken
	kill -KILL $victims
	run get_many "$SERVE_KEY" "$SB" 20
	assert_success
	assert_equal "$(printf '%s\n' "$output" | sort -u)" 200
	wait_for no_zombies || true
	assert_equal "$(zombies)" ""
	local p
	for p in $victims; do
		run ! kill -0 "$p"
	done
}

@test "a worker killed with SIGKILL mid-stream: its stream ends, the process runs on, others are served" {
	need_proc
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","echo up; exec sleep 300"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	curl -sSN "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $SB" -H "X-Access-Token: $TOK" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" \
		>"$BATS_TEST_TMPDIR/out" 2>/dev/null &
	local cpid=$! p busy=
	wait_for grep -q "$(printf 'up\n' | base64)" "$BATS_TEST_TMPDIR/out" || true
	run grep -c "$(printf 'up\n' | base64)" "$BATS_TEST_TMPDIR/out"
	assert_output 1
	# the busy worker: the one reading the process's output file
	for p in $(workers); do
		ls -l "/proc/$p/fd" 2>/dev/null | grep -q '/procs/[0-9]*/out$' && busy=$p
	done
	[ -n "$busy" ]
	kill -KILL "$busy"
	run timeout 30 tail --pid="$cpid" -f /dev/null
	assert_success
	run get_many "$SERVE_KEY" "$SB" 10
	assert_equal "$(printf '%s\n' "$output" | sort -u)" 200
	# the process itself was the backend's, not the worker's
	run envd "$SB" "$TOK" /process.Process/List -H 'Content-Type: application/json' -d '{}'
	assert_equal "$(status)" 200
	assert_output --partial 'sleep 300'
	wait_for no_zombies || true
	assert_equal "$(zombies)" ""
	run ! kill -0 "$busy"
	sbx-exec --id "$SB" --root -- pkill -f 'sleep 300' >/dev/null || true
}

# settled: the workers, once the pool has stopped forking (a spare asked
# for by the last request is forked after its answer; one that came after
# `before` would take the 300 requests, and no worker of `before` ends).
settled() {
	local a b i
	a=$(workers)
	for i in $(seq 1 50); do
		sleep 0.2
		b=$(workers)
		[ "$a" = "$b" ] && break
		a=$b
	done
	printf '%s\n' "$a"
}
# gone_of BEFORE: how many of BEFORE's workers are no longer there.
gone_of() {
	local p n=0 now
	now=$(workers)
	for p in $1; do grep -qx "$p" <<<"$now" || n=$((n + 1)); done
	echo "$n"
}
some_gone() { [ "$(gone_of "$1")" -ge 1 ]; }

# One client asking one request at a time is not served by one worker
# alone: its next request can arrive before the worker that answered the
# last is back among the idle ones, and takes another (and a spare is
# forked).  So requests go in batches of 300 until a worker of `before`
# has served its 256th and is gone: within 8 batches unless no worker ends.
@test "a worker ends after 256 requests and another takes its place" {
	get_many "$SERVE_KEY" "$SB" 2 >/dev/null
	local before i j
	before=$(settled)
	for i in $(seq 1 8); do
		run get_many "$SERVE_KEY" "$SB" 300
		assert_success
		assert_equal "$(printf '%s\n' "$output" | wc -l)" 300
		assert_equal "$(printf '%s\n' "$output" | sort -u)" 200
		for j in $(seq 1 10); do some_gone "$before" && break 2; sleep 0.1; done
	done
	assert [ "$(gone_of "$before")" -ge 1 ]
	# a spare for each request that found none idle, not one a request
	assert [ "$(workers | wc -l)" -le 16 ]
	wait_for no_zombies || true
	assert_equal "$(zombies)" ""
}

@test "a kept worker's timed process starts leave no cgroup behind once their processes end" {
	need_proc
	local work i
	work=$(find /sys/fs/cgroup -maxdepth 6 -type d -path "*/$SB/work" | head -1)
	[ -n "$work" ]
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","true"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	for i in 1 2 3 4 5 6; do
		# Connect-Timeout-Ms: each start gets a cgroup of its own (x-<worker>-*)
		run curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $SB" \
			-H "X-Access-Token: $TOK" -H 'Connect-Timeout-Ms: 60000' \
			-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req"
		assert_success
		assert_output --partial '"end"'
	done
	# the last start's group may stay until the next; the earlier ones went
	run bash -c "ls '$work' | grep -c '^x-'"
	[ "$output" -le 1 ]
}
