#!/usr/bin/env bats
# suite: local docker
# sbx-serve's lifecycle webhooks and sandbox events listing (E2B's
# /events/webhooks and /events/sandboxes), against a real server, a real
# Redis and a real receiver (tests/lib/webhook-receiver.py) that records
# every delivery: each lifecycle change reaches it signed, a 500 is tried
# again, a delivery cut by kill -9 of the server is made by the next one,
# a key sees only its own webhooks and events, and the address guard
# refuses loopback and metadata targets unless the server allows private
# ones (never link-local).

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start hooks --webhook-allow-private
}
teardown_file() {
	serve_stop hooks
	sbx_teardown_file
}
teardown() {
	local p
	[ -z "${RESTARTED:-}" ] || serve_stop hooks
	serve_stop strict                       # started by a test: its PID is the test's
	for p in "$BATS_TEST_TMPDIR"/recv*/pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true
	done
}

# receiver NAME [--fail-first N]: start one; sets RECV (its folder) and
# HOOK_URL.
receiver() {
	RECV=$BATS_TEST_TMPDIR/recv-$1
	mkdir -p "$RECV"
	python3 "$BATS_TEST_DIRNAME/lib/webhook-receiver.py" "$RECV" "${@:2}" >/dev/null 2>&1 3>&- &
	echo $! >"$RECV/pid"
	local i
	for i in $(seq 1 100); do
		[ -f "$RECV/port" ] && break
		sleep 0.05
	done
	HOOK_URL="http://127.0.0.1:$(cat "$RECV/port")/hook"
}

# register [EVENTS JSON]: a webhook for $HOOK_URL with the first key; sets HOOK.
register() {
	run api POST /events/webhooks -d "{\"name\": \"t\", \"url\": \"$HOOK_URL\", \"enabled\": true,
		\"events\": ${1:-[\"sandbox.lifecycle.created\", \"sandbox.lifecycle.paused\",
		\"sandbox.lifecycle.resumed\", \"sandbox.lifecycle.killed\", \"sandbox.lifecycle.updated\"]},
		\"signatureSecret\": \"s3cret\"}"
	assert_equal "$(status)" 201
	HOOK=$(body | jq -r .id)
}

# got N: wait until the receiver has N requests.
got() {
	local i
	for i in $(seq 1 300); do
		[ "$(wc -l <"$RECV/log" 2>/dev/null || echo 0)" -ge "$1" ] && return 0
		sleep 0.1
	done
	cat "$RECV/log" >&2 2>/dev/null
	return 1
}

# signed: every request in the receiver's log carries E2B's headers and a
# signature the secret verifies (E2B's own check: base64url, no padding,
# of SHA-256 over secret + body).
signed() {
	python3 - "$RECV/log" "$1" <<-'EOF'
	import base64, hashlib, json, sys
	bad = 0
	for line in open(sys.argv[1]):
	    r = json.loads(line)
	    h = r["headers"]
	    want = base64.urlsafe_b64encode(hashlib.sha256(("s3cret" + r["body"]).encode()).digest()).decode().rstrip("=")
	    if h.get("e2b-signature") != want or h.get("e2b-signature-version") != "v1" \
	       or h.get("e2b-webhook-id") != sys.argv[2] or not h.get("e2b-delivery-id"):
	        print("bad request", r["n"], h, file=sys.stderr)
	        bad += 1
	sys.exit(1 if bad else 0)
	EOF
}

# kinds: the receiver's deliveries as "type sandboxId" lines.
kinds() { jq -r '.body | fromjson | "\(.type) \(.sandboxId)"' "$RECV/log"; }

@test "create, pause, resume and kill reach the receiver in order, each signed" {
	receiver life
	register
	run api POST /v2/sandboxes -d '{"timeout": 120}'
	assert_equal "$(status)" 201
	local sb
	sb=$(body | jq -r .sandboxID)
	run api POST "/sandboxes/$sb/pause"
	assert_equal "$(status)" 204
	run api POST "/sandboxes/$sb/resume" -d '{"timeout": 120}'
	assert_equal "$(status)" 201
	run api POST "/sandboxes/$sb/timeout" -d '{"timeout": 60}'
	assert_equal "$(status)" 204
	run api DELETE "/sandboxes/$sb"
	assert_equal "$(status)" 204
	got 5
	run kinds
	assert_output "sandbox.lifecycle.created $sb
sandbox.lifecycle.paused $sb
sandbox.lifecycle.resumed $sb
sandbox.lifecycle.updated $sb
sandbox.lifecycle.killed $sb"
	run signed "$HOOK"
	assert_success
	# E2B's payload: version, a stable id, the team, the template, the time.
	run jq -r '.body | fromjson | "\(.version) \(.sandboxTeamId | length) \(.sandboxTemplateId) \(.id | length) \(.timestamp | test("^[0-9-]{10}T[0-9:]{8}Z$"))"' "$RECV/log"
	assert_line --index 0 "v1 16 base 36 true"
	run jq -r 'select(.n == 4) | .body | fromjson | .eventData.set_timeout | test("^[0-9-]{10}T[0-9:]{8}Z$")' "$RECV/log"
	assert_output true
	# Nothing more arrives: each was acknowledged once.
	sleep 1
	[ "$(wc -l <"$RECV/log")" -eq 5 ]
}

@test "a webhook gets only the types it asked for" {
	receiver only
	register '["sandbox.lifecycle.killed"]'
	run api POST /v2/sandboxes -d '{}'
	local sb
	sb=$(body | jq -r .sandboxID)
	run api DELETE "/sandboxes/$sb"
	assert_equal "$(status)" 204
	got 1
	run kinds
	assert_output "sandbox.lifecycle.killed $sb"
}

@test "the events of a sandbox are listed for its key only, newest first" {
	run api POST /v2/sandboxes -d '{}'
	local sb
	sb=$(body | jq -r .sandboxID)
	run api POST "/sandboxes/$sb/pause"
	run api DELETE "/sandboxes/$sb"
	run api GET "/events/sandboxes/$sb"
	assert_equal "$(status)" 200
	run jq -r '.[].type' <<<"$(body)"
	assert_output "sandbox.lifecycle.killed
sandbox.lifecycle.paused
sandbox.lifecycle.created"
	run api GET "/events/sandboxes/$sb?orderAsc=true&limit=1&offset=1"
	run jq -r '.[].type' <<<"$(body)"
	assert_output sandbox.lifecycle.paused
	run api GET "/events/sandboxes?limit=2"
	run jq -r 'length' <<<"$(body)"
	assert_output 2
	run api GET "/events/sandboxes/$sb?limit=101"
	assert_equal "$(status)" 400
	run api2 GET "/events/sandboxes/$sb"
	assert_equal "$(status)" 200
	assert_equal "$(body)" "[]"
}

@test "a webhook is its key's: another key cannot list, get, change or delete it" {
	receiver own
	register
	run api GET /events/webhooks
	run jq -r --arg h "$HOOK" '[.[] | select(.id == $h)] | length' <<<"$(body)"
	assert_output 1
	run api GET "/events/webhooks/$HOOK"
	assert_equal "$(status)" 200
	run jq -r '"\(.url) \(.enabled) \(.signatureSecret) \(.secret)"' <<<"$(body)"
	assert_output "$HOOK_URL true null null"
	run api2 GET /events/webhooks
	run jq -r --arg h "$HOOK" '[.[] | select(.id == $h)] | length' <<<"$(body)"
	assert_output 0
	run api2 GET "/events/webhooks/$HOOK"
	assert_equal "$(status)" 404
	run api2 PATCH "/events/webhooks/$HOOK" -d '{"enabled": false}'
	assert_equal "$(status)" 404
	run api2 DELETE "/events/webhooks/$HOOK"
	assert_equal "$(status)" 404
	run api PATCH "/events/webhooks/$HOOK" -d '{"enabled": false, "events": ["sandbox.lifecycle.killed"]}'
	assert_equal "$(status)" 200
	run jq -r '"\(.enabled) \(.events | join(","))"' <<<"$(body)"
	assert_output "false sandbox.lifecycle.killed"
	run api PATCH "/events/webhooks/$HOOK" -d '{"events": ["sandbox.lifecycle.exploded"]}'
	assert_equal "$(status)" 400
	run api DELETE "/events/webhooks/$HOOK"
	assert_equal "$(status)" 200
	run api GET "/events/webhooks/$HOOK"
	assert_equal "$(status)" 404
}

@test "a receiver that answers 500 gets the same event again" {
	receiver flaky --fail-first 1
	register '["sandbox.lifecycle.created"]'
	run api POST /v2/sandboxes -d '{}'
	local sb
	sb=$(body | jq -r .sandboxID)
	got 2
	run jq -r '.body | fromjson | "\(.type) \(.sandboxId) \(.id)"' "$RECV/log"
	[ "${lines[0]}" = "${lines[1]}" ]
	assert_line --index 0 --partial "sandbox.lifecycle.created $sb"
	# Two attempts, two delivery ids, one webhook.
	run jq -r '.headers["e2b-delivery-id"]' "$RECV/log"
	[ "${lines[0]}" != "${lines[1]}" ]
	run signed "$HOOK"
	assert_success
	api DELETE "/sandboxes/$sb" >/dev/null
}

@test "webhook urls to loopback, private and metadata addresses are refused without the flag" {
	serve_start strict
	local url=$SERVE_URL u
	SERVE_URL=$SERVE_URL_strict
	for u in http://127.0.0.1:9/hook http://10.0.0.1/hook http://169.254.169.254/latest \
		http://localhost/x file:///etc/passwd; do
		run api POST /events/webhooks -d "{\"url\": \"$u\", \"signatureSecret\": \"x\"}"
		assert_equal "$(status)" 400
		assert_output --partial "webhook url refused"
	done
	run api POST /events/webhooks -d '{"url": "http://127.0.0.1:9/hook"}'
	assert_equal "$(status)" 400
	SERVE_URL=$url
	# The flag lets loopback in, never the metadata address.
	run api POST /events/webhooks -d '{"url": "http://169.254.169.254/latest", "signatureSecret": "x"}'
	assert_equal "$(status)" 400
	assert_output --partial "never allowed"
}

# The deliverer's keeper (the server's child named sbx-serve-hook, one
# thread) forks it again when it dies; the new one delivers what came
# meanwhile.  Before, the server's sweeper thread forked it again: a copy
# of a threaded process, with whatever locks its other threads held.
@test "a deliverer killed with -9 is forked again by its one-thread keeper and delivers" {
	local keeper old new i
	keeper=$(pgrep -x -P "$SERVE_PID_hooks" sbx-serve-hook)
	[ "$(printf '%s\n' "$keeper" | wc -l)" -eq 1 ]
	[ "$(awk '/^Threads:/{print $2}' "/proc/$keeper/status")" -eq 1 ]
	old=$(pgrep -P "$keeper")
	[ -n "$old" ]
	receiver again
	register '["sandbox.lifecycle.created"]'
	kill -9 "$old"
	for i in $(seq 1 50); do
		new=$(pgrep -P "$keeper") && [ "$new" != "$old" ] && break
		sleep 0.1
	done
	[ -n "$new" ] && [ "$new" != "$old" ]
	run api POST /v2/sandboxes -d '{}'
	local sb
	sb=$(body | jq -r .sandboxID)
	got 1
	run kinds
	assert_output "sandbox.lifecycle.created $sb"
	api DELETE "/sandboxes/$sb" >/dev/null
}

@test "a delivery cut by kill -9 of the server is made by the next server" {
	# Last in the file: the server it restarts lives in this test only.
	# The only server delivering (another one on this Redis would take
	# over what this one held: that is at least once, too, but not this test).
	receiver cut
	register '["sandbox.lifecycle.created"]'
	touch "$RECV/hold"
	run api POST /v2/sandboxes -d '{}'
	local sb
	sb=$(body | jq -r .sandboxID)
	got 1                                   # in flight, held by the receiver
	kill -9 "$SERVE_PID_hooks"
	rm "$RECV/hold"
	sleep 0.5
	[ "$(wc -l <"$RECV/log")" -eq 1 ]       # nobody sent it again yet
	unset SERVE_URL
	RESTARTED=1
	serve_start hooks --webhook-allow-private
	got 2
	run jq -r '.body | fromjson | "\(.type) \(.sandboxId) \(.id)"' "$RECV/log"
	[ "${lines[0]}" = "${lines[1]}" ]
	assert_line --index 0 --partial "sandbox.lifecycle.created $sb"
	# Acknowledged now: no third delivery.
	sleep 1
	[ "$(wc -l <"$RECV/log")" -eq 2 ]
	api DELETE "/sandboxes/$sb" >/dev/null
}
