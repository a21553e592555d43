#!/usr/bin/env bats
# Nothing lost, nothing leaked: whatever a sandbox built and however a
# snapshot died, removal, recovery and the reaper give the state dir back.

load lib/helpers

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

@test "a sandbox with a 1,100-level tree is removed under a 1024-descriptor limit" {
	local_only "the local backend removes the sandbox's layer itself"
	id=$(sbx_new_id)
	run --separate-stderr sbx-exec --id "$id" --check -- sh -c \
		'cd /workspace && mkdir -p "$(printf "d/%.0s" $(seq 1100))" && find d | wc -l'
	[ "$status" -eq 0 ]
	[ "$(jqo .exec.stdout)" = 1100 ]
	[ -d "$SBX_STATE_DIR/local/sandboxes/$id" ]
	run bash -c "ulimit -n 1024 && sbx-ctl kill --id $id"
	[ "$status" -eq 0 ]
	[ ! -e "$SBX_STATE_DIR/local/sandboxes/$id" ]
	run sbx-ls --id "$id"
	[ "$status" -ne 0 ]
}
