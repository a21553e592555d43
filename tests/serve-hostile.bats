#!/usr/bin/env bats
# sbx-serve against hostile clients and hostile sandboxes (issue 25's
# request path): oversized heads on the proxy plane under ASan, slowloris
# over --max-connections, anonymous big bodies, one key exhausting its
# limits while another is served, the Connect limit on the filesystem
# service, bounded downloads, header injection from a sandbox's server,
# and a worker that ignores SIGTERM.  Real servers, real sandboxes, real
# concurrent clients.

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start main --max-body 16M
	serve_start slow --head-timeout 2s --client-timeout 30s --max-connections 20
	serve_sandbox
}

# The servers a test starts for itself, stopped even when it fails.
teardown() {
	local n
	for n in san rss fair term evict; do serve_stop "$n"; done
}

teardown_file() {
	serve_stop main
	serve_stop slow
	sbx_teardown_file
}

# The server's peak resident memory in kB.
peak_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }

@test "a 4 KB path and two 2 KB headers on the proxy plane: the ASan-built server answers and stays clean" {
	local bin=${BUILD:-}/bin/sbx-serve
	[[ "${BUILD:-}" == *build-san* ]] || bin=$BATS_TEST_DIRNAME/../build-san/bin/sbx-serve
	[ -x "$bin" ] || bin=$(command -v sbx-serve)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 SERVE_BIN=$bin serve_start san
	local url=$SERVE_URL_san out id path h
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	id=$(printf '%s' "$out" | jq -r .sandboxID)
	path=/$(head -c 4500 /dev/zero | tr '\0' a)
	h=$(head -c 2048 /dev/zero | tr '\0' b)
	# the public-traffic default: no token is asked on the proxy plane
	run curl -sS -w '\nHTTP %{http_code}\n' -H "E2b-Sandbox-Id: $id" -H 'E2b-Sandbox-Port: 8080' "$url$path"
	assert_equal "$(status)" 502
	run curl -sS -w '\nHTTP %{http_code}\n' -H "E2b-Sandbox-Id: $id" -H 'E2b-Sandbox-Port: 8080' \
		-H "X-One: $h" -H "X-Two: $h" "$url/x?q=$h"
	assert_equal "$(status)" 502
	# past the bounds: refused before anything is built from the head
	run curl -sS -w '\nHTTP %{http_code}\n' -H "E2b-Sandbox-Id: $id" -H 'E2b-Sandbox-Port: 8080' \
		"$url/$(head -c 9000 /dev/zero | tr '\0' a)"
	assert_equal "$(status)" 414
	run curl -sS -w '\nHTTP %{http_code}\n' -H "E2b-Sandbox-Id: $id" -H 'E2b-Sandbox-Port: 8080' \
		-H "X-1: $h" -H "X-2: $h" -H "X-3: $h" -H "X-4: $h" -H "X-5: $h" -H "X-6: $h" -H "X-7: $h" -H "X-8: $h" "$url/"
	assert_equal "$(status)" 431
	run curl -sS -w '\nHTTP %{http_code}\n' "$url/health"
	assert_equal "$(status)" 200
	run grep -c 'AddressSanitizer\|runtime error' "$SBX_TEST_DIR/serve-san.log"
	assert_output 0
	curl -sS -X DELETE "$url/sandboxes/$id" -H "X-API-Key: $SERVE_KEY"
	serve_stop san
}

@test "a head that trickles is cut off after --head-timeout, though never silent" {
	local port=${SERVE_URL_slow##*:}
	# one header byte every 0.3 s: never silent for --client-timeout
	run timeout 60 python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
try:
    for i in range(150):
        s.sendall(b"X-Slow: %d\r\n" % i)
        time.sleep(0.3)
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                print("closed"); sys.exit(0)
        except BlockingIOError:
            pass
        s.setblocking(True)
except (BrokenPipeError, ConnectionResetError):
    print("closed"); sys.exit(0)
print("never closed")' "$port"
	assert_output closed
}

@test "60 slowloris connections over --max-connections 20: another client is still served" {
	local port=${SERVE_URL_slow##*:}
	python3 -c '
import socket, sys, time
port = int(sys.argv[1]); conns = []
def dial():
    try:
        s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n"); return s
    except OSError:
        return None
end = time.time() + 25
while time.time() < end:
    conns = [c for c in conns if c]
    while len(conns) < 60:
        conns.append(dial())
    alive = []
    for c in conns:
        try:
            c.sendall(b"X-a: b\r\n"); alive.append(c)
        except OSError:
            c.close()
    conns = alive
    time.sleep(0.5)
' "$port" &
	local attacker=$!
	sleep 3
	# a connection can land while MHD closes the cut ones: retried, but
	# never for longer than the attackers' 30 s of --client-timeout
	local retry=(--max-time 5 --retry 4 --retry-delay 1 --retry-all-errors)
	run curl -sS "${retry[@]}" "$SERVE_URL_slow/health"
	assert_output "Health check successful"
	run curl -sS "${retry[@]}" -H "X-API-Key: $SERVE_KEY" -w '\nHTTP %{http_code}\n' "$SERVE_URL_slow/v2/sandboxes"
	assert_equal "$(status)" 200
	kill "$attacker"
	wait "$attacker" || true
}

@test "a client past --max-connections evicts the oldest connection still in its head, no other" {
	serve_start evict --head-timeout 60s --client-timeout 60s --max-connections 4
	local port=${SERVE_URL_evict##*:}
	run python3 -c '
import socket, subprocess, sys
port, url = int(sys.argv[1]), sys.argv[2]
conns = []
for i in range(4):   # four half-sent heads, oldest first, each seen by the server
    c = socket.create_connection(("127.0.0.1", port)); c.sendall(b"GET /health HTTP/1.1\r\n")
    conns.append(c)
    subprocess.run(["sleep", "0.2"])
out = subprocess.run(["curl", "-sS", "--max-time", "20", url + "/health"], capture_output=True, text=True).stdout
print("served:", out)
conns[0].settimeout(20)
print("oldest:", "closed" if conns[0].recv(1) == b"" else "open")
for c in conns[1:]:
    c.settimeout(1)
    try:
        print("other:", "closed" if c.recv(1) == b"" else "data")
    except socket.timeout:
        print("other: open")
' "$port" "$SERVE_URL_evict"
	assert_success
	assert_line "served: Health check successful"
	assert_line "oldest: closed"
	[ "$(grep -c '^other: open$' <<<"$output")" -eq 3 ]
}

@test "six anonymous 40 MB uploads to /files: 401 each, and the server does not grow" {
	serve_start rss
	local url=$SERVE_URL_rss pid=$SERVE_PID_rss out id before after i
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	id=$(printf '%s' "$out" | jq -r .sandboxID)
	head -c 40000000 /dev/zero >"$BATS_TEST_TMPDIR/big"
	before=$(peak_kb "$pid")
	local pids=()
	for i in 1 2 3 4 5 6; do
		curl -sS -o /dev/null -w '%{http_code}\n' -H "E2b-Sandbox-Id: $id" -H 'Expect:' \
			-H 'Content-Type: application/octet-stream' --data-binary "@$BATS_TEST_TMPDIR/big" \
			"$url/files?path=/tmp/big$i" >"$BATS_TEST_TMPDIR/st$i" 2>/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	after=$(peak_kb "$pid")
	for i in 1 2 3 4 5 6; do
		[[ "$(cat "$BATS_TEST_TMPDIR/st$i")" =~ ^(401|000)$ ]]
	done
	grep -q 'POST /files 401' "$SBX_TEST_DIR/serve-rss.log"
	echo "# peak RSS $before kB -> $after kB" >&3
	[ $((after - before)) -lt 20000 ]
	run sbx-exec --id "$id" -- test -e /tmp/big1
	assert_equal "$(jqo .exec.exit_code)" 1
	curl -sS -X DELETE "$url/sandboxes/$id" -H "X-API-Key: $SERVE_KEY"
	serve_stop rss
}

@test "one key at its worker and stream limits: the other key is still served" {
	serve_start fair --max-workers 6 --max-workers-per-key 3 --max-streams-per-key 2 --max-streams 8
	local url=$SERVE_URL_fair out a1 a2 b t1 t2 tb i
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	a1=$(printf '%s' "$out" | jq -r .sandboxID); t1=$(printf '%s' "$out" | jq -r .envdAccessToken)
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	a2=$(printf '%s' "$out" | jq -r .sandboxID); t2=$(printf '%s' "$out" | jq -r .envdAccessToken)
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY2" -d '{}')
	b=$(printf '%s' "$out" | jq -r .sandboxID); tb=$(printf '%s' "$out" | jq -r .envdAccessToken)
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","echo up; sleep 300"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	start() { curl -sS -w '\nHTTP %{http_code}\n' --max-time "${3:-20}" "$url/process.Process/Start" -H "E2b-Sandbox-Id: $1" \
		-H "X-Access-Token: $2" -H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req"; }
	local pids=()
	for i in 1 2; do
		start "$a1" "$t1" 300 >"$BATS_TEST_TMPDIR/s$i" &
		pids+=($!)
	done
	for _ in $(seq 1 200); do grep -q up "$BATS_TEST_TMPDIR/s1" 2>/dev/null && grep -q up "$BATS_TEST_TMPDIR/s2" 2>/dev/null && break; sleep 0.05; done
	# the first key's third stream, on its other sandbox: its key's limit
	run start "$a2" "$t2" 5
	assert_equal "$(status)" 429
	assert_equal "$(body | jq -r .message)" "too many open streams for this key"
	# the second key: its stream and its control plane are served
	run start "$b" "$tb" 3
	[[ "$output" == *up* ]] || [[ "$output" == *'HTTP 200'* ]]
	refute_output --partial 'HTTP 429'
	run curl -sS -w '\nHTTP %{http_code}\n' -H "X-API-Key: $SERVE_KEY2" "$url/v2/sandboxes"
	assert_equal "$(status)" 200
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	for i in "$a1" "$a2"; do curl -sS -X DELETE "$url/sandboxes/$i" -H "X-API-Key: $SERVE_KEY"; done
	curl -sS -X DELETE "$url/sandboxes/$b" -H "X-API-Key: $SERVE_KEY2"
	serve_stop fair
}

@test "/filesystem.Filesystem calls get the Connect 1 MiB limit, not --max-body" {
	python3 -c 'import json,sys; sys.stdout.write(json.dumps({"path": "/home/user", "pad": "x" * 2000000}))' >"$BATS_TEST_TMPDIR/stat.json"
	run envd "$SB" "$TOK" /filesystem.Filesystem/Stat -H 'Content-Type: application/json' \
		--data-binary "@$BATS_TEST_TMPDIR/stat.json"
	assert_equal "$(status)" 413
	# /files itself keeps --max-body
	head -c 2000000 /dev/zero >"$BATS_TEST_TMPDIR/two"
	run envd "$SB" "$TOK" "/files?path=/home/user/two" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$BATS_TEST_TMPDIR/two"
	assert_equal "$(status)" 200
}

@test "GET /files of a sparse file past --max-body is 413 before it is read" {
	# /tmp: outside the home, so no home mapping is involved
	sbx-exec --id "$SB" -- truncate -s 100M /tmp/sparse >/dev/null
	run envd "$SB" "$TOK" "/files?path=/tmp/sparse" -o /dev/null
	assert_equal "$(status)" 413
	sbx-exec --id "$SB" -- truncate -s 1M /tmp/sparse >/dev/null
	run envd "$SB" "$TOK" "/files?path=/tmp/sparse" -o /dev/null
	assert_equal "$(status)" 200
	sbx-exec --id "$SB" -- rm -f /tmp/sparse >/dev/null
}

@test "a sandbox's server answering hostile header names injects nothing" {
	cat >"$BATS_TEST_TMPDIR/evil.py" <<'PY'
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8009)); s.listen(8)
while True:
    c, _ = s.accept(); c.recv(65536)
    c.sendall(b"HTTP/1.0 200 OK\r\nX-Good: 1\r\nX-Bad\nInjected: yes\r\nA\nX-Sbx-Length: 1\r\nX-Sbx-Length: 3\r\n"
              b"Bad Name: v\r\nX-Ctl\x01: v\r\nX-Val: a\x0bb\r\nContent-Type: text/plain\r\n\r\nthe-body")
    c.close()
PY
	run envd "$SB" "$TOK" "/files?path=/tmp/evil.py" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$BATS_TEST_TMPDIR/evil.py"
	assert_equal "$(status)" 200
	sbx-proc --id "$SB" start -- python3 /tmp/evil.py >/dev/null
	wait_port "$SB" 8009
	run curl -sS -D "$BATS_TEST_TMPDIR/h" -w '\nHTTP %{http_code}\n' -H "E2b-Sandbox-Id: $SB" -H 'E2b-Sandbox-Port: 8009' "$SERVE_URL/"
	assert_equal "$(status)" 200
	assert_equal "$(body)" the-body
	grep -qi '^X-Good: 1' "$BATS_TEST_TMPDIR/h"
	grep -qi '^X-Val: a b' "$BATS_TEST_TMPDIR/h"
	run grep -ci 'injected\|^bad name\|x-ctl\|x-sbx' "$BATS_TEST_TMPDIR/h"
	assert_output 0
}

@test "SIGTERM with a worker that ignores it: SIGKILL after the grace, and the server exits 0" {
	SBX_FAULT=serve:worker-ignores-term serve_start term --grace 1s
	local url=$SERVE_URL_term pid=$SERVE_PID_term out id tok
	out=$(curl -sS -X POST "$url/v2/sandboxes" -H "X-API-Key: $SERVE_KEY" -d '{}')
	id=$(printf '%s' "$out" | jq -r .sandboxID)
	tok=$(printf '%s' "$out" | jq -r .envdAccessToken)
	envelope '{"process":{"cmd":"/bin/sh","args":["-c","echo up; sleep 300"]},"stdin":false}' >"$BATS_TEST_TMPDIR/req"
	curl -sS "$url/process.Process/Start" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-H 'Content-Type: application/connect+json' --data-binary "@$BATS_TEST_TMPDIR/req" >"$BATS_TEST_TMPDIR/out" &
	local cpid=$!
	for _ in $(seq 1 200); do grep -q up "$BATS_TEST_TMPDIR/out" 2>/dev/null && break; sleep 0.05; done
	kill -TERM "$pid"
	run timeout 60 tail --pid="$pid" -f /dev/null
	assert_success
	local rc=0
	wait "$pid" || rc=$?          # in this shell: see serve.bats, SIGTERM
	assert_equal "$rc" 0
	wait "$cpid" || true
	sbx-ctl kill --id "$id" >/dev/null
}
