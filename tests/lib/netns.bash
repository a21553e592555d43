# tests/lib/netns.bash - a private network namespace for the egress tests
# (boundary-egress.bats, egress-dns.bats): the sandboxes are created from
# inside it, so nothing they send leaves this machine.
# Load after lib/helpers:  load lib/helpers; load lib/netns

# netns_setup (in setup_file): a new network namespace bound at
# $SBX_TEST_DIR/netns ($NS, exported), its lo up and nothing else.
netns_setup() {
	NS="$SBX_TEST_DIR/netns"
	export NS
	touch "$NS"
	unshare --net="$NS" true
	in_ns ip link set lo up
}

# Run a command in the namespace (network only: files stay the host's).
in_ns() { nsenter --net="$NS" "$@"; }

# netns_teardown PIDFILE... (in teardown_file, before sbx_teardown_file):
# the sandboxes first (their slirp runs in the namespace), then the
# servers whose pid files in $SBX_TEST_DIR are named, then the namespace's
# mount.  Safe when setup_file stopped early.
netns_teardown() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	local f
	for f in "$@"; do
		if [ -s "${SBX_TEST_DIR:-/nonexistent}/$f" ]; then
			kill "$(cat "$SBX_TEST_DIR/$f")" 2>/dev/null || true
		fi
	done
	[ -z "${NS:-}" ] || umount "$NS" 2>/dev/null || true
}

# new_sb ARGS...: a sandbox created from inside the namespace (after the
# fixture's create arguments), its id.
new_sb() { in_ns sbx-create "${SBX_TEST_CREATE_ARGS[@]}" "$@" | jq -r .sandbox.id; }

# inside [--root] ID LINE: run a shell line in sandbox ID as uid 1000 (as
# root with --root) and assert it succeeded; its stdout then its stderr in
# $output, printed too.  From inside the namespace: on e2b and cube the
# server is there; on local and docker that changes nothing.
inside() {
	local root=()
	if [ "$1" = --root ]; then root=(--root); shift; fi
	local id=$1
	shift
	run in_ns sbx-exec "${root[@]}" --id "$id" --timeout 60s -- sh -c "$*"
	assert_success
	output=$(jqo .exec.stdout)$(jqo .exec.stderr)
	printf '%s
' "$output"
}
