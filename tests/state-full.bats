#!/usr/bin/env bats
# A full state filesystem is a capacity problem (kind capacity, exit 75,
# retryable), never `internal`: the caller may free space or go elsewhere
# and try again.  The state dir is a small tmpfs that the tests fill.

load lib/helpers

setup_file() {
	sbx_setup_file
	mount -t tmpfs -o size=4m sbx-test-full "$SBX_STATE_DIR"
}

teardown_file() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	umount "$SBX_STATE_DIR" 2>/dev/null || true
	sbx_teardown_file
}

@test "a full state dir is capacity (75) for put, snapshot and create" {
	id=$(sbx_new_id)
	head -c 6000000 /dev/zero | tr '\0' x >"$SBX_TEST_DIR/big"
	run sbx-fs --id "$id" put "$SBX_TEST_DIR/big" /workspace/big
	[ "$status" -eq 75 ]
	# The sandbox's layer is now full: copying it into a snapshot cannot fit.
	run --separate-stderr sbx-snap --id "$id"
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = capacity ]
	[ "$(jqo .error.retryable)" = true ]
	run --separate-stderr sbx-create
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = capacity ]
	# Room again: everything works.
	sbx-exec --id "$id" --root -- rm -f /workspace/big
	run --separate-stderr sbx-snap --id "$id"
	[ "$status" -eq 0 ]
}
