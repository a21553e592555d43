#!/usr/bin/env bats
# The `host` template closes by default: a sandbox over the host's "/"
# sees the software (/usr, /etc minus its secrets, what apt needs under
# /var) and nothing else.  Every path the configuration names - for every
# profile, wherever it lives - is hidden, also in a sandbox made from a
# snapshot with a secret path configured after the snapshot was taken.
# Secrets live at unusual paths here, in directories a sandbox otherwise
# sees (/etc, /usr/local), so only the configuration can hide them.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	# E and U: unusual homes for the configuration and its secrets.
	export E U
	E=$(mktemp -d /etc/sbx-bnd.XXXXXX)
	U=$(mktemp -d /usr/local/lib/sbx-bnd.XXXXXX)
	mkdir -p "$E/state2/local" "$U/tls"
	echo 'not-a-real-key' >"$E/api.key"
	echo 'not-a-real-password' >"$U/redis.pw"
	echo 'not-a-real-tls-key' >"$U/tls/key.pem"
	echo 'another tenant' >"$E/state2/local/layer-file"
	python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$U/r.sock"
	cat >"$E/conf.json" <<-EOF
	{"profiles": {
	  "default": {"backend": "local", "api_key_file": "$E/api.key"},
	  "other": {"backend": "local", "state_dir": "$E/state2", "tls_cert_path": "$U/tls",
	            "redis_url": "unix://$U/r.sock", "redis_password_file": "$U/redis.pw"}}}
	EOF
	export SBX_CONFIG="$E/conf.json"
	# A planted SSH host key (only if none of that name exists).
	export SSHKEY=/etc/ssh/ssh_host_sbxtest_key
	if [ -d /etc/ssh ] && [ ! -e "$SSHKEY" ]; then
		echo 'not-a-real-host-key' >"$SSHKEY"
		chmod 600 "$SSHKEY"
	else
		SSHKEY=
	fi
}

teardown_file() {
	sbx_teardown_file
	rm -rf "${E:?}" "${U:?}"
	[ -z "${SSHKEY:-}" ] || rm -f "$SSHKEY"
}

new_sb() { sbx-create "$@" | jq -r .sandbox.id; }
# in ID CMD: run CMD as root in sandbox ID, its stdout as output.
in_sb() {
	local id=$1
	shift
	sbx-exec --id "$id" --root --raw -- sh -c "$1"
}
# A shell line that prints SEEN:<path> for every path it can stat or read.
probe() {
	local p s=''
	for p in "$@"; do
		s+="test -e '$p' && echo 'SEEN:$p'; cat '$p' >/dev/null 2>&1 && echo 'READ:$p'; "
	done
	printf '%s echo done' "$s"
}

SECRETS() {
	echo "$E/conf.json" "$E/api.key" "$U/redis.pw" "$U/tls/key.pem" "$U/r.sock" \
		"$E/state2/local/layer-file" "$SBX_STATE_DIR/local"
}

@test "host template: the config file, keys, passwords, TLS files and sockets of every profile are hidden wherever they live" {
	id=$(new_sb)
	# shellcheck disable=SC2046
	run in_sb "$id" "$(probe $(SECRETS))"
	assert_success
	assert_output done
	# The directories around them are the host's, still visible.
	run in_sb "$id" "test -d '$E' && test -d '$U' && test -x /usr/bin/env && echo ok"
	assert_output ok
	# and the host does see them.
	[ -S "$U/r.sock" ] && [ -s "$E/api.key" ]
}

@test "host template: /root, /home, /run, /tmp, /opt and host logs show nothing of the host's; shadow files and SSH host keys are absent" {
	id=$(new_sb)
	# The host has something in each of these (the test's own files at least).
	[ -n "$(ls -A /run)" ] && [ -n "$(ls -A /tmp)" ] && [ -e /var/log/dpkg.log ]
	run in_sb "$id" 'ls -A /root /run /tmp /srv /mnt /var/backups /var/spool /var/mail 2>/dev/null | grep -v ":$" | grep -c .'
	assert_output 0
	run in_sb "$id" 'ls -A /home; ls -A /opt'
	assert_output $'user\nsbx'
	run in_sb "$id" "$(probe /etc/shadow /etc/gshadow /etc/shadow- /etc/gshadow- /etc/security/opasswd \
		/var/log/dpkg.log /var/cache/debconf/passwords.dat /var/lib/redis/dump.rdb ${SSHKEY:+"$SSHKEY"})"
	assert_output done
	# The software and the account stay.
	run in_sb "$id" 'test -x /usr/bin/python3 && grep -c "^user:x:1000:" /etc/passwd'
	assert_output 1
}

@test "host template: root inside cannot uncover a hidden directory" {
	id=$(new_sb)
	run in_sb "$id" 'rmdir /srv && mkdir /srv && ls -A /srv | grep -c .'
	assert_output 0
	run in_sb "$id" "python3 -c 'import os; os.removexattr(\"/root\", \"trusted.overlay.opaque\")' 2>/dev/null && echo REMOVED; ls -A /root | grep -c ."
	assert_output 0
}

@test "apt and dpkg still work over the host template" {
	id=$(new_sb)
	# The host's own database may be mid-upgrade: inside says what outside says.
	local host_audit
	host_audit=$(dpkg --audit && echo audit-ok)
	run in_sb "$id" 'dpkg --audit && echo audit-ok'
	assert_output "$host_audit"
	run in_sb "$id" 'apt-cache policy coreutils | grep -c Installed:'
	assert_output 1
	run in_sb "$id" 'apt-get check >/dev/null && echo check-ok'
	assert_output check-ok
	run in_sb "$id" 'apt-get -s install --reinstall coreutils | grep -c "^Conf coreutils"'
	assert_output 1
}

@test "a sandbox from a snapshot of a host sandbox hides a secret configured after the snapshot" {
	[ "$(stat -c %d "$SBX_STATE_DIR")" = "$(stat -c %d /)" ] || skip "state dir is on another filesystem"
	id=$(new_sb)
	in_sb "$id" 'echo kept > /workspace/k'
	snap=$(sbx-snap --id "$id" | jq -r .snapshot.id)
	[ -n "$snap" ] && [ "$snap" != null ]
	# A new profile, naming a secret in a directory the snapshot saw.
	echo 'not-a-real-late-key' >"$U/late.key"
	jq --arg k "$U/late.key" '.profiles.late = {"backend": "local", "api_key_file": $k}' \
		"$E/conf.json" >"$E/conf.new" && mv "$E/conf.new" "$E/conf.json"
	id2=$(new_sb --template "$snap")
	run in_sb "$id2" 'cat /workspace/k'
	assert_output kept
	# shellcheck disable=SC2046
	run in_sb "$id2" "$(probe "$U/late.key" $(SECRETS) /etc/shadow)"
	assert_output done
	run in_sb "$id2" 'ls -A /root /run /srv 2>/dev/null | grep -v ":$" | grep -c .'
	assert_output 0
	# The snapshot's own files under a hidden host directory survive.
	in_sb "$id" 'mkdir -p /srv/mine && echo m > /srv/mine/f'
	snap2=$(sbx-snap --id "$id" | jq -r .snapshot.id)
	id3=$(new_sb --template "$snap2")
	run in_sb "$id3" 'cat /srv/mine/f'
	assert_output m
}

@test "the host mask is built once per plan and a new one follows any change of its inputs" {
	local a b c d masks n0
	masks=$SBX_STATE_DIR/local/hostmasks
	nmasks() { find "$masks" -mindepth 1 -maxdepth 1 ! -name '.tmp-*' | wc -l; }
	a=$(new_sb)
	n0=$(nmasks)
	b=$(new_sb)
	# Two creates with the same host and configuration share one mask.
	[ "$(nmasks)" -eq "$n0" ]
	# A name appearing at the host's top level after those creates is
	# hidden in the next sandbox: the cached mask is not reused for it.
	local top=/sbx-bnd-new.$$
	mkdir "$top"
	echo 'host secret' >"$top/file"
	c=$(new_sb)
	run in_sb "$c" "ls -A $top; cat $top/file 2>&1 || true"
	rmdir --ignore-fail-on-non-empty "$top" 2>/dev/null; rm -rf "$top"
	refute_output --partial 'host secret'
	[ "$(nmasks)" -eq $((n0 + 1)) ]
	# A secret path configured after that is hidden too, by a third mask.
	echo 'late secret' >"$U/late.key"
	jq --arg k "$U/late.key" '.profiles.other.api_key_file = $k' "$SBX_CONFIG" >"$E/conf2.json"
	SBX_CONFIG=$E/conf2.json run sbx-create
	d=$(jqo .sandbox.id)
	run in_sb "$d" "cat $U/late.key 2>&1 || true"
	refute_output --partial 'late secret'
	[ "$(nmasks)" -eq $((n0 + 2)) ]
	# No half-built mask is left.
	[ -z "$(find "$masks" -mindepth 1 -maxdepth 1 -name '.tmp-*')" ]
}
