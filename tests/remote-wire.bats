#!/usr/bin/env bats
# suite: local
# The wire, both ways.  Client and server are written from the same notes,
# so they are held against what real parties sent: the requests of the
# official SDK (e2b@2.51.0, captured in e2b-wire.md §6) must be accepted
# by sbx-serve, and the e2b and cube backends must send what the SDKs and
# Cube's docs show (tests/fixtures/wire/README).
load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

WIRE=$BATS_TEST_DIRNAME/fixtures/wire

setup_file() { sbx_setup_file; serve_keys; }
teardown_file() { sbx_teardown_file; }
teardown() {
	[ -z "${REC_PID:-}" ] || { kill "$REC_PID" 2>/dev/null; wait "$REC_PID" 2>/dev/null || true; }
	[ -z "${SERVE_PID_wire:-}" ] || {
		env -u SBX_BACKEND SBX_CONFIG="$SBX_TEST_DIR/wire.json" sbx-ls --all 2>/dev/null |
			env -u SBX_BACKEND SBX_CONFIG="$SBX_TEST_DIR/wire.json" sbx-ctl kill >/dev/null 2>&1 || true
		serve_stop wire
	}
}

# record BACKEND [PROFILE KEYS (jq)]: a recorder and a profile for it.
record() {
	local b=$1 extra=${2:-{\}} i
	: >"$BATS_TEST_TMPDIR/log"
	"$SBX_TOP/tests/lib/wire-record.py" "$BATS_TEST_TMPDIR/log" "$BATS_TEST_TMPDIR/port" >/dev/null 2>&1 &
	REC_PID=$!
	for i in $(seq 1 100); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.05; done
	local url="http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")"
	echo "$SERVE_KEY" >"$BATS_TEST_TMPDIR/key"
	jq -n --arg b "$b" --arg e "$url" --arg k "$BATS_TEST_TMPDIR/key" --argjson x "$extra" \
		'{profiles: {default: ({backend: $b, endpoint: $e, api_key_file: $k, allow_private: true,
		  template: "base", on_timeout: "pause", auto_resume: true} + $x)}}' >"$BATS_TEST_TMPDIR/rec.json"
	REC_URL=$url
}
rec() { env -u SBX_BACKEND SBX_CONFIG="$BATS_TEST_TMPDIR/rec.json" "$@"; }

@test "the e2b backend sends what the SDK sends (tests/fixtures/wire/client-e2b.ndjson)" {
	record e2b
	local doc
	doc=$(rec sbx-create --label 'user=a b' --label 'k&y=v=1' --env FOO=bar)
	rec sbx-exec --env X=1 -- echo hi <<<"$doc" >/dev/null
	rec sbx-exec --root --timeout 5s -- id <<<"$doc" >/dev/null
	printf hello | rec sbx-fs put - /workspace/a.txt <<<"$doc" >/dev/null || true
	rec sbx-fs --id sbwire0123456789abcdef put - /workspace/a.txt < <(printf hello) >/dev/null
	rec sbx-fs --id sbwire0123456789abcdef cat /workspace/a.txt >/dev/null
	rec sbx-fs --id sbwire0123456789abcdef stat /workspace/a.txt >/dev/null
	rec sbx-ls --label 'user=a b' --label 'k&y=v=1' >/dev/null
	rec sbx-snap --name wire-snap <<<"$doc" >/dev/null
	rec sbx-ctl timeout --seconds 600 <<<"$doc" >/dev/null
	rec sbx-ctl network --allow-out api.example.com --allow-out 10.1.0.0/16 --deny-out 10.9.0.0/16 <<<"$doc" >/dev/null
	rec sbx-ctl pause <<<"$doc" >/dev/null
	rec sbx-ctl kill <<<"$doc" >/dev/null
	run "$SBX_TOP/tests/lib/wire-check.py" "$BATS_TEST_TMPDIR/log" "$WIRE/client-e2b.ndjson"
	assert_success
	# the key went in a header only, never in a path
	! grep -q "$SERVE_KEY" <(jq -r .path "$BATS_TEST_TMPDIR/log")
}

@test "the cube backend speaks Cube's dialect through the proxy node (tests/fixtures/wire/client-cube.ndjson)" {
	record cube '{"domain": "cube.test", "proxy": "PROXY"}'
	jq --arg p "$REC_URL" '.profiles.default.proxy = $p' "$BATS_TEST_TMPDIR/rec.json" >"$BATS_TEST_TMPDIR/r2"
	mv "$BATS_TEST_TMPDIR/r2" "$BATS_TEST_TMPDIR/rec.json"
	local doc
	doc=$(rec sbx-create)
	[ "$(jq -r .sandbox.traffic_token <<<"$doc")" = tok-wire ]
	run rec sbx-exec -- echo hi <<<"$doc"
	assert_success
	[ "$(jqo .exec.stdout)" = hi ]
	rec sbx-ls --label a=b >/dev/null
	run "$SBX_TOP/tests/lib/wire-check.py" "$BATS_TEST_TMPDIR/log" "$WIRE/client-cube.ndjson"
	assert_success
}

@test "the e2b and cube backends' volumes: POST /volumes beside the record, volumeMounts at create, DELETE at rm" {
	local b rn log=$BATS_TEST_TMPDIR/log
	# the service's name: 16 hex of SHA-256(prefix NUL tenant), "_", the name (volume.h)
	rn=$(python3 -c 'import hashlib; print(hashlib.sha256(b"sbx\0acme").hexdigest()[:16])')
	for b in e2b cube; do
		rm -f "$BATS_TEST_TMPDIR/port"
		record "$b"
		rcli del 'sbx:{acme}:vol:corpus' 'sbx:{acme}:vol:corpus:users' 'sbx:{acme}:vols' >/dev/null
		rec sbx-vol --tenant acme create corpus >/dev/null
		rec sbx-vol --tenant acme create spare >/dev/null
		rec sbx-create --tenant acme --volume corpus:/mnt/c:ro --volume corpus:/mnt/w >/dev/null
		rec sbx-vol --tenant acme rm spare >/dev/null
		run rec sbx-vol --tenant acme create with.dot
		assert_failure 65
		[ "$(jq -c 'select(.method == "POST" and .path == "/volumes") | .body | fromjson' "$log" | sort | tr -d '\n')" = \
		  "{\"name\":\"${rn}_corpus\"}{\"name\":\"${rn}_spare\"}" ]
		[ "$(jq -c 'select(.method == "POST" and .path == "/sandboxes") | .body | fromjson | .volumeMounts' "$log")" = \
		  "[{\"name\":\"${rn}_corpus\",\"path\":\"/mnt/c\",\"readOnly\":true},{\"name\":\"${rn}_corpus\",\"path\":\"/mnt/w\"}]" ]
		[ "$(jq -r 'select(.method == "DELETE" and (.path | startswith("/volumes/"))) | .path' "$log")" = "/volumes/${rn}_spare" ]
		# the record is sbx's: the sandbox is a user of it
		[ "$(rcli scard 'sbx:{acme}:vol:corpus:users')" = 1 ]
		# no record is left without its service volume: the dotted name made none
		[ "$(rcli sismember 'sbx:{acme}:vols' with.dot)" = 0 ]
		kill "$REC_PID" 2>/dev/null; wait "$REC_PID" 2>/dev/null || true
		REC_PID=
	done
}

@test "path mode: the data plane at PROXY/sandbox/ID/49983/..." {
	record cube '{"data_plane": "path"}'
	local doc
	doc=$(rec sbx-create)
	rec sbx-exec -- echo hi <<<"$doc" >/dev/null
	grep -q '"path": "/sandbox/sbwire0123456789abcdef/49983/process.Process/Start"' "$BATS_TEST_TMPDIR/log"
}

@test "sbx-serve accepts every request the official SDK sent (tests/fixtures/wire/e2b-sdk-2.51.0.ndjson)" {
	serve_start wire >/dev/null
	jq -n --arg e "$SERVE_URL_wire" --arg k "$SERVE_KEYS" \
		'{profiles: {default: {backend: "e2b", endpoint: $e, api_key_file: $k, allow_private: true}}}' \
		>"$SBX_TEST_DIR/wire.json"
	run "$SBX_TOP/tests/lib/wire-replay.py" "$SERVE_URL_wire" "$SERVE_KEY" "$WIRE/e2b-sdk-2.51.0.ndjson"
	assert_success
}
