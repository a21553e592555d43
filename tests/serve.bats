#!/usr/bin/env bats
# sbx-serve with curl: the control plane (keys, E2B's error bodies and
# status codes, create/get/list/paging/delete, per-key isolation and
# limits), the envd plane (tokens, /files, filesystem and process calls),
# and hostile input: oversized bodies, bad ids in URLs and headers, path
# escapes through /files, a slow client, and a graceful SIGTERM.  A real
# server on the real local backend; the official SDK is serve-sdk.bats's.

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start main --client-timeout 2s --upload-deadline 3s --max-body 64K --domain sbx.test
	serve_start small --max-sandboxes 1
	serve_start race --max-sandboxes 3
	serve_sandbox '{"metadata":{"suite":"serve"}}'
}
teardown_file() {
	serve_stop main
	serve_stop small
	serve_stop race
	serve_stop streams
	serve_stop cube
	serve_stop term
	serve_stop crash
	sbx_teardown_file
}

@test "each timeout flag refuses a duration under a second, naming itself" {
	local f
	for f in --client-timeout --head-timeout --upload-deadline; do
		run -64 sbx-serve --listen 127.0.0.1:0 --api-key-file "$SERVE_KEYS" "$f" 500ms
		assert_output "sbx-serve: error: usage: $f must be at least 1s"
	done
}

@test "health needs no key; a missing or wrong key is 401 with E2B's body" {
	run curl -sS "$SERVE_URL/health"
	assert_output "Health check successful"
	run curl -sS -w '\nHTTP %{http_code}\n' "$SERVE_URL/v2/sandboxes"
	assert_equal "$(status)" 401
	assert_equal "$(body | jq -r .code)" 401
	run curl -sS -w '\nHTTP %{http_code}\n' -H 'X-API-Key: e2b_wrong' "$SERVE_URL/v2/sandboxes"
	assert_equal "$(status)" 401
	run curl -sS -w '\nHTTP %{http_code}\n' -H "Authorization: Bearer $SERVE_KEY" "$SERVE_URL/v2/sandboxes"
	assert_equal "$(status)" 200
}

@test "create, get, list and delete a sandbox; delete again is 404" {
	run api POST /sandboxes -d '{"templateID":"base","metadata":{"k":"v"},"timeout":60}'
	assert_equal "$(status)" 201
	local id
	id=$(body | jq -r .sandboxID)
	assert_equal "$(body | jq -r .envdAccessToken | wc -c)" 65
	run api GET "/sandboxes/$id"
	assert_equal "$(status)" 200
	assert_equal "$(body | jq -c '[.sandboxID, .state, .metadata]')" "[\"$id\",\"running\",{\"k\":\"v\"}]"
	run api GET /sandboxes
	assert_equal "$(body | jq --arg i "$id" '[.[] | select(.sandboxID == $i)] | length')" 1
	run api DELETE "/sandboxes/$id"
	assert_equal "$(status)" 204
	run api DELETE "/sandboxes/$id"
	assert_equal "$(status)" 404
	assert_equal "$(body | jq -r .message)" "Sandbox \"$id\" doesn't exist or you don't have access to it"
}

@test "another key neither sees nor deletes the sandbox" {
	run curl -sS -w '\nHTTP %{http_code}\n' -H "X-API-Key: $SERVE_KEY2" "$SERVE_URL/sandboxes/$SB"
	assert_equal "$(status)" 404
	run curl -sS -w '\nHTTP %{http_code}\n' -X DELETE -H "X-API-Key: $SERVE_KEY2" "$SERVE_URL/sandboxes/$SB"
	assert_equal "$(status)" 404
	run curl -sS -H "X-API-Key: $SERVE_KEY2" "$SERVE_URL/v2/sandboxes"
	assert_output "[]"
	run api GET "/sandboxes/$SB"
	assert_equal "$(status)" 200
}

@test "pause twice is 409; connect resumes with 201, then 200 when running" {
	run api POST "/v2/sandboxes" -d '{}'
	local id
	id=$(body | jq -r .sandboxID)
	run api POST "/sandboxes/$id/pause" -d '{}'
	assert_equal "$(status)" 204
	run api POST "/sandboxes/$id/pause" -d '{}'
	assert_equal "$(status)" 409
	run api GET "/sandboxes/$id"
	assert_equal "$(body | jq -r .state)" paused
	run api POST "/v2/sandboxes/$id/connect" -d '{"timeout":60}'
	assert_equal "$(status)" 201
	run api POST "/v2/sandboxes/$id/connect" -d '{"timeout":60}'
	assert_equal "$(status)" 200
	api DELETE "/sandboxes/$id" >/dev/null
}

@test "the list filters on E2B's triple-encoded metadata and pages without repeats" {
	local ids=() i
	for i in 1 2 3; do
		ids+=("$(api POST /v2/sandboxes -d '{"metadata":{"grp":"a b&c=d"}}' | head -1 | jq -r .sandboxID)")
	done
	# {grp: "a b&c=d"} as the SDK sends it (e2b-wire.md §1.5)
	local q='metadata=grp%3Da%252520b%252526c%25253Dd&state=running,paused&limit=1'
	local seen=() next= pages=0 hdr
	while :; do
		hdr=$(mktemp)
		run curl -sS -D "$hdr" -H "X-API-Key: $SERVE_KEY" "$SERVE_URL/v2/sandboxes?$q${next:+&nextToken=$next}"
		seen+=($(printf '%s' "$output" | jq -r '.[].sandboxID'))
		pages=$((pages + 1))
		next=$(sed -n 's/^[Xx]-[Nn]ext-[Tt]oken: *\([^\r]*\).*/\1/p' "$hdr")
		rm -f "$hdr"
		[ -n "$next" ] && [ $pages -lt 10 ] || break
	done
	assert_equal "$(printf '%s\n' "${seen[@]}" | sort | tr '\n' ' ')" "$(printf '%s\n' "${ids[@]}" | sort | tr '\n' ' ')"
	assert_equal "$pages" 3
	for i in "${ids[@]}"; do api DELETE "/sandboxes/$i" >/dev/null; done
}

@test "a key at its sandbox limit gets 429 with Retry-After" {
	local url=$SERVE_URL_small hdr
	hdr=$(mktemp)
	run curl -sS -H "X-API-Key: $SERVE_KEY" -X POST "$url/v2/sandboxes" -d '{}'
	local id
	id=$(printf '%s' "$output" | jq -r .sandboxID)
	run curl -sS -D "$hdr" -w '\nHTTP %{http_code}\n' -H "X-API-Key: $SERVE_KEY" -X POST "$url/v2/sandboxes" -d '{}'
	assert_equal "$(status)" 429
	grep -qi '^retry-after: [0-9]' "$hdr"
	rm -f "$hdr"
	curl -sS -H "X-API-Key: $SERVE_KEY" -X DELETE "$url/sandboxes/$id"
}

@test "eight concurrent creates against a limit of three: exactly three sandboxes" {
	local i
	for i in $(seq 1 8); do
		curl -sS -o /dev/null -w '%{http_code}\n' -X POST "$SERVE_URL_race/v2/sandboxes" \
			-H "X-API-Key: $SERVE_KEY2" -d '{"metadata":{"race":"1"}}' >"$BATS_TEST_TMPDIR/c$i" &
	done
	wait
	run sh -c "cat '$BATS_TEST_TMPDIR'/c* | sort | uniq -c | awk '{print \$2\":\"\$1}' | tr '\n' ' '"
	assert_output "201:3 429:5 "
	run sh -c "sbx-ls --label race=1 | wc -l"
	assert_output 3
}

@test "open process streams beyond --max-streams are 429; closing one frees its slot" {
	serve_start streams --max-streams 2
	local url=$SERVE_URL_streams out id tok i
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	id=$(printf '%s' "$out" | jq -r .sandboxID)
	tok=$(printf '%s' "$out" | jq -r .envdAccessToken)
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","sleep 300"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	start() { curl -sS -w '\nHTTP %{http_code}\n' "$url/process.Process/Start" -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $tok" -H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" "$@"; }
	local pids=()
	for i in 1 2; do
		curl -sS "$url/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
			-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" \
			-o "$BATS_TEST_TMPDIR/s$i" &
		pids+=($!)
	done
	for _ in $(seq 1 100); do [ -s "$BATS_TEST_TMPDIR/s1" ] && [ -s "$BATS_TEST_TMPDIR/s2" ] && break; sleep 0.05; done
	run start
	assert_equal "$(status)" 429
	kill "${pids[0]}"
	wait "${pids[0]}" || true
	for _ in $(seq 1 100); do
		run start --max-time 2
		[[ "$output" == *"HTTP 429"* ]] || break
		sleep 0.1
	done
	refute_output --partial "HTTP 429"
	kill "${pids[1]}" 2>/dev/null || true
	curl -sS -X DELETE "$url/sandboxes/$id" -H "X-API-Key: $SERVE_KEY"
	serve_stop streams
}

@test "bad ids in URLs and headers never reach the backend" {
	local bad
	for bad in '..%2F..%2Fetc' 'SB-UPPER' 'sb-x%00y' "$(printf 'a%.0s' $(seq 1 100))" '-lead'; do
		run api GET "/sandboxes/$bad"
		assert_equal "$(status)" 400
		assert_equal "$(body | jq -r .message)" "Invalid sandbox ID"
	done
	run curl -sS -w '\nHTTP %{http_code}\n' -H 'E2b-Sandbox-Id: ../../x' -H "X-Access-Token: $TOK" \
		"$SERVE_URL/files?path=/etc/hostname"
	assert_equal "$(status)" 502
	run curl -sS -w '\nHTTP %{http_code}\n' -H 'Host: 49983-Bad_Id.sbx.test' "$SERVE_URL/health"
	assert_equal "$(status)" 502      # a sandbox host, but no such sandbox
	[ ! -e "$SBX_TEST_DIR/serve-main/sandboxes/..json" ]
}

@test "oversized bodies are 413, declared or streamed, and the server goes on" {
	head -c 2000000 /dev/zero | tr '\0' ' ' >"$BATS_TEST_TMPDIR/big.json"
	run api POST /v2/sandboxes --data-binary "@$BATS_TEST_TMPDIR/big.json"
	assert_equal "$(status)" 413
	head -c 100000 /dev/urandom >"$BATS_TEST_TMPDIR/big.bin"
	run envd "$SB" "$TOK" "/files?path=/home/user/big.bin" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$BATS_TEST_TMPDIR/big.bin"
	assert_equal "$(status)" 413
	# chunked: no Content-Length to refuse early
	# chunked: no Content-Length to refuse early; the server answers 413
	# when the limit is crossed and closes (curl may see only the close)
	run envd "$SB" "$TOK" "/files?path=/home/user/big.bin" -H 'Content-Type: application/octet-stream' \
		-H 'Transfer-Encoding: chunked' --data-binary "@$BATS_TEST_TMPDIR/big.bin"
	[[ "$(status)" =~ ^(413|000)$ ]]
	grep -q 'POST /files 413' "$SBX_TEST_DIR/serve-main.log"
	run sbx-exec --id "$SB" -- test -e /home/user/big.bin
	assert_equal "$(jqo .exec.exit_code)" 1
	run api GET "/sandboxes/$SB"
	assert_equal "$(status)" 200
}

@test "/files: write and read in the home, as user and root" {
	run envd "$SB" "$TOK" "/files?path=/home/user/hello.txt" -H 'Content-Type: application/octet-stream' --data-binary 'hi there'
	assert_equal "$(status)" 200
	assert_equal "$(body | jq -c .)" '[{"name":"hello.txt","path":"/home/user/hello.txt","type":"file"}]'
	run sbx-exec --id "$SB" -- stat -c '%u %s' /home/user/hello.txt
	assert_equal "$(jqo .exec.stdout)" "1000 8"
	run envd "$SB" "$TOK" "/files?path=hello.txt"
	assert_equal "$(body)" "hi there"
	run envd "$SB" "$TOK" "/files?path=/home/user/nope"
	assert_equal "$(status)" 404
	run envd "$SB" "$TOK" "/files?path=/etc/shadow"
	refute [ "$(status)" = 200 ]
	run envd "$SB" "$TOK" "/files?path=/home/user/hello.txt&username=nobody"
	assert_equal "$(status)" 401
	run envd "$SB" wrongtoken "/files?path=/home/user/hello.txt"
	assert_equal "$(status)" 401
}

@test "path escapes through /files are refused and the host is untouched" {
	local p
	for p in '/home/user/../../../tmp/sbx-serve-escape' '../../tmp/sbx-serve-escape' '/tmp/../tmp/sbx-serve-escape'; do
		run envd "$SB" "$TOK" "/files?path=$(printf %s "$p" | jq -sRr @uri)" -H 'Content-Type: application/octet-stream' --data-binary x
		assert_equal "$(status)" 400
	done
	# a multipart filename with .. is refused the same way
	printf 'x' >"$BATS_TEST_TMPDIR/f"
	run envd "$SB" "$TOK" /files -F "file=@$BATS_TEST_TMPDIR/f;filename=../../../tmp/sbx-serve-escape"
	assert_equal "$(status)" 400
	[ ! -e /tmp/sbx-serve-escape ]
	# a symlink planted inside to the host's root is resolved inside the sandbox
	sbx-exec --id "$SB" -- ln -sfn / /home/user/up >/dev/null
	run envd "$SB" "$TOK" "/files?path=/home/user/up/tmp/sbx-serve-link" -H 'Content-Type: application/octet-stream' --data-binary inside
	[ ! -e /tmp/sbx-serve-link ]
	run envd "$SB" "$TOK" "/files?path=/home/user/up/proc/self/environ&username=root"
	refute [ "$(status)" = 200 ]
}

@test "filesystem calls answer in Connect's JSON, with envd's codes" {
	run envd "$SB" "$TOK" /filesystem.Filesystem/Stat -H 'Content-Type: application/json' -d '{"path":"/home/user/missing"}'
	assert_equal "$(status)" 404
	assert_equal "$(body | jq -r .code)" not_found
	run envd "$SB" "$TOK" /filesystem.Filesystem/MakeDir -H 'Content-Type: application/json' -d '{"path":"/home/user/dd"}'
	assert_equal "$(status)" 200
	assert_equal "$(body | jq -r .entry.type)" FILE_TYPE_DIRECTORY
	run envd "$SB" "$TOK" /filesystem.Filesystem/MakeDir -H 'Content-Type: application/json' -d '{"path":"/home/user/dd"}'
	assert_equal "$(status)" 409
	assert_equal "$(body | jq -r .code)" already_exists
	run envd "$SB" "$TOK" /filesystem.Filesystem/Stat -H 'Content-Type: application/json' -d 'not json'
	assert_equal "$(status)" 400
	assert_equal "$(body | jq -r .code)" invalid_argument
	run envd "$SB" "$TOK" /filesystem.Filesystem/ListDir -H 'Content-Type: application/json' -d '{"path":"/home/user/../.."}'
	assert_equal "$(body | jq -r .code)" invalid_argument
}

@test "process Start streams start, data and end events, then end of stream" {
	envelope '{"process":{"cmd":"/bin/bash","args":["-l","-c","echo out; echo err >&2; exit 3"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $SB" -H "X-Access-Token: $TOK" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" | frames >"$BATS_TEST_TMPDIR/ev"
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -r '.event.start.pid // empty'"
	[ "${lines[0]}" -gt 0 ]
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -r '.event.data.stdout // empty' | base64 -d"
	assert_output out
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -r '.event.data.stderr // empty' | base64 -d"
	assert_output err
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -c '.event.end // empty'"
	assert_equal "$(printf '%s' "$output" | jq -c '[.exitCode, .exited]')" '[3,true]'
	run tail -1 "$BATS_TEST_TMPDIR/ev"
	assert_output 'END {}'
}

# Each event reaches the client when it happens, not with the end: the
# process waits for a file that the test writes only once it has read the
# process's first line from the stream (a worker that held its answer
# until the handler returned delivered that line after the process gave
# up, exit 3, 20 s later).
@test "process Start delivers output while the process runs" {
	need_proc
	local go=/home/user/go-$BATS_TEST_NUMBER
	envelope "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo ready; for i in \$(seq 200); do [ -e $go ] && exit 0; sleep 0.1; done; exit 3\"]},\"stdin\":false}" >"$BATS_TEST_TMPDIR/req"
	curl -sS -N "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $SB" -H "X-Access-Token: $TOK" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" |
		python3 -c '
import struct,sys
r=sys.stdin.buffer
while True:
    h=r.read(5)
    if len(h)<5: break
    m=r.read(struct.unpack(">I",h[1:5])[0]).decode()
    print(("END " if h[0]&2 else "")+m, flush=True)' |
		while IFS= read -r line; do
			printf '%s\n' "$line"
			case $line in *'"stdout"'*) envd "$SB" "$TOK" "/files?path=$go" \
				-H 'Content-Type: application/octet-stream' --data-binary x >/dev/null ;; esac
		done >"$BATS_TEST_TMPDIR/ev"
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -r '.event.data.stdout // empty' | base64 -d"
	assert_output ready
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -c '.event.end // empty | [.exitCode // 0, .exited]'"
	assert_output '[0,true]'
	run tail -1 "$BATS_TEST_TMPDIR/ev"
	assert_output 'END {}'
}

# envd's terminal calls (the SDKs' pty.create, sendInput, resize: their
# own checks are in serve-sdk*.bats); here what a client may get wrong.
@test "process terminals: a size out of range is invalid_argument; pty input or a resize of a process without one is failed_precondition" {
	need_proc
	local big=$BATS_TEST_TMPDIR/big
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","true"]},"pty":{"size":{"cols":0,"rows":24}}}' >"$big"
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $SB" -H "X-Access-Token: $TOK" \
		-H 'Content-Type: application/connect+json' --data-binary "@$big" | frames >"$BATS_TEST_TMPDIR/ev"
	run tail -1 "$BATS_TEST_TMPDIR/ev"
	assert_output --partial '"code":"invalid_argument"'
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","true"]},"pty":{"size":{"cols":100000,"rows":100000}}}' >"$big"
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $SB" -H "X-Access-Token: $TOK" \
		-H 'Content-Type: application/connect+json' --data-binary "@$big" | frames >"$BATS_TEST_TMPDIR/ev"
	run tail -1 "$BATS_TEST_TMPDIR/ev"
	assert_output --partial '"code":"invalid_argument"'
	# A plain process: no terminal to type into or resize.
	local h pid
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","sleep 30"]},"stdin":true}' >"$BATS_TEST_TMPDIR/req"
	curl -sS -N "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $SB" -H "X-Access-Token: $TOK" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" >/dev/null &
	h=$!
	for _ in $(seq 1 100); do
		run envd "$SB" "$TOK" /process.Process/List -H 'Content-Type: application/json' -d '{}'
		pid=$(body | jq -r '.processes[]? | select(.config.args[1] == "sleep 30") | .pid')
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ]
	run envd "$SB" "$TOK" /process.Process/SendInput -H 'Content-Type: application/json' \
		-d "{\"process\":{\"pid\":$pid},\"input\":{\"pty\":\"$(printf 'ls\n' | base64)\"}}"
	assert_equal "$(body | jq -r .code)" failed_precondition
	run envd "$SB" "$TOK" /process.Process/Update -H 'Content-Type: application/json' \
		-d "{\"process\":{\"pid\":$pid},\"pty\":{\"size\":{\"cols\":100,\"rows\":40}}}"
	assert_equal "$(body | jq -r .code)" failed_precondition
	run envd "$SB" "$TOK" /process.Process/Update -H 'Content-Type: application/json' \
		-d "{\"process\":{\"pid\":$pid},\"pty\":{\"size\":{\"cols\":-1,\"rows\":40}}}"
	assert_equal "$(body | jq -r .code)" invalid_argument
	run envd "$SB" "$TOK" /process.Process/SendSignal -H 'Content-Type: application/json' \
		-d "{\"process\":{\"pid\":$pid},\"signal\":\"SIGNAL_SIGKILL\"}"
	assert_equal "$(status)" 200
	wait "$h" || true
}

@test "a slow client is cut off while others are served" {
	exec 7<>/dev/tcp/127.0.0.1/"${SERVE_URL##*:}"
	printf 'GET /health HTTP/1.1\r\nHost: x\r\n' >&7       # and never the blank line
	run api GET "/sandboxes/$SB"
	assert_equal "$(status)" 200
	# the stalled connection is closed by the server (--client-timeout 2s)
	run timeout 60 cat <&7
	assert_success
	exec 7<&-
}

@test "an upload that trickles past --upload-deadline is cut off, though never silent" {
	# one byte every 0.5 s: never idle for --client-timeout (2 s)
	run bash -c "{ printf 'POST /files?path=/home/user/slow HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: $SB\r\nX-Access-Token: $TOK\r\nContent-Type: application/octet-stream\r\nContent-Length: 60\r\n\r\n'
		for i in \$(seq 1 60); do printf x; sleep 0.5; done; } | timeout 60 curl -sS -o /dev/null -w '%{http_code}' telnet://127.0.0.1:${SERVE_URL##*:} 2>&1; true"
	# the whole body would have arrived after 30 s: it never did
	run sbx-exec --id "$SB" -- test -e /home/user/slow
	assert_equal "$(jqo .exec.exit_code)" 1
	grep -q 'POST /files 0 .*(aborted)' "$SBX_TEST_DIR/serve-main.log"
}

@test "SIGTERM lets a stream in flight finish, then the server exits 0" {
	serve_start term
	local url=$SERVE_URL_term pid=$SERVE_PID_term
	local out id tok
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	id=$(printf '%s' "$out" | jq -r .sandboxID)
	tok=$(printf '%s' "$out" | jq -r .envdAccessToken)
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","sleep 1; echo finished"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	curl -sS "$url/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" >"$BATS_TEST_TMPDIR/out" &
	local cpid=$!
	for _ in $(seq 1 100); do
		grep -q 'POST /v2/sandboxes' "$SBX_TEST_DIR/serve-term.log" && [ -s "$BATS_TEST_TMPDIR/out" ] && break
		sleep 0.05
	done
	kill -TERM "$pid"
	wait "$cpid"
	run bash -c "source '$BATS_TEST_DIRNAME/lib/serve.bash'; frames <'$BATS_TEST_TMPDIR/out' | grep -v '^END' | jq -r '.event.data.stdout // empty' | base64 -d"
	assert_output finished
	# wait in this shell: `run wait` waits in a subshell, which cannot
	# reap this shell's child and said 255 whenever the server was still
	# shutting down (most runs once the pool had a forker to end)
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$SBX_TEST_DIR/serve-term.log"; false; }
	grep -q 'stopped' "$SBX_TEST_DIR/serve-term.log"
	sbx-ctl kill --id "$id" >/dev/null
}

@test "the request log has one line per request and no secrets" {
	local log="$SBX_TEST_DIR/serve-main.log" before n i
	before=$(grep -c "GET /sandboxes/$SB 200" "$log" || true)
	for i in 1 2 3; do api GET "/sandboxes/$SB" >/dev/null; done
	# The line is written when the connection is done, just after the
	# answer: wait for three (a condition, bounded); exactly three more.
	for i in $(seq 1 100); do
		n=$(grep -c "GET /sandboxes/$SB 200" "$log" || true)
		[ "$n" -lt $((before + 3)) ] || break
		sleep 0.05
	done
	assert_equal "$(grep -c "GET /sandboxes/$SB 200" "$log")" $((before + 3))
	run grep -F -e "$SERVE_KEY" -e "$TOK" "$SBX_TEST_DIR/serve-main.log"
	assert_failure
}

@test "--flavor cube: Cube's create fields, no v2 create, names echoed, offset tokens, v2 list unpaged" {
	serve_start cube --flavor cube
	local url=$SERVE_URL_cube hdr
	hdr=$(mktemp)
	cube() { local m=$1 p=$2; shift 2; curl -sS -X "$m" "$url$p" -H "X-API-Key: $SERVE_KEY" -w '\nHTTP %{http_code}\n' "$@"; }
	run cube POST /v2/sandboxes -d '{}'
	assert_equal "$(status)" 405
	run cube POST /sandboxes -d '{"templateID":"base","timeout":-1,"allow_internet_access":false,"lifecycle":{"on_timeout":"pause","auto_resume":true},"envs":{"CUBE":"1"},"metadata":{"c":"1"}}'
	assert_equal "$(status)" 201
	local id
	id=$(body | jq -r .sandboxID)
	run cube GET "/sandboxes/$id"
	assert_equal "$(body | jq -c .lifecycle)" '{"autoResume":true,"onTimeout":"pause"}'
	run sbx-exec --id "$id" -- sh -c 'echo $CUBE'
	assert_equal "$(jqo .exec.stdout)" 1
	run cube POST "/sandboxes/$id/snapshots" -d '{}'
	assert_equal "$(status)" 201
	local s1
	s1=$(body | jq -r .snapshotID)
	assert_equal "$(body | jq -r '.names[0]')" "$s1"
	run cube POST "/sandboxes/$id/snapshots" -d '{"name":"second"}'
	assert_equal "$(body | jq -r '.names[0]')" second
	local s2
	s2=$(body | jq -r .snapshotID)
	run curl -sS -D "$hdr" -H "X-API-Key: $SERVE_KEY" "$url/snapshots?sandboxID=$id&limit=1"
	assert_equal "$(printf '%s' "$output" | jq length)" 1
	grep -qi '^x-next-token: 1' "$hdr"
	run curl -sS -D "$hdr" -H "X-API-Key: $SERVE_KEY" "$url/snapshots?sandboxID=$id&limit=1&nextToken=1"
	assert_equal "$(printf '%s' "$output" | jq length)" 1
	run ! grep -qi '^x-next-token' "$hdr"
	run cube DELETE "/templates/$s1"
	assert_equal "$(status)" 204
	run cube DELETE "/templates/$s1"
	assert_equal "$(status)" 404
	cube DELETE "/templates/$s2" >/dev/null
	# /v2/sandboxes: no paging header, whatever the limit
	cube POST /sandboxes -d '{"templateID":"base","metadata":{"c":"1"}}' >/dev/null
	run curl -sS -D "$hdr" -H "X-API-Key: $SERVE_KEY" "$url/v2/sandboxes?limit=1"
	run ! grep -qi '^x-next-token' "$hdr"
	rm -f "$hdr"
	serve_stop cube
}

@test "inbound: a web server in a sandbox is reached through PORT-ID.DOMAIN; a closed port is 502" {
	sbx-exec --id "$SB" -- sh -c 'mkdir -p /workspace/www && echo hello-web >/workspace/www/index.txt' >/dev/null
	sbx-proc --id "$SB" start -- python3 -m http.server 8000 --bind 127.0.0.1 --directory /workspace/www >/dev/null
	wait_port "$SB" 8000
	run curl -sS -w '\nHTTP %{http_code}\n' -H "Host: 8000-$SB.sbx.test" "$SERVE_URL/index.txt?x=a%20b"
	assert_equal "$(status)" 200
	assert_equal "$(body)" hello-web
	run curl -sS -w '\nHTTP %{http_code}\n' -H "Host: 8001-$SB.sbx.test" "$SERVE_URL/"
	assert_equal "$(status)" 502
	assert_equal "$(body | jq -c '[.sandboxId, .port, .code]')" "[\"$SB\",8001,502]"
	# the host never got a listener: the relay ran inside the sandbox
	run ss -ltn 'sport = :8000'
	refute_output --partial 127.0.0.1:8000
}

@test "inbound: a sandbox without public traffic needs its traffic token" {
	run api POST /v2/sandboxes -d '{"network":{"allowPublicTraffic":false}}'
	local id tt
	id=$(body | jq -r .sandboxID)
	tt=$(body | jq -r .trafficAccessToken)
	assert_equal "${#tt}" 64
	sbx-proc --id "$id" start -- python3 -m http.server 8000 --bind 127.0.0.1 --directory /etc >/dev/null
	wait_port "$id" 8000
	run curl -sS -w '\nHTTP %{http_code}\n' -H "Host: 8000-$id.sbx.test" "$SERVE_URL/hostname"
	assert_equal "$(status)" 403
	run curl -sS -w '\nHTTP %{http_code}\n' -H "Host: 8000-$id.sbx.test" -H "e2b-traffic-access-token: $TOK" "$SERVE_URL/hostname"
	assert_equal "$(status)" 403
	run curl -sS -w '\nHTTP %{http_code}\n' -H "Host: 8000-$id.sbx.test" -H "e2b-traffic-access-token: $tt" "$SERVE_URL/hostname"
	assert_equal "$(status)" 200
	api DELETE "/sandboxes/$id" >/dev/null
}

@test "kill -9 of the server mid-stream: after a restart on the same state, the process, its token and its stdin are still there" {
	serve_start crash
	local url=$SERVE_URL_crash out id tok
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	id=$(printf '%s' "$out" | jq -r .sandboxID)
	tok=$(printf '%s' "$out" | jq -r .envdAccessToken)
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","cat >/workspace/got"]},"stdin":true}' >"$BATS_TEST_TMPDIR/req"
	curl -sS "$url/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" >"$BATS_TEST_TMPDIR/out" &
	local cpid=$!
	for _ in $(seq 1 100); do [ -s "$BATS_TEST_TMPDIR/out" ] && break; sleep 0.05; done
	kill -9 "$SERVE_PID_crash"
	wait "$cpid" || true
	# the same state folder, a new server
	local log=$SBX_TEST_DIR/serve-crash2.log
	sbx-serve --listen 127.0.0.1:0 --api-key-file "$SERVE_KEYS" --state-dir "$SBX_TEST_DIR/serve-crash" 2>"$log" &
	export SERVE_PID_crash=$!
	echo "$SERVE_PID_crash" >"$SBX_TEST_DIR/serve-crash.pid"
	local port=
	for _ in $(seq 1 200); do port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$log"); [ -n "$port" ] && break; sleep 0.05; done
	url=http://127.0.0.1:$port
	run curl -sS -w '\nHTTP %{http_code}\n' "$url/process.Process/List" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/json' -d '{}'
	assert_equal "$(status)" 200
	local pid
	pid=$(body | jq -r '.processes[] | select(.config.args[1] == "cat >/workspace/got") | .pid')
	[ -n "$pid" ]
	run curl -sS -w '\nHTTP %{http_code}\n' "$url/process.Process/SendInput" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/json' -d "{\"process\":{\"pid\":$pid},\"input\":{\"stdin\":\"$(printf 'after the crash\n' | base64)\"}}"
	assert_equal "$(status)" 200
	run curl -sS -w '\nHTTP %{http_code}\n' "$url/process.Process/CloseStdin" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/json' -d "{\"process\":{\"pid\":$pid}}"
	assert_equal "$(status)" 200
	for _ in $(seq 1 100); do
		[ "$(sbx-exec --id "$id" -- cat /workspace/got | jq -r .exec.stdout)" = "after the crash" ] && break
		sleep 0.05
	done
	assert_equal "$(sbx-exec --id "$id" -- cat /workspace/got | jq -r .exec.stdout)" "after the crash"
	run curl -sS -w '\nHTTP %{http_code}\n' -H "X-API-Key: $SERVE_KEY" "$url/sandboxes/$id"
	assert_equal "$(status)" 200
	serve_stop crash
}

@test "on a template without bash, the SDK's /bin/bash -l -c runs under /bin/sh" {
	"$SBX_TOP/tests/lib/rootfs.sh" "$BATS_TEST_TMPDIR/rootfs.tar" >/dev/null
	sbx-tpl import busybox --file "$BATS_TEST_TMPDIR/rootfs.tar" >/dev/null
	run api POST /v2/sandboxes -d '{"templateID":"busybox"}'
	assert_equal "$(status)" 201
	local id tok
	id=$(body | jq -r .sandboxID)
	tok=$(body | jq -r .envdAccessToken)
	assert_equal "$(body | jq -r .templateID)" busybox
	run sbx-exec --id "$id" -- test -e /bin/bash
	assert_equal "$(jqo .exec.exit_code)" 1
	assert_equal "$(jq -r .bash "$SBX_TEST_DIR/serve-main/sandboxes/$id.json")" false
	envelope '{"process":{"cmd":"/bin/bash","args":["-l","-c","echo via $0; pwd"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" | frames >"$BATS_TEST_TMPDIR/ev"
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -r '.event.data.stdout // empty' | base64 -d"
	assert_output "via /bin/sh
/home/user"
	api DELETE "/sandboxes/$id" >/dev/null
}

# E2B runs /bin/bash -l -c CMD itself; so does the server in a sandbox its
# create found bash in (the record's "bash"), with no /bin/sh in front:
# one exec less per commands.run.  A bash removed later is then not
# replaced by /bin/sh (exit 127, as on E2B); the wrapper ran sh instead.
@test "with bash in its template, the SDK's /bin/bash -l -c runs bash itself, not a /bin/sh wrapper" {
	run api POST /v2/sandboxes -d '{}'
	assert_equal "$(status)" 201
	local id tok
	id=$(body | jq -r .sandboxID)
	tok=$(body | jq -r .envdAccessToken)
	assert_equal "$(jq -r .bash "$SBX_TEST_DIR/serve-main/sandboxes/$id.json")" true
	envelope '{"process":{"cmd":"/bin/bash","args":["-l","-c","echo via $0 $BASH_VERSION"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" | frames >"$BATS_TEST_TMPDIR/ev"
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -r '.event.data.stdout // empty' | base64 -d"
	assert_output --regexp '^via /bin/bash [0-9]'
	run sbx-exec --id "$id" --root -- mv /bin/bash /bin/bash.gone
	assert_equal "$(jqo .exec.exit_code)" 0
	curl -sS "$SERVE_URL/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" | frames >"$BATS_TEST_TMPDIR/ev"
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -r '.event.data.stdout // empty' | base64 -d"
	assert_output ""
	run sh -c "grep -v '^END' '$BATS_TEST_TMPDIR/ev' | jq -c '.event.end // empty'"
	run printf '%s' "$(printf '%s' "$output" | jq -c .exitCode)"
	assert_output --regexp '^12[67]$'
	api DELETE "/sandboxes/$id" >/dev/null
}
