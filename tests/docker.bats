#!/usr/bin/env bats
# suite: docker
# The docker backend through the programs, against a real dockerd.
#
# Uses the daemon DOCKER_HOST names when it answers; otherwise, as root with
# dockerd installed, starts a private one for this file (tests/lib/dockerd.sh)
# and stops it at the end.  The base image sbx/base:latest is built when it
# is missing.  Skipped, with the reason, when neither works or when
# SBX_TEST_DOCKER=0.  Every sandbox carries a per-file label, and only
# those are removed at the end (never another file's).

load lib/helpers

DOCKERD_SH="$BATS_TEST_DIRNAME/lib/dockerd.sh"

setup_file() {
	sbx_setup_file
	export SBX_BACKEND=docker
	export BATS_RUN_LABEL="bats.run=$$-$RANDOM"
	export DOCKER_SKIP=""
	export DOCKERD_DIR=""
	if [ "${SBX_TEST_DOCKER:-1}" = 0 ]; then
		DOCKER_SKIP="docker tests disabled (SBX_TEST_DOCKER=0)"
	elif ! "$DOCKERD_SH" ping; then
		if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null; then
			DOCKERD_DIR=$(mktemp -d /tmp/sbxd.XXXXXX)
			if out=$("$DOCKERD_SH" start "$DOCKERD_DIR"); then
				eval "$out"
			else
				DOCKER_SKIP="no dockerd: a private one did not start (log in $DOCKERD_DIR)"
			fi
		else
			DOCKER_SKIP="no dockerd: DOCKER_HOST does not answer, and starting one needs root and dockerd"
		fi
	fi
	if [ -z "$DOCKER_SKIP" ] && ! "$DOCKERD_SH" image; then
		DOCKER_SKIP="the base image sbx/base:latest could not be built"
	fi
	export DOCKER_HOST
	if [ -z "$DOCKER_SKIP" ]; then
		sbx-create --label "$BATS_RUN_LABEL" --label role=shared >"$SBX_TEST_DIR/shared.json" ||
			DOCKER_SKIP="sbx-create failed against $DOCKER_HOST"
	fi
}

teardown_file() {
	if [ -z "${DOCKER_SKIP:-x}" ]; then
		sbx-ls --all --label "$BATS_RUN_LABEL" 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
		sbx-snap ls 2>/dev/null | jq -r '.snapshot | select(.name | startswith("bats-")) | .id' |
			while read -r id; do sbx-snap rm "$id" >/dev/null 2>&1 || true; done
	fi
	[ -z "${DOCKERD_DIR:-}" ] || "$DOCKERD_SH" stop "$DOCKERD_DIR" || true
	# Not sbx_teardown_file: it kills every sandbox of the backend.
	redis_stop "$SBX_TEST_DIR/redis"
	rm -rf --one-file-system "$SBX_TEST_DIR" 2>/dev/null || true
}

setup() {
	[ -z "$DOCKER_SKIP" ] || skip "$DOCKER_SKIP"
	SB="$SBX_TEST_DIR/shared.json"
}

# sbx-exec on the shared sandbox.
inx() { sbx-exec "$@" <"$SB"; }
# A fresh sandbox document, labelled for cleanup.
fresh() { sbx-create --label "$BATS_RUN_LABEL" "$@"; }

@test "sandboxes persist across execs: a file and a background process" {
	# setsid: like `docker exec`, an exec's own process group ends with it.
	run inx -- sh -c 'echo kept > /workspace/p.txt; setsid sleep 1000 >/dev/null 2>&1 </dev/null &'
	assert_success
	run inx -- cat /workspace/p.txt
	assert_equal "$(jqo .exec.stdout)" "kept"
	run inx -- sh -c 'ps -o args | grep -c "^sleep 1000"'
	assert_equal "$(jqo .exec.stdout)" "1"
}

@test "commands run as uid 1000 by default and as root with --root" {
	run inx -- id -u
	assert_equal "$(jqo .exec.stdout)" "1000"
	run inx --root -- id -u
	assert_equal "$(jqo .exec.stdout)" "0"
	run inx -- pwd
	assert_equal "$(jqo .exec.stdout)" "/workspace"
}

@test "exit codes and stderr are kept apart" {
	run inx -- sh -c 'echo out; echo err >&2; exit 7'
	assert_success
	assert_equal "$(jqo .exec.exit_code)" "7"
	assert_equal "$(jqo .exec.stdout)" "out"
	assert_equal "$(jqo .exec.stderr)" "err"
	run inx --raw -- sh -c 'echo raw; exit 5'
	assert_equal "$status" 5
	assert_output "raw"
	run inx --check -- false
	assert_failure
}

@test "a timeout kills the command" {
	run inx --timeout 1s -- sleep 60
	assert_success
	assert_equal "$(jqo .exec.timed_out)" "true"
	assert_equal "$(jqo .exec.exit_code)" "-1"
}

@test "stdin reaches the command, binary-safe" {
	run inx --stdin-text 'hello there' -- cat
	assert_equal "$(jqo .exec.stdout)" "hello there"
	head -c 300000 /dev/urandom >"$BATS_TEST_TMPDIR/blob"
	want=$(sha256sum <"$BATS_TEST_TMPDIR/blob" | cut -d' ' -f1)
	run inx --stdin-file "$BATS_TEST_TMPDIR/blob" -- sha256sum
	assert_equal "$(jqo .exec.stdout | cut -d' ' -f1)" "$want"
}

@test "files: a tar round trip of awkward names keeps names, links and modes" {
	src="$BATS_TEST_TMPDIR/src"
	long=$(printf 'n%.0s' $(seq 1 180))
	mkdir -p "$src/sub dir/$long" "$src/empty"
	echo deep >"$src/sub dir/$long/$long.txt"
	printf 'x\n' >"$src/with space.txt"
	chmod 751 "$src/with space.txt"
	printf 'ü\n' >"$src/ünïcödé"
	ln -s "with space.txt" "$src/link"
	ln -s /etc/passwd "$src/abs-link"
	run sbx-fs put "$src" /workspace/tree <"$SB"
	assert_success
	run inx -- stat -c '%a %U' '/workspace/tree/with space.txt'
	assert_equal "$(jqo .exec.stdout)" "751 user"
	run inx -- readlink /workspace/tree/link
	assert_equal "$(jqo .exec.stdout)" "with space.txt"
	run sbx-fs get /workspace/tree "$BATS_TEST_TMPDIR/back" <"$SB"
	assert_success
	# The link policy (sbx-fs(1)): the absolute link leads out, it is dropped.
	assert_equal "$(jqo .files.removed_links[0].path)" "abs-link"
	[ ! -L "$BATS_TEST_TMPDIR/back/abs-link" ]
	rm "$src/abs-link"
	run diff -r --no-dereference "$src" "$BATS_TEST_TMPDIR/back"
	assert_success
	assert_equal "$(stat -c %a "$BATS_TEST_TMPDIR/back/with space.txt")" "751"
}

@test "files: cat, ls, stat, mkdir, mv, rm as the sandbox user" {
	printf 'abc' >"$BATS_TEST_TMPDIR/f"
	run sbx-fs put "$BATS_TEST_TMPDIR/f" /workspace/ops/f <"$SB"
	assert_success
	run sbx-fs cat /workspace/ops/f <"$SB"
	assert_success
	run sbx-fs stat /workspace/ops/f <"$SB"
	assert_success
	assert_equal "$(jqo '.. | objects | select(has("size")) | .size' | head -1)" "3"
	run sbx-fs mkdir /workspace/ops/d <"$SB"
	assert_success
	run sbx-fs mv /workspace/ops/f /workspace/ops/d/g <"$SB"
	assert_success
	run sbx-fs ls /workspace/ops/d <"$SB"
	assert_success
	assert_output --partial '"g"'
	run sbx-fs rm -r /workspace/ops <"$SB"
	assert_success
	run inx -- test -e /workspace/ops
	assert_equal "$(jqo .exec.exit_code)" "1"
	# The archive API would follow this link as root; we act as uid 1000.
	inx -- ln -s /etc/shadow /workspace/shadow-link >/dev/null
	run sbx-fs cat /workspace/shadow-link <"$SB"
	assert_failure
	run sbx-fs put "$BATS_TEST_TMPDIR/f" /etc/passwd <"$SB"
	assert_failure
	run sbx-fs cat /proc/1/environ <"$SB"
	assert_failure
}

@test "put --root installs root-owned files the user cannot change" {
	mkdir -p "$BATS_TEST_TMPDIR/skill"
	printf '#!/bin/sh\necho skill ran\n' >"$BATS_TEST_TMPDIR/skill/run.sh"
	chmod 755 "$BATS_TEST_TMPDIR/skill/run.sh"
	run sbx-fs put --root "$BATS_TEST_TMPDIR/skill" /opt/sbx/skills/demo <"$SB"
	assert_success
	run inx -- stat -c '%U %a' /opt/sbx/skills/demo/run.sh
	assert_equal "$(jqo .exec.stdout)" "root 755"
	run inx -- /opt/sbx/skills/demo/run.sh
	assert_equal "$(jqo .exec.stdout)" "skill ran"
	run inx -- sh -c 'echo x > /opt/sbx/skills/demo/run.sh'
	assert_equal "$(jqo .exec.exit_code)" "1"
}

@test "pause, resume, and an exec auto-resumes a paused sandbox" {
	run sbx-ctl pause <"$SB"
	assert_success
	assert_equal "$(jqo .sandbox.state)" "paused"
	run sbx-ls --id "$(jq -r .sandbox.id "$SB")"
	assert_equal "$(jqo .sandbox.state)" "paused"
	run inx -- echo awake
	assert_equal "$(jqo .exec.stdout)" "awake"
	run sbx-ls --id "$(jq -r .sandbox.id "$SB")"
	assert_equal "$(jqo .sandbox.state)" "running"
	sbx-ctl pause <"$SB" >/dev/null
	run sbx-ctl resume <"$SB"
	assert_success
	assert_equal "$(jqo .sandbox.state)" "running"
}

@test "a snapshot is a template: a new sandbox sees the file; template lists never show it" {
	inx --root -- sh -c 'echo frozen > /opt/sbx/skills/snapfile' >/dev/null
	run sbx-snap --name "bats-snap-$$" <"$SB"
	assert_success
	snap=$(jqo .snapshot.id)
	[[ "$snap" == sha256:* ]]
	run sbx-snap ls
	assert_output --partial "$snap"
	run sbx-tpl ls
	assert_success
	refute_output --partial "$snap"
	refute_output --partial "bats-snap-$$"
	assert_output --partial "sbx/base:latest"
	fresh --template "$snap" >"$BATS_TEST_TMPDIR/from-snap.json"
	run sbx-exec -- cat /opt/sbx/skills/snapfile <"$BATS_TEST_TMPDIR/from-snap.json"
	assert_equal "$(jqo .exec.stdout)" "frozen"
	# The source's own labels do not travel with the image.
	assert_equal "$(jq -r '.sandbox.metadata.role // "none"' "$BATS_TEST_TMPDIR/from-snap.json")" "none"
	run sbx-snap rm "$snap"
	assert_failure          # in use by the sandbox made from it
	sbx-ctl kill <"$BATS_TEST_TMPDIR/from-snap.json" >/dev/null
	run sbx-snap rm "$snap"
	assert_success
}

# Make container $1 look idle since 2000: its activity marker (the idle
# clock) put through the engine's archive API, as an exec's end would
# mark it again.
age_marker() {
	local d
	d=$(mktemp -d)
	touch -d '2000-01-01 00:00:00' "$d/sbx-activity"
	chmod 666 "$d/sbx-activity"
	tar -C "$d" --owner=0 --group=0 -cf "$d.tar" sbx-activity
	curl -sf --unix-socket "${DOCKER_HOST#unix://}" -X PUT -H 'Content-Type: application/x-tar' \
		--data-binary @"$d.tar" "http://engine/v1.41/containers/$1/archive?path=/var/lib" >/dev/null
	rm -rf "$d" "$d.tar"
}

@test "an idle sandbox is killed, and its session gets a new one" {
	run fresh --tenant acme --session idle --timeout 1h --on-timeout kill
	assert_success
	old=$(jqo .sandbox.id)
	# Make it look idle since 2000: the marker is the idle clock.
	age_marker "$old"
	rm -f "$SBX_STATE_DIR/docker-sweep.stamp"
	run fresh --tenant acme --session idle --timeout 1h --on-timeout kill
	assert_success
	new=$(jqo .sandbox.id)
	[ "$new" != "$old" ]
	run sbx-ls --id "$old"
	assert_failure 66
}

@test "the reaper's idle sweep reports an idle container" {
	export SBX_DOCKER_NO_SWEEP=1     # no opportunistic sweep may beat the dry run
	run fresh --timeout 1h --on-timeout kill --label role=idle-reap
	id=$(jqo .sandbox.id)
	age_marker "$id"
	run sbx-reap --all-tenants --dry-run
	assert_output --partial "$id"
	run sbx-ls --id "$id"
	assert_success           # a dry run deletes nothing
}

@test "kill is idempotent" {
	fresh >"$BATS_TEST_TMPDIR/k.json"
	run sbx-ctl kill <"$BATS_TEST_TMPDIR/k.json"
	assert_success
	run sbx-ctl kill <"$BATS_TEST_TMPDIR/k.json"
	assert_success
	run sbx-ls --id "$(jq -r .sandbox.id "$BATS_TEST_TMPDIR/k.json")"
	assert_failure 66
}

@test "sbx-ls --label lists exactly the matching sandboxes" {
	fresh --label color=red >/dev/null
	fresh --label color=red >/dev/null
	fresh --label color=blue >/dev/null
	run sbx-ls --label "$BATS_RUN_LABEL" --label color=red
	assert_success
	assert_equal "$(printf '%s\n' "$output" | grep -c '"id"')" "2"
	run sbx-ls --label "$BATS_RUN_LABEL" --label color=blue
	assert_equal "$(printf '%s\n' "$output" | jq -r .sandbox.metadata.color)" "blue"
}

@test "egress is off: only lo; with egress still only lo, the broker its way out (no engine network)" {
	run inx -- ls /sys/class/net
	assert_equal "$(jqo .exec.stdout)" "lo"
	local id
	id=$(fresh --allow-internet | jq -r .sandbox.id)
	[ -n "$id" ] && [ "$id" != null ]
	run sbx-exec --id "$id" -- sh -c 'ls /sys/class/net; cat /etc/resolv.conf'
	assert_success
	[[ "$(jqo .exec.stdout)" == lo*"nameserver 10.0.2.3"* ]]
	run sbx-ls --id "$id"
	assert_success
	[ "$(jqo '.sandbox.metadata["sbx.egress"] // "hidden"')" = hidden ]
	# the broker is a host process that ends with the container
	local dir
	dir=$SBX_STATE_DIR/docker-egress/$id
	[ -s "$dir/netpolicy.json" ]
	run pgrep -f "sbx-egress --container $id"
	assert_success
	run sbx-ctl kill --id "$id"
	assert_success
	[ ! -e "$dir" ]
	local i
	for i in $(seq 1 100); do pgrep -f "sbx-egress --container $id" >/dev/null || break; sleep 0.1; done
	run ! pgrep -f "sbx-egress --container $id"
}

@test "capabilities are honest" {
	run sbx-ctl caps
	assert_success
	assert_equal "$(jqo .caps.idle_kill)" "true"
	assert_equal "$(jqo .caps.set_timeout)" "false"
	assert_equal "$(jqo .caps.snapshots)" "true"
	assert_equal "$(jqo .caps.process)" "true"
	run sbx-ctl timeout --seconds 60 <"$SB"
	assert_failure 69
}

@test "a detached process runs in the container under its supervisor, records out of uid 1000's reach" {
	run sbx-proc start --root -- sh -c 'echo secret-of-root; sleep 300' <"$SB"
	assert_success
	local pid
	pid=$(jqo .proc.pid)
	local i
	for i in $(seq 1 100); do
		sbx-proc output --pid "$pid" <"$SB" | jq -r .output.stdout | grep -q secret-of-root && break
		sleep 0.1
	done
	run sbx-proc output --pid "$pid" <"$SB"
	[[ "$(jqo .output.stdout)" == *secret-of-root* ]]
	# root's record is root's: uid 1000 can neither read nor change it.
	run inx -- sh -c 'cat /run/sbx-procs/*/out 2>&1; ls -ld /run/sbx-procs'
	[[ "$(jqo .exec.stdout)" != *secret-of-root* ]]
	[[ "$(jqo .exec.stdout)" == *drwxrwxrwt* ]]
	run sbx-proc kill --pid "$pid" <"$SB"
	assert_failure 65
	run sbx-proc kill --root --pid "$pid" <"$SB"
	assert_success
}

@test "a tcp+TLS endpoint works: exec, stdin (staged), files; plain tcp is refused" {
	[ "$(id -u)" = 0 ] && command -v dockerd >/dev/null && command -v openssl >/dev/null ||
		skip "a TLS dockerd needs root, dockerd and openssl"
	tdir=$(mktemp -d /tmp/sbxt.XXXXXX)
	port=$((20000 + RANDOM % 20000))
	out=$(SBX_DOCKERD_TLS_PORT=$port "$DOCKERD_SH" start "$tdir")
	certs=$(printf '%s\n' "$out" | sed -n 's/^export SBX_DOCKERD_TLS_DIR=//p')
	sock=$(printf '%s\n' "$out" | sed -n 's/^export DOCKER_HOST=//p')
	DOCKER_HOST=$sock "$DOCKERD_SH" image
	cat >"$BATS_TEST_TMPDIR/tls.json" <<EOF
{"profiles": {"tls": {"backend": "docker", "endpoint": "tcp://127.0.0.1:$port",
  "tls_cert_path": "$certs", "allow_private": true},
 "plain": {"backend": "docker", "endpoint": "tcp://127.0.0.1:$port"}}}
EOF
	local st doc e1= e2= e3=
	st=0
	doc=$(SBX_CONFIG="$BATS_TEST_TMPDIR/tls.json" SBX_BACKEND= sbx-create -p tls --label "$BATS_RUN_LABEL") || st=$?
	if [ "$st" = 0 ]; then
		printf '%s\n' "$doc" >"$BATS_TEST_TMPDIR/t.json"
		tx() { SBX_CONFIG="$BATS_TEST_TMPDIR/tls.json" SBX_BACKEND= "$@"; }
		e1=$(tx sbx-exec -p tls --stdin-text 'over tls' -- sh -c 'cat; echo; id -u' \
			<"$BATS_TEST_TMPDIR/t.json" | jq -r .exec.stdout)
		mkdir -p "$BATS_TEST_TMPDIR/up/d"
		echo tls-file >"$BATS_TEST_TMPDIR/up/d/f"
		tx sbx-fs -p tls put "$BATS_TEST_TMPDIR/up" /workspace/up <"$BATS_TEST_TMPDIR/t.json" >/dev/null || true
		e2=$(tx sbx-exec -p tls -- cat /workspace/up/d/f <"$BATS_TEST_TMPDIR/t.json" | jq -r .exec.stdout)
		e3=0
		tx sbx-create -p plain >/dev/null 2>&1 || e3=$?
	fi
	"$DOCKERD_SH" stop "$tdir"
	[ "$st" = 0 ] || fail "create over TLS failed: $doc"
	assert_equal "$e1" $'over tls\n1000'
	assert_equal "$e2" "tls-file"
	assert_equal "$e3" 78
}
