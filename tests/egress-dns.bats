#!/usr/bin/env bats
# Names inside a local sandbox (issue 26 item 1).  With --allow-internet a
# sandbox resolves through its own resolver (10.0.2.3: slirp's forwarder,
# which asks the host's resolver from the host's side) wherever the host's
# resolver sits -- systemd-resolved's 127.0.0.53, a private address, a
# link-local one -- and whatever the template's /etc/resolv.conf says;
# /etc/hosts and nsswitch.conf stay the template's.  The sandbox itself
# still cannot reach the host's resolver.  Without egress nothing resolves,
# and a lookup fails at once.
#
# Nothing leaves this machine.  The test makes a network namespace with a
# DNS server (tests/lib/dns-server.py) on 127.0.0.53, 10.77.0.53 and
# 169.254.169.253 and an HTTP server at 10.98.0.80 (a package index for
# curl, python3, pip, npm and apt; the profile allow-lists it, as an admin
# behind a registry proxy would).  Each "host resolver configuration" is a
# resolv.conf bound over /etc/resolv.conf in a mount namespace of the
# creator's own, so the slirp4netns it starts reads it.

load lib/helpers
load lib/netns
bats_require_minimum_version 1.5.0

RESOLVERS="127.0.0.53 10.77.0.53 169.254.169.253"
PKG=10.98.0.80

setup_file() {
	sbx_setup_file
	netns_setup
	local a
	for a in 10.77.0.53 169.254.169.253 "$PKG"; do in_ns ip addr add "$a/32" dev lo; done
	for a in $RESOLVERS; do echo "nameserver $a" >"$SBX_TEST_DIR/resolv-$a"; done
	in_ns setsid python3 "$BATS_TEST_DIRNAME/lib/dns-server.py" "$SBX_TEST_DIR/dns.pid" \
		"${RESOLVERS// /,}" "pkg.sbx.test=$PKG" "other.sbx.test=198.51.100.7" \
		>/dev/null 2>&1 3>&- &
	# The package index: a file, an npm packument, a pip simple index and
	# a flat apt repository (an empty Packages list, its Release).
	local w="$SBX_TEST_DIR/www"
	mkdir -p "$w/npm" "$w/simple/demo" "$w/apt"
	echo hello-from-pkg >"$w/hello.txt"
	printf '{"name":"demo-pkg","dist-tags":{"latest":"1.4.2"},"versions":{"1.4.2":{"name":"demo-pkg","version":"1.4.2","dist":{"tarball":"http://pkg.sbx.test/npm/demo-pkg-1.4.2.tgz"}}}}' \
		>"$w/npm/demo-pkg"
	printf '<html><body><a href="demo-1.4.2.tar.gz">demo-1.4.2.tar.gz</a></body></html>\n' \
		>"$w/simple/demo/index.html"
	: >"$w/apt/Packages"
	{
		echo "Origin: sbx-test"
		echo "Label: sbx-test"
		echo "Date: $(date -Ru)"
		echo "SHA256:"
		echo " $(sha256sum <"$w/apt/Packages" | cut -d' ' -f1) 0 Packages"
	} >"$w/apt/Release"
	in_ns setsid python3 -c '
import functools, http.server, os, signal, sys
os.closerange(3, 65536)
signal.alarm(600)
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2])
s = http.server.ThreadingHTTPServer((sys.argv[1], 80), h)
open(sys.argv[3] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
s.serve_forever()' "$PKG" "$w" "$SBX_TEST_DIR/http.pid" >/dev/null 2>&1 3>&- &
	for _ in $(seq 1 400); do
		[ -e "$SBX_TEST_DIR/dns.pid" ] && [ -e "$SBX_TEST_DIR/http.pid" ] && break
		sleep 0.05
	done
	[ -s "$SBX_TEST_DIR/dns.pid" ] && [ -s "$SBX_TEST_DIR/http.pid" ]
	cat >"$SBX_CONFIG" <<-EOF
	{"profiles": {"default": {}, "pkg": {"egress_allow": ["$PKG/32"]}}}
	EOF
}

teardown_file() {
	netns_teardown dns.pid http.pid
	sbx_teardown_file
}

setup() {
	command -v slirp4netns >/dev/null || skip "slirp4netns not installed"
}

# new_with RESOLVER [ARGS...]: a sandbox with egress, created where the
# host's resolver is RESOLVER (its slirp reads that resolv.conf).
new_with() {
	local r=$1
	shift
	in_ns unshare -m sh -c 'mount --bind "$1" /etc/resolv.conf && shift && exec sbx-create --allow-internet "$@"' \
		sh "$SBX_TEST_DIR/resolv-$r" "$@" | jq -r .sandbox.id
}

# in_sb ID [--root] CMD...: CMD's stdout in the sandbox; fails with its status.
in_sb() {
	local id=$1
	shift
	sbx-exec --raw --id "$id" --timeout 60s "$@"
}

@test "egress dns: the host's resolver at 127.0.0.53, a private or a link-local address: names resolve inside, as root and as uid 1000" {
	local r id
	for r in $RESOLVERS; do
		id=$(new_with "$r")
		[ -n "$id" ]
		# Through the sandbox's own resolver configuration (getent: nsswitch,
		# resolv.conf); via.* answers with the resolver's address, so the
		# query went to the host's resolver of this configuration.
		run in_sb "$id" getent hosts via.sbx.test
		assert_success
		[ "$(echo "$output" | awk '{print $1}')" = "$r" ]
		run in_sb "$id" --root getent hosts pkg.sbx.test
		assert_success
		[ "$(echo "$output" | awk '{print $1}')" = "$PKG" ]
		run in_sb "$id" getent ahostsv4 pkg.sbx.test
		assert_success
		assert_output --partial "$PKG"
		# A name the server does not know is an answer too (NXDOMAIN), not
		# a failure to reach it.
		run in_sb "$id" python3 -c '
import socket
try:
    socket.getaddrinfo("nothing.sbx.test", 80)
except socket.gaierror as e:
    print("gai", e.errno == socket.EAI_NONAME)'
		assert_output "gai True"
		sbx-ctl kill --id "$id" >/dev/null
	done
}

@test "egress dns: the sandbox cannot talk to the host's resolver itself, only through its own" {
	local id r
	id=$(new_with 10.77.0.53)
	for r in 10.77.0.53 169.254.169.253 127.0.0.53 10.0.2.3; do
		run in_sb "$id" --root python3 -c '
import socket, struct, sys
q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x03via\x03sbx\x04test\x00\x00\x01\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
try:
    s.sendto(q, (sys.argv[1], 53))
    print("answer", len(s.recv(512)) > 12)
except OSError as e:
    print("refused", type(e).__name__)' "$r"
		echo "$r: $output"
		case $r in
		10.0.2.3) assert_output "answer True" ;;
		*) assert_output --partial refused ;;
		esac
	done
}

@test "egress dns: apt, pip, npm, curl and python3 clients reach a server the test runs, by name" {
	local id
	id=$(new_with 169.254.169.253 -p pkg)
	run in_sb "$id" curl -sS --max-time 30 http://pkg.sbx.test/hello.txt
	assert_success
	assert_output hello-from-pkg
	run in_sb "$id" --root python3 -c 'import urllib.request; print(urllib.request.urlopen("http://pkg.sbx.test/hello.txt", timeout=30).read().decode().strip())'
	assert_success
	assert_output hello-from-pkg
	if in_sb "$id" python3 -m pip --version >/dev/null 2>&1; then
		run in_sb "$id" python3 -m pip index versions demo --index-url http://pkg.sbx.test/simple/ \
			--trusted-host pkg.sbx.test --disable-pip-version-check
		assert_success
		assert_output --partial 1.4.2
	fi
	if in_sb "$id" sh -c 'command -v npm' >/dev/null; then
		run in_sb "$id" env HOME=/home/user npm view demo-pkg version --registry http://pkg.sbx.test/npm/
		assert_success
		assert_output --partial 1.4.2
	fi
	if in_sb "$id" sh -c 'command -v apt-get' >/dev/null; then
		run in_sb "$id" --root sh -c '
			echo "deb [trusted=yes] http://pkg.sbx.test/apt/ ./" >/tmp/sbx.list
			apt-get -o Dir::Etc::SourceList=/tmp/sbx.list -o Dir::Etc::SourceParts=/nonexistent \
				-o Acquire::Retries=0 update 2>&1'
		assert_success
		assert_output --partial "http://pkg.sbx.test/apt ./ Release"
		refute_output --partial "Temporary failure resolving"
		refute_output --regexp '^(E|W): '
	fi
}

@test "egress dns: a template whose resolv.conf is stale (a dangling symlink) keeps its hosts and nsswitch.conf, and resolves through the sandbox's resolver" {
	local base snapid id
	base=$(sbx-create | jq -r .sandbox.id)
	in_sb "$base" --root sh -c '
		rm -f /etc/resolv.conf
		ln -s ../run/systemd/resolve/stub-resolv.conf /etc/resolv.conf
		echo "hosts: files resolve [!UNAVAIL=return] dns" >/etc/nsswitch.conf
		echo "10.98.0.81 filed.sbx.test" >>/etc/hosts'
	snapid=$(sbx-snap --id "$base" | jq -r .snapshot.id)
	[ -n "$snapid" ] && [ "$snapid" != null ]
	id=$(new_with 127.0.0.53 -t "$snapid")
	[ -n "$id" ]
	run in_sb "$id" sh -c 'test -L /etc/resolv.conf && echo link || echo file'
	assert_output file
	run in_sb "$id" getent hosts via.sbx.test
	assert_success
	[ "$(echo "$output" | awk '{print $1}')" = 127.0.0.53 ]
	run in_sb "$id" --root getent hosts filed.sbx.test
	assert_success
	[ "$(echo "$output" | awk '{print $1}')" = 10.98.0.81 ]
	run in_sb "$id" cat /etc/nsswitch.conf
	assert_output --partial "resolve [!UNAVAIL=return] dns"
	sbx-ctl kill --id "$id" >/dev/null
	sbx-ctl kill --id "$base" >/dev/null
	sbx-snap rm "$snapid" >/dev/null
}

@test "egress dns: without egress nothing resolves, and a lookup fails at once (no route to the resolver)" {
	local id
	id=$(in_ns unshare -m sh -c 'mount --bind "$1" /etc/resolv.conf && exec sbx-create' \
		sh "$SBX_TEST_DIR/resolv-127.0.0.53" | jq -r .sandbox.id)
	[ -n "$id" ]
	run in_sb "$id" cat /etc/resolv.conf
	assert_output --partial "nameserver 10.0.2.3"
	run in_sb "$id" getent hosts pkg.sbx.test
	[ "$status" -eq 2 ]
	run in_sb "$id" --root getent hosts via.sbx.test
	[ "$status" -eq 2 ]
	# Why it cannot wait: the query is not sent at all (no route), so the
	# resolver gets its error from sendto, not from a timeout.
	run in_sb "$id" python3 -c '
import errno, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"q", ("10.0.2.3", 53)); print("sent")
except OSError as e:
    print(errno.errorcode[e.errno])'
	assert_output ENETUNREACH
}
