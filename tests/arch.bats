#!/usr/bin/env bats
# The architecture is a structure the build enforces (issue #14): programs
# over the library over the vtable over the backends, no arrow back up, no
# circle between files, no function over 120 lines.  tools/arch-check
# states the rules; each is run on the tree and, on a small tree made here
# that breaks it, shown to fail.

load lib/helpers

CHECK="$SBX_TOP/tools/arch-check"

# A tree in $T: common/, cmd/, backends/, docs/design.md, and its objects
# under $T/build/obj as the Makefile lays them out (with the compiler's .d
# files, and backends/ on the include path of backends only).
fixture() {
	T="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$T/common" "$T/cmd" "$T/backends" "$T/docs"
	printf '# design\n' >"$T/docs/design.md"
	cat >"$T/common/util.h" <<-'EOF'
		int util_add(int a, int b);
	EOF
	cat >"$T/common/util.c" <<-'EOF'
		#include "util.h"
		int util_add(int a, int b)
		{
			return a + b;
		}
	EOF
	cat >"$T/backends/toy.h" <<-'EOF'
		int toy_do(int a);
	EOF
	cat >"$T/backends/toy.c" <<-'EOF'
		#include "toy.h"
		#include "util.h"
		int sbx_backend_toy = 1;
		int toy_do(int a)
		{
			return util_add(a, 1);
		}
	EOF
	cat >"$T/common/backend.c" <<-'EOF'
		extern int sbx_backend_toy __attribute__((weak));
		int backend_count(void)
		{
			return &sbx_backend_toy ? 1 : 0;
		}
	EOF
	cat >"$T/cmd/prog.c" <<-'EOF'
		#include "util.h"
		int backend_count(void);
		int main(void)
		{
			return util_add(backend_count(), 0);
		}
	EOF
}

build_fixture() {
	local src o inc
	for src in "$T"/common/*.c "$T"/cmd/*.c "$T"/backends/*.c; do
		o=${src#"$T"/}
		inc="-I$T/common"
		case $o in backends/*) inc="$inc -I$T/backends";; esac
		mkdir -p "$T/build/obj/$(dirname "$o")"
		(cd "$T" && cc -c -MMD -MP $inc -o "build/obj/${o%.c}.o" "$o")
	done
}

@test "the tree keeps every architecture rule (tools/arch-check)" {
	run "$CHECK" --top "$SBX_TOP" --build "$BUILD"
	assert_success
	assert_output ""
}

@test "the Makefile keeps every program's object: the symbol checks read them" {
	for c in "$SBX_TOP"/cmd/*.c; do
		c=$(basename "$c" .c)
		[ -f "$BUILD/obj/cmd/$c.o" ] || { echo "no $BUILD/obj/cmd/$c.o"; false; }
	done
}

@test "a tree that keeps the rules passes (the fixture itself is clean)" {
	fixture
	build_fixture
	run "$CHECK" --top "$T"
	assert_success
	assert_output ""
}

@test "boundary: a common/ file that includes a backend header by a relative path fails" {
	fixture
	sed -i '1i #include "../backends/toy.h"' "$T/common/util.c"
	build_fixture
	run "$CHECK" --top "$T" boundary
	assert_failure
	assert_line --partial 'common/util.c includes a backend header: ../backends/toy.h'
	assert_line --partial "common/util.c includes a backend header (compiler's list)"
}

@test "boundary: a program that calls a backend's function fails; the registry's weak reference does not" {
	fixture
	cat >"$T/cmd/prog.c" <<-'EOF'
		int toy_do(int a);
		int main(void)
		{
			return toy_do(0);
		}
	EOF
	build_fixture
	run "$CHECK" --top "$T" boundary
	assert_failure
	assert_output 'arch-check: cmd/prog.c refers to toy_do, defined by backends/toy.c'
}

@test "boundary: the registry symbol referred to from anywhere but common/backend.c fails" {
	fixture
	cat >"$T/common/other.c" <<-'EOF'
		extern int sbx_backend_toy;
		int other(void)
		{
			return sbx_backend_toy;
		}
	EOF
	build_fixture
	run "$CHECK" --top "$T" boundary
	assert_failure
	assert_output 'arch-check: common/other.c refers to sbx_backend_toy, defined by backends/toy.c'
}

@test "circles: two library files that call each other fail, and the circle is printed" {
	fixture
	cat >"$T/common/a.c" <<-'EOF'
		int b(int);
		int a(int x)
		{
			return x ? b(x - 1) : 0;
		}
	EOF
	cat >"$T/common/b.c" <<-'EOF'
		int a(int);
		int b(int x)
		{
			return a(x);
		}
	EOF
	build_fixture
	run "$CHECK" --top "$T" circles
	assert_failure
	assert_output 'arch-check: call circle: common/a.c -> common/b.c -> common/a.c (one circle of: common/a.c common/b.c)'
	# Listed under "Circles kept", it is allowed.
	printf '## Circles kept\n\n- `common/a.c`, `common/b.c`: a test\n' >>"$T/docs/design.md"
	run "$CHECK" --top "$T" circles
	assert_success
}

@test "circles: headers that include each other fail" {
	fixture
	printf '#include "y.h"\n' >"$T/common/x.h"
	printf '#include "x.h"\n' >"$T/common/y.h"
	build_fixture
	run "$CHECK" --top "$T" circles
	assert_failure
	assert_output --partial 'include circle: common/x.h -> common/y.h -> common/x.h'
}

@test "length: a function of 121 lines fails, one of 120 passes, a listed one passes" {
	fixture
	long() {  # NAME BODY-LINES: a function of BODY-LINES + 3 lines
		printf 'int %s(void)\n{\n' "$1"
		for ((i = 0; i < $2; i++)); do printf '\t;\n'; done
		printf '}\n'
	}
	long ok_fn 117 >"$T/common/ok.c"
	run "$CHECK" --top "$T" length
	assert_success
	long too_long 118 >"$T/common/long.c"
	run "$CHECK" --top "$T" length
	assert_failure
	assert_output --partial 'common/long.c:1 too_long is 121 lines'
	printf '## Long functions kept\n\n- `too_long` (common/long.c): a test\n' >>"$T/docs/design.md"
	run "$CHECK" --top "$T" length
	assert_success
	# tests/ is not judged.
	mkdir -p "$T/tests"
	long in_a_test 200 >"$T/tests/t.c"
	run "$CHECK" --top "$T" length
	assert_success
}

@test "bang: a bare '! cmd' line that is not a body's last line fails; run !, a last line, '! a || b' and heredocs pass" {
	mkdir -p "$BATS_TEST_TMPDIR/t/tests/sub"
	T="$BATS_TEST_TMPDIR/t"
	cat >"$T/tests/sub/x.bats" <<-'EOF'
		gone() {
			BANG ls "$1"
		}
		TEST "x" {
			# a comment
			BANG grep -q x file

			run ! grep -q x file
			BANG kill -0 1 || grep -q zombie file
			for i in 1 2; do
				BANG true
			done
			cat >f <<-'END'
				BANG not a command
			END
			BANG grep -q x file
		}
	EOF
	# TEST: bats would take it for one of its own; BANG: a '!' line here
	# would be one of this file's own to any line checker
	sed -i -e 's/^TEST /@test /' -e 's/^\(\t*\)BANG /\1! /' "$T/tests/sub/x.bats"
	run "$CHECK" --top "$T" bang
	assert_failure
	assert_equal "$(printf '%s\n' "$output" | wc -l)" 2
	assert_line --index 0 --partial "tests/sub/x.bats:6 a bare '! cmd' line"
	assert_line --index 1 --partial "tests/sub/x.bats:11 "
	sed -i '6d;11d' "$T/tests/sub/x.bats"
	run "$CHECK" --top "$T" bang
	assert_success
	assert_output ""
}
