#!/usr/bin/env bats
# suite: local docker
# sbx-serve's part of the session record (issue 29 part 3; audit.h,
# common/serve/serve-audit.c): what envd does in a sandbox - a process
# started (its end from the backend's supervisor), a command, a file
# transfer, a filesystem change - leaves the records the programs leave,
# in the stream of the key's tenant, and the values of envVars and of a
# process's envs never reach Redis.  A real server, the real backend, a
# real redis-server; the calls with curl.

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start aud
}
teardown_file() {
	serve_stop aud
	sbx_teardown_file
}

# The session record (audit.h) of what envd does: the key's tenant is
# "e2b-" + the first 8 bytes of the key's SHA-256 in hex (serve-http.c).
key_tenant() { printf 'e2b-%s' "$(printf %s "$1" | sha256sum | cut -c1-16)"; }

@test "envd's process, file and filesystem calls leave the programs' records in the key's tenant's stream; envVars and envs values never reach Redis" {
	local out id tok t
	out=$(api POST /v2/sandboxes -d '{"envVars":{"SB_SECRET":"envvars-s3cr3t-v4l"}}')
	id=$(head -1 <<<"$out" | jq -r .sandboxID)
	tok=$(head -1 <<<"$out" | jq -r .envdAccessToken)
	[ -n "$id" ] && [ "$id" != null ]
	t=$(key_tenant "$SERVE_KEY")
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","echo $SB_SECRET $P_SECRET >/dev/null; exit 4"],"envs":{"P_SECRET":"envs-s3cr3t-v4l"}},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" | frames >"$BATS_TEST_TMPDIR/ev"
	pid=$(grep -v '^END' "$BATS_TEST_TMPDIR/ev" | jq -r '.event.start.pid // empty' | head -1)
	[ "$pid" -gt 0 ]
	run envd "$id" "$tok" "/files?path=/home/user/a.txt" -H 'Content-Type: application/octet-stream' --data-binary 'hello'
	assert_equal "$(status)" 200
	run envd "$id" "$tok" "/files?path=/home/user/a.txt"
	assert_equal "$(body)" hello
	run envd "$id" "$tok" /filesystem.Filesystem/MakeDir -H 'Content-Type: application/json' -d '{"path":"/home/user/d"}'
	run envd "$id" "$tok" /filesystem.Filesystem/Move -H 'Content-Type: application/json' \
		-d '{"source":"/home/user/a.txt","destination":"/home/user/d/b.txt"}'
	run envd "$id" "$tok" /filesystem.Filesystem/Remove -H 'Content-Type: application/json' -d '{"path":"/home/user/d/b.txt"}'
	# A look is not a record.
	run envd "$id" "$tok" /filesystem.Filesystem/ListDir -H 'Content-Type: application/json' -d '{"path":"/home/user"}'
	run sbx-audit --tenant "$t" --kind file
	assert_success
	[ "$(jq -sc --arg id "$id" '[.[] | select(.sandbox == $id) | [.op, .path, .bytes]]' <<<"$output")" = \
		'[["put","/home/user/a.txt",5],["get","/home/user/a.txt",5],["mkdir","/home/user/d",null],["mv","/home/user/a.txt",null],["rm","/home/user/d/b.txt",null]]' ]
	[ "$(jq -sr --arg id "$id" '[.[] | select(.sandbox == $id)] | .[3].dest' <<<"$output")" = /home/user/d/b.txt ]
	run sbx-audit --tenant "$t"
	local p
	if sbx-ctl caps 2>/dev/null | jq -e '.caps.process == true' >/dev/null; then
		# A detached process: sbx-serve writes its start, the backend's
		# supervisor its end (taken by the calls after it).
		p=$(jq -sc --arg id "$id" '[.[] | select(.sandbox == $id and .kind == "process")]' <<<"$output")
		[ "$(jq -c '[.[] | .event]' <<<"$p")" = '["start","end"]' ]
		[ "$(jq -c '.[0] | [.argv, .env, .user, .pid]' <<<"$p")" = \
			"[[\"/bin/sh\",\"-c\",\"echo \$SB_SECRET \$P_SECRET >/dev/null; exit 4\"],[\"P_SECRET\"],\"user\",$pid]" ]
		[ "$(jq -c '.[1] | [.exit_code, .pid]' <<<"$p")" = "[4,$pid]" ]
	else
		p=$(jq -sc --arg id "$id" '[.[] | select(.sandbox == $id and .kind == "exec")]' <<<"$output")
		[ "$(jq -c '.[0] | [.env, .exit_code]' <<<"$p")" = '[["P_SECRET"],4]' ]
	fi
	run sbx-audit verify --tenant "$t"
	assert_success
	api DELETE "/sandboxes/$id" >/dev/null
	# The values: nowhere in Redis (its dump, and every stream and string).
	rcli SAVE >/dev/null
	local dump
	dump=$(rcli CONFIG GET dir | tail -1)/$(rcli CONFIG GET dbfilename | tail -1)
	[ -s "$dump" ]
	run ! grep -a -e envvars-s3cr3t -e envs-s3cr3t "$dump"
	for k in $(rcli KEYS '*'); do
		case $(rcli TYPE "$k") in
		stream) run ! grep -a s3cr3t-v4l < <(rcli XRANGE "$k" - +) ;;
		string) run ! grep -a s3cr3t-v4l < <(rcli GET "$k") ;;
		hash) run ! grep -a s3cr3t-v4l < <(rcli HGETALL "$k") ;;
		esac
	done
}

# start_proc ID TOKEN CMD: a process by Start, its stream read to the end.
start_proc() {
	envelope "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"$3\"]},\"stdin\":false}" >"$BATS_TEST_TMPDIR/req"
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $1" -H "X-Access-Token: $2" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" | frames
}

@test "a process's start and the spooled end of the one before it reach Redis in one script call, start before end" {
	need_proc
	local t mon n
	serve_sandbox
	t=$(key_tenant "$SERVE_KEY")
	# The first outlives its own start record, so its end is spooled (by
	# the backend's supervisor) for the next call to take.
	start_proc "$SB" "$TOK" 'sleep 0.3' >/dev/null
	sleep 1
	rcli MONITOR >"$BATS_TEST_TMPDIR/monitor" 2>/dev/null &
	mon=$!
	sleep 0.2
	start_proc "$SB" "$TOK" 'sleep 0.3' >/dev/null
	sleep 0.2
	kill "$mon"
	wait "$mon" || true
	# The calls of the client (not a script's own, "[0 lua]") on the audit head.
	n=$(grep -v ' lua\]' "$BATS_TEST_TMPDIR/monitor" | grep -c 'audit-head' || true)
	assert_equal "$n" 1
	sleep 1
	start_proc "$SB" "$TOK" true >/dev/null
	run sbx-audit --tenant "$t" --kind process
	assert_success
	# Each end after its start; the third's end may come with it, or later.
	[ "$(jq -sc --arg id "$SB" '[.[] | select(.sandbox == $id) | .event] | .[0:5]' <<<"$output")" = \
		'["start","start","end","start","end"]' ]
	run sbx-audit verify --tenant "$t"
	assert_success
	api DELETE "/sandboxes/$SB" >/dev/null
}
