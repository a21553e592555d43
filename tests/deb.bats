#!/usr/bin/env bats
# The Debian package, checked on this host: what `make deb` builds (a fresh
# build by tools/deb/build, lintian clean or it fails), what it holds and
# declares, what its maintainer scripts do with sbx.service, and the
# running-sandbox check of its purge against a real sandbox.  Installing,
# using, upgrading and purging it is `make check-deb` (tests/deb-run, in a
# clean Debian 12 guest).

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	export DEB_DIR="$SBX_TEST_DIR/deb"
	local top version
	top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	version=$(sed -n 's/^VERSION *:= *//p' "$top/Makefile")
	"$top/tools/deb/build" "$version" "$DEB_DIR" >"$SBX_TEST_DIR/deb.path" 2>"$SBX_TEST_DIR/deb.err" ||
		{ cat "$SBX_TEST_DIR/deb.err" >&2; return 1; }
	export DEB
	DEB=$(cat "$SBX_TEST_DIR/deb.path")
	dpkg-deb -e "$DEB" "$DEB_DIR/control"
	dpkg-deb -c "$DEB" | awk '{print $1, $6}' | sed 's| \./| /|' >"$DEB_DIR/contents"
}
teardown_file() { sbx_teardown_file; }

field() { dpkg-deb -f "$DEB" "$1"; }
mode_of() { awk -v p="$1" '$2 == p {print $1}' "$DEB_DIR/contents"; }

@test "make deb: sbx_<version>_amd64.deb, lintian found nothing unexplained" {
	[[ "$(basename "$DEB")" =~ ^sbx_[0-9][^_]*_amd64\.deb$ ]]
	run grep -E '^[EW]: ' "$DEB_DIR"/*.lintian
	assert_failure
}

@test "every program the tree builds is in /usr/bin, sbx-init, sbx-procd and sbx-forkd in /usr/libexec/sbx" {
	local p
	for p in "$BUILD"/bin/*; do
		[ "$(mode_of "/usr/bin/$(basename "$p")")" = -rwxr-xr-x ] || { echo "missing: $p"; return 1; }
	done
	[ "$(mode_of /usr/libexec/sbx/sbx-init)" = -rwxr-xr-x ]
	[ "$(mode_of /usr/libexec/sbx/sbx-procd)" = -rwxr-xr-x ]
	[ "$(mode_of /usr/libexec/sbx/sbx-forkd)" = -rwxr-xr-x ]
}

@test "man pages, and completions in the folders Debian's bash, zsh and fish read" {
	local m
	for m in man/*.scd; do
		m=$(basename "$m" .scd)
		grep -qx -- "-rw-r--r-- /usr/share/man/man${m##*.}/$m.gz" "$DEB_DIR/contents" || { echo "no $m"; return 1; }
	done
	grep -q ' /usr/share/bash-completion/completions/sbx-exec$' "$DEB_DIR/contents"
	grep -q ' /usr/share/zsh/vendor-completions/_sbx$' "$DEB_DIR/contents"
	grep -q ' /usr/share/fish/vendor_completions.d/sbx-exec.fish$' "$DEB_DIR/contents"
}

@test "Depends: the linked libraries (libssl for sbx-egress), the dlopen'ed libcurl and libnftables, slirp4netns; Recommends: redis-server, docker.io, criu, nftables" {
	run field Depends
	assert_output --partial 'libhiredis0.14'
	assert_output --partial 'libjson-c5'
	assert_output --partial 'libseccomp2'
	assert_output --partial 'libmicrohttpd12'
	# libssl: sbx-egress alone links it (the L7 broker's TLS, issue 29); the
	# digests of every other program are in-tree (common/base/sha.c).
	assert_output --partial 'libssl3'
	assert_output --partial 'libcurl4 (>= 7.88.1)'
	assert_output --partial 'libnftables1'
	assert_output --partial 'slirp4netns'
	run field Recommends
	# criu and nftables: what hibernate needs (docs/local.md, Hibernate).
	assert_output 'redis-server, docker.io, criu, nftables'
	# What the programs load at run time is what Depends names by hand.
	run grep -ho 'dlopen("[^"]*"' "$BATS_TEST_DIRNAME"/../common/*/*.c "$BATS_TEST_DIRNAME"/../backends/*/*.c
	assert_output $'dlopen("libcurl.so.4"\ndlopen("libnftables.so.1"'
}

@test "/etc/sbx/config.json is a conffile and a valid profile with no secret; the commented example is one too" {
	[ "$(cat "$DEB_DIR/control/conffiles")" = /etc/sbx/config.json ]
	dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./etc/sbx/config.json >"$SBX_TEST_DIR/pkg-config.json"
	run env -u SBX_STATE_DIR SBX_CONFIG="$SBX_TEST_DIR/pkg-config.json" sbx-ctl caps
	assert_success
	[ "$(jqo .profile)" = local ]
	run jq -r '.profiles.local | keys - ["backend", "description", "redis_url", "state_dir"] | length' "$SBX_TEST_DIR/pkg-config.json"
	assert_output 0
	dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/share/doc/sbx/examples/config.jsonc |
		sed '/^[[:space:]]*\/\//d' >"$SBX_TEST_DIR/example.json"
	run env SBX_CONFIG="$SBX_TEST_DIR/example.json" sbx-ctl caps
	assert_success
	run env SBX_CONFIG="$SBX_TEST_DIR/example.json" SBX_PROFILE=docker sbx-ctl caps
	assert_success
}

@test "the units: sbx.service, the reaper's service and timer, sbx-serve's unit, all on /usr/bin" {
	local u
	for u in sbx.service sbx-reap.service sbx-reap.timer sbx-serve.service; do
		grep -q " /lib/systemd/system/$u$" "$DEB_DIR/contents" || { echo "no $u"; return 1; }
	done
	dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./lib/systemd/system/sbx-reap.service >"$SBX_TEST_DIR/reap.service"
	grep -q '^ExecStart=/usr/bin/sbx-reap --all-tenants ' "$SBX_TEST_DIR/reap.service"
	! grep -q '^\[Install\]' "$SBX_TEST_DIR/reap.service"
}

@test "maintainer scripts: sbx.service is enabled and started, never stopped or restarted by an upgrade" {
	local c=$DEB_DIR/control
	grep -q "deb-systemd-helper enable 'sbx.service'" "$c/postinst"
	grep -q 'deb-systemd-invoke start sbx.service' "$c/postinst"
	# No restart of it anywhere, no stop in preinst (upgrade), and prerm's
	# stop only under "remove".
	run ! grep -E 'restart.*sbx\.service' "$c/postinst" "$c/prerm" "$c/postrm"
	run ! grep -qs 'sbx\.service' "$c/preinst"
	run awk '/deb-systemd-invoke stop/ && /sbx\.service/ {print FILENAME}' "$c/prerm"
	assert_output "$c/prerm"
	grep -q '"$1" = remove' "$c/prerm"
	# The reaper's timer and sbx-serve: disabled on install, stopped on remove.
	run ! grep -q "deb-systemd-helper enable 'sbx-reap.timer'" <(sed -n '/was-enabled .sbx-reap.timer/,$!p' "$c/postinst")
	grep -q "deb-systemd-invoke stop 'sbx-reap.timer' 'sbx-serve.service'" "$c/prerm"
}

# The purge's check for running sandboxes reads the local backend's records
# (json-c writes "/" as "\/"): run it on a real one, running then killed.
@test "postrm's running-sandbox check finds a live sandbox from its record, and not a killed one" {
	local sb found
	local_only "the purge reads the local backend's records"
	sb=$(sbx-create | jq -er .sandbox.id)
	sed -n '/^running_sandboxes()/,/^}/p' "$DEB_DIR/control/postrm" >"$SBX_TEST_DIR/fn.sh"
	[ -s "$SBX_TEST_DIR/fn.sh" ]
	found=$(state=$SBX_STATE_DIR; . "$SBX_TEST_DIR/fn.sh"; running_sandboxes)
	[ "$found" = "$sb" ]
	sbx-ctl kill --id "$sb" >/dev/null
	found=$(state=$SBX_STATE_DIR; . "$SBX_TEST_DIR/fn.sh"; running_sandboxes)
	[ -z "$found" ]
}

# prerm decides whether removing the package may stop sbx.service (which
# kills every sandbox in it) by the same records, not by a cgroup path it
# guesses: on a hybrid host the v2 tree is /sys/fs/cgroup/unified, and a
# host may keep sandboxes in v1 controllers only.
@test "prerm's running-sandbox check asks the records, on this host's layout and from v1 cgroups alone; the same function as postrm's" {
	local sb found rec
	local_only "prerm reads the local backend's records"
	sed -n '/^running_sandboxes()/,/^}/p' "$DEB_DIR/control/prerm" >"$SBX_TEST_DIR/prerm-fn.sh"
	sed -n '/^running_sandboxes()/,/^}/p' "$DEB_DIR/control/postrm" >"$SBX_TEST_DIR/postrm-fn.sh"
	[ -s "$SBX_TEST_DIR/prerm-fn.sh" ]
	cmp "$SBX_TEST_DIR/prerm-fn.sh" "$SBX_TEST_DIR/postrm-fn.sh"
	run ! grep -q 'system.slice/sbx.service' "$DEB_DIR/control/prerm"
	sb=$(sbx-create | jq -er .sandbox.id)
	rec="$SBX_STATE_DIR/local/sandboxes/$sb/sandbox.json"
	if [ -d /sys/fs/cgroup/unified ]; then
		# Hybrid: the record's v2 cgroup is under unified/, where the old
		# guess (system.slice/sbx.service/*/) never looked.
		[[ "$(jq -r '.. | .v2? // empty' "$rec" | head -1)" == /sys/fs/cgroup/unified/* ]]
	fi
	found=$(state=$SBX_STATE_DIR; . "$SBX_TEST_DIR/prerm-fn.sh"; running_sandboxes)
	[ "$found" = "$sb" ]
	# A record that names v1 controllers only (no "v2"): still found
	# while the host has one of them.
	if [ -n "$(jq -r '.. | .pids? // .memory? // empty | strings' "$rec" | grep '^/sys/fs/cgroup/' | head -1)" ]; then
		mkdir -p "$SBX_TEST_DIR/v1/local/sandboxes/$sb"
		sed 's/"v2":"[^"]*",\{0,1\}//' "$rec" >"$SBX_TEST_DIR/v1/local/sandboxes/$sb/sandbox.json"
		run ! grep -q '"v2"' "$SBX_TEST_DIR/v1/local/sandboxes/$sb/sandbox.json"
		found=$(state=$SBX_TEST_DIR/v1; . "$SBX_TEST_DIR/prerm-fn.sh"; running_sandboxes)
		[ "$found" = "$sb" ]
	fi
	sbx-ctl kill --id "$sb" >/dev/null
	found=$(state=$SBX_STATE_DIR; . "$SBX_TEST_DIR/prerm-fn.sh"; running_sandboxes)
	[ -z "$found" ]
	found=$(state=$SBX_TEST_DIR/v1; . "$SBX_TEST_DIR/prerm-fn.sh"; running_sandboxes)
	[ -z "$found" ]
}
