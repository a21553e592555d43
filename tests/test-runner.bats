#!/usr/bin/env bats
# suite: local
# tests/test-runner.bats - tests/run itself.  SBX_TEST_FILE_TIMEOUT (set in
# the guest by tests/vm-run): a bats file still running past it is killed,
# with what it printed, the processes and the holders of its output on
# stdout, and counted as one failure; the files after it still run.
bats_require_minimum_version 1.5.0

setup() {
	top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	d=$BATS_TEST_TMPDIR
	# The classic bats hang: a background process keeps the file's output
	# (fd 3) open, so bats waits for it after the last test.
	printf '%s\n' '#!/usr/bin/env bats' '# suite: local' \
		'@test "first" { true; }' \
		'@test "leaves a holder" { exec -a sbx-runner-holder sleep 6001 & }' >"$d/hang.bats"
	printf '%s\n' '#!/usr/bin/env bats' '# suite: local' '@test "after it" { true; }' >"$d/next.bats"
}
teardown() { pkill -f sbx-runner-holder 2>/dev/null || true; }

@test "a file past SBX_TEST_FILE_TIMEOUT: killed, what it printed and its holders shown, one failure, the next file runs" {
	SBX_TEST_FILE_TIMEOUT=3 run "$top/tests/run" --bats "$d/hang.bats" "$d/next.bats"
	[ "$status" -eq 1 ]
	[[ "$output" == *"not ok - hang.bats still ran after 3s (SBX_TEST_FILE_TIMEOUT): killed"* ]]
	[[ "$output" == *"#   ok 2 leaves a holder"* ]]
	[[ "$output" =~ "# hung: processes holding its output: "[0-9]+ ]]
	[[ "$output" == *"sbx-runner-holder 6001"* ]]
	[[ "$output" == *"# bats: next.bats (local)"* ]]
	[[ "$output" == *"3 passed, 1 failed, 0 skipped"* ]]
	run ! pgrep -f sbx-runner-holder
}

@test "without it, a file that ends is counted as before" {
	sed -i '/holder/d' "$d/hang.bats"
	run "$top/tests/run" --bats "$d/hang.bats" "$d/next.bats"
	[ "$status" -eq 0 ]
	[[ "$output" == *"2 passed, 0 failed, 0 skipped"* ]]
}
