#!/usr/bin/env bats
# suite: local
# sbx-snap --clean-scratch: portable (busybox images as well as Debian's),
# clears what the install left in the package managers' lists and caches,
# never leaves the installer without /workspace/input and output (a full
# disk included), and a failure says what failed first.  A local suite: the
# apt lists come from the host template, the full disk is a small state dir
# (the busybox pipeline with --clean-scratch runs on every backend in
# skills.bats).

load lib/helpers
load lib/skills

setup_file() {
	skills_setup_file sbx-skills-clean
	has_cap template_import || return 0    # every test skips (setup)
	"$SBX_TOP/tests/lib/rootfs.sh" --dir "$SBX_TEST_DIR/bbroot"
	sbx-tpl import bb --dir "$SBX_TEST_DIR/bbroot" >/dev/null
	printf '{"profiles": {"default": {}, "bb": {"template": "bb"}}}\n' >"$SBX_CONFIG"
}
teardown_file() {
	mountpoint -q "$SBX_TEST_DIR/small" && {
		SBX_STATE_DIR="$SBX_TEST_DIR/small" sbx-ls --all 2>/dev/null |
			SBX_STATE_DIR="$SBX_TEST_DIR/small" sbx-ctl kill >/dev/null 2>&1
		umount -l "$SBX_TEST_DIR/small"
	}
	skills_teardown_file
}
setup() { need_cap template_import; skills_setup; }

# in DOC [--root] CMD...: raw output and status of a command in the sandbox
in_sb() {
	local doc=$1
	shift
	local root=()
	[ "${1:-}" = --root ] && { root=(--root); shift; }
	sbx-exec --raw "${root[@]}" -- "$@" <"$doc"
}

# The first session sandbox made from tenant $1's skill image: its doc.
session_of() {
	sbx-create ${2:+-p "$2"} --tenant "$1" --session "s$RANDOM" >"$DOCS/sess.$1"
	echo "$DOCS/sess.$1"
}

@test "busybox image: --clean-scratch empties /workspace and new /tmp entries" {
	sbx-create -p bb --tenant tbb --skill-image >"$DOCS/bb.1"
	sbx-exec --root --check -- sh -c '
		mkdir -p /opt/sbx/skills/k && echo ok >/opt/sbx/skills/k/run &&
		echo junk >/workspace/junk && mkdir /workspace/.hid && echo in >/workspace/input/i &&
		echo t >/tmp/new' <"$DOCS/bb.1" >"$DOCS/bb.2"
	run --separate-stderr sbx-snap -p bb --tenant tbb --skill k --clean-scratch <"$DOCS/bb.2"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | sbx-ctl kill >/dev/null
	doc=$(session_of tbb bb)
	run in_sb "$doc" sh -c 'ls -A /workspace; ls -A /workspace/input; ls -ld /workspace/input | cut -c1-10; ls /tmp; cat /opt/sbx/skills/k/run'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'input\noutput\ndrwxr-xr-x\nok')" ]
}

@test "--clean-scratch clears the lists and caches of apt, pip and npm the install filled" {
	host_list=$(find /var/lib/apt/lists -maxdepth 1 -type f -name '*_Packages' | head -1)
	sbx-create --tenant tapt --skill-image >"$DOCS/apt.1"
	sbx-exec --root --check -- sh -c '
		mkdir -p /opt/sbx/skills/j && echo ok >/opt/sbx/skills/j/run &&
		head -c 3000000 /dev/urandom >/var/lib/apt/lists/fake.example_dists_x_Packages &&
		head -c 1000000 /dev/urandom >/var/cache/apt/archives/jq_1.6_amd64.deb &&
		head -c 1000000 /dev/urandom >/var/cache/apt/pkgcache.bin &&
		mkdir -p /root/.cache/pip/http-v2 /root/.npm/_cacache /home/user/.npm/_cacache &&
		head -c 1000000 /dev/urandom >/root/.cache/pip/http-v2/blob &&
		head -c 1000000 /dev/urandom >/root/.npm/_cacache/blob &&
		head -c 1000000 /dev/urandom >/home/user/.npm/_cacache/blob' <"$DOCS/apt.1" >"$DOCS/apt.2"
	run --separate-stderr sbx-snap --tenant tapt --skill j --clean-scratch <"$DOCS/apt.2"
	[ "$status" -eq 0 ]
	size=$(printf '%s\n' "$output" | jq -r .snapshot.size_bytes)
	printf '%s\n' "$output" | sbx-ctl kill >/dev/null
	[ "$size" -lt 1000000 ]
	doc=$(session_of tapt)
	run in_sb "$doc" --root sh -c 'ls /var/lib/apt/lists/fake* /var/cache/apt/archives/jq_1.6_amd64.deb \
		/var/cache/apt/pkgcache.bin /root/.cache/pip/http-v2 /root/.npm/_cacache/blob \
		/home/user/.npm/_cacache/blob 2>/dev/null; cat /opt/sbx/skills/j/run'
	[ "$output" = ok ]
	# What the template had stays.
	if [ -n "$host_list" ]; then
		run in_sb "$doc" test -f "$host_list"
		[ "$status" -eq 0 ]
	fi
}

@test "on a full disk, --clean-scratch leaves /workspace/input and output in place" {
	truncate -s 96M "$SBX_TEST_DIR/small.img"
	mkfs.ext4 -q -m 0 "$SBX_TEST_DIR/small.img"
	mkdir -p "$SBX_TEST_DIR/small"
	mount -o loop "$SBX_TEST_DIR/small.img" "$SBX_TEST_DIR/small"
	export SBX_STATE_DIR="$SBX_TEST_DIR/small"
	# A first skill: the image now holds /workspace/input and output.
	sbx-create --tenant tfull --skill-image |
		sbx-exec --root --check -- sh -c 'mkdir -p /opt/sbx/skills/a && echo a >/opt/sbx/skills/a/run' |
		sbx-snap --tenant tfull --skill a --clean-scratch | sbx-ctl kill >/dev/null
	sbx-create --tenant tfull --skill-image >"$DOCS/full.1"
	# The folders are emptied in place, never removed and made again
	# (which a full disk can refuse): same inodes before and after.
	inodes=$(in_sb "$DOCS/full.1" stat -c %i /workspace/input /workspace/output)
	sbx-exec --root -- sh -c 'echo x >/workspace/input/x; head -c 200000000 /dev/zero >/opt/fill; sync' \
		<"$DOCS/full.1" >/dev/null 2>&1 || true
	run --separate-stderr sbx-snap --tenant tfull --skill b --clean-scratch <"$DOCS/full.1"
	[ "$status" -ne 0 ]
	run in_sb "$DOCS/full.1" sh -c 'cd /workspace && ls -A && ls -A input && test -w output && echo writable'
	[ "$output" = "$(printf 'input\noutput\nwritable')" ]
	[ "$(in_sb "$DOCS/full.1" stat -c %i /workspace/input /workspace/output)" = "$inodes" ]
	# Room again: the same installer snapshots fine.
	in_sb "$DOCS/full.1" --root rm -f /opt/fill
	sbx-exec --root --check -- sh -c 'mkdir -p /opt/sbx/skills/b && echo b >/opt/sbx/skills/b/run' <"$DOCS/full.1" >"$DOCS/full.2"
	run --separate-stderr sbx-snap --tenant tfull --skill b --clean-scratch <"$DOCS/full.2"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | sbx-ctl kill >/dev/null
}

@test "a failed clean keeps the first lines of stderr in the message" {
	sbx-create --tenant tmsg --skill-image >"$DOCS/msg.1"
	# An install that broke rm(1): the first entry that cannot be removed
	# is the cause; forty more failures follow it on stderr.
	sbx-exec --root --check -- sh -c '
		mkdir -p /opt/sbx/skills/m && touch /workspace/aaa-first-cause &&
		for i in $(seq 40); do touch /tmp/noise-$i; done &&
		printf "#!/bin/sh\nexit 1\n" >/usr/bin/rm.x && chmod 755 /usr/bin/rm.x &&
		mv /usr/bin/rm.x /usr/bin/rm' \
		<"$DOCS/msg.1" >/dev/null
	run --separate-stderr sbx-snap --tenant tmsg --skill m --clean-scratch <"$DOCS/msg.1"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"cannot remove /workspace/aaa-first-cause"* ]]
	[[ "$stderr" == *"[...]"* ]]
}
