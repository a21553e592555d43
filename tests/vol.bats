#!/usr/bin/env bats
# sbx-vol: a tenant's named volumes, their records in Redis and their
# files on the host, moved in and out without a sandbox (no backend
# needed: real redis-server, real files, a real kill -9).

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

@test "create, ls, show, put, get and rm a volume" {
	run sbx-vol --tenant t1 create --size 10M corpus
	assert_success
	[ "$(jqo .volume.name)" = corpus ]
	[ "$(jqo .volume.budget)" = 10485760 ]
	[ "$(rcli sismember sbx:{t1}:vols corpus)" = 1 ]
	[ "$(rcli hget sbx:{t1}:vol:corpus budget)" = 10485760 ]
	printf 'hello\n' >"$BATS_TEST_TMPDIR/a.txt"
	run sbx-vol --tenant t1 put corpus "$BATS_TEST_TMPDIR/a.txt" /a.txt
	assert_success
	[ "$(jqo .files.size)" = 6 ]
	run sbx-vol --tenant t1 get corpus /a.txt "$BATS_TEST_TMPDIR/b.txt"
	assert_success
	cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
	run sbx-vol --tenant t1 get corpus /a.txt -
	assert_output hello
	run sbx-vol --tenant t1 show corpus
	assert_success
	[ "$(jqo .volume.used)" -gt 0 ]
	[ "$(jqo .volume.users)" = 0 ]
	run sbx-vol --tenant t1 ls
	[ "$(jqo .volume.name)" = corpus ]
	run sbx-vol --tenant t1 rm corpus
	assert_success
	[ "$(jqo .volume.removed)" = true ]
	[ "$(rcli exists sbx:{t1}:vol:corpus)" = 0 ]
	run sbx-vol --tenant t1 ls
	assert_output ''
	run -66 sbx-vol --tenant t1 show corpus
	assert_output --partial not_found
}

@test "a name is taken once; bad names and a missing tenant are refused" {
	run sbx-vol --tenant t1 create dup
	assert_success
	run -75 sbx-vol --tenant t1 create dup
	assert_output --partial conflict
	run sbx-vol --tenant t2 create dup
	assert_success
	run -65 sbx-vol --tenant t1 create ../x
	assert_output --partial 'volume name'
	run -65 sbx-vol --tenant t1 create .hidden
	run -64 sbx-vol create nameless
	assert_output --partial tenant
}

@test "each tenant has its own folder: the same name holds different files" {
	sbx-vol --tenant ta create same
	sbx-vol --tenant tb create same
	echo A | sbx-vol --tenant ta put same - /f
	echo B | sbx-vol --tenant tb put same - /f
	run sbx-vol --tenant ta get same /f -
	assert_output A
	run sbx-vol --tenant tb get same /f -
	assert_output B
}

@test "put and get are confined to the volume: no .., no link out, no link as the last component" {
	sbx-vol --tenant t3 create conf
	echo secret >"$BATS_TEST_TMPDIR/outside"
	run -65 sbx-vol --tenant t3 put conf "$BATS_TEST_TMPDIR/outside" /../../escape
	dir=$(find "$SBX_STATE_DIR/volumes" -mindepth 2 -maxdepth 2 -name conf)
	[ -d "$dir" ]
	ln -s "$BATS_TEST_TMPDIR/outside" "$dir/link"
	ln -s / "$dir/up"
	run sbx-vol --tenant t3 get conf /link -
	refute_output secret
	run sbx-vol --tenant t3 get conf /up/etc/hostname -
	[ "$status" -ne 0 ]
	run -65 sbx-vol --tenant t3 put conf "$BATS_TEST_TMPDIR/outside" /link
	assert_output --partial 'symbolic link'
	[ "$(cat "$BATS_TEST_TMPDIR/outside")" = secret ]
	run sbx-vol --tenant t3 put conf "$BATS_TEST_TMPDIR/outside" /up/etc/x
	[ ! -e /etc/x ]
}

@test "a put past the budget is capacity and writes nothing" {
	sbx-vol --tenant t4 create --size 64K small
	head -c 40000 /dev/urandom >"$BATS_TEST_TMPDIR/40k"
	run sbx-vol --tenant t4 put small "$BATS_TEST_TMPDIR/40k" /one
	assert_success
	run -75 sbx-vol --tenant t4 put small "$BATS_TEST_TMPDIR/40k" /two
	assert_output --partial capacity
	run -66 sbx-vol --tenant t4 get small /two -
	# replacing a file gives its bytes back
	run sbx-vol --tenant t4 put small "$BATS_TEST_TMPDIR/40k" /one
	assert_success
}

@test "kill -9 during put leaves the old file whole and no other name" {
	sbx-vol --tenant t5 create crash
	echo old | sbx-vol --tenant t5 put crash - /data
	head -c 1048576 /dev/urandom >"$BATS_TEST_TMPDIR/new"
	SBX_FAULT=files:atomic-written run -137 sbx-vol --tenant t5 put crash "$BATS_TEST_TMPDIR/new" /data
	run sbx-vol --tenant t5 get crash /data -
	assert_output old
	dir=$(find "$SBX_STATE_DIR/volumes" -mindepth 2 -maxdepth 2 -name crash)
	run ls -A "$dir"
	assert_output data
	# an outside kill -9 while the put is stopped half way
	SBX_STOP=files:atomic-written sbx-vol --tenant t5 put crash "$BATS_TEST_TMPDIR/new" /data &
	pid=$!
	wait_stopped "$pid"
	kill -9 "$pid"
	wait "$pid" || true
	run sbx-vol --tenant t5 get crash /data -
	assert_output old
	run ls -A "$dir"
	assert_output data
}

@test "the volumes' host folders are private to their owner" {
	sbx-vol --tenant t6 create priv
	[ "$(stat -c %a "$SBX_STATE_DIR/volumes")" = 700 ]
	run stat -c %a "$SBX_STATE_DIR"/volumes/*/
	refute_output --partial 755
}
