#!/usr/bin/env bats
# tests/docs.bats - every documented example is a test.
#
# tools/doc-examples turns the README's `sh` and `cron` blocks, and each man
# page's EXAMPLES, into a script; the script runs exactly as printed, in
# document order, with `set -eo pipefail`.  A run fails when a command fails,
# when any output is an error document, or when a command run in a sandbox
# exits non-zero.  A crontab line is checked for syntax and its command run
# once.
#
# The README is followed as a new user would, in a mount namespace of its
# own: empty /tmp and /var (so its redis-server socket, the default state
# dir /var/lib/sbx and /var/log are private), none of the suite's SBX_*
# settings.  The man pages run against this file's redis and state dir, in a
# scratch folder that holds what their examples name (./skills/pdf,
# ./attachments, ./backup-session.sh, the source tree's examples/ and
# tests/), also with an empty /var.

load lib/helpers

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

# Shell functions the generated scripts call; exported into the runner.
cron_line() { # cron_line 'MIN HOUR DOM MON DOW COMMAND'
	local line=$1 f i
	read -r -a f <<<"$line"
	local -a lo=(0 0 1 1 0) hi=(59 23 31 12 7)
	[ "${#f[@]}" -ge 6 ] || { echo "cron: fewer than six fields: $line" >&2; return 1; }
	for i in 0 1 2 3 4; do
		cron_field "${f[$i]}" "${lo[$i]}" "${hi[$i]}" ||
			{ echo "cron: field $((i + 1)) '${f[$i]}' is not valid: $line" >&2; return 1; }
	done
	# The command: everything after the fifth field, as cron's sh runs it.
	sh -c "$(sed -E 's/^[[:space:]]*([^[:space:]]+[[:space:]]+){5}//' <<<"$line")"
}
cron_field() { # FIELD LO HI: a list of *, N, N-M, each with an optional /STEP
	local part a b parts
	IFS=, read -r -a parts <<<"$1"
	for part in "${parts[@]}"; do
		[[ "$part" =~ ^(\*|([0-9]+)(-([0-9]+))?)(/([1-9][0-9]*))?$ ]] || return 1
		a=${BASH_REMATCH[2]} b=${BASH_REMATCH[4]}
		if [ -n "$a" ]; then
			[ "$a" -ge "$2" ] && [ "$a" -le "$3" ] || return 1
		fi
		if [ -n "$b" ]; then
			[ "$b" -ge "$a" ] && [ "$b" -le "$3" ] || return 1
		fi
	done
}

# Run a generated script in a private mount namespace with an empty /var
# (and an empty /tmp when $1 is "fresh"); prints everything it printed.
# Whatever the script leaves running is killed afterwards, failed or not.
run_examples() { # run_examples fresh|suite SCRIPT
	local mode=$1 script=$2
	unshare -m --propagation private bash -c '
		set -u
		mode=$1 script=$2
		mount -t tmpfs sbx-doc-var /var || exit 90
		mkdir -p /var/log /var/tmp /var/lib/sbx /var/lib/node_exporter
		if [ "$mode" = fresh ]; then
			exec 3<"$script"
			# An empty /tmp, but for the source tree and the build when
			# they live below it (a clone in /tmp): bound back in place.
			here=$PWD
			mkdir /var/.tmp && mount --bind /tmp /var/.tmp || exit 90
			mount -t tmpfs sbx-doc-tmp /tmp || exit 90
			for keep in "$here" "$BUILD"; do
				case $keep in
				/tmp/*)
					mkdir -p "$keep" && mount --bind "/var/.tmp/${keep#/tmp/}" "$keep" || exit 90 ;;
				esac
			done
			cd "$here" || exit 90
			unset SBX_STATE_DIR SBX_CONFIG SBX_REDIS_URL SBX_BACKEND SBX_PROFILE REDIS_SOCK
		else
			exec 3<"$script"
		fi
		bash -c "$(declare -f cron_line cron_field); . /dev/fd/3" 3<&3
		rc=$?
		[ "$mode" = fresh ] || exit $rc
		# What a failed README run leaves behind: its sandboxes, its redis.
		if [ -S /tmp/sbx-redis.sock ]; then
			SBX_REDIS_URL=unix:///tmp/sbx-redis.sock sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1
			redis-cli -s /tmp/sbx-redis.sock shutdown nosave >/dev/null 2>&1
		fi
		exit $rc
	' run_examples "$mode" "$script"
}
export -f cron_line cron_field

# The output of a run holds no error document and no failed command.
assert_clean_output() {
	if printf '%s\n' "$output" | grep -E '"error": ?\{|"exit_code": ?[1-9]'; then
		echo "an example failed (above)" >&2
		return 1
	fi
}

@test "tools/doc-examples takes sh and cron blocks and leaves sample output out" {
	local md=$BATS_TEST_TMPDIR/t.md
	printf '%s\n' 'text' '```sh' 'echo one \' '  two' '```' '```json' '{"x":1}' '```' \
		'```cron' '*/5 * * * *  echo it'"'"'s' '```' >"$md"
	run "$SBX_TOP/tools/doc-examples" "$md"
	assert_success
	assert_line 'echo one \'
	assert_line '  two'
	assert_line "cron_line '*/5 * * * *  echo it'\\''s'"
	refute_line '{"x":1}'
}

@test "cron_line refuses a bad schedule and runs the command of a good one" {
	run cron_line '*/5 * * * echo too-few'
	assert_failure
	run cron_line '61 * * * * echo bad-minute'
	assert_failure
	run cron_line '0 0 * 13 * echo bad-month'
	assert_failure
	run cron_line '*/5 1-3,7 * * 1-5  echo ran >"'"$BATS_TEST_TMPDIR"'/cron.out"'
	assert_success
	[ "$(cat "$BATS_TEST_TMPDIR/cron.out")" = ran ]
}

@test "the README's pipeline, turn, reaper and cron line run as printed" {
	local script=$BATS_TEST_TMPDIR/readme.sh
	"$SBX_TOP/tools/doc-examples" "$SBX_TOP/README.md" >"$script"
	grep -q 'redis-server' "$script"          # the by-hand section is there
	grep -q '^cron_line ' "$script"
	cd "$SBX_TOP"
	run run_examples fresh "$script"
	echo "$output"
	assert_success
	assert_clean_output
	# What the README says the user will see.
	assert_output --partial '"skill":"csvstat","op":"install"'
	assert_line --regexp '^created sb-'
	assert_output --partial '"count": 2, "min": 4.0, "max": 12.0'
	assert_line '{"seen":1,"kept":["bound"],"deleted":[]}'
}

@test "the README's redis block leaves redis answering when redis-server daemonizes before it listens" {
	# redis-server --daemonize yes forks before it opens its socket; here
	# the socket comes a second late, so a block that does not wait for it
	# fails the sbx-ls right after it.
	local script=$BATS_TEST_TMPDIR/redis-block.sh
	{
		echo 'redis-server() {'
		echo '	local a=("$@") i'
		echo '	for i in "${!a[@]}"; do [ "${a[$i]}" = --daemonize ] && a[$((i + 1))]=no; done'
		echo '	( sleep 1; exec redis-server "${a[@]}" ) >/dev/null 2>&1 &'
		echo '}'
		"$SBX_TOP/tools/doc-examples" "$SBX_TOP/README.md" | awk '/^# --- /{n++} n==1'
		echo 'sbx-ls --usage --tenant acme'
	} >"$script"
	grep -q '^redis-server --port 0 .*--daemonize yes' "$script"
	cd "$SBX_TOP"
	run run_examples fresh "$script"
	echo "$output"
	assert_success
	assert_clean_output
}

# A scratch folder holding what the man pages' examples name.
man_fixture() {
	local d=$BATS_TEST_TMPDIR/man
	mkdir -p "$d/skills/pdf" "$d/attachments"
	printf '#!/bin/sh\necho pdf installed\n' >"$d/skills/pdf/install.sh"
	chmod 755 "$d/skills/pdf/install.sh"
	printf 'a\nb\n' >"$d/attachments/a.txt"
	printf '#!/bin/sh\necho backed up\n' >"$d/backup-session.sh"
	chmod 755 "$d/backup-session.sh"
	ln -s "$SBX_TOP/examples" "$d/examples"
	ln -s "$SBX_TOP/tests" "$d/tests"
	echo "$d"
}

run_man_page() { # run_man_page NAME [TEMPLATE]: TEMPLATE (busybox) imported first
	local page=$SBX_TOP/man/$1.scd script=$BATS_TEST_TMPDIR/$1.sh
	# A state dir per page: templates and snapshots one page makes do not
	# meet another's (both sbx-snap(1) and sbx-tpl(1) import "busybox").
	export SBX_STATE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$SBX_STATE_DIR"
	if [ "${2:-}" = busybox ] && ! sbx-tpl show busybox >/dev/null 2>&1; then
		"$SBX_TOP/tests/lib/rootfs.sh" "$BATS_TEST_TMPDIR/rootfs.tar" >/dev/null
		sbx-tpl import busybox --file "$BATS_TEST_TMPDIR/rootfs.tar" >/dev/null
	fi
	"$SBX_TOP/tools/doc-examples" "$page" >"$script"
	[ "$(grep -cv -e '^set -eo pipefail$' -e '^#' -e '^$' "$script")" -gt 0 ] ||
		{ echo "$1 has no examples" >&2; return 1; }
	cd "$(man_fixture)"
	SB=$(sbx_new_id)
	export SB
	run run_examples suite "$script"
	echo "$output"
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	assert_success
	assert_clean_output
}

@test "sbx(1) EXAMPLES run" { run_man_page sbx.1; }
@test "sbx-create(1) EXAMPLES run" { run_man_page sbx-create.1; }
@test "sbx-exec(1) EXAMPLES run" { run_man_page sbx-exec.1; }
@test "sbx-fs(1) EXAMPLES run" { run_man_page sbx-fs.1; }
@test "sbx-ctl(1) EXAMPLES run" { run_man_page sbx-ctl.1; }
@test "sbx-ls(1) EXAMPLES run" { run_man_page sbx-ls.1; }
@test "sbx-lease(1) EXAMPLES run" { run_man_page sbx-lease.1; }
@test "sbx-events(1) EXAMPLES run" { run_man_page sbx-events.1; }
@test "sbx-audit(1) EXAMPLES run" { run_man_page sbx-audit.1; }
@test "sbx-snap(1) EXAMPLES run" { run_man_page sbx-snap.1 busybox; }
@test "sbx-tpl(1) EXAMPLES run" { run_man_page sbx-tpl.1; }
@test "sbx-reap(1) EXAMPLES run" { run_man_page sbx-reap.1; }
@test "sbx-serve(1) EXAMPLES run" { run_man_page sbx-serve.1; }
@test "sbx-proc(1) EXAMPLES run" { run_man_page sbx-proc.1; }
@test "sbx-vol(1) EXAMPLES run" { run_man_page sbx-vol.1; }

@test "every man page with EXAMPLES has a test here" {
	local f name
	for f in "$SBX_TOP"/man/*.scd; do
		grep -q '^# EXAMPLES' "$f" || continue
		name=$(basename "$f" .scd)
		grep -qE "run_man_page $name( [a-z]+)?; }" "$BATS_TEST_FILENAME" || { echo "no test for $name" >&2; return 1; }
	done
}

@test "every section 1 man page has EXAMPLES, and the suite runs them" {
	local f name n=0
	for f in "$SBX_TOP"/man/*.1.scd; do
		name=$(basename "$f" .scd)
		grep -q '^# EXAMPLES$' "$f" || { echo "$name has no EXAMPLES" >&2; return 1; }
		grep -qE "run_man_page $name( [a-z]+)?; }" "$BATS_TEST_FILENAME" ||
			{ echo "no test runs $name's EXAMPLES" >&2; return 1; }
		n=$((n + 1))
	done
	# One page per program, and no page without its program.
	local p
	for p in "$BUILD"/bin/sbx "$BUILD"/bin/sbx-*; do
		[ -x "$p" ] && { [ -f "$SBX_TOP/man/$(basename "$p").1.scd" ] || { echo "no page for $p" >&2; return 1; }; }
	done
	[ "$n" -eq "$(ls "$BUILD"/bin/sbx "$BUILD"/bin/sbx-* | wc -l)" ]
}

# The rows of sbx(7)'s EXIT STATUS table as "STATUS<TAB>TEXT", one a line.
exit_table() {
	awk '/^# EXIT STATUS$/ { t = 1; next }
	     t && /^# / { exit }
	     t && /^\|/ { if (code != "") print code "\t" text; code = $2; text = ""; next }
	     t && code != "" && /^:/ { sub(/^:[ \t]*/, ""); text = $0; next }
	     t && code != "" && /^[ \t]+[^ \t]/ { text = text " " $0 }
	     END { if (code != "") print code "\t" text }' "$SBX_TOP/man/sbx.7.scd"
}

@test "the exit table of sbx(7) is err.h's: each status once, each kind on its status's row, nothing extra" {
	local h=$SBX_TOP/common/base/err.h c=$SBX_TOP/common/base/err.c
	local table statuses kinds k enum exitc code row other
	table=$(exit_table)
	[ -n "$table" ]
	# The statuses: err.h's SBX_EXIT_* and the table's rows, the same set.
	statuses=$(sed -nE 's/^[[:space:]]*SBX_EXIT_[A-Z_]+ = ([0-9]+),.*/\1/p' "$h" | sort -n | tr '\n' ' ')
	[ "$(cut -f1 <<<"$table" | sort -n | tr '\n' ' ')" = "$statuses" ] ||
		{ echo "err.h: $statuses; sbx(7): $(cut -f1 <<<"$table" | tr '\n' ' ')" >&2; return 1; }
	[ "$(cut -f1 <<<"$table" | sort | uniq -d)" = "" ]
	# The kinds: err.c's names; each one's status: its line of
	# sbx_kind_exit_status, else the default line.
	kinds=$(sed -n '/^static const char \*const kind_names/,/^};/p' "$c" |
		sed -nE 's/^[[:space:]]*\[SBX_[A-Z_]+\] = "([a-z_]+)",$/\1/p' | grep -vx ok)
	[ "$(wc -l <<<"$kinds")" -eq "$(sed -n '/^enum sbx_kind {/,/^};/p' "$h" | grep -c '^	SBX_[A-Z_]*,')" ]   # every kind but ok
	for k in $kinds; do
		enum=SBX_${k^^}
		exitc=$(awk -v e="case $enum:" '/^int sbx_kind_exit_status/ { f = 1 } f && index($0, e) { print; exit }
			f && /^}/ { exit }' "$c" | sed -nE 's/.*return (SBX_EXIT_[A-Z_]+);.*/\1/p')
		[ -n "$exitc" ] || exitc=$(awk '/^int sbx_kind_exit_status/ { f = 1 } f && /default:/ { print; exit }' "$c" |
			sed -nE 's/.*return (SBX_EXIT_[A-Z_]+);.*/\1/p')
		code=$(sed -nE "s/^[[:space:]]*$exitc = ([0-9]+),.*/\1/p" "$h")
		[ -n "$code" ] || { echo "no status for kind $k" >&2; return 1; }
		row=$(awk -F'\t' -v c="$code" '$1 == c { print $2 }' <<<"$table")
		grep -q "\*$k\*" <<<"$row" || { echo "kind $k (status $code) is not on row $code: $row" >&2; return 1; }
		other=$(awk -F'\t' -v c="$code" '$1 != c { print $2 }' <<<"$table" | grep -c "\*$k\*" || true)
		[ "$other" -eq 0 ] || { echo "kind $k is named on a row other than $code" >&2; return 1; }
	done
	# Nothing extra: every *word* on the table that could be a kind is one.
	for k in $(grep -oE '\*[a-z_]+\*' <<<"$table" | tr -d '*' | sort -u); do
		grep -qx "$k" <<<"$kinds" || { echo "sbx(7) names '$k', which is not a kind" >&2; return 1; }
	done
}

@test "every docs/ page the tree names exists, and every link between pages resolves" {
	cd "$SBX_TOP"
	git rev-parse --git-dir >/dev/null 2>&1 || skip "not a git checkout: no list of the tree's files"
	local outputs p f d l bad=0
	# What a benchmark writes on its first run (tests/bench/run) need not exist yet.
	outputs=$(grep -oE 'docs/[A-Za-z0-9_/.-]+\.md' tests/bench/run)
	while read -r p; do
		[ -e "$p" ] && continue
		grep -qxF "$p" <<<"$outputs" && continue
		echo "named but missing: $p, in: $(git grep -l -F "$p" | tr '\n' ' ')" >&2
		bad=1
	done < <(git grep -h -o -E 'docs/[A-Za-z0-9_/.-]+\.md' | sort -u)
	for f in README.md docs/*.md docs/*/*.md; do
		d=$(dirname "$f")
		while read -r l; do
			[ -e "$d/$l" ] || { echo "$f: the link ($l) leads nowhere" >&2; bad=1; }
		done < <(grep -oE '\]\([^)#: ]+\)' "$f" | sed -E 's/^\]\(//; s/\)$//')
	done
	[ "$bad" -eq 0 ]
}
