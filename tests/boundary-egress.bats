#!/usr/bin/env bats
# The sandbox boundary, egress (local backend): with --allow-internet a
# sandbox reaches the internet and nothing else.  Private, link-local,
# CGNAT, loopback and the host's own addresses are refused, unless a
# profile's egress_allow names them; root inside cannot lift the filter;
# slirp4netns runs sandboxed with seccomp.
#
# Nothing leaves this machine: every sandbox here is created from inside a
# network namespace that this file makes (sbx-create, and so slirp4netns,
# run in it), with the "private" and "link-local" addresses on its lo and
# the "host's own" address on a veth pair inside it, and one listener on
# all of them.  That namespace has no route anywhere else.

load lib/helpers
load lib/netns
bats_require_minimum_version 1.5.0

PORT=8099
# Refused by range: RFC 1918 (three), link-local metadata, CGNAT, slirp's
# gateway (the host's loopback through slirp).
REFUSED="10.99.0.1 172.20.0.1 192.168.77.1 169.254.169.254 100.64.0.1 10.0.2.2"
# The host's own address: outside every refused range (192.88.99.0/24, the
# retired 6to4 relay net), so only the host-address rule refuses it.
HOSTADDR=192.88.99.1
# Refused by range, answered when the profile allow-lists 10.98.0.0/16.
ALLOWED=10.98.0.1

setup_file() {
	sbx_setup_file
	netns_setup
	local a
	for a in $REFUSED $ALLOWED; do
		case $a in 10.0.2.*) continue ;; esac
		in_ns ip addr add "$a/32" dev lo
	done
	in_ns ip link add eg0 type veth peer name eg1
	in_ns ip addr add "$HOSTADDR/24" dev eg0
	in_ns ip link set eg0 up
	in_ns ip link set eg1 up
	# slirp forwards the sandbox's DNS (10.0.2.3:53) to the host's first
	# resolver; here that address lives in the test's namespace, with a
	# stand-in resolver on it, so the DNS path is checked end to end.
	RESOLVER=$(awk '$1 == "nameserver" {print $2; exit}' /etc/resolv.conf)
	case $RESOLVER in
	*.*.*.*) case $RESOLVER in 127.*) RESOLVER= ;; *) in_ns ip addr add "$RESOLVER/32" dev lo ;; esac ;;
	*) RESOLVER= ;;
	esac
	echo "$RESOLVER" >"$SBX_TEST_DIR/resolver"
	# One listener on every address of the namespace (TCP $PORT), naming
	# the address it was reached at, and the stand-in resolver (UDP and TCP
	# 53).  Bounded: it ends itself after 10 minutes.
	# It closes every inherited descriptor (a bats pipe held open would
	# keep bats waiting) and writes its own pid for teardown.
	in_ns setsid python3 -c '
import os, select, signal, socket, sys
os.closerange(3, 65536)
signal.alarm(600)
def sock(kind, addr, port):
    s = socket.socket(socket.AF_INET, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    if kind == socket.SOCK_STREAM:
        s.listen(16)
    return s
ss = [sock(socket.SOCK_STREAM, "0.0.0.0", int(sys.argv[1]))]
if sys.argv[3]:
    ss += [sock(socket.SOCK_DGRAM, sys.argv[3], 53), sock(socket.SOCK_STREAM, sys.argv[3], 53)]
open(sys.argv[2] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
while True:
    for s in select.select(ss, [], [])[0]:
        if s.type == socket.SOCK_DGRAM:
            data, peer = s.recvfrom(512)
            s.sendto(b"dns-answer\n", peer)
        else:
            c, _ = s.accept()
            what = b"dns-answer" if c.getsockname()[1] == 53 else b"answer-" + c.getsockname()[0].encode()
            c.sendall(what + b"\n"); c.close()
' "$PORT" "$SBX_TEST_DIR/listener.pid" "$RESOLVER" >/dev/null 2>&1 3>&- &
	for _ in $(seq 1 400); do [ -e "$SBX_TEST_DIR/listener.pid" ] && break; sleep 0.05; done
	[ -s "$SBX_TEST_DIR/listener.pid" ]
	cat >"$SBX_CONFIG" <<-EOF
	{"profiles": {"default": {},
	              "lan": {"egress_allow": ["10.98.0.0/16", "fd98::/64"]},
	              "badcidr": {"egress_allow": ["10.98.0.1/16"]}}}
	EOF
}

teardown_file() {
	netns_teardown listener.pid
	sbx_teardown_file
}

setup() {
	command -v slirp4netns >/dev/null || skip "slirp4netns not installed"
}

# A sandbox with internet, created (with its slirp) inside the test's
# namespace.  Extra arguments go to sbx-create.
new_inet() { in_ns sbx-create --allow-internet "$@" | jq -r .sandbox.id; }

# From inside sandbox $1, one TCP connection to each address $2...; one
# line per address: "ADDR: <what came back, or the error>".
probe() {
	local id=$1
	shift
	run sbx-exec --id "$id" --timeout 60s -- sh -c '
		port=$1; shift
		for a; do printf "%s: %s\n" "$a" "$(busybox nc -w 5 "$a" "$port" </dev/null 2>&1)"; done' \
		sh "$PORT" "$@"
	assert_success
	[ "$(jqo .exec.exit_code)" = 0 ]
	output=$(jqo .exec.stdout)
	printf '%s\n' "$output"
}

@test "egress: private, link-local, CGNAT, host loopback and the host's own address are refused" {
	local id a
	id=$(new_inet)
	probe "$id" $REFUSED "$HOSTADDR" "$ALLOWED"
	for a in $REFUSED "$HOSTADDR" "$ALLOWED"; do
		# Refused at once (a reset), not dropped, and never answered.
		[[ "$output" == *"$a: "*"Connection refused"* ]] || { echo "not refused: $a"; return 1; }
	done
	[[ "$output" != *answer-* ]]
}

@test "egress: a CIDR that the profile allow-lists answers, nothing else opens" {
	local id a
	id=$(new_inet -p lan)
	probe "$id" "$ALLOWED" $REFUSED "$HOSTADDR"
	[[ "$output" == *"$ALLOWED: answer-$ALLOWED"* ]]
	for a in $REFUSED "$HOSTADDR"; do
		[[ "$output" == *"$a: "*"Connection refused"* ]] || { echo "not refused: $a"; return 1; }
	done
}

@test "egress: the sandbox's own lo and slirp's DNS port stay open" {
	local id
	id=$(new_inet)
	# A server inside the sandbox, on its own lo: not filtered.
	run sbx-exec --id "$id" --timeout 60s -- sh -c '
		busybox nc -l -p 7001 -e echo inside &
		for i in $(seq 1 50); do out=$(busybox nc -w 2 127.0.0.1 7001 </dev/null 2>/dev/null) && [ -n "$out" ] && break; sleep 0.1; done
		echo "got:$out"'
	[[ "$(jqo .exec.stdout)" == *got:inside* ]]
	# slirp's DNS answers, over UDP and TCP (what answers is the stand-in
	# resolver in the test's namespace, through slirp); any other port of
	# 10.0.2.3 is refused.
	local resolver
	resolver=$(cat "$SBX_TEST_DIR/resolver")
	[ -n "$resolver" ] || skip "the host's resolver is not an IPv4 address off loopback"
	# (busybox nc has no UDP: python3 from the host template asks.)
	run sbx-exec --id "$id" --timeout 60s -- sh -c '
		echo "udp:$(python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
s.connect((\"10.0.2.3\", 53)); s.send(b\"q\"); print(s.recv(100).decode())" 2>&1)"
		echo "tcp:$(busybox nc -w 5 10.0.2.3 53 </dev/null 2>&1)"'
	[[ "$(jqo .exec.stdout)" == *udp:dns-answer* ]]
	[[ "$(jqo .exec.stdout)" == *tcp:dns-answer* ]]
	probe "$id" 10.0.2.3
	[[ "$output" == *"10.0.2.3: "*"Connection refused"* ]]
}

@test "egress: root inside cannot lift the filter (no NET_ADMIN, no NET_RAW)" {
	local id
	id=$(new_inet)
	run sbx-exec --id "$id" --root -- sh -c 'grep CapEff /proc/self/status'
	local eff
	eff=$(jqo .exec.stdout | awk '{print $2}')
	[ -n "$eff" ]
	# CAP_NET_ADMIN is bit 12, CAP_NET_RAW bit 13.
	[ $(( 0x$eff >> 12 & 3 )) -eq 0 ]
	run sbx-exec --id "$id" --root -- sh -c 'command -v nft || echo none'
	if [ "$(jqo .exec.stdout)" != none ]; then
		run sbx-exec --id "$id" --root -- sh -c 'nft flush ruleset 2>&1; echo "rc=$?"'
		[[ "$(jqo .exec.stdout)" == *"Operation not permitted"* ]]
		[[ "$(jqo .exec.stdout)" != *rc=0* ]]
	fi
	run sbx-exec --id "$id" --root -- sh -c "ip addr add 10.99.0.1/32 dev lo 2>&1; ip link set tap0 down 2>&1; echo end"
	[[ "$(jqo .exec.stdout)" == *"Operation not permitted"* ]]
	probe "$id" 10.99.0.1 169.254.169.254
	[[ "$output" == *"10.99.0.1: "*"Connection refused"* ]]
	[[ "$output" == *"169.254.169.254: "*"Connection refused"* ]]
}

@test "egress: slirp4netns runs in its own mount namespace, capabilities dropped, under seccomp" {
	local id pid p
	id=$(new_inet)
	for p in $(cat /sys/fs/cgroup/unified/sbx/"$id"/cgroup.procs 2>/dev/null || cat /sys/fs/cgroup/sbx/"$id"/cgroup.procs); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = slirp4netns ] && pid=$p
	done
	[ -n "$pid" ]
	grep -q '^Seccomp:[[:space:]]*2' /proc/"$pid"/status
	# Only CAP_NET_BIND_SERVICE (bit 10) is left.
	grep -q '^CapEff:[[:space:]]*0000000000000400' /proc/"$pid"/status
	[ "$(readlink /proc/"$pid"/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]
}

@test "egress: slirp4netns holds no descriptor of its creator's" {
	local marker=$BATS_TEST_TMPDIR/creator-file id pid p
	echo x >"$marker"
	# A file the caller holds open without O_CLOEXEC, as a shell's
	# redirection leaves it.
	id=$(nsenter --net="$NS" sh -c 'exec 7<"$1"; sbx-create --allow-internet' sh "$marker" | jq -r .sandbox.id)
	for p in $(cat /sys/fs/cgroup/unified/sbx/"$id"/cgroup.procs 2>/dev/null || cat /sys/fs/cgroup/sbx/"$id"/cgroup.procs); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = slirp4netns ] && pid=$p
	done
	[ -n "$pid" ]
	run ls -l /proc/"$pid"/fd
	refute_output --partial "$marker"
}

@test "egress: when the filter cannot be installed, create fails and leaves nothing" {
	local before after
	before=$(sbx-ls --all | jq -r .sandbox.id | sort)
	run --separate-stderr env SBX_FAULT=local:egress nsenter --net="$NS" sbx-create --allow-internet --label eg=failclosed
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"egress filter"* ]]
	run sbx-ls --all --label eg=failclosed
	[ -z "$output" ]
	after=$(sbx-ls --all | jq -r .sandbox.id | sort)
	[ "$before" = "$after" ]
	! grep -q failclosed "$SBX_STATE_DIR"/local/sandboxes/*/sandbox.json 2>/dev/null
}

@test "egress: a profile's egress_allow must be CIDRs with no host bits" {
	run --separate-stderr sbx-create -p badcidr --allow-internet
	[ "$status" -eq 78 ]
	[[ "$stderr" == *egress_allow* ]]
}
