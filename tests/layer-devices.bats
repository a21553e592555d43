#!/usr/bin/env bats
# No device node reaches a layer: snapshot copies and imports (--dir and
# tarball) drop device nodes other than overlay whiteouts (char 0:0), and
# sockets.  A dropped node leaves a whiteout in a copied layer, so a lower
# file it shadowed stays gone.  FIFOs are harmless and kept.  (That a node
# which did reach a layer is never opened is the nodev mount's business,
# tested elsewhere; this file checks that none is copied.)

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

IMAGES() { echo "$SBX_STATE_DIR/local/images"; }
# The directory of the top layer of image $1.
top_layer() { echo "$(IMAGES)/layers/$(jq -r '.layers[0]' "$(IMAGES)/templates/$1.json")"; }
# Every device node and socket below $1, except whiteouts: one per line.
devices() {
	find "$1" \( -type b -o -type s -o -type c \) -printf '%y %p\n' |
		while read -r t p; do
			[ "$t" = c ] && [ "$(stat -c '%t:%T' "$p")" = 0:0 ] && continue
			echo "$t $p"
		done
}
is_whiteout() { [ "$(stat -c '%F %t:%T' "$1")" = "character special file 0:0" ]; }
mksock() { python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$1"; }

@test "a snapshot drops device nodes and sockets planted in the sandbox's layer; whiteouts and FIFOs stay" {
	id=$(sbx-create | jq -r .sandbox.id)
	up="$SBX_STATE_DIR/local/sandboxes/$id/upper"
	sbx-exec --id "$id" --root --check -- sh -c 'rm /etc/issue; mkfifo /workspace/fifo' >/dev/null
	# Planted from the host, as a hostile layer or an escaped process would.
	mknod -m 0666 "$up/workspace/zero" c 1 5
	mknod -m 0666 "$up/workspace/loop" b 7 0
	mknod -m 0666 "$up/etc/motd" c 1 3        # shadows the host's /etc/motd
	mksock "$up/workspace/sock"
	[ -n "$(devices "$up")" ]
	snap=$(sbx-snap --id "$id" | jq -r .snapshot.id)
	L=$(top_layer "$snap")
	[ -d "$L/workspace" ]
	run devices "$L"
	assert_output ''
	is_whiteout "$L/workspace/zero"
	is_whiteout "$L/etc/motd"               # the host's motd stays hidden
	is_whiteout "$L/etc/issue"              # the sandbox's delete is kept
	[ -p "$L/workspace/fifo" ]
}

@test "import --dir drops device nodes and sockets, keeps FIFOs, whiteouts and files" {
	src="$BATS_TEST_TMPDIR/src"
	mkdir -p "$src/dev" "$src/bin"
	echo data >"$src/bin/f"
	mknod -m 0666 "$src/dev/null" c 1 3
	mknod -m 0660 "$src/dev/sda" b 8 0
	mknod "$src/gone" c 0 0
	mkfifo "$src/fifo"
	mksock "$src/sock"
	run sbx-tpl import devdir --dir "$src"
	assert_success
	L=$(top_layer devdir)
	run devices "$L"
	assert_output ''
	[ "$(cat "$L/bin/f")" = data ]
	is_whiteout "$L/gone"
	[ -p "$L/fifo" ]
}

@test "a rootfs tarball with device nodes imports without them" {
	src="$BATS_TEST_TMPDIR/rootfs"
	mkdir -p "$src/dev" "$src/bin"
	echo data >"$src/bin/f"
	mknod -m 0666 "$src/dev/null" c 1 3
	mknod -m 0666 "$src/dev/zero" c 1 5
	mknod -m 0660 "$src/dev/sda" b 8 0
	mkfifo "$src/dev/initctl"
	tar -C "$src" -cf "$BATS_TEST_TMPDIR/rootfs.tar" .
	run sbx-tpl import devtar --file "$BATS_TEST_TMPDIR/rootfs.tar"
	assert_success
	L=$(top_layer devtar)
	run devices "$L"
	assert_output ''
	[ ! -e "$L/dev/null" ] && [ ! -e "$L/dev/sda" ]
	[ "$(cat "$L/bin/f")" = data ]
	[ -p "$L/dev/initctl" ]
}
