#!/usr/bin/env bats
# The seccomp filter of a local sandbox: every exec, root and uid 1000,
# runs under it.  One test per refused family, each through sysprobe
# (tests/lib/sysprobe.c), whose calls are chosen so that without the
# filter they succeed or fail with another errno: the EPERM asserted here
# is the filter's.  Where the kernel checks a capability first (swapon,
# reboot, acct, syslog), EPERM comes either way; test-seccomp checks the
# filter for those (and for the i386 and x32 ABIs) on paper and live.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	gcc -static -O2 -o "$SBX_TEST_DIR/sysprobe" "$SBX_TOP/tests/lib/sysprobe.c"
	SB=$(sbx_new_id)
	export SB
	sbx-fs --id "$SB" put --root --mode 0755 "$SBX_TEST_DIR/sysprobe" /usr/local/bin/sysprobe >/dev/null
}
teardown_file() { sbx_teardown_file; }

# refused WANT FAMILY...: as uid 1000 and as root, each family ends WANT.
refused() {
	local want=$1 f expect
	shift
	expect=$(for f in "$@"; do echo "$f $want"; done)
	run sbx-exec --id "$SB" -- sysprobe "$@"
	assert_success
	[ "$(jqo .exec.stdout)" = "$expect" ] || { echo "uid 1000: $(jqo .exec.stdout)"; return 1; }
	run sbx-exec --id "$SB" --root -- sysprobe "$@"
	assert_success
	[ "$(jqo .exec.stdout)" = "$expect" ] || { echo "root: $(jqo .exec.stdout)"; return 1; }
}

@test "every exec runs under the filter, root and uid 1000" {
	run sbx-exec --id "$SB" -- grep -E '^Seccomp:' /proc/self/status
	[[ "$(jqo .exec.stdout)" == *"2"* ]]
	run sbx-exec --id "$SB" --root -- grep -E '^Seccomp:' /proc/self/status
	[[ "$(jqo .exec.stdout)" == *"2"* ]]
	# ... and what is allowed still works.
	refused ok fork personality-query personality-linux32
}

@test "kernel and modules: kexec_load, finit_module, delete_module" {
	refused EPERM kexec module delete_module
}

@test "bpf" { refused EPERM bpf; }
@test "perf_event_open" { refused EPERM perf; }
@test "userfaultfd" { refused EPERM userfaultfd; }
@test "keyrings: keyctl, add_key" { refused EPERM keyctl add_key; }
@test "open_by_handle_at" { refused EPERM open_by_handle_at; }
@test "io_uring" { refused EPERM io_uring; }
@test "mounts: mount, umount2, open_tree, pivot_root" { refused EPERM mount umount open_tree pivot_root; }
@test "setns" { refused EPERM setns; }
@test "namespaces: unshare(CLONE_NEWUSER), unshare(CLONE_NEWNS), clone(CLONE_NEWUSER)" {
	refused EPERM unshare-user unshare-mount clone-user
}
@test "clone3 is ENOSYS (libc falls back to clone, whose flags are checked)" {
	refused ENOSYS clone3 clone3-user
}
@test "personality: READ_IMPLIES_EXEC refused" { refused EPERM personality-rix; }
@test "clock: clock_settime" { refused EPERM settime; }
@test "port I/O: iopl, ioperm" { refused EPERM iopl ioperm; }
@test "obsolete: sysfs, ustat, quotactl" { refused EPERM sysfs ustat quotactl; }
@test "host state: swapon, reboot, acct, syslog" { refused EPERM swapon reboot acct syslog; }

@test "unshare(1) -U and -m are refused, for root too" {
	run sbx-exec --id "$SB" -- unshare -U true
	assert_success
	[ "$(jqo .exec.exit_code)" != 0 ]
	[[ "$(jqo .exec.stderr)" == *"Operation not permitted"* ]]
	run sbx-exec --id "$SB" --root -- unshare -m true
	[ "$(jqo .exec.exit_code)" != 0 ]
	run sbx-exec --id "$SB" --root -- unshare -Ur id -u
	[ "$(jqo .exec.exit_code)" != 0 ]
}

@test "a profile with allow_userns lets user namespaces (and mounts inside them) through" {
	printf '{"profiles": {"userns": {"allow_userns": true}}}\n' >"$SBX_TEST_DIR/userns.json"
	local sb
	sb=$(SBX_CONFIG="$SBX_TEST_DIR/userns.json" sbx-create --profile userns | jq -r .sandbox.id)
	run sbx-exec --id "$sb" -- unshare -Ur id -u
	assert_success
	[ "$(jqo .exec.exit_code)" = 0 ]
	[ "$(jqo .exec.stdout)" = 0 ]
	run sbx-exec --id "$sb" -- unshare -Urm sh -c 'mount -t tmpfs x /tmp && echo mounted'
	[ "$(jqo .exec.stdout)" = mounted ]
	# The rest of the filter stays.
	run sbx-exec --id "$sb" -- sh -c 'grep ^Seccomp: /proc/self/status'
	[[ "$(jqo .exec.stdout)" == *2* ]]
	sbx-fs --id "$sb" put --root --mode 0755 "$SBX_TEST_DIR/sysprobe" /usr/local/bin/sysprobe >/dev/null
	run sbx-exec --id "$sb" -- sysprobe clone-user bpf clone3
	[ "$(jqo .exec.stdout)" = "clone-user ok
bpf EPERM
clone3 ENOSYS" ]
	sbx-ctl --id "$sb" kill >/dev/null
}
