#!/usr/bin/env bats
# The device boundary of a local sandbox: root inside cannot make device
# nodes (no CAP_MKNOD), and a node that gets in anyway (planted from the
# host, carried by a layer, a snapshot or an import) cannot be opened
# unless its number is on the allow-list (null zero full random urandom
# tty ptmx pts).  The allow-list is held twice, by the v1 devices
# controller and by a cgroup2 device program; the planted-node test takes
# each away in turn to show that the other alone holds.
#
# Planted nodes are opened read-only and never written.  The main one has
# a character major no driver registered: without the allow-list its open
# reaches the kernel's lookup and fails with ENXIO, with it EPERM.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	gcc -static -O2 -o "$SBX_TEST_DIR/sysprobe" "$SBX_TOP/tests/lib/sysprobe.c"
	gcc -O2 -o "$SBX_TEST_DIR/bpf-detach" "$SBX_TOP/tests/lib/bpf-detach.c"
	SB=$(sbx_new_id)
	export SB
	sbx-fs --id "$SB" put --root --mode 0755 "$SBX_TEST_DIR/sysprobe" /usr/local/bin/sysprobe >/dev/null
}
teardown_file() { sbx_teardown_file; }

# sysprobe inside as root / as uid 1000: prints "FAMILY RESULT" lines.
probe_root() { sbx-exec --id "$SB" --root -- sysprobe "$@" | jq -r .exec.stdout; }
probe_user() { sbx-exec --id "$SB" -- sysprobe "$@" | jq -r .exec.stdout; }

init_pid() { jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json"; }

# A character major that no driver holds on this host.
free_major() {
	local m
	for m in $(seq 234 244); do
		sed -n '/^Character devices:/,/^$/p' /proc/devices | awk '{print $1}' | grep -qx "$m" || { echo "$m"; return 0; }
	done
	return 1
}

# Plant a device node at /tmp/devt/NAME inside sandbox $1, from the host
# as root, on a fresh tmpfs mounted into the sandbox's mount namespace:
# a mount that allows device nodes, whatever the sandbox's own mounts say.
plant() {
	local sb=$1 name=$2 major=$3 minor=$4
	nsenter -t "$(init_pid "$sb")" -m -- /bin/sh -c "
		mkdir -p /tmp/devt
		mountpoint -q /tmp/devt || mount -t tmpfs -o mode=0755 sbx-devt /tmp/devt
		rm -f /tmp/devt/$name
		umask 0
		mknod /tmp/devt/$name c $major $minor"
}

@test "root inside cannot mknod a device node (no CAP_MKNOD); FIFOs still work" {
	run sbx-exec --id "$SB" --root -- sh -c 'mknod /tmp/n c 1 3 2>&1; echo rc=$?; mkfifo /tmp/fifo && echo fifo'
	assert_success
	[[ "$(jqo .exec.stdout)" == *"Operation not permitted"* ]]
	[[ "$(jqo .exec.stdout)" == *"rc=1"* ]]
	[[ "$(jqo .exec.stdout)" == *fifo* ]]
	run sbx-exec --id "$SB" --root -- grep CapBnd /proc/self/status
	# bit 27 (CAP_MKNOD) is clear
	[ $(( 0x$(jqo .exec.stdout | awk '{print $2}') & (1 << 27) )) -eq 0 ]
}

@test "the allowed devices work: null zero full random urandom, ptmx and pts" {
	run sbx-exec --id "$SB" -- sh -c 'echo x >/dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c && head -c 4 /dev/random | wc -c && head -c 4 /dev/full | wc -c'
	assert_success
	[ "$(jqo .exec.stdout | tr -d ' \n')" = 4444 ]
	run probe_user pty
	assert_output "pty ok"
	run probe_root pty
	assert_output "pty ok"
}

@test "a planted device node off the list cannot be opened: v1 controller and v2 program, each alone" {
	local major v1 v2
	major=$(free_major) || skip "no free character major in 234-244"
	v1=/sys/fs/cgroup/devices/sbx/$SB
	v2=$(jq -r .cgroups.v2 "$SBX_STATE_DIR/local/sandboxes/$SB/sandbox.json")/work
	[ -f /sys/fs/cgroup/devices/cgroup.procs ] || skip "no v1 devices controller on this host"
	plant "$SB" x "$major" 0
	# Both: refused.
	run probe_root open:/tmp/devt/x
	assert_output "open:/tmp/devt/x EPERM"
	run probe_user open:/tmp/devt/x
	assert_output "open:/tmp/devt/x EPERM"
	# v1 opened up: the v2 program alone refuses.
	echo a >"$v1/devices.allow"
	run probe_root open:/tmp/devt/x
	assert_output "open:/tmp/devt/x EPERM"
	# v2 program gone too: the open reaches the kernel (no driver: ENXIO),
	# so the EPERMs above and below are the allow-list's.
	"$SBX_TEST_DIR/bpf-detach" "$v2"
	run probe_root open:/tmp/devt/x
	assert_output "open:/tmp/devt/x ENXIO"
	# v1 closed again: the v1 controller alone refuses.
	echo a >"$v1/devices.deny"
	run probe_root open:/tmp/devt/x
	assert_output "open:/tmp/devt/x EPERM"
}

@test "nodes of host devices planted into a fresh sandbox stay shut: kmsg (1:11), kvm (10:232), a disk (block)" {
	local sb
	sb=$(sbx_new_id)
	plant "$sb" kmsg 1 11
	plant "$sb" kvm 10 232
	nsenter -t "$(init_pid "$sb")" -m -- /bin/sh -c 'umask 0; mknod /tmp/devt/disk b 7 0'
	sbx-fs --id "$sb" put --root --mode 0755 "$SBX_TEST_DIR/sysprobe" /usr/local/bin/sysprobe >/dev/null
	run sbx-exec --id "$sb" --root -- sysprobe open:/tmp/devt/kmsg open:/tmp/devt/kvm open:/tmp/devt/disk
	assert_success
	[ "$(jqo .exec.stdout)" = "open:/tmp/devt/kmsg EPERM
open:/tmp/devt/kvm EPERM
open:/tmp/devt/disk EPERM" ]
	sbx-ctl --id "$sb" kill >/dev/null
}
