#!/usr/bin/env bats
# The surface has one source: each program's option table.  --help prints
# it; the man page and the completions must agree with it.

load lib/helpers

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

@test "common/ and cmd/ reach a backend only through the vtable: no backend header, no backend symbol" {
	local h f o bad=0
	for h in "$SBX_TOP"/backends/*.h; do
		h=$(basename "$h")
		for f in "$SBX_TOP"/common/*.[ch] "$SBX_TOP"/cmd/*.c; do
			if grep -q "^#include \"$h\"" "$f"; then
				echo "$f includes backends/$h" >&2
				bad=1
			fi
		done
	done
	# The objects: no undefined reference to a backend's own functions.
	for o in "$BUILD"/obj/common/*.o "$BUILD"/obj/cmd/*.o; do
		if nm -u "$o" | grep -E ' (local|docker|lcopy)_'; then
			echo "$o calls a backend directly" >&2
			bad=1
		fi
	done
	[ "$bad" -eq 0 ]
}

@test "the build keeps backends/ off the include path of common/ and cmd/" {
	run make -s -n -B -C "$SBX_TOP" BUILD="$BUILD" "$BUILD/obj/common/app.o" "$BUILD/obj/cmd/sbx.o" "$BUILD/obj/backends/local.o"
	assert_success
	[ "$(grep -c -- ' -c ' <<<"$output")" -eq 3 ]
	! grep -- 'common/app.c' <<<"$output" | grep -q -- -Ibackends
	! grep -- 'cmd/sbx.c' <<<"$output" | grep -q -- -Ibackends
	grep -- 'backends/local.c' <<<"$output" | grep -q -- -Ibackends
}
