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

@test "create options the server does not implement are 400 naming the field; unset ones pass" {
	local body field
	for body in '{"network":{"egressProxy":{"address":"proxy.example:1080"}}}=network.egressProxy' \
		    '{"network":{"rules":{"api.example":[{"transform":{"headers":{"A":"b"}}}]}}}=network.rules' \
		    '{"network":{"allowOut":["api.example"],"rules":{"api.example":[{"transform":{"headers":{"A":"${e2b.secrets.NOPE}"}}}]}}}=secret NOPE is not one of the profile' \
		    '{"network":{"allowOut":["api.example"],"rules":{"api.example":[{"callback":"x"}]}}}=transform' \
		    '{"network":{"allowOut":["api.example"],"rules":{"api.example":[{"transform":{"headers":{"Bad Name":"v"}}}]}}}=is not a header name' \
		    '{"network":{"allowOut":["api.example"],"rules":{"10.0.0.0/8":[]}}}=a name or' \
		    '{"network":{"maskRequestHost":"${PORT}.example"}}=network.maskRequestHost' \
		    '{"network":{"httpsPorts":[443]}}=network.httpsPorts' \
		    '{"mcp":{"github":{}}}=mcp' \
		    '{"iam":{"tokens":{"t":{"audience":"a","tokenType":"JWT-SVID"}}}}=iam' \
		    '{"secure":false}=secure' \
		    '{"autoPause":true,"autoPauseMemory":false}=autoPauseMemory' \
		    '{"somethingNew":1}=somethingNew' \
		    '{"network":"open"}=network must be an object'; do
		field=${body##*=}
		run api POST /v2/sandboxes -d "${body%=*}"
		assert_equal "$(status)" 400
		[[ "$(body | jq -r .message)" == *"$field"* ]] || { echo "$body: $(body)" >&2; return 1; }
	done
	run api GET /v2/sandboxes
	assert_equal "$(body | jq length)" 0
	# what SDKs send for options left unset is no refusal
	run api POST /v2/sandboxes -d '{"templateID":"base","secure":true,"mcp":null,"volumeMounts":[],"network":{"rules":{},"allowPublicTraffic":true},"autoPauseMemory":true}'
	assert_equal "$(status)" 201
	run api DELETE "/sandboxes/$(body | jq -r .sandboxID)"
}

@test "calls the server does not implement are 501 naming the call, on a sandbox that exists" {
	new_sandbox
	run api PUT "/sandboxes/$ID/network" -d '{"allowOut":["1.1.1.1"]}'
	assert_equal "$(status)" 501
	run api GET "/sandboxes/$ID/logs"
	assert_equal "$(status)" 501
	run api GET "/v2/sandboxes/$ID/logs"
	assert_equal "$(status)" 501
	run api POST "/sandboxes/$ID/pause" -d '{"memory":false}'
	assert_equal "$(status)" 400
	[[ "$(body | jq -r .message)" == *"'memory': false"* ]]
	run api GET "/sandboxes/metrics?sandbox_ids=$ID"
	assert_equal "$(status)" 501
	# a sandbox that does not exist is still 404, and another key's too
	run api GET /sandboxes/nosuchsandbox/logs
	assert_equal "$(status)" 404
	run api2 GET "/sandboxes/$ID/logs"
	assert_equal "$(status)" 404
	run api DELETE "/sandboxes/$ID"
}

# E2B's fork (POST /sandboxes/{id}/fork, the SDK's Sandbox.fork): one
# snapshot of the source's files, `count` sandboxes from it.  Each fork is
# its own (a write in one is seen by neither the source nor the other
# fork), the source runs on with its end time, and a fork gets the
# source's metadata, envVars and network policy: never more than its
# source had (before the record kept the create's network, a fork took
# the profile's default).
@test "fork: count sandboxes from one snapshot of the source, each its own, with the source's metadata, env and network" {
	new_sandbox '{"timeout":600,"metadata":{"who":"src"},"envVars":{"FORKED_ENV":"carried"},"network":{"denyOut":["192.0.2.0/24"]}}'
	local src=$ID src_tok=$TOKEN end
	run envd "$src" "$src_tok" "/files?path=/home/user/f.txt" \
		-H 'Content-Type: application/octet-stream' --data-binary 'from the source'
	assert_equal "$(status)" 200
	run api GET "/sandboxes/$src"
	end=$(body | jq -r .endAt)
	run api GET /snapshots
	local before
	before=$(body | jq -c '[.[].snapshotID]')
	run api POST "/sandboxes/$src/fork" -d '{"count":2,"timeout":120}'
	assert_equal "$(status)" 201
	assert_equal "$(body | jq 'length')" 2
	assert_equal "$(body | jq '[.[] | select(.error)] | length')" 0
	local ids toks
	ids=($(body | jq -r '.[].sandbox.sandboxID'))
	toks=($(body | jq -r '.[].sandbox.envdAccessToken'))
	[ "${ids[0]}" != "${ids[1]}" ] && [ "${ids[0]}" != "$src" ]
	local i
	for i in 0 1; do
		run envd "${ids[$i]}" "${toks[$i]}" "/files?path=/home/user/f.txt"
		assert_equal "$(body)" 'from the source'
		run api GET "/sandboxes/${ids[$i]}"
		assert_equal "$(body | jq -r .metadata.who)" src
		assert_equal "$(body | jq -r '.network.denyOut | index("192.0.2.0/24") != null')" true
		run sbx-exec --id "${ids[$i]}" -- sh -c 'echo "$FORKED_ENV"'
		assert_equal "$(jqo .exec.stdout)" "carried"
	done
	# shares nothing writable: a write in the first fork is its own
	run envd "${ids[0]}" "${toks[0]}" "/files?path=/home/user/f.txt" \
		-H 'Content-Type: application/octet-stream' --data-binary 'fork one'
	assert_equal "$(status)" 200
	run envd "$src" "$src_tok" "/files?path=/home/user/f.txt"
	assert_equal "$(body)" 'from the source'
	run envd "${ids[1]}" "${toks[1]}" "/files?path=/home/user/f.txt"
	assert_equal "$(body)" 'from the source'
	# the source runs on, its end time untouched
	run api GET "/sandboxes/$src"
	assert_equal "$(body | jq -r .state)" running
	assert_equal "$(body | jq -r .endAt)" "$end"
	# the snapshot is the key's: listed, deletable once no fork runs from it
	run api GET /snapshots
	local snap
	snap=$(body | jq -r --argjson b "$before" '[.[].snapshotID | select(. as $s | $b | index($s) | not)] | .[]')
	[ "$(wc -w <<<"$snap")" = 1 ]
	for i in 0 1; do run api DELETE "/sandboxes/${ids[$i]}"; done
	run api DELETE "/sandboxes/$src"
	run api DELETE "/templates/$snap"
	assert_equal "$(status)" 204
}

@test "fork: count from 1 to 16, no field it does not know; a sandbox that does not exist, or another key's, is 404" {
	new_sandbox
	run api POST "/sandboxes/$ID/fork" -d '{"count":0}'
	assert_equal "$(status)" 400
	run api POST "/sandboxes/$ID/fork" -d '{"count":17}'
	assert_equal "$(status)" 400
	run api POST "/sandboxes/$ID/fork" -d '{"count":1,"memory":true}'
	assert_equal "$(status)" 400
	[[ "$(body | jq -r .message)" == *"'memory'"* ]]
	run api POST "/sandboxes/$ID/fork" -d '{"timeout":0}'
	assert_equal "$(status)" 400
	run api POST /sandboxes/nosuchsandbox/fork -d '{}'
	assert_equal "$(status)" 404
	run api2 POST "/sandboxes/$ID/fork" -d '{}'
	assert_equal "$(status)" 404
	run api DELETE "/sandboxes/$ID"
}

@test "metrics: a sample from the sandbox's cgroup, CPU and memory moving with what runs; or 501 saying why" {
	new_sandbox
	run api GET "/sandboxes/$ID/metrics?start=x"
	assert_equal "$(status)" 400
	run api GET "/sandboxes/$ID/metrics?start=1&end=2"
	assert_equal "$(body | jq -c .)" '[]'
	run api GET "/sandboxes/$ID/metrics"
	if [ "$(status)" = 501 ]; then
		# the backend cannot tell: the route says so, with no made-up numbers
		sbx-exec --id "$ID" -- sh -c 'test -r /sys/fs/cgroup/cpu.stat || test -r /sys/fs/cgroup/cpuacct/cpuacct.usage' |
			jq -e '.exec.exit_code != 0' >/dev/null
		assert_equal "$(body | jq -r .message)" \
			"the sandbox sees no cgroup of its own (a cgroup v1 host?), so the backend cannot tell its CPU and memory"
		run api DELETE "/sandboxes/$ID"
		return 0
	fi
	assert_equal "$(status)" 200
	assert_equal "$(body | jq length)" 1
	assert_equal "$(body | jq -c '.[0] | keys')" \
		'["cpuCount","cpuUsedPct","diskTotal","diskUsed","memCache","memTotal","memUsed","timestamp","timestampUnix"]'
	local idle_mem
	idle_mem=$(body | jq '.[0].memUsed')
	[ "$(body | jq '.[0].cpuCount >= 1 and .[0].memTotal > 0 and .[0].diskTotal > 0 and .[0].diskUsed > 0')" = true ]
	# a busy loop holding 64 MB shows in the next sample (it spins until
	# told to stop, so the sample falls inside it however slow the machine)
	run envd "$ID" "$TOKEN" "/files?path=/tmp/hog.py" -H 'Content-Type: application/octet-stream' \
		--data-binary $'import os\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nopen("/tmp/hog.ready", "w").close()\nwhile not os.path.exists("/tmp/hog.stop"): pass\n'
	# a template without python3 (the docker fixture's busybox) spins in sh
	# and holds no memory: its memory check is left out
	local hog_cmd=(python3 /tmp/hog.py) mem=1
	if ! sbx-exec --id "$ID" -- python3 -c '' | jq -e '.exec.exit_code == 0' >/dev/null; then
		hog_cmd=(sh -c 'touch /tmp/hog.ready; while [ ! -e /tmp/hog.stop ]; do :; done') mem=0
	fi
	sbx-exec --id "$ID" -- "${hog_cmd[@]}" >/dev/null &
	local hog=$! i
	for i in $(seq 1 200); do
		sbx-exec --id "$ID" -- test -e /tmp/hog.ready | jq -e '.exec.exit_code == 0' >/dev/null && break
		sleep 0.1
	done
	run api GET "/sandboxes/$ID/metrics"
	sbx-exec --id "$ID" -- touch /tmp/hog.stop >/dev/null
	wait "$hog"
	assert_equal "$(status)" 200
	echo "idle $idle_mem, busy $(body)" >&2
	[ "$(body | jq '.[0].cpuUsedPct > 20')" = true ]
	[ "$mem" = 0 ] || [ "$(body | jq --argjson m "$idle_mem" '.[0].memUsed > $m + 50000000')" = true ]
	run api POST "/sandboxes/$ID/pause"
	run api GET "/sandboxes/$ID/metrics"
	assert_equal "$(body | jq -c .)" '[]'
	run api DELETE "/sandboxes/$ID"
}

@test "metrics: a sandbox root that replaces what the sample runs gets 500, never its numbers as the sandbox's" {
	# the sample is `/bin/sh -c SCRIPT` in the sandbox, and root there may
	# replace /bin/sh itself (replacing df or nproc would not do on a
	# busybox template, whose sh runs its own applets): numbers that
	# overflow once turned into bytes, and a flood past the sample's 4 KB
	# cap, are each refused as malformed
	local fake
	for fake in "printf 'ncpu 1\\nusec1 1\\nusec2 2\\ncgmem 1\\nmemtotal 1\\ndisktotal 9223372036854775807\\ndiskused 1\\n'" \
		"head -c 100000 /dev/zero | tr '\\0' 7"; do
		new_sandbox
		run sbx-exec --root --id "$ID" -- sh -c \
			'for i in /bin/dash /bin/bash "/bin/busybox sh"; do [ -x "${i%% *}" ] && break; done
			 rm -f /bin/sh && printf "#!%s\n%s\n" "$i" "$1" >/bin/sh && chmod 755 /bin/sh' sh "$fake"
		assert_equal "$(jqo .exec.exit_code)" 0
		run api GET "/sandboxes/$ID/metrics"
		assert_equal "$(status)" 500
		assert_equal "$(body | jq -r .message)" \
			"the sandbox's metric sample is malformed (its programs or files changed?)"
		run api DELETE "/sandboxes/$ID"
	done
	run curl -sS "$SERVE_URL/health"
	assert_output "Health check successful"
}

@test "list: order, startedAfter and template as E2B's API description; tokens keep their order" {
	local a b c t0 i
	run api POST /v2/sandboxes -d '{"metadata":{"lq":"1"}}'
	a=$(body | jq -r .sandboxID)
	sleep 1.1      # created_at has one-second steps: three distinct times
	run api POST /v2/sandboxes -d '{"metadata":{"lq":"1"}}'
	b=$(body | jq -r .sandboxID)
	t0=$(body | jq -r .sandboxID | xargs -I{} curl -sS "$SERVE_URL/sandboxes/{}" -H "X-API-Key: $SERVE_KEY" | jq -r .startedAt)
	run api POST "/sandboxes/$a/snapshots" -d '{}'
	local snap
	snap=$(body | jq -r .snapshotID)
	sleep 1.1
	run api POST /v2/sandboxes -d "{\"metadata\":{\"lq\":\"1\"},\"templateID\":\"$snap\"}"
	c=$(body | jq -r .sandboxID)
	local q='metadata=lq%3D1'
	run api GET "/v2/sandboxes?$q"
	assert_equal "$(body | jq -r '[.[].sandboxID] | join(" ")')" "$c $b $a"
	run api GET "/v2/sandboxes?$q&order=asc"
	assert_equal "$(body | jq -r '[.[].sandboxID] | join(" ")')" "$a $b $c"
	run api GET "/v2/sandboxes?$q&order=sideways"
	assert_equal "$(status)" 400
	# paging one at a time in each order: each once, in order
	local order tok seen
	for order in asc desc; do
		tok= seen=
		for i in 1 2 3 4; do
			run curl -sS -D "$BATS_TEST_TMPDIR/h" "$SERVE_URL/v2/sandboxes?$q&order=$order&limit=1${tok:+&nextToken=$tok}" \
				-H "X-API-Key: $SERVE_KEY"
			seen="$seen $(printf '%s' "$output" | jq -r '.[].sandboxID')"
			tok=$(sed -n 's/^[Xx]-[Nn]ext-[Tt]oken: *\([^\r]*\).*/\1/p' "$BATS_TEST_TMPDIR/h")
			[ -n "$tok" ] || break
		done
		if [ $order = asc ]; then assert_equal "$seen" " $a $b $c"; else assert_equal "$seen" " $c $b $a"; fi
	done
	# a token of one order is refused by the other
	run curl -sS -D "$BATS_TEST_TMPDIR/h" "$SERVE_URL/v2/sandboxes?$q&order=asc&limit=1" -H "X-API-Key: $SERVE_KEY"
	tok=$(sed -n 's/^[Xx]-[Nn]ext-[Tt]oken: *\([^\r]*\).*/\1/p' "$BATS_TEST_TMPDIR/h")
	run api GET "/v2/sandboxes?$q&order=desc&nextToken=$tok"
	assert_equal "$(status)" 400
	# startedAfter is inclusive
	run api GET "/v2/sandboxes?$q&startedAfter=$(printf %s "$t0" | jq -sRr @uri)"
	assert_equal "$(body | jq -r '[.[].sandboxID] | join(" ")')" "$c $b"
	run api GET "/v2/sandboxes?$q&startedAfter=yesterday"
	assert_equal "$(status)" 400
	run api GET "/v2/sandboxes?$q&template=$snap"
	assert_equal "$(body | jq -r '[.[].sandboxID] | join(" ")')" "$c"
	run api GET "/v2/sandboxes?$q&template=base:v1"
	assert_equal "$(status)" 400
	for i in $a $b $c; do api DELETE "/sandboxes/$i" >/dev/null; done
	api DELETE "/templates/$snap" >/dev/null
}

@test "listSnapshots: the name filter" {
	new_sandbox
	run api POST "/sandboxes/$ID/snapshots" -d '{"name":"first"}'
	local s1 s2
	s1=$(body | jq -r .snapshotID)
	run api POST "/sandboxes/$ID/snapshots" -d '{"name":"second"}'
	s2=$(body | jq -r .snapshotID)
	run api GET "/snapshots?name=second"
	assert_equal "$(body | jq -r '[.[].snapshotID] | join(" ")')" "$s2"
	run api GET "/snapshots?name=nothing"
	assert_equal "$(body | jq -c .)" '[]'
	run api GET "/snapshots?sandboxID=$ID"
	assert_equal "$(body | jq length)" 2
	run api DELETE "/sandboxes/$ID"
	api DELETE "/templates/$s1" >/dev/null
	api DELETE "/templates/$s2" >/dev/null
}
