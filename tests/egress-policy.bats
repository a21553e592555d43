#!/usr/bin/env bats
# Egress by name (issue 28), local backend: a sandbox with a network
# policy reaches what its rules allow and nothing else, through the egress
# broker (backends/local/local-broker.h), which reads the name a connection
# carries (TLS SNI, HTTP Host, CONNECT), resolves it itself and dials
# through the always-refused ranges' guard; DNS inside answers only the
# names the policy lets resolve.
#
# Nothing leaves this machine: the sandboxes are created from inside a
# network namespace this file makes, with the "internet" on private
# addresses there (the profile's egress_allow opens 10.98.0.0/16, as an
# admin would for a LAN registry), a test DNS server giving them names
# (the profile's egress_resolver points the broker at it) and a test CA.

load lib/helpers
load lib/netns
load lib/serve
bats_require_minimum_version 1.5.0

API=10.98.0.1      # api.sbx.test, the allowed name
OTHER=10.98.0.2    # other.sbx.test, a name no rule allows
DNS=10.98.0.53

setup_file() {
	sbx_setup_file
	netns_setup
	local a
	for a in "$API" "$OTHER" "$DNS" 169.254.169.254; do in_ns ip addr add "$a/32" dev lo; done
	in_ns setsid python3 "$BATS_TEST_DIRNAME/lib/dns-server.py" "$SBX_TEST_DIR/dns.pid" "$DNS" \
		"api.sbx.test=$API" "www.api.sbx.test=$API" "other.sbx.test=$OTHER" \
		"meta.sbx.test=169.254.169.254" "loop.sbx.test=127.0.0.1" >/dev/null 2>&1 3>&- &
	# The test CA and a certificate for the allowed name (and the other).
	local c="$SBX_TEST_DIR/ca"
	mkdir -p "$c"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sbx-test-ca \
		-keyout "$c/ca.key" -out "$c/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=api.sbx.test -keyout "$c/srv.key" \
		-out "$c/srv.csr" 2>/dev/null
	printf 'subjectAltName=DNS:api.sbx.test,DNS:other.sbx.test,IP:%s\n' "$API" >"$c/ext"
	openssl x509 -req -in "$c/srv.csr" -CA "$c/ca.pem" -CAkey "$c/ca.key" -CAcreateserial \
		-days 2 -extfile "$c/ext" -out "$c/srv.pem" 2>/dev/null
	# What the HTTPS servers serve under /r/: a package index with one
	# wheel (pip) and a bare repository over git's dumb HTTP.
	local r="$SBX_TEST_DIR/www"
	mkdir -p "$r"
	python3 "$BATS_TEST_DIRNAME/lib/pip-index.py" "$r"
	git init -q "$SBX_TEST_DIR/src"
	printf 'sbx-git-ok\n' >"$SBX_TEST_DIR/src/README"
	git -C "$SBX_TEST_DIR/src" add README
	git -C "$SBX_TEST_DIR/src" -c user.name=t -c user.email=t@sbx.test commit -qm one
	git clone -q --bare "$SBX_TEST_DIR/src" "$r/repo.git"
	git -C "$r/repo.git" update-server-info
	chmod -R a+rX "$r"
	in_ns setsid env EGRESS_ROOT="$r" python3 "$BATS_TEST_DIRNAME/lib/egress-servers.py" "$SBX_TEST_DIR/srv.pid" \
		"$c/srv.pem" "$c/srv.key" "$API" "$OTHER" 169.254.169.254 >/dev/null 2>&1 3>&- &
	for _ in $(seq 1 400); do [ -s "$SBX_TEST_DIR/srv.pid" ] && [ -s "$SBX_TEST_DIR/dns.pid" ] && break; sleep 0.05; done
	[ -s "$SBX_TEST_DIR/srv.pid" ]
	jq --arg dns "$DNS" '.profiles.default += {"egress_allow": ["10.98.0.0/16"], "egress_resolver": $dns}' \
		"$SBX_CONFIG" >"$SBX_CONFIG.new" && mv "$SBX_CONFIG.new" "$SBX_CONFIG"
}

teardown() { serve_stop eg; }

teardown_file() {
	netns_teardown dns.pid srv.pid
	sbx_teardown_file
}

# A raw TCP probe from inside: "ADDR:PORT <what came back>", "reset",
# "refused" or the error; it sends nothing first.
TCP="python3 -c 'import socket,sys
s = socket.socket(); s.settimeout(20)
try:
    s.connect((sys.argv[1], int(sys.argv[2]))); d = s.recv(100)
    print(sys.argv[1] + \":\" + sys.argv[2], d.decode().strip() if d else \"eof\")
except ConnectionResetError: print(sys.argv[1] + \":\" + sys.argv[2], \"reset\")
except OSError as e: print(sys.argv[1] + \":\" + sys.argv[2], e.strerror)
'"

@test "policy: an allowed name answers, as uid 1000 and as root; sbx-ls shows the policy" {
	local id
	id=$(new_sb --allow-out api.sbx.test --allow-out '*.api.sbx.test:443')
	run sbx-ls --id "$id"
	assert_success
	[ "$(jqo '.sandbox.network_policy.rules[0].to')" = api.sbx.test ]
	[ "$(jqo '.sandbox.network_policy.rules[1].ports[0]')" = 443 ]
	[ "$(jqo '.sandbox.network_policy.default')" = deny ]
	inside "$id" 'curl -sS http://api.sbx.test/'
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	inside --root "$id" 'curl -sS http://api.sbx.test/'
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	inside "$id" 'python3 -c "import urllib.request; print(urllib.request.urlopen(\"http://api.sbx.test/\").read().decode())"'
	[[ "$output" == *"answer-$API"* ]]
}

@test "policy: a name no rule allows does not resolve; dialled by address it is refused with the rule named" {
	local id
	id=$(new_sb --deny-out other.sbx.test --allow-out '*.sbx.test' --allow-out api.sbx.test)
	inside "$id" 'curl -sS http://other.sbx.test/ 2>&1; echo "rc=$?"'
	[[ "$output" == *"Could not resolve host: other.sbx.test"*rc=6* ]]
	# The sandbox picks the address itself: the broker reads the Host
	# and refuses by rule 1, before any lookup.
	inside "$id" "curl -sS -w 'code=%{http_code}' --resolve other.sbx.test:80:$OTHER http://other.sbx.test/"
	[[ "$output" == *"refused: other.sbx.test:80 by rule 1 (deny other.sbx.test)"*code=403* ]]
	[[ "$output" != *answer-* ]]
	# Not named by any rule, under the default deny: refused, the default named.
	id=$(new_sb --allow-out api.sbx.test)
	inside "$id" "curl -sS -w 'code=%{http_code}' --resolve other.sbx.test:80:$OTHER http://other.sbx.test/"
	[[ "$output" == *"other.sbx.test:80 by the policy's default (deny)"*code=403* ]]
}

@test "policy: an allowed name that resolves to metadata or loopback is refused; egress_allow does not open them" {
	local id
	id=$(new_sb --allow-out meta.sbx.test --allow-out loop.sbx.test)
	inside "$id" "curl -sS -w ' code=%{http_code}' http://meta.sbx.test/latest/meta-data/"
	[[ "$output" == *"meta.sbx.test at 169.254.169.254:80 is never reachable from a sandbox (link-local"*code=403* ]]
	# (Resolved inside, loopback is the sandbox's own lo; the host's is
	# what a name given to the broker would reach.)
	inside "$id" "curl -sS -w ' code=%{http_code}' --resolve loop.sbx.test:80:$OTHER http://loop.sbx.test/"
	[[ "$output" == *"loop.sbx.test at 127.0.0.1:80 is never reachable from a sandbox (loopback"*code=403* ]]
	[[ "$output" != *answer-* ]]
}

@test "policy: an IP literal is judged by CIDR rules only" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside "$id" "curl -sS -w ' code=%{http_code}' http://$API/"
	[[ "$output" == *"refused: $API:80 by the policy's default (deny)"*code=403* ]]
	id=$(new_sb --allow-out "$API/32")
	inside "$id" "curl -sS http://$API/; $TCP $API 7000; $TCP $OTHER 7000"
	[[ "$output" == *"answer-$API host=$API"* ]]
	[[ "$output" == *"$API:7000 raw-$API"* ]]
	# Raw TCP refused: a reset, at once.
	[[ "$output" == *"$OTHER:7000 reset"* ]]
	# A CIDR deny before a domain allow wins for the name's address.
	id=$(new_sb --deny-out "$API/32" --allow-out api.sbx.test)
	inside "$id" "curl -sS -w ' code=%{http_code}' http://api.sbx.test/"
	[[ "$output" == *"api.sbx.test at $API:80 by rule 1 (deny $API/32)"*code=403* ]]
}

@test "policy: domain fronting goes nowhere the policy refuses" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	# An allowed name, the sandbox's chosen address another: the broker
	# dials what it resolved.
	inside "$id" "curl -sS --resolve api.sbx.test:80:$OTHER http://api.sbx.test/"
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	# SNI of the allowed name, Host of a refused one: it reaches the
	# allowed name's server only.
	inside "$id" "curl -sS -k -H 'Host: other.sbx.test' https://api.sbx.test/"
	[[ "$output" == *"answer-$API host=other.sbx.test"* ]]
	# The refused name as SNI, at the allowed name's address: a TLS alert.
	inside "$id" "curl -sS -k --resolve other.sbx.test:443:$API https://other.sbx.test/ 2>&1; echo rc=\$?"
	[[ "$output" == *"alert access denied"*rc=35* ]]
	# A ClientHello with no SNI (an IP literal): judged by CIDR, refused.
	inside "$id" "curl -sS -k https://$API/ 2>&1; echo rc=\$?"
	[[ "$output" == *"alert access denied"*rc=35* ]]
	# Through the broker as an HTTP proxy (CONNECT): the target is the name.
	inside "$id" "curl -sS -k -x http://10.0.2.3:3128 https://api.sbx.test/ 2>&1"
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	inside "$id" "curl -sS -k -x http://10.0.2.3:3128 https://other.sbx.test/ 2>&1; echo rc=\$?"
	[[ "$output" == *"403"*rc=56* ]]
}

@test "policy: DNS answers only allowed names; TXT, direct resolvers and other UDP are refused" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside "$id" "python3 - <<'PY'
import socket, struct
def q(name, qtype, server=('10.0.2.3', 53)):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
    body = b''.join(bytes([len(l)]) + l.encode() for l in name.split('.')) + b'\\0'
    s.connect(server)
    try:
        s.send(struct.pack('!HHHHHH', 7, 0x100, 1, 0, 0, 0) + body + struct.pack('!HH', qtype, 1))
        r = s.recv(512)
        return 'rcode=%d an=%d' % (r[3] & 15, struct.unpack('!H', r[6:8])[0])
    except OSError as e:
        return 'error %s' % e.strerror
print('A', q('api.sbx.test', 1))
print('AAAA', q('api.sbx.test', 28))
print('TXT', q('api.sbx.test', 16))
print('exfil', q('c2VjcmV0.other.sbx.test', 1))
print('direct', q('api.sbx.test', 1, ('$DNS', 53)))
def qt(name, qtype):
    s = socket.create_connection(('10.0.2.3', 53), timeout=5)
    body = b''.join(bytes([len(l)]) + l.encode() for l in name.split('.')) + b'\\0'
    m = struct.pack('!HHHHHH', 9, 0x100, 1, 0, 0, 0) + body + struct.pack('!HH', qtype, 1)
    out = []
    for _ in range(2):   # two queries on one connection
        s.sendall(struct.pack('!H', len(m)) + m)
        n = struct.unpack('!H', s.recv(2))[0]; r = b''
        while len(r) < n: r += s.recv(n - len(r))
        out.append('rcode=%d an=%d' % (r[3] & 15, struct.unpack('!H', r[6:8])[0]))
    return ' '.join(out)
print('tcp-A', qt('api.sbx.test', 1))
print('tcp-other', qt('other.sbx.test', 1))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.connect(('$API', 443))
try:
    u.send(b'quic'); u.recv(10); print('quic answered')
except OSError as e:
    print('quic', e.strerror)
PY"
	[[ "$output" == *"A rcode=0 an=1"* ]]
	[[ "$output" == *"AAAA rcode=0 an=0"* ]]
	[[ "$output" == *"TXT rcode=5"* ]]
	[[ "$output" == *"exfil rcode=3"* ]]
	[[ "$output" == *"direct error"* ]]
	# DNS over TCP to the resolver: the broker answers it the same way.
	[[ "$output" == *"tcp-A rcode=0 an=1 rcode=0 an=1"* ]]
	[[ "$output" == *"tcp-other rcode=3 an=0 rcode=3 an=0"* ]]
	[[ "$output" == *"quic "* && "$output" != *"quic answered"* ]]
}

@test "policy: root inside cannot route around the broker" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside --root "$id" 'grep CapEff /proc/self/status'
	local eff
	eff=$(awk '{print $2}' <<<"$output")
	[ $(( 0x$eff >> 12 & 3 )) -eq 0 ]
	inside --root "$id" "ip route add $OTHER/32 dev lo 2>&1; ip addr add $OTHER/32 dev lo 2>&1; nft flush ruleset 2>&1; echo end"
	[ "$(grep -c 'Operation not permitted' <<<"$output")" -ge 2 ]
	inside --root "$id" "python3 -c '
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP); print(\"raw ok\")
except OSError as e: print(\"raw\", e.strerror)
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print(\"packet ok\")
except OSError as e: print(\"packet\", e.strerror)
'"
	[[ "$output" == *"raw Operation not permitted"* && "$output" == *"packet Operation not permitted"* ]]
	# The broker's own port, and the upstream resolver, dialled directly.
	inside --root "$id" "$TCP 10.0.2.3 1; $TCP $DNS 53; $TCP 10.0.2.2 80"
	[[ "$output" == *"10.0.2.3:1 reset"* ]]
	[[ "$output" == *"$DNS:53 reset"* ]]
	[[ "$output" == *"10.0.2.2:80 reset"* ]]
	# The broker itself holds no capability.
	local p pid=
	for p in $(cat /sys/fs/cgroup/unified/sbx/"$id"/cgroup.procs 2>/dev/null || cat /sys/fs/cgroup/sbx/"$id"/cgroup.procs); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = sbx-egress ] && pid=$p
	done
	[ -n "$pid" ]
	grep -q '^CapEff:[[:space:]]*0000000000000000' /proc/"$pid"/status
}

@test "policy: malformed rules are refused before anything is made" {
	run -64 in_ns sbx-create --allow-out 'a..b'
	[[ "$output" == *"rule 1 ('a..b')"* ]]
	run -64 in_ns sbx-create --allow-out api.sbx.test --deny-out 10.0.0.1/8
	[[ "$output" == *"rule 2"*"not a CIDR"* ]]
	echo '{"rules": [{"action": "allow", "to": "api.sbx.test", "port": 443}]}' >"$SBX_TEST_DIR/bad.json"
	run -64 in_ns sbx-create --network-policy "$SBX_TEST_DIR/bad.json"
	[[ "$output" == *"unknown key 'port'"* ]]
	run sbx-ls
	assert_success
	[[ "$output" != *a..b* ]]
}

@test "policy: sbx-ctl network allows, then revokes, a name on a running sandbox; an established connection keeps going" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside "$id" 'curl -sS http://other.sbx.test/ 2>&1; echo "rc=$?"'
	[[ "$output" == *rc=6* ]]
	run sbx-ctl network --id "$id" --allow-out api.sbx.test --allow-out other.sbx.test:80
	assert_success
	[ "$(jqo '.ctl.policy.rules[1].to')" = other.sbx.test ]
	run sbx-ls --id "$id"
	[ "$(jqo '.sandbox.network_policy.rules | length')" = 2 ]
	inside "$id" 'curl -sS http://other.sbx.test/'
	[[ "$output" == *"answer-$OTHER host=other.sbx.test"* ]]
	# A connection opened while allowed, used again after the revoke;
	# then a new one.
	sbx-exec --id "$id" --timeout 120s -- python3 -c '
import http.client, os, time
c = http.client.HTTPConnection("other.sbx.test", timeout=30)
c.request("GET", "/"); print("before", c.getresponse().read().decode().strip())
open("/tmp/stage1", "w").close()
for _ in range(600):
    if os.path.exists("/tmp/go"): break
    time.sleep(0.1)
c.request("GET", "/"); print("established", c.getresponse().read().decode().strip())
try:
    n = http.client.HTTPConnection("other.sbx.test", timeout=30); n.request("GET", "/")
    print("new", n.getresponse().read().decode().strip())
except OSError as e:
    print("new refused", e)
' >"$SBX_TEST_DIR/live.json" &
	local bg=$! i
	for i in $(seq 1 600); do
		sbx-exec --id "$id" -- test -e /tmp/stage1 | jq -e '.exec.exit_code == 0' >/dev/null && break
		sleep 0.1
	done
	run sbx-ctl network --id "$id" --allow-out api.sbx.test
	assert_success
	sbx-exec --id "$id" -- touch /tmp/go >/dev/null
	wait "$bg"
	output=$(jq -r .exec.stdout "$SBX_TEST_DIR/live.json")
	echo "$output"
	[[ "$output" == *"before answer-$OTHER"* ]]
	[[ "$output" == *"established answer-$OTHER"* ]]
	[[ "$output" == *"new refused"* ]]
	# A paused sandbox takes an update too; it holds when it runs again.
	run sbx-ctl pause --id "$id"
	assert_success
	run sbx-ctl network --id "$id" --allow-out api.sbx.test --allow-out other.sbx.test
	assert_success
	run sbx-ctl resume --id "$id"
	assert_success
	inside "$id" 'curl -sS http://other.sbx.test/'
	[[ "$output" == *"answer-$OTHER host=other.sbx.test"* ]]
	# A sandbox made without a policy has no broker to update.
	id=$(new_sb)
	run -69 sbx-ctl network --id "$id" --allow-out api.sbx.test
	[[ "$output" == *"created without a network policy"* ]]
}

@test "policy through sbx-serve: E2B's network on create, and PUT /sandboxes/{id}/network" {
	# sbx-serve (and so the brokers it starts) in the test's namespace.
	printf '#!/bin/sh\nexec nsenter --net=%s sbx-serve "$@"\n' "$NS" >"$SBX_TEST_DIR/serve-in-ns"
	chmod +x "$SBX_TEST_DIR/serve-in-ns"
	SERVE_BIN=$SBX_TEST_DIR/serve-in-ns serve_start eg
	napi() {
		in_ns curl -sS -X "$1" "$SERVE_URL$2" -H "X-API-Key: $SERVE_KEY" \
			-H 'Content-Type: application/json' -w '\nHTTP %{http_code}\n' "${@:3}"
	}
	run napi POST /v2/sandboxes -d '{"templateID":"base","network":{"allowOut":["api.sbx.test"],"denyOut":["0.0.0.0/0"]}}'
	[[ "$output" == *"HTTP 201"* ]]
	local id
	id=$(head -1 <<<"$output" | jq -r .sandboxID)
	run sbx-ls --id "$id"
	assert_success
	[ "$(jqo -c .sandbox.network_policy)" = '{"rules":[{"action":"allow","to":"api.sbx.test"}],"default":"deny"}' ]
	inside "$id" "curl -sS http://api.sbx.test/; curl -sS --resolve other.sbx.test:80:$OTHER http://other.sbx.test/"
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	[[ "$output" == *"other.sbx.test:80 by the policy's default (deny)"* ]]
	# updateNetwork replaces the whole configuration.
	run napi PUT "/sandboxes/$id/network" -d '{"allowOut":["other.sbx.test"],"denyOut":["0.0.0.0/0"]}'
	[[ "$output" == *"HTTP 204"* ]]
	inside "$id" "curl -sS http://other.sbx.test/; curl -sS --resolve api.sbx.test:80:$API http://api.sbx.test/"
	[[ "$output" == *"answer-$OTHER host=other.sbx.test"* ]]
	[[ "$output" == *"api.sbx.test:80 by the policy's default (deny)"* ]]
	run napi PUT "/sandboxes/$id/network" -d '{"denyOut":["evil.example"]}'
	[[ "$output" == *"IPs and CIDRs only"*"HTTP 400"* ]]
	run napi PUT "/sandboxes/$id/network" -d '{"rules":[{"domain":"api.sbx.test"}]}'
	[[ "$output" == *"network.rules"*"HTTP 400"* ]]
}

@test "egress through the broker keeps the sandbox awake: a job no exec waits for stays up while it talks" {
	local id silent
	id=$(new_sb --allow-out api.sbx.test --timeout 3s --on-timeout pause --auto-resume)
	# A job the exec leaves behind keeps nothing awake by itself (sbx(7),
	# IDLE); the bytes the broker relays for it do.
	inside "$id" 'while :; do curl -sS http://api.sbx.test/ >/dev/null 2>&1; sleep 0.3; done >/dev/null 2>&1 &'
	# Made after the job began, with the same timer: idle for less time.
	silent=$(new_sb --allow-out api.sbx.test --timeout 3s --on-timeout pause --auto-resume)
	local i
	for i in $(seq 1 600); do
		[ "$(sbx-ls --id "$silent" | jq -r .sandbox.state)" = paused ] && break
		sleep 0.1
	done
	[ "$(sbx-ls --id "$silent" | jq -r .sandbox.state)" = paused ]
	run sbx-ls --id "$id"
	[ "$(jqo .sandbox.state)" = running ]
	[ "$(jqo .sandbox.awake_by)" = egress ]
	sbx-ctl kill --id "$id" >/dev/null
	sbx-ctl kill --id "$silent" >/dev/null
}

# The backend's egress keys are read by one function (config.c) for local
# and docker: a resolver that is not an IPv4 address, or an allow entry
# with host bits, is a configuration error that names the key.
@test "policy: a profile's egress_resolver or egress_allow that does not parse is a configuration error" {
	local cfg=$BATS_TEST_TMPDIR/bad.json
	jq '.profiles.default += {"egress_resolver": "resolver.example"}' "$SBX_CONFIG" >"$cfg"
	SBX_CONFIG=$cfg run --separate-stderr sbx-create --allow-internet
	[ "$status" -eq 78 ] || { echo "status $status: $stderr"; false; }
	[[ "$stderr" == *"egress_resolver must be an IPv4 address"* ]]
	jq '.profiles.default += {"egress_allow": ["10.98.0.1/16"]}' "$SBX_CONFIG" >"$cfg"
	SBX_CONFIG=$cfg run --separate-stderr sbx-create --allow-internet
	[ "$status" -eq 78 ] || { echo "status $status: $stderr"; false; }
	[[ "$stderr" == *"egress_allow[0] is not a CIDR"* ]]
}

# The issue's real clients over HTTPS to an allowed name, trusting the test
# CA as a user would (pip's --cert, git's GIT_SSL_CAINFO): pip installs a
# wheel from an index, git clones over dumb HTTP; the same from a name no
# rule allows fails.
@test "policy: pip installs from an allowed index over HTTPS and git clones from an allowed name; a refused name fails both" {
	command -v git >/dev/null || skip "git is not installed (tools/deps)"
	/usr/bin/python3 -m pip --version >/dev/null 2>&1 || skip "python3-pip is not installed (tools/deps)"
	local id ca
	id=$(new_sb --allow-out api.sbx.test)
	ca=$(cat "$SBX_TEST_DIR/ca/ca.pem")
	inside "$id" "printf '%s\n' '$ca' >/tmp/ca.pem && cd /tmp &&
		/usr/bin/python3 -m pip install --quiet --no-cache-dir --disable-pip-version-check --target /tmp/site \
		--cert /tmp/ca.pem --index-url https://api.sbx.test/r/simple/ sbxdemo &&
		PYTHONPATH=/tmp/site /usr/bin/python3 -c 'import sbxdemo; print(sbxdemo.VALUE)' &&
		GIT_SSL_CAINFO=/tmp/ca.pem git clone -q https://api.sbx.test/r/repo.git /tmp/repo && cat /tmp/repo/README"
	[[ "$output" == *"sbx-egress-ok"* ]]
	[[ "$output" == *"sbx-git-ok"* ]]
	run sbx-exec --id "$id" --timeout 60s -- sh -c "printf '%s\n' '$ca' >/tmp/ca.pem && cd /tmp &&
		/usr/bin/python3 -m pip download --quiet --no-cache-dir --disable-pip-version-check --retries 0 --timeout 5 \
		--cert /tmp/ca.pem --index-url https://other.sbx.test/r/simple/ -d /tmp/dl sbxdemo"
	[ "$(jqo .exec.exit_code)" != 0 ]
	run sbx-exec --id "$id" --timeout 60s -- sh -c "printf '%s\n' '$ca' >/tmp/ca.pem &&
		GIT_SSL_CAINFO=/tmp/ca.pem git clone -q https://other.sbx.test/r/repo.git /tmp/repo2"
	[ "$(jqo .exec.exit_code)" != 0 ]
	[[ "$(jqo .exec.stderr)" == *"other.sbx.test"* ]]
}
