#!/usr/bin/env bats
# Nothing leaks across a boundary it should not cross: credentials into
# messages, sbx's own descriptors into the commands it runs, one profile's
# choice into another profile's documents.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

@test "a docker endpoint's userinfo never appears in an error message" {
	local ep
	for ep in 'tcp://admin:s3cret@127.0.0.1:2376' 'unix://admin:s3cret@/run/docker.sock' \
		'http://admin:s3cret@127.0.0.1:2375/'; do
		printf '{"profiles":{"d":{"backend":"docker","endpoint":"%s"}}}\n' "$ep" >"$BATS_TEST_TMPDIR/c.json"
		run --separate-stderr env -u SBX_BACKEND SBX_CONFIG="$BATS_TEST_TMPDIR/c.json" sbx-ls -p d
		[ "$status" -eq 78 ]
		[[ "$stderr" == *"docker endpoint"*"***@"* ]]
		[[ "$stderr$output" != *s3cret* ]]
		[[ "$stderr$output" != *admin* ]]
	done
}

@test "sbx-lease lock -- CMD: the command inherits no Redis socket" {
	run --separate-stderr sbx-lease lock --tenant t --session s -- sh -c 'ls -l /proc/$$/fd/'
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 ->"* ]]       # the listing worked
	[[ "$output" != *"socket:"* ]]
}

# Two local profiles with their own state folders and key prefixes, on
# the file's Redis.
two_profiles() {
	export SBX_CONFIG="$BATS_TEST_TMPDIR/two.json"
	unset SBX_STATE_DIR
	printf '{"profiles":{"p1":{"backend":"local","state_dir":"%s","prefix":"one"},"p2":{"backend":"local","state_dir":"%s","prefix":"two"}}}\n' \
		"$BATS_TEST_TMPDIR/s1" "$BATS_TEST_TMPDIR/s2" >"$SBX_CONFIG"
}

@test "a stream mixing two profiles: each document acts in its own profile's backend" {
	two_profiles
	sbx-create -p p1 >"$BATS_TEST_TMPDIR/a.json"
	sbx-create -p p2 >"$BATS_TEST_TMPDIR/b.json"
	run --separate-stderr bash -c "cat '$BATS_TEST_TMPDIR/a.json' '$BATS_TEST_TMPDIR/b.json' '$BATS_TEST_TMPDIR/a.json' | sbx-exec -- hostname"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jqo -s '[.[].exec.exit_code] | join(",")')" = "0,0,0" ]
	[ "$(jqo -s '[.[].sandbox.profile] | join(",")')" = "p1,p2,p1" ]
	cat "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json" | sbx-ctl kill >/dev/null
}

@test "a stream mixing two profiles: each session's lease goes to its own keyspace" {
	two_profiles
	sbx-create -p p1 --tenant t --session s1 >"$BATS_TEST_TMPDIR/a.json"
	sbx-create -p p2 --tenant t --session s2 >"$BATS_TEST_TMPDIR/b.json"
	run bash -c "cat '$BATS_TEST_TMPDIR/a.json' '$BATS_TEST_TMPDIR/b.json' | sbx-lease begin"
	[ "$status" -eq 0 ]
	[ "$(rcli exists 'one:{t}:sess:s1:turn')" = 1 ]
	[ "$(rcli exists 'two:{t}:sess:s2:turn')" = 1 ]
	[ "$(rcli exists 'one:{t}:sess:s2:turn')" = 0 ]
	cat "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json" | sbx-lease end >/dev/null
	cat "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json" | sbx-ctl kill >/dev/null
}
