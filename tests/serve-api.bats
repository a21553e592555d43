#!/usr/bin/env bats
# suite: local docker
# sbx-serve's control-plane semantics with curl, against a real server on
# the real backend: templates and snapshots scoped to the key that made
# them, the list query parameters of E2B's API description, the snapshot
# name filter, metrics from the backend, and create options and calls the
# server does not implement refused as E2B refuses what it does not
# support (never silently accepted, never "sandbox not found").

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start api
}
teardown_file() {
	serve_stop api
	sbx_teardown_file
}

# api2 METHOD PATH [CURL ARGS...]: as `api`, with the second key.
api2() {
	local m=$1 p=$2
	shift 2
	curl -sS -X "$m" "$SERVE_URL$p" -H "X-API-Key: $SERVE_KEY2" -H 'Content-Type: application/json' \
		-w '\nHTTP %{http_code}\n' "$@"
}
# new_sandbox [BODY]: create one with the first key; sets ID and TOKEN.
new_sandbox() {
	run api POST /v2/sandboxes -d "${1:-{\}}"
	assert_equal "$(status)" 201
	ID=$(body | jq -r .sandboxID)
	TOKEN=$(body | jq -r .envdAccessToken)
}

@test "another key's snapshot is not found: create from it, describe it, list it, delete it" {
	new_sandbox
	run envd "$ID" "$TOKEN" "/files?path=/home/user/private.txt" \
		-H 'Content-Type: application/octet-stream' --data-binary 'key one only'
	assert_equal "$(status)" 200
	run api POST "/sandboxes/$ID/snapshots" -d '{}'
	assert_equal "$(status)" 201
	local snap
	snap=$(body | jq -r .snapshotID)

	# the second key: a create from the snapshot is E2B's 404 ...
	run api2 POST /v2/sandboxes -d "{\"templateID\":\"$snap\"}"
	local got
	got=$(status)
	if [ "$got" = 201 ]; then     # what it could read before the fix
		local id2 tok2
		id2=$(body | jq -r .sandboxID)
		tok2=$(body | jq -r .envdAccessToken)
		run envd "$id2" "$tok2" "/files?path=/home/user/private.txt"
		echo "the second key booted the snapshot and read: $output" >&2
	fi
	assert_equal "$got" 404
	assert_equal "$(body | jq -r .message)" "template '$snap' not found"
	# ... so is the v1 create, a description, and a delete
	run api2 POST /sandboxes -d "{\"templateID\":\"$snap\"}"
	assert_equal "$(status)" 404
	run api2 GET "/templates/$snap"
	assert_equal "$(status)" 404
	run api2 DELETE "/templates/$snap"
	assert_equal "$(status)" 404
	# and no listing shows it to the second key
	run api2 GET /templates
	assert_equal "$(status)" 200
	assert_equal "$(body | jq --arg s "$snap" '[.[] | select(.templateID == $s)] | length')" 0
	run api2 GET /snapshots
	assert_equal "$(body | jq --arg s "$snap" '[.[] | select(.snapshotID == $s)] | length')" 0

	# the first key still boots it and finds its file
	run api POST /v2/sandboxes -d "{\"templateID\":\"$snap\"}"
	assert_equal "$(status)" 201
	local child ctok
	child=$(body | jq -r .sandboxID)
	ctok=$(body | jq -r .envdAccessToken)
	run envd "$child" "$ctok" "/files?path=/home/user/private.txt"
	assert_equal "$(body)" 'key one only'
	run api GET "/templates/$snap"
	assert_equal "$(status)" 200
	run api DELETE "/sandboxes/$child"
	run api DELETE "/sandboxes/$ID"
	run api DELETE "/templates/$snap"
	assert_equal "$(status)" 204
}

@test "a backend snapshot the server did not take is no key's; a missing template is 404" {
	new_sandbox
	local snap
	snap=$(sbx-snap --id "$ID" | jq -r .snapshot.id)
	[ -n "$snap" ] && [ "$snap" != null ]
	run api POST /v2/sandboxes -d "{\"templateID\":\"$snap\"}"
	assert_equal "$(status)" 404
	run api GET "/templates/$snap"
	assert_equal "$(status)" 404
	run api POST /v2/sandboxes -d '{"templateID":"no-such-template"}'
	assert_equal "$(status)" 404
	run api DELETE "/sandboxes/$ID"
	sbx-snap rm "$snap" >/dev/null 2>&1 || true
}
