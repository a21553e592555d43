#!/usr/bin/env bats
# suite: local
# sbx-serve's volume calls (Cube's /volumes, E2B's volumeMounts) with curl,
# against a real server on the real local backend: a volume is its key's
# tenant's, mounted at create, read-only for root inside when asked,
# refused while mounted, and every name, path and body checked first.

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start vol
}
teardown_file() {
	serve_stop vol
	sbx_teardown_file
}

# new_sandbox BODY: create one with the first key; sets ID.
new_sandbox() {
	run api POST /sandboxes -d "$1"
	assert_equal "$(status)" 201
	ID=$(body | jq -r .sandboxID)
}

@test "create, list, get and delete a volume; its id is its name" {
	run api POST /volumes -d '{"name":"data-1"}'
	assert_equal "$(status)" 201
	[ "$(body | jq -c '[.volumeID, .name, .token]')" = '["data-1","data-1",""]' ]
	run api POST /volumes -d '{"name":"data-1"}'
	assert_equal "$(status)" 409
	run api GET /volumes
	assert_equal "$(status)" 200
	[ "$(body | jq -c '[.[] | select(.name == "data-1")]')" = '[{"volumeID":"data-1","name":"data-1"}]' ]
	run api GET /volumes/data-1
	assert_equal "$(status)" 200
	[ "$(body | jq -r .volumeID)" = data-1 ]
	run api DELETE /volumes/data-1
	assert_equal "$(status)" 204
	run api GET /volumes/data-1
	assert_equal "$(status)" 404
	run api DELETE /volumes/data-1
	assert_equal "$(status)" 404
}

@test "a volume without a name gets a UUIDv4 as name and id" {
	run api POST /volumes -d '{}'
	assert_equal "$(status)" 201
	local id
	id=$(body | jq -r .volumeID)
	[[ "$id" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
	[ "$(body | jq -r .name)" = "$id" ]
	run api DELETE "/volumes/$id"
	assert_equal "$(status)" 204
}

@test "another key cannot see, delete or mount a volume" {
	run api POST /volumes -d '{"name":"mine"}'
	assert_equal "$(status)" 201
	run api2 GET /volumes/mine
	assert_equal "$(status)" 404
	run api2 GET /volumes
	[ "$(body | jq '[.[] | select(.name == "mine")] | length')" = 0 ]
	run api2 DELETE /volumes/mine
	assert_equal "$(status)" 404
	run api2 POST /sandboxes -d '{"volumeMounts":[{"name":"mine","path":"/mnt/m"}]}'
	assert_equal "$(status)" 400
	run api GET /volumes/mine
	assert_equal "$(status)" 200
	run api DELETE /volumes/mine
	assert_equal "$(status)" 204
}

@test "a mounted volume is shared by the key's sandboxes and its delete is 409 until they are gone" {
	run api POST /volumes -d '{"name":"shared"}'
	assert_equal "$(status)" 201
	new_sandbox '{"volumeMounts":[{"name":"shared","path":"/mnt/s"}]}'
	local a=$ID
	new_sandbox '{"volumeMounts":[{"name":"shared","path":"/data","readOnly":false}]}'
	local b=$ID
	sbx-exec --id "$a" -- sh -c 'echo from-a >/mnt/s/note' >/dev/null
	run sbx-exec --id "$b" -- cat /data/note
	[ "$(jqo .exec.stdout)" = from-a ]
	run api DELETE /volumes/shared
	assert_equal "$(status)" 409
	run api DELETE "/sandboxes/$a"
	assert_equal "$(status)" 204
	run api DELETE /volumes/shared
	assert_equal "$(status)" 409
	run api DELETE "/sandboxes/$b"
	assert_equal "$(status)" 204
	run api DELETE /volumes/shared
	assert_equal "$(status)" 204
}

@test "a read-only mount cannot be written, remounted or removed by root inside" {
	run api POST /volumes -d '{"name":"ro-vol"}'
	assert_equal "$(status)" 201
	new_sandbox '{"volumeMounts":[{"name":"ro-vol","path":"/mnt/w"}]}'
	sbx-exec --id "$ID" -- sh -c 'echo kept >/mnt/w/f' >/dev/null
	api DELETE "/sandboxes/$ID" >/dev/null
	new_sandbox '{"volumeMounts":[{"name":"ro-vol","path":"/mnt/ro","readOnly":true}]}'
	# the detail and the listing show the mounts (E2B's volumeMounts)
	run api GET "/sandboxes/$ID"
	[ "$(body | jq -c .volumeMounts)" = '[{"name":"ro-vol","path":"/mnt/ro","readOnly":true}]' ]
	[ "$(body | jq -c '.metadata | keys')" = '[]' ]
	run api GET /v2/sandboxes
	[ "$(body | jq -c --arg id "$ID" '.[] | select(.sandboxID == $id) | .volumeMounts')" = \
	  '[{"name":"ro-vol","path":"/mnt/ro","readOnly":true}]' ]
	# and a client cannot forge them
	run api POST /sandboxes -d '{"metadata":{"sbx.serve.volumes":"[]"}}'
	assert_equal "$(status)" 400
	run sbx-exec --id "$ID" --root -- sh -c 'echo x >/mnt/ro/f; echo "rc=$?"'
	refute_output --partial 'rc=0'
	assert_output --partial 'Read-only file system'
	run sbx-exec --id "$ID" --root -- sh -c 'mount -o remount,rw /mnt/ro; echo x >/mnt/ro/f; echo "w=$?"'
	refute_output --partial 'w=0'
	run sbx-exec --id "$ID" --root -- sh -c 'rm -f /mnt/ro/f; echo "rc=$?"; cat /mnt/ro/f'
	refute_output --partial 'rc=0'
	[[ "$(jqo .exec.stdout)" == *kept* ]]
	run sbx-exec --id "$ID" --root -- grep ' /mnt/ro ' /proc/self/mountinfo
	[[ "$(jqo .exec.stdout)" == *" ro,"* ]]
	api DELETE "/sandboxes/$ID" >/dev/null
}

@test "bad volume names, mount paths and mounts are refused with 400, before anything is made" {
	local n
	for n in '"a.b"' '"../x"' '"a/b"' '""' '"a b"' '7' "\"$(printf 'x%.0s' $(seq 1 129))\""; do
		run api POST /volumes -d "{\"name\":$n}"
		assert_equal "$(status)" 400
	done
	run api POST /volumes -d "{\"name\":\"$(printf 'y%.0s' $(seq 1 128))\"}"
	assert_equal "$(status)" 201
	run api POST /volumes -d '{"name":"d","driver":"nfs"}'
	assert_equal "$(status)" 400
	run api POST /volumes -d '{"name":"good"}'
	assert_equal "$(status)" 201
	local m
	for m in '[{"name":"good","path":"relative"}]' '[{"name":"good","path":"/"}]' \
		'[{"name":"good","path":"/mnt/../etc"}]' '[{"name":"good"}]' '[{"path":"/mnt/x"}]' \
		'[{"name":"good","path":"/a"},{"name":"good","path":"/a"}]' \
		'[{"name":"good","path":"/a","readOnly":"yes"}]' '[{"name":"good","path":"/a","extra":1}]' \
		'[{"name":"../good","path":"/a"}]' '[{"name":"missing","path":"/a"}]' '"good:/a"' '[7]'; do
		run api POST /sandboxes -d "{\"volumeMounts\":$m}"
		assert_equal "$(status)" 400
	done
	# 17 mounts: more than a sandbox may have
	run api POST /sandboxes -d "{\"volumeMounts\":$(jq -cn '[range(17) | {name: "good", path: "/m\(.)"}]')}"
	assert_equal "$(status)" 400
	run api GET /volumes/good
	assert_equal "$(status)" 200
	run rcli --scan --pattern 'sbx:*vol:good:users'
	[ -z "$output" ]
	run api GET '/volumes/a.b'
	assert_equal "$(status)" 404
}

@test "a malformed or huge volume body is refused" {
	run api POST /volumes -d '{"name":'
	assert_equal "$(status)" 400
	run api POST /volumes -d '["name"]'
	assert_equal "$(status)" 400
	head -c 2M /dev/zero | tr '\0' 'a' >"$BATS_TEST_TMPDIR/huge"
	run api POST /volumes --data-binary "@$BATS_TEST_TMPDIR/huge"
	assert_equal "$(status)" 413
	run api PUT /volumes -d '{}'
	assert_equal "$(status)" 405
	run api PATCH /volumes/good -d '{}'
	assert_equal "$(status)" 405
}

@test "--flavor cube: the same volumes under Cube's create, a key's volumes shared by both servers' Redis" {
	serve_start cube --flavor cube
	local url=$SERVE_URL_cube
	cube() { local m=$1 p=$2; shift 2; curl -sS -X "$m" "$url$p" -H "X-API-Key: $SERVE_KEY" -w '\nHTTP %{http_code}\n' "$@"; }
	run cube POST /volumes -d '{"name":"cube-vol"}'
	assert_equal "$(status)" 201
	# the key's tenant is the same on both servers (one Redis, one state folder)
	run api GET /volumes/cube-vol
	assert_equal "$(status)" 200
	run cube POST /sandboxes -d '{"templateID":"base","timeout":-1,"volumeMounts":[{"name":"cube-vol","path":"/mnt/c","readOnly":true}]}'
	assert_equal "$(status)" 201
	local id
	id=$(body | jq -r .sandboxID)
	run sbx-exec --id "$id" --root -- sh -c 'touch /mnt/c/x; echo "rc=$?"'
	refute_output --partial 'rc=0'
	run cube DELETE /volumes/cube-vol
	assert_equal "$(status)" 409
	run cube DELETE "/sandboxes/$id"
	run cube DELETE /volumes/cube-vol
	assert_equal "$(status)" 204
	serve_stop cube
}

@test "sbx-vol on the server's host fills a key's volume as tenant e2b-<key id>" {
	run api POST /volumes -d '{"name":"filled"}'
	assert_equal "$(status)" 201
	local key tenant
	key=$(rcli --scan --pattern 'sbx:{e2b-*}:vols' | head -1)
	tenant=${key#sbx:\{}
	tenant=${tenant%%\}*}
	[[ "$tenant" =~ ^e2b-[0-9a-f]+$ ]]
	echo corpus-line | sbx-vol --tenant "$tenant" put filled - /data.txt >/dev/null
	run sbx-vol --tenant "$tenant" ls
	[[ "$output" == *'"name":"filled"'* ]]
	new_sandbox '{"volumeMounts":[{"name":"filled","path":"/mnt/f","readOnly":true}]}'
	run sbx-exec --id "$ID" -- cat /mnt/f/data.txt
	[ "$(jqo .exec.stdout)" = corpus-line ]
	run sbx-vol --tenant "$tenant" show filled
	[ "$(jqo .volume.users)" = 1 ]
	api DELETE "/sandboxes/$ID" >/dev/null
}
