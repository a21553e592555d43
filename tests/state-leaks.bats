#!/usr/bin/env bats
# Nothing lost, nothing leaked: whatever a sandbox built and however a
# snapshot died, removal, recovery and the reaper give the state dir back.

load lib/helpers

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

@test "a sandbox with a 1,100-level tree is removed under a 1024-descriptor limit" {
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

# ---- image store: what killed snapshots leave behind -------------------

img() { echo "$SBX_STATE_DIR/local/images"; }
# Bytes below the image store (apparent sizes), and its work entries.
img_bytes() { du -sb "$(img)" | cut -f1; }
work_dirs() { find "$(img)/tmp" -mindepth 1 -maxdepth 1 -type d | wc -l; }
layer_dirs() { find "$(img)/layers" -mindepth 1 -maxdepth 1 | wc -l; }
recorded_layers() { cat "$(img)"/templates/*.json 2>/dev/null | jq -r '.layers[]' | grep -v '^/$' | sort -u | wc -l; }

# A sandbox holding 8 MB, so that every leaked copy shows in the sizes.
big_sandbox() {
	local id
	id=$(sbx_new_id)
	sbx-exec --id "$id" --check -- sh -c 'head -c 8388608 /dev/urandom >/workspace/blob' >/dev/null
	echo "$id"
}
killed_snap() {
	run env SBX_FAULT="$2" sbx-snap --id "$1"
	[ "$status" -eq 137 ]
}

wait_stopped() {
	local i
	for i in $(seq 1 400); do
		[ "$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)" = T ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.025
	done
	return 1
}

@test "sbx-snap --recover reclaims killed snapshots' copies and unnamed layers, never a live one" {
	id=$(big_sandbox)
	sbx-snap --id "$id" >/dev/null          # the store exists, one layer
	before=$(img_bytes)
	# Killed between the layer's rename and its record: a layer no record names.
	killed_snap "$id" image-commit
	# Killed after the copy, four times: four full copies under tmp/.
	for i in 1 2 3 4; do killed_snap "$id" snapshot-copied; done
	[ "$(work_dirs)" -eq 4 ]
	[ "$(layer_dirs)" -eq $(( $(recorded_layers) + 1 )) ]
	[ "$(img_bytes)" -gt $(( before + 5 * 8388608 )) ]
	# A snapshot still running (stopped right after its copy) is left alone.
	SBX_STOP=image:snapshot-copied sbx-snap --id "$id" >"$BATS_TEST_TMPDIR/live" 2>&1 &
	live=$!
	wait_stopped "$live"
	run --separate-stderr sbx-snap --recover
	[ "$status" -eq 0 ]
	[ "$(jqo .recover.images.work_dirs)" -eq 4 ]
	[ "$(jqo .recover.images.unnamed_layers)" -eq 1 ]
	[ "$(jqo .recover.images.bytes)" -ge $(( 5 * 8388608 )) ]
	[ "$(work_dirs)" -eq 1 ]                # the live one
	[ "$(layer_dirs)" -eq "$(recorded_layers)" ]
	kill -CONT "$live"
	wait "$live"
	jq -e '.snapshot.id' "$BATS_TEST_TMPDIR/live"
	[ "$(work_dirs)" -eq 0 ]
	# Back to the size before, plus the one snapshot that completed.
	after=$(img_bytes)
	[ "$after" -lt $(( before + 8388608 + 1048576 )) ]
}

@test "sbx-reap reclaims killed snapshots' copies and unnamed layers" {
	id=$(big_sandbox)
	sbx-snap --id "$id" >/dev/null
	before=$(img_bytes)
	killed_snap "$id" image-commit
	killed_snap "$id" snapshot-copied
	killed_snap "$id" snapshot-copied
	[ "$(img_bytes)" -gt $(( before + 3 * 8388608 )) ]
	run --separate-stderr sbx-reap --tenant nobody
	[ "$status" -eq 0 ]
	[ "$(jqo .reap.images.work_dirs)" -eq 2 ]
	[ "$(jqo .reap.images.unnamed_layers)" -eq 1 ]
	[ "$(work_dirs)" -eq 0 ]
	[ "$(layer_dirs)" -eq "$(recorded_layers)" ]
	[ "$(img_bytes)" -lt $(( before + 1048576 )) ]
}
