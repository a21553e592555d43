#!/usr/bin/env bats
# The surface has one source: each program's option table.  --help prints
# it; the man page and the completions must agree with it.

load lib/helpers
bats_require_minimum_version 1.5.0

programs() { for p in "$BUILD"/bin/sbx "$BUILD"/bin/sbx-*; do [ -x "$p" ] && basename "$p"; done; }
flags_of() { "$BUILD/bin/$1" --help | sed -nE 's/^  (-[A-Za-z0-9], |    )--([a-z0-9-]+).*/\2/p'; }

@test "every program has a man page that names each of its flags" {
	local missing=""
	for p in $(programs); do
		local page="$SBX_TOP/man/$p.1.scd"
		[ -f "$page" ] || { missing="$missing $p(no page)"; continue; }
		for f in $(flags_of "$p"); do
			case $f in help|version|progress) continue;; esac
			grep -q -- "--$f" "$page" || missing="$missing $p:--$f"
		done
	done
	[ -z "$missing" ] || { echo "missing from man pages:$missing"; false; }
}

@test "the committed completions equal a fresh generation from --help" {
	local out="$BATS_TEST_TMPDIR/compl"
	"$SBX_TOP/tools/gen-completions" "$BUILD/bin" "$out"
	run diff -r "$SBX_TOP/completions" "$out"
	[ "$status" -eq 0 ] || { echo "$output"; echo "run: make completions"; false; }
}

@test "every program answers --help and --version with status 0" {
	for p in $(programs); do
		"$BUILD/bin/$p" --help >/dev/null
		run "$BUILD/bin/$p" --version
		assert_success
		assert_output --partial "$p "
	done
}

@test "an unknown option is a usage error (64) in the one stderr grammar" {
	for p in $(programs); do
		run "$BUILD/bin/$p" --no-such-option </dev/null
		[ "$status" -eq 64 ] || { echo "$p exited $status"; false; }
		[[ "${lines[-1]}" == "$p: error: usage: "* ]] || { echo "$p said: $output"; false; }
	done
}

@test "completions parse in bash" {
	for f in "$SBX_TOP"/completions/bash/*; do bash -n "$f"; done
}

@test "the build keeps backends/ off the include path of common/ and cmd/, and each backend off another's" {
	run make -s -n -B -C "$SBX_TOP" BUILD="$BUILD" "$BUILD/obj/common/cli/app.o" "$BUILD/obj/cmd/sbx.o" \
		"$BUILD/obj/backends/local/local.o" "$BUILD/obj/backends/docker/docker.o"
	assert_success
	[ "$(grep -c -- ' -c ' <<<"$output")" -eq 4 ]
	[ -z "$(grep -- 'common/cli/app.c' <<<"$output" | grep -- -Ibackends)" ]
	[ -z "$(grep -- 'cmd/sbx.c' <<<"$output" | grep -- -Ibackends)" ]
	grep -- 'backends/local/local.c' <<<"$output" | grep -q -- '-Ibackends/local\b'
	[ -z "$(grep -- 'backends/local/local.c' <<<"$output" | grep -- -Ibackends/docker)" ]
	grep -- 'backends/docker/docker.c' <<<"$output" | grep -q -- '-Ibackends/docker\b'
	[ -z "$(grep -- 'backends/docker/docker.c' <<<"$output" | grep -- -Ibackends/local)" ]
}

# The rows of a program's --help "Commands" section as "WORD|ARGS|OPTIONS|NEEDS"
# (WORD "-" for the form without a subcommand).
rows_of() {
	"$BUILD/bin/$1" --help | awk '
		/^Commands/ { c = 1; next }
		/^Options:/ { c = 0 }
		!c || /^$/ { next }
		/^ +options: / { sub(/^ +options: /, ""); o[n] = $0; next }
		/^ +needs: / { sub(/^ +needs: /, ""); d[n] = $0; next }
		/^  [^ ]/ {
			n++; w[n] = $1; a[n] = ""
			line = substr($0, 3, 28); sub(/ +$/, "", line)
			if (index(line, " ")) a[n] = substr(line, index(line, " ") + 1)
		}
		END { for (i = 1; i <= n; i++) printf "%s|%s|%s|%s\n", (w[i] == "(none)" ? "-" : w[i]), a[i], o[i], d[i] }'
}
# Operands that satisfy ARGS ("SRC DEST" -> "x x", "-- COMMAND [ARG...]" -> "-- true").
operands_for() {
	local t out=()
	for t in $1; do
		case $t in
		--) out+=(--) ;;
		\[*) ;;
		COMMAND) out+=(true) ;;
		*) out+=(x) ;;
		esac
	done
	echo "${out[@]}"
}
takes_value() { "$BUILD/bin/$1" --help | grep -qE -- "^  (-., |    )--$2 [A-Z]"; }

@test "a flag given to a subcommand it does not go with is a usage error naming where it goes" {
	local p row word args opts needs flag other tried=0 fails=""
	for p in $(programs); do
		while IFS='|' read -r word args opts needs; do
			# Every flag of another row that is not one of this row's.
			for flag in $(rows_of "$p" | cut -d'|' -f3 | tr ' ' '\n' | sort -u); do
				grep -qw -- "$flag" <<<"$opts" && continue
				local v=()
				takes_value "$p" "${flag#--}" && v=(1)
				local sub=()
				[ "$word" = - ] || sub=("$word")
				# shellcheck disable=SC2046
				run "$BUILD/bin/$p" "$flag" "${v[@]}" "${sub[@]}" $(operands_for "$args") </dev/null
				tried=$((tried + 1))
				if [ "$status" -ne 64 ] || ! [[ "${lines[-1]}" =~ ^$p:\ error:\ usage:\ $flag\ (applies|does\ not\ apply)\ to ]]; then
					fails="$fails
$p ${sub[*]} $flag: $status ${lines[-1]:-}"
				fi
			done
		done < <(rows_of "$p")
	done
	[ -z "$fails" ] || { echo "not refused:$fails"; false; }
	[ "$tried" -gt 20 ]
}

@test "a subcommand without a flag it needs is a usage error naming the flag" {
	local p word args opts needs n tried=0
	for p in $(programs); do
		while IFS='|' read -r word args opts needs; do
			[ -n "$needs" ] || continue
			# shellcheck disable=SC2046
			run "$BUILD/bin/$p" "$word" $(operands_for "$args") </dev/null
			assert_equal "$status" 64
			n=${needs%% *}
			[[ "${lines[-1]}" == "$p: error: usage: $p $word needs $n" ]] || { echo "$p $word: $output"; false; }
			tried=$((tried + 1))
		done < <(rows_of "$p")
	done
	[ "$tried" -ge 2 ]
}

@test "wrong operand counts and unknown subcommands are usage errors" {
	run sbx-fs put onlyone
	assert_equal "$status" 64
	assert_output "sbx-fs: error: usage: missing argument: sbx-fs put SRC DEST"
	run sbx-ctl pause extra
	assert_equal "$status" 64
	assert_output --partial "unexpected argument 'extra'"
	run sbx-tpl frob
	assert_equal "$status" 64
	assert_output "sbx-tpl: error: usage: unknown command 'frob'"
	run sbx-snap frob
	assert_equal "$status" 64
	run sbx-ls stray
	assert_equal "$status" 64
	run sbx-exec </dev/null
	assert_equal "$status" 64
	run sbx
	assert_equal "$status" 64
	assert_output --partial "a command is needed: create exec fs snap tpl ls ctl proc lease reap"
}

@test "every man page names each of its program's subcommands" {
	local p w missing=""
	for p in $(programs); do
		for w in $(rows_of "$p" | cut -d'|' -f1); do
			[ "$w" = - ] && continue
			grep -q -- "\*$w\*" "$SBX_TOP/man/$p.1.scd" || missing="$missing $p:$w"
		done
	done
	[ -z "$missing" ] || { echo "subcommands missing from man pages:$missing"; false; }
}

# Run the generated bash completion of $1 on the words after it (the last
# one being completed) and print what it offers, one a line.
complete_bash() {
	local prog=$1; shift
	bash -c '
		_init_completion() { words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; cur=${words[cword]}; prev=${words[cword-1]}; }
		_filedir() { COMPREPLY=(FILES); }
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		fn=$(complete -p "$1" | sed -E "s/.*-F ([^ ]+) .*/\1/")
		"$fn"
		printf "%s\n" "${COMPREPLY[@]}"' \
		complete_bash "$SBX_TOP/completions/bash/$prog" "$prog" "$@"
}

@test "bash completes subcommands, then only the flags of the subcommand on the line" {
	run complete_bash sbx-fs ""
	assert_success
	assert_line put
	assert_line collect
	refute_line --mode
	run complete_bash sbx-fs --id x put --
	assert_line --mode
	assert_line --root
	assert_line --profile
	refute_line --recursive
	refute_line --max
	run complete_bash sbx-fs rm -
	assert_line -r
	refute_line -m
	run complete_bash sbx-fs restore --
	refute_line --root
	run complete_bash sbx-snap rm --
	assert_line --force
	refute_line --seal
	# Before a subcommand: sbx-snap's own form (a snapshot, a skill image).
	run complete_bash sbx-snap --
	assert_line --seal
	refute_line --force
	run complete_bash sbx-lease lock --
	assert_line --wait
	run complete_bash sbx-lease stale --
	refute_line --session
	refute_line --wait
	run complete_bash sbx-ctl ""
	assert_line timeout
	run complete_bash sbx-ctl timeout x
	assert_line FILES
}
