#!/usr/bin/env bats
# suite: conformance
# Volumes (sbx-vol, sbx-create --volume): a tenant's folder of files,
# mounted at create, shared by its sandboxes, read-only for root too,
# outliving every sandbox and never part of a snapshot.
load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	sbx-vol --tenant acme create corpus >/dev/null
	# 1 GB where a volume is a host folder; 100 MB where each put is one
	# upload through a server (docker's engine volume, e2b/cube /files).
	local mb=100
	[ "$FIXTURE_BACKEND" != local ] || mb=1024
	head -c "${mb}M" /dev/urandom >"$SBX_TEST_DIR/big"
	sha256sum <"$SBX_TEST_DIR/big" | cut -d' ' -f1 >"$SBX_TEST_DIR/big.sum"
	sbx-vol --tenant acme put corpus "$SBX_TEST_DIR/big" /big.bin >/dev/null
	rm -f "$SBX_TEST_DIR/big"
}
teardown_file() { sbx_teardown_file; }

in_sb() { # in_sb ID [--root] -- CMD...: the command's stdout
	sbx-exec --id "$@" | jq -r .exec.stdout
}

@test "two sandboxes of one tenant read the same big file (1 GB on local) from a read-only volume" {
	need_cap volumes
	a=$(sbx_new_id --tenant acme --volume corpus:/mnt/corpus:ro)
	b=$(sbx_new_id --tenant acme --volume corpus:/mnt/corpus:ro)
	[ "$(in_sb "$a" -- sh -c 'sha256sum </mnt/corpus/big.bin | cut -d" " -f1')" = "$(cat "$SBX_TEST_DIR/big.sum")" ]
	[ "$(in_sb "$b" -- sh -c 'sha256sum </mnt/corpus/big.bin | cut -d" " -f1')" = "$(cat "$SBX_TEST_DIR/big.sum")" ]
	run sbx-vol --tenant acme show corpus
	[ "$(jqo .volume.users)" = 2 ]
	sbx-ctl kill --id "$a" >/dev/null
	sbx-ctl kill --id "$b" >/dev/null
}

@test "root inside cannot write, remount or unmount a read-only volume, nor reach its host folder" {
	need_cap volumes
	id=$(sbx_new_id --tenant acme --volume corpus:/mnt/corpus:ro)
	run sbx-exec --id "$id" --root -- sh -c 'echo x >/mnt/corpus/new; echo "rc=$?"'
	[ "$(jqo .exec.stdout)" != rc=0 ]
	assert_output --partial 'Read-only file system'
	run sbx-exec --id "$id" --root -- sh -c 'rm -f /mnt/corpus/big.bin; echo "rc=$?"'
	[ "$(jqo .exec.stdout)" != rc=0 ]
	run sbx-exec --id "$id" --root -- sh -c 'mount -o remount,rw /mnt/corpus; echo "rc=$?"; echo x >/mnt/corpus/new; echo "w=$?"'
	refute_output --partial 'rc=0'
	refute_output --partial 'w=0'
	run sbx-exec --id "$id" --root -- sh -c 'umount /mnt/corpus; echo "rc=$?"; ls /mnt/corpus'
	refute_output --partial 'rc=0'
	assert_output --partial big.bin
	run sbx-exec --id "$id" --root -- sh -c 'grep " /mnt/corpus " /proc/self/mountinfo'
	[[ "$(jqo .exec.stdout)" == *" ro,"* ]]
	if [ "$FIXTURE_BACKEND" = local ]; then
		# docker: no nosuid/nodev on a bind; no-new-privileges and no
		# CAP_MKNOD stand for them (docs/docker.md)
		[[ "$(jqo .exec.stdout)" == *nosuid* ]]
		[[ "$(jqo .exec.stdout)" == *nodev* ]]
		run sbx-exec --id "$id" --root -- sh -c "ls $SBX_STATE_DIR/volumes; echo rc=\$?"
		refute_output --partial rc=0
	fi
	run sbx-vol --tenant acme show corpus
	[ "$(jqo .volume.users)" -ge 1 ]
	sbx-ctl kill --id "$id" >/dev/null
	[ "$(sbx-vol --tenant acme ls | jq -r 'select(.volume.name == "corpus") | .volume.name')" = corpus ]
}

@test "another tenant cannot mount the volume" {
	need_cap volumes
	run -66 sbx_new --tenant other --volume corpus:/mnt/corpus:ro
	assert_output --partial not_found
	run -64 sbx_new --volume corpus:/mnt/corpus
}

@test "two tenants' volumes of one name are two volumes" {
	need_cap volumes
	sbx-vol --tenant acme create twin >/dev/null
	sbx-vol --tenant other create twin >/dev/null
	echo acme-data | sbx-vol --tenant acme put twin - /who >/dev/null
	echo other-data | sbx-vol --tenant other put twin - /who >/dev/null
	id=$(sbx_new_id --tenant other --volume twin:/mnt/t:ro)
	[ "$(in_sb "$id" -- cat /mnt/t/who)" = other-data ]
	sbx-ctl kill --id "$id" >/dev/null
	run sbx-vol --tenant acme get twin /who -
	assert_output acme-data
	sbx-vol --tenant other rm twin >/dev/null
	run sbx-vol --tenant acme get twin /who -
	assert_output acme-data
	sbx-vol --tenant acme rm twin >/dev/null
}

@test "rm of a volume in use is refused (conflict); once its sandbox is gone it goes" {
	need_cap volumes
	sbx-vol --tenant acme create busy >/dev/null
	id=$(sbx_new_id --tenant acme --volume busy:/mnt/busy)
	run -75 sbx-vol --tenant acme rm busy
	assert_output --partial conflict
	run sbx-vol --tenant acme show busy
	assert_success
	sbx-ctl kill --id "$id" >/dev/null
	run sbx-vol --tenant acme rm busy
	assert_success
	[ "$(jqo .volume.removed)" = true ]
}

@test "a writable volume is one folder for its sandboxes, and outlives them" {
	need_cap volumes
	sbx-vol --tenant acme create shared >/dev/null
	a=$(sbx_new_id --tenant acme --volume shared:/data)
	b=$(sbx_new_id --tenant acme --volume shared:/data)
	in_sb "$a" -- sh -c 'echo from-a >/data/note'
	[ "$(in_sb "$b" -- cat /data/note)" = from-a ]
	sbx-ctl kill --id "$a" >/dev/null
	sbx-ctl kill --id "$b" >/dev/null
	run sbx-vol --tenant acme get shared /note -
	assert_output from-a
}

@test "a snapshot of a sandbox with a volume does not contain the volume's data" {
	need_cap volumes snapshots
	sbx-vol --tenant acme create snapvol >/dev/null
	id=$(sbx_new_id --tenant acme --volume snapvol:/mnt/v)
	in_sb "$id" -- sh -c 'echo secret-data >/mnt/v/inside; echo layer >/workspace/mine'
	snap=$(sbx-snap --id "$id" | jq -r .snapshot.id)
	[ -n "$snap" ] && [ "$snap" != null ]
	sbx-ctl kill --id "$id" >/dev/null
	other=$(sbx_new_id --template "$snap")
	[ "$(in_sb "$other" -- cat /workspace/mine)" = layer ]
	run sbx-exec --id "$other" -- sh -c 'cat /mnt/v/inside; echo "rc=$?"'
	refute_output --partial secret-data
	sbx-ctl kill --id "$other" >/dev/null
	# asked for again, the sandbox from the snapshot gets the mount
	again=$(sbx_new_id --template "$snap" --tenant acme --volume snapvol:/mnt/v)
	[ "$(in_sb "$again" -- cat /mnt/v/inside)" = secret-data ]
	sbx-ctl kill --id "$again" >/dev/null
}

@test "a profile's volumes are every create's unless --volume is given" {
	need_cap volumes
	jq '.profiles.vp = ((.profiles.default // {}) + {"volumes": ["corpus:/mnt/p:ro"]})' "$SBX_CONFIG" \
		>"$SBX_TEST_DIR/vp.json"
	id=$(SBX_CONFIG=$SBX_TEST_DIR/vp.json sbx_new_id -p vp --tenant acme)
	SBX_CONFIG=$SBX_TEST_DIR/vp.json run sbx-exec -p vp --id "$id" -- ls /mnt/p
	[ "$(jqo .exec.stdout)" = big.bin ]
	SBX_CONFIG=$SBX_TEST_DIR/vp.json sbx-ctl -p vp kill --id "$id" >/dev/null
}

@test "a backend without volumes refuses --volume as unsupported" {
	if has_cap volumes; then
		run sbx-ctl caps
		[ "$(jqo .caps.volumes)" = true ]
		return
	fi
	run -69 sbx_new --tenant acme --volume corpus:/mnt/corpus
	assert_output --partial unsupported
}

@test "the reaper never deletes a volume, and lists those of tenants it knows nothing else of" {
	need_cap volumes
	# This keyspace gets its id as a profile's does, from a session (of a
	# bystander: acme must stay a tenant known for nothing but volumes).
	# Without one the reaper refuses to judge what carries another id
	# (keyspace-unknown, 75), and on e2b/cube the server is shared with
	# earlier test files, whose skill snapshots carry theirs.
	bystander=$(sbx_new_id --tenant bystander --session s-ks)
	[ -n "$(rcli get sbx:keyspace)" ]
	sbx-vol --tenant acme create kept >/dev/null
	echo keep | sbx-vol --tenant acme put kept - /k >/dev/null
	id=$(sbx_new_id --tenant acme --volume kept:/mnt/k)
	sbx-ctl kill --id "$id" >/dev/null
	run sbx-reap --all-tenants --grace 0
	assert_success
	# listed: a tenant sbx knows nothing else of (no session, no skill)
	[ "$(jqo '.reap.volumes.orphaned[] | select(.tenant == "acme") | .volumes | index("kept") != null')" = true ]
	rcli sadd sbx:tenants acme >/dev/null
	run sbx-reap --all-tenants --grace 0
	rcli srem sbx:tenants acme >/dev/null
	[ "$(jqo '[.reap.volumes.orphaned[] | select(.tenant == "acme")] | length')" = 0 ]
	sbx-ctl kill --id "$bystander" >/dev/null
	run sbx-vol --tenant acme get kept /k -
	assert_output keep
	run -65 sbx-vol --tenant acme get corpus /big.bin /dev/null
	assert_output --partial 'not a regular file'
	[ -c /dev/null ]
	sbx-vol --tenant acme get corpus /big.bin "$BATS_TEST_TMPDIR/big"
	[ "$(sha256sum <"$BATS_TEST_TMPDIR/big" | cut -d' ' -f1)" = "$(cat "$SBX_TEST_DIR/big.sum")" ]
}

@test "a session's sandbox gets its volumes when the session makes it, and keeps them when it is resolved again" {
	need_cap volumes
	run sbx_new --tenant acme --session s-vol --volume corpus:/mnt/corpus:ro
	assert_success
	id=$(jqo .sandbox.id)
	[ "$(in_sb "$id" -- ls /mnt/corpus)" = big.bin ]
	run sbx_new --tenant acme --session s-vol --volume corpus:/mnt/corpus:ro
	[ "$(jqo .sandbox.id)" = "$id" ]
	[ "$(rcli scard 'sbx:{acme}:vol:corpus:users')" -ge 1 ]
	[ "$(rcli sismember 'sbx:{acme}:vol:corpus:users' "$id")" = 1 ]
	sbx-ctl kill --id "$id" >/dev/null
}
