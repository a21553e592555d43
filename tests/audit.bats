#!/usr/bin/env bats
# suite: local docker
# The session record (issue 29 part 3; common/events/audit.h, sbx-audit(1))
# against a real redis-server and the real backend, with the egress broker
# of egress-conformance.bats's namespace: a session's exec, process, file
# put/get and egress connection each leave one record with their fields;
# the chain's check passes and then fails after redis-cli removes or
# alters a record; --env values never reach Redis; the record outlives
# the sandbox (sbx-ctl kill, sbx-reap); retention by length.

load lib/helpers
load lib/netns
bats_require_minimum_version 1.5.0

API=10.98.0.1
DNS=10.98.0.53

setup_file() {
	sbx_setup_file
	netns_setup
	in_ns ip addr add "$API/32" dev lo
	in_ns ip addr add "$DNS/32" dev lo
	in_ns setsid python3 "$BATS_TEST_DIRNAME/lib/dns-server.py" "$SBX_TEST_DIR/dns.pid" "$DNS" \
		"api.sbx.test=$API" >/dev/null 2>&1 3>&- &
	local c="$SBX_TEST_DIR/ca"
	mkdir -p "$c"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=api.sbx.test \
		-keyout "$c/srv.key" -out "$c/srv.pem" 2>/dev/null
	in_ns setsid python3 "$BATS_TEST_DIRNAME/lib/egress-servers.py" "$SBX_TEST_DIR/srv.pid" \
		"$c/srv.pem" "$c/srv.key" "$API" >/dev/null 2>&1 3>&- &
	for _ in $(seq 1 400); do [ -s "$SBX_TEST_DIR/srv.pid" ] && [ -s "$SBX_TEST_DIR/dns.pid" ] && break; sleep 0.05; done
	[ -s "$SBX_TEST_DIR/srv.pid" ]
	jq --arg dns "$DNS" '.profiles.default += {"egress_allow": ["10.98.0.0/16"], "egress_resolver": $dns}' \
		"$SBX_CONFIG" >"$SBX_CONFIG.new" && mv "$SBX_CONFIG.new" "$SBX_CONFIG"
}

teardown_file() {
	if [ -n "${NS:-}" ]; then
		in_ns sbx-ls --all 2>/dev/null | in_ns sbx-ctl kill >/dev/null 2>&1 || true
		netns_teardown dns.pid srv.pid
	fi
	sbx_teardown_file
}

# A profile of the default's with these audit keys ($1: a JSON object).
profile() {
	jq --argjson a "$1" '.profiles.aud = (.profiles.default + $a)' "$SBX_CONFIG" >"$SBX_CONFIG.new" &&
		mv "$SBX_CONFIG.new" "$SBX_CONFIG"
}

# A session sandbox of tenant $1 allowed out to api.sbx.test.
session_sb() {
	in_ns sbx-create "${SBX_TEST_CREATE_ARGS[@]}" --tenant "$1" --session s1 --allow-out api.sbx.test "${@:2}" |
		jq -r .sandbox.id
}

akey() { printf 'sbx:{%s}:audit' "$1"; }

# The broker's records reach the stream when a program with Redis next
# acts on the sandbox: its batch is written within 200 ms.
settle() { sleep 0.5; }

@test "audit: exec, process, file put and get, and an egress connection each leave one record with their fields; verify passes" {
	local id
	id=$(session_sb rec)
	[ -n "$id" ]
	run in_ns sbx-exec --id "$id" -e TOKEN=hunter2-sekrit -- sh -c 'busybox wget -qO- http://api.sbx.test/v1/models?key=abc'
	assert_success
	# (lib/egress-servers.py, as h-l7 changed it: a /v1/ path answers what it saw)
	[[ "$(jqo .exec.stdout)" == *"v1 GET /v1/models?key=abc ok"* ]]
	echo hello >"$BATS_TEST_TMPDIR/f"
	in_ns sbx-fs --id "$id" put "$BATS_TEST_TMPDIR/f" /tmp/f >/dev/null
	in_ns sbx-fs --id "$id" get /tmp/f "$BATS_TEST_TMPDIR/g" >/dev/null
	in_ns sbx-proc start --id "$id" -- sleep 1 >/dev/null
	settle
	in_ns sbx-exec --id "$id" -- true >/dev/null

	run sbx-audit --tenant rec --kind exec
	assert_success
	[ "$(jq -s 'length' <<<"$output")" = 2 ]
	e=$(jq -sc '.[0]' <<<"$output")
	[ "$(jq -r .session <<<"$e")" = s1 ]
	[ "$(jq -r .sandbox <<<"$e")" = "$id" ]
	[ "$(jq -r '.argv[0]' <<<"$e")" = sh ]
	[ "$(jq -r '.env | join(",")' <<<"$e")" = TOKEN ]
	[ "$(jq -r .user <<<"$e")" = user ]
	[ "$(jq -r .exit_code <<<"$e")" = 0 ]
	jq -e '.duration_ms >= 0 and (.time | test("Z$"))' <<<"$e"

	run sbx-audit --tenant rec --kind file
	[ "$(jq -sc '[.[] | [.op, .path, .bytes]]' <<<"$output")" = '[["put","/tmp/f",6],["get","/tmp/f",6]]' ]
	run sbx-audit --tenant rec --kind process
	# (Its end too, when it ended before the last take: the next test's.)
	[ "$(jq -sc '[.[] | select(.event == "start") | [.event, .argv[0], .user]]' <<<"$output")" = '[["start","sleep","user"]]' ]

	run sbx-audit --tenant rec --kind egress
	assert_success
	[ "$(jq -s 'length' <<<"$output")" = 1 ]
	g=$(jq -sc '.[0]' <<<"$output")
	[ "$(jq -r .name <<<"$g")" = api.sbx.test ]
	[ "$(jq -r .address <<<"$g")" = "$API" ]
	[ "$(jq -r .port <<<"$g")" = 80 ]
	[ "$(jq -r .verdict <<<"$g")" = allow ]
	[[ "$(jq -r .rule <<<"$g")" == *"rule 1"* ]]
	jq -e '.bytes_out > 0 and .bytes_in > 0 and .duration_ms >= 0' <<<"$g"
	[ "$(jq -c '.http' <<<"$g")" = '[{"method":"GET","host":"api.sbx.test","path":"/v1/models?key=","status":200}]' ]
	[ "$(jq -r .by <<<"$g")" = sbx-egress ]

	run sbx-audit --tenant rec --kind lifecycle
	[[ "$(jq -r .type <<<"$output")" == *resolved* ]]
	run sbx-audit verify --tenant rec
	assert_success
	jq -e '.ok and .records >= 6' <<<"$output"
}

@test "audit: a detached process's end (exit, signal, duration) reaches the stream from its supervisor's spool" {
	local id
	id=$(session_sb pend)
	# (Each start takes the spool after it: the one that ends by itself
	# starts last, so neither end can be taken by a start.)
	in_ns sbx-proc start --id "$id" --tag kl -- sleep 60 >/dev/null
	in_ns sbx-proc start --id "$id" --tag ex -- sh -c 'sleep 1; exit 3' >/dev/null
	in_ns sbx-proc kill --id "$id" --tag kl --signal TERM >/dev/null
	in_ns sbx-proc output --id "$id" --tag ex --follow >/dev/null
	# No program with Redis has acted since the ends: nothing yet.
	run sbx-audit --tenant pend --kind process
	[ "$(jq -sc '[.[] | select(.event == "end")] | length' <<<"$output")" = 0 ]
	# The next one takes the spool.
	in_ns sbx-exec --id "$id" -- true >/dev/null
	run sbx-audit --tenant pend --kind process
	assert_success
	local starts ends
	starts=$(jq -sc '[.[] | select(.event == "start") | .pid] | sort' <<<"$output")
	ends=$(jq -sc '[.[] | select(.event == "end") | .pid] | sort' <<<"$output")
	[ "$starts" = "$ends" ]
	e=$(jq -sc '[.[] | select(.event == "end")] | sort_by(.exit_code)' <<<"$output")
	[ "$(jq -c '[.[] | [.exit_code, .signal, .timed_out, .by, .session]]' <<<"$e")" = \
		'[[-1,15,false,"sbx-procd","s1"],[3,0,false,"sbx-procd","s1"]]' ]
	jq -e '.[1].duration_ms >= 1000 and .[1].duration_ms < 10000' <<<"$e"
	# Taken once: another take writes nothing again.
	in_ns sbx-exec --id "$id" -- true >/dev/null
	[ "$(sbx-audit --tenant pend --kind process | jq -s '[.[] | select(.event == "end")] | length')" = 2 ]
	run sbx-audit verify --tenant pend
	assert_success
}

@test "audit: a process that ends after its sandbox's last program is recorded by the kill" {
	local id
	id=$(session_sb pend2)
	in_ns sbx-proc start --id "$id" --tag ex -- sh -c 'exit 7' >/dev/null
	in_ns sbx-proc output --id "$id" --tag ex --follow >/dev/null
	in_ns sbx-ctl kill --id "$id" >/dev/null
	run sbx-audit --tenant pend2 --kind process
	[ "$(jq -sc '[.[] | select(.event == "end") | .exit_code]' <<<"$output")" = '[7]' ]
}

@test "audit: verify fails after a record is removed (XDEL) or altered (re-added with a changed field)" {
	local id
	id=$(session_sb chain)
	for i in 1 2 3; do in_ns sbx-exec --id "$id" -- echo "$i" >/dev/null; done
	run sbx-audit verify --tenant chain
	assert_success
	local k mid
	k=$(akey chain)
	# Removal: the middle record.
	mid=$(rcli XRANGE "$k" - + | jq -Rrs 'split("\n") | .[]' | grep -E '^[0-9]+-[0-9]+$' | sed -n 3p)
	[ -n "$mid" ]
	rcli XDEL "$k" "$mid" >/dev/null
	run sbx-audit verify --tenant chain
	assert_failure 1
	[[ "$output" == *"removed or altered"* ]]

	# Alteration: the last record taken out and added again with its
	# hash and prev but a changed exit code.
	id2=$(session_sb chain2)
	in_ns sbx-exec --id "$id2" -- sh -c 'exit 3' >/dev/null || true
	run sbx-audit verify --tenant chain2
	assert_success
	k=$(akey chain2)
	last=$(sbx-audit --tenant chain2 --kind exec | jq -r .id)
	# (redis-cli's EVAL: the same fields, exit_code 3 made 0, at the end.)
	rcli EVAL "local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])[1][2]
		redis.call('XDEL', KEYS[1], ARGV[1])
		for i = 1, #e, 2 do
			if e[i] == 'data' then e[i + 1] = string.gsub(e[i + 1], '\"exit_code\":3', '\"exit_code\":0') end
		end
		return redis.call('XADD', KEYS[1], '*', unpack(e))" 1 "$k" "$last" >/dev/null
	[ "$(sbx-audit --tenant chain2 --kind exec | jq -r .exit_code)" = 0 ]
	run sbx-audit verify --tenant chain2
	assert_failure 1
	[[ "$output" == *"altered"* ]]
}

@test "audit: --env values never reach Redis" {
	local id
	id=$(session_sb envs)
	in_ns sbx-exec --id "$id" -e API_TOKEN=s3cr3t-v4lue-xyz -- sh -c 'busybox wget -qO- http://api.sbx.test/' >/dev/null
	in_ns sbx-proc start --id "$id" -e P_TOKEN=s3cr3t-v4lue-xyz -- sleep 1 >/dev/null
	settle
	in_ns sbx-ctl kill --id "$id" >/dev/null
	run sbx-audit --tenant envs
	[[ "$output" == *API_TOKEN* ]]
	rcli SAVE >/dev/null
	local dump
	dump=$(rcli CONFIG GET dir | tail -1)/$(rcli CONFIG GET dbfilename | tail -1)
	[ -s "$dump" ]
	run ! grep -a s3cr3t-v4lue-xyz "$dump"
	for k in $(rcli KEYS '*'); do
		case $(rcli TYPE "$k") in
		stream) run ! grep -a s3cr3t < <(rcli XRANGE "$k" - +) ;;
		string) run ! grep -a s3cr3t < <(rcli GET "$k") ;;
		esac
	done
}

@test "audit: the record survives sbx-ctl kill and sbx-reap, with the broker's last connection" {
	local id
	id=$(session_sb survive)
	in_ns sbx-exec --id "$id" -- sh -c 'busybox wget -qO- http://api.sbx.test/' >/dev/null
	settle
	# Taken by the kill, before the sandbox's folder goes.
	in_ns sbx-ctl kill --id "$id" >/dev/null
	run sbx-audit --tenant survive --kind egress
	[ "$(jq -s length <<<"$output")" = 1 ]
	in_ns sbx-reap --all-tenants >/dev/null 2>&1 || true
	run sbx-audit --tenant survive
	[ "$(jq -s '[.[] | .kind] | unique | join(",")' <<<"$output" | tr -d '"')" = "egress,exec,lifecycle" ]
	run sbx-audit --tenant survive --kind lifecycle
	[[ "$output" == *'"killed"'* ]]
	run sbx-audit verify --tenant survive
	assert_success
}

@test "audit: retention by length keeps the last audit_maxlen records, and the chain still verifies" {
	profile '{"audit_maxlen": 3}'
	local id
	id=$(SBX_PROFILE=aud session_sb keep)
	for i in 1 2 3 4 5; do in_ns sbx-exec --profile aud --id "$id" -- echo "$i" >/dev/null; done
	[ "$(rcli XLEN "$(akey keep)")" = 3 ]
	run sbx-audit --tenant keep --kind exec
	[ "$(jq -sc '[.[] | .argv[1]]' <<<"$output")" = '["3","4","5"]' ]
	run sbx-audit verify --tenant keep
	assert_success
}

@test "audit: retention by age trims records older than audit_max_age" {
	local k
	k=$(akey aged)
	# An old record (an explicit id an hour ago), then a fresh append.
	rcli XADD "$k" "$(( $(date +%s) * 1000 - 3600000 ))-0" v 1 kind exec >/dev/null
	profile '{"audit_max_age": "10m"}'
	local id
	id=$(SBX_PROFILE=aud session_sb aged)
	in_ns sbx-exec --profile aud --id "$id" -- true >/dev/null
	run sbx-audit --tenant aged
	run ! grep -q '"v":"1","kind":"exec"' <<<"$output"
	[ "$(rcli XRANGE "$k" - + COUNT 1 | head -1 | cut -d- -f1)" -gt $(( $(date +%s) * 1000 - 600000 )) ]
}

# Profiles for Redis away: `small` (a 4 KiB spool: audit_maxlen 8 x 512
# bytes) with its mode, `dead` the same backend with a Redis nobody
# listens on.
away_profiles() {
	jq --arg m "$1" '.profiles.small = (.profiles.default + {"audit_maxlen": 8, "audit": $m}) |
		.profiles.dead = (.profiles.default + {"redis_url": "unix:///nonexistent/redis.sock"})' \
		"$SBX_CONFIG" >"$SBX_CONFIG.new" && mv "$SBX_CONFIG.new" "$SBX_CONFIG"
}

# N connections from inside sandbox $1 while Redis is away: "ok" or
# "refused" per line.
conns_away() {
	in_ns sbx-exec --profile dead --id "$1" --timeout 120s -- sh -c \
		"for i in \$(seq $2); do if busybox wget -qO- http://api.sbx.test/ >/dev/null 2>&1; then echo ok; else echo refused; fi; done" |
		jq -r .exec.stdout
}

@test "audit: Redis away, best-effort (the default): every connection goes on; what the spool cannot hold is dropped and counted" {
	away_profiles best-effort
	local id out
	id=$(SBX_PROFILE=small session_sb away)
	out=$(conns_away "$id" 40)
	[ "$(grep -c ok <<<"$out")" = 40 ]
	# Redis back: a program that acts on the sandbox takes the spool, and
	# the broker then says what it dropped.
	settle
	in_ns sbx-exec --id "$id" -- true >/dev/null
	settle
	in_ns sbx-exec --id "$id" -- true >/dev/null
	kept=$(sbx-audit --tenant away --kind egress | jq -s length)
	dropped=$(sbx-audit --tenant away --kind dropped | jq -s 'map(.count) | add')
	[ "$dropped" -gt 0 ]
	[ "$kept" -gt 0 ]
	[ $((kept + dropped)) = 40 ]
	run sbx-audit verify --tenant away
	assert_success
}

@test "audit: Redis away, audit: required: a connection whose record cannot be kept is refused, and allowed again once the spool is taken" {
	away_profiles required
	local id out
	id=$(SBX_PROFILE=small session_sb req)
	out=$(conns_away "$id" 20)
	ok=$(grep -c ok <<<"$out")
	[ "$ok" -gt 0 ]
	[ "$(grep -c refused <<<"$out")" -gt 0 ]
	# Nothing was dropped: every connection that went has its record, and
	# the refusals are counted in `refused` records (their own records
	# could not be kept: the count rides in the bound's slack).
	settle
	in_ns sbx-exec --id "$id" -- true >/dev/null
	settle
	in_ns sbx-exec --id "$id" -- true >/dev/null
	[ "$(sbx-audit --tenant req --kind egress | jq -s length)" = "$ok" ]
	run sbx-audit --tenant req --kind dropped
	[ -z "$output" ]
	[ "$(sbx-audit --tenant req --kind refused | jq -s 'map(.count) | add')" = "$(grep -c refused <<<"$out")" ]
	[ "$(sbx-audit --tenant req --kind refused | jq -r .by | sort -u)" = sbx-egress ]
	settle
	run in_ns sbx-exec --id "$id" -- sh -c 'busybox wget -qO- http://api.sbx.test/'
	[[ "$(jqo .exec.stdout)" == *"answer-$API"* ]]
}

@test "audit: --session, --since (a time, a duration ago, an id) and --follow" {
	local a b t0 first
	a=$(session_sb read)
	b=$(in_ns sbx-create "${SBX_TEST_CREATE_ARGS[@]}" --tenant read --session s2 | jq -r .sandbox.id)
	in_ns sbx-exec --id "$a" -- echo one >/dev/null
	sleep 1.1
	t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	sleep 1.1
	in_ns sbx-exec --id "$b" -- echo two >/dev/null
	run sbx-audit --tenant read --session s2 --kind exec
	[ "$(jq -sc '[.[] | .argv[1]]' <<<"$output")" = '["two"]' ]
	run sbx-audit --tenant read --kind exec --since "$t0"
	[ "$(jq -sc '[.[] | .argv[1]]' <<<"$output")" = '["two"]' ]
	run sbx-audit --tenant read --kind exec --since 1h
	[ "$(jq -sc '[.[] | .argv[1]]' <<<"$output")" = '["one","two"]' ]
	first=$(sbx-audit --tenant read --kind exec | head -1 | jq -r .id)
	run sbx-audit --tenant read --kind exec --since "$first"
	[ "$(jq -sc '[.[] | .argv[1]]' <<<"$output")" = '["two"]' ]
	run sbx-audit --tenant read --since yesterday-ish
	assert_failure 64
	# --follow: a record appended after the reader started.
	sbx-audit --tenant read --kind exec --since "$t0" --follow >"$BATS_TEST_TMPDIR/f" 2>&1 &
	local pid=$!
	in_ns sbx-exec --id "$a" -- echo three >/dev/null
	for _ in $(seq 1 100); do grep -q three "$BATS_TEST_TMPDIR/f" && break; sleep 0.05; done
	kill "$pid"
	wait "$pid" || true
	[ "$(jq -sc '[.[] | .argv[1]]' <"$BATS_TEST_TMPDIR/f")" = '["two","three"]' ]
}
