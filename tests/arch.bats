#!/usr/bin/env bats
# The architecture is a structure the build enforces (issues #14, #27):
# programs over the library over the vtable over the backends, the library's
# folders in an order, no arrow back up, no circle between files, no
# function over 120 lines.  tools/arch-check
# states the rules; each is run on the tree and, on a small tree made here
# that breaks it, shown to fail.

load lib/helpers

CHECK="$SBX_TOP/tools/arch-check"

# A tree in $T: common/ and backends/ in folders, cmd/, docs/design.md with
# the folder order, and its objects under $T/build/obj as the Makefile lays
# them out (with the compiler's .d files, every common/ folder on the
# include path, and a backend's own folder on that backend's only).
fixture() {
	T="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$T/common/base" "$T/common/backend" "$T/cmd" "$T/backends/toy" "$T/docs"
	cat >"$T/docs/design.md" <<-'EOF'
		# design

		## Folder order

		- `common/base`: the bottom
		- `common/backend`: the vtable
		- `backends/toy`: a backend
		- `cmd`: the programs
	EOF
	cat >"$T/common/base/util.h" <<-'EOF'
		int util_add(int a, int b);
	EOF
	cat >"$T/common/base/util.c" <<-'EOF'
		#include "util.h"
		int util_add(int a, int b)
		{
			return a + b;
		}
	EOF
	cat >"$T/backends/toy/toy.h" <<-'EOF'
		int toy_do(int a);
	EOF
	cat >"$T/backends/toy/toy.c" <<-'EOF'
		#include "toy.h"
		#include "util.h"
		int sbx_backend_toy = 1;
		int toy_do(int a)
		{
			return util_add(a, 1);
		}
	EOF
	cat >"$T/common/backend/backend.c" <<-'EOF'
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
	local src o inc d
	rm -rf "$T/build"
	for src in $(cd "$T" && find common cmd backends -name '*.c' | sort); do
		inc=""
		for d in "$T"/common/*/; do inc="$inc -I${d%/}"; done
		case $src in backends/*) inc="$inc -I$T/$(dirname "$src")";; esac
		mkdir -p "$T/build/obj/$(dirname "$src")"
		(cd "$T" && cc -c -MMD -MP $inc -o "build/obj/${src%.c}.o" "$src")
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
	sed -i '1i #include "../../backends/toy/toy.h"' "$T/common/base/util.c"
	build_fixture
	run "$CHECK" --top "$T" boundary
	assert_failure
	assert_line --partial 'common/base/util.c includes a backend header: ../../backends/toy/toy.h'
	assert_line --partial "common/base/util.c includes a backend header (compiler's list)"
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
	assert_output 'arch-check: cmd/prog.c refers to toy_do, defined by backends/toy/toy.c'
}

@test "boundary: the registry symbol referred to from anywhere but common/backend/backend.c fails" {
	fixture
	cat >"$T/common/backend/other.c" <<-'EOF'
		extern int sbx_backend_toy;
		int other(void)
		{
			return sbx_backend_toy;
		}
	EOF
	build_fixture
	run "$CHECK" --top "$T" boundary
	assert_failure
	assert_output 'arch-check: common/backend/other.c refers to sbx_backend_toy, defined by backends/toy/toy.c'
}

@test "circles: two library files that call each other fail, and the circle is printed" {
	fixture
	cat >"$T/common/base/a.c" <<-'EOF'
		int b(int);
		int a(int x)
		{
			return x ? b(x - 1) : 0;
		}
	EOF
	cat >"$T/common/base/b.c" <<-'EOF'
		int a(int);
		int b(int x)
		{
			return a(x);
		}
	EOF
	build_fixture
	run "$CHECK" --top "$T" circles
	assert_failure
	assert_output 'arch-check: call circle: common/base/a.c -> common/base/b.c -> common/base/a.c (one circle of: common/base/a.c common/base/b.c)'
	# Listed under "Circles kept", it is allowed.
	printf '## Circles kept\n\n- `common/base/a.c`, `common/base/b.c`: a test\n' >>"$T/docs/design.md"
	run "$CHECK" --top "$T" circles
	assert_success
}

@test "circles: headers that include each other fail" {
	fixture
	printf '#include "y.h"\n' >"$T/common/base/x.h"
	printf '#include "x.h"\n' >"$T/common/backend/y.h"
	build_fixture
	run "$CHECK" --top "$T" circles
	assert_failure
	assert_output --partial 'include circle: common/backend/y.h -> common/base/x.h -> common/backend/y.h'
}

@test "folders: a lower folder that includes or calls a higher one fails; the other way passes" {
	fixture
	mkdir -p "$T/common/net"
	sed -i 's/^- `common\/base`.*/&\n- `common\/net`: above the bottom/' "$T/docs/design.md"
	printf 'int net_get(void);\n' >"$T/common/net/net.h"
	cat >"$T/common/net/net.c" <<-'EOF'
		#include "net.h"
		#include "util.h"
		int net_get(void)
		{
			return util_add(1, 2);
		}
	EOF
	build_fixture
	run "$CHECK" --top "$T" folders
	assert_success
	assert_output ""
	cat >>"$T/common/base/util.c" <<-'EOF'
		#include "net.h"
		int util_net(void)
		{
			return net_get();
		}
	EOF
	build_fixture
	run "$CHECK" --top "$T" folders
	assert_failure
	assert_equal "${#lines[@]}" 2
	assert_line 'arch-check: common/base/util.c (common/base) includes common/net/net.h (common/net, below it in the folder order of docs/design.md)'
	assert_line 'arch-check: common/base/util.c (common/base) refers to net_get, defined by common/net/net.c (common/net, below it in the folder order of docs/design.md)'
}

@test "folders: a header that brings in a higher one is seen in the compiler's list of the file that includes it" {
	fixture
	mkdir -p "$T/common/net"
	sed -i 's/^- `common\/base`.*/&\n- `common\/net`: above the bottom/' "$T/docs/design.md"
	printf 'int net_get(void);\n' >"$T/common/net/net.h"
	printf '#include "net.h"\n' >"$T/common/base/mid.h"
	sed -i '1i #include "mid.h"' "$T/common/base/util.c"
	build_fixture
	run "$CHECK" --top "$T" folders
	assert_failure
	assert_equal "${#lines[@]}" 2
	assert_line 'arch-check: common/base/mid.h (common/base) includes common/net/net.h (common/net, below it in the folder order of docs/design.md)'
	assert_line "arch-check: common/base/util.c (common/base) includes (compiler's list) common/net/net.h (common/net, below it in the folder order of docs/design.md)"
}

@test "folders: two folders on one line may not use each other; a backend may not use another's" {
	fixture
	mkdir -p "$T/common/net"
	sed -i 's/^- `common\/base`.*/- `common\/base`, `common\/net`: one line/' "$T/docs/design.md"
	printf 'int net_get(void);\n' >"$T/common/net/net.h"
	printf '#include "net.h"\n#include "util.h"\nint net_get(void)\n{\n\treturn util_add(1, 2);\n}\n' >"$T/common/net/net.c"
	mkdir -p "$T/backends/two"
	sed -i 's/^- `backends\/toy`.*/- `backends\/toy`, `backends\/two`: backends/' "$T/docs/design.md"
	printf 'int toy_do(int a);\nint two(void)\n{\n\treturn toy_do(1);\n}\n' >"$T/backends/two/two.c"
	build_fixture
	run "$CHECK" --top "$T" folders
	assert_failure
	assert_line --partial 'common/net/net.c (common/net) includes common/base/util.h (common/base, on its own line in the folder order'
	assert_line --partial 'common/net/net.c (common/net) refers to util_add, defined by common/base/util.c (common/base, on its own line'
	assert_line 'arch-check: backends/two/two.c (backends/two) refers to toy_do, defined by backends/toy/toy.c: a backend uses another'"'"'s folder'
}

@test "folders: a file outside a folder, a folder not in the order and a header name used twice fail" {
	fixture
	printf 'int loose(void);\n' >"$T/common/loose.h"
	mkdir -p "$T/common/extra"
	printf 'int util_add(int a, int b);\n' >"$T/common/extra/util.h"
	build_fixture
	run "$CHECK" --top "$T" folders
	assert_failure
	assert_line 'arch-check: common/loose.h is not in a folder of common/'
	assert_line 'arch-check: common/extra/util.h: folder common/extra is not listed under "Folder order" in docs/design.md'
	assert_line 'arch-check: header name util.h is not unique: common/base/util.h common/extra/util.h (#include lines name headers bare)'
	# With no order at all, the check says so.
	printf '# design\n' >"$T/docs/design.md"
	run "$CHECK" --top "$T" folders
	assert_failure
	assert_output --partial 'docs/design.md has no "Folder order"'
}

@test "length: a function of 121 lines fails, one of 120 passes, a listed one passes" {
	fixture
	long() {  # NAME BODY-LINES: a function of BODY-LINES + 3 lines
		printf 'int %s(void)\n{\n' "$1"
		for ((i = 0; i < $2; i++)); do printf '\t;\n'; done
		printf '}\n'
	}
	long ok_fn 117 >"$T/common/base/ok.c"
	run "$CHECK" --top "$T" length
	assert_success
	long too_long 118 >"$T/common/base/long.c"
	run "$CHECK" --top "$T" length
	assert_failure
	assert_output --partial 'common/base/long.c:1 too_long is 121 lines'
	printf '## Long functions kept\n\n- `too_long` (common/base/long.c): a test\n' >>"$T/docs/design.md"
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

@test "libssl is linked into sbx-egress alone (the L7 broker's TLS; every other program's digests are in-tree)" {
	local f linked=
	for f in "$BUILD"/bin/* "$BUILD"/libexec/sbx/*; do
		readelf -d "$f" 2>/dev/null | grep -q 'NEEDED.*libssl' && linked="$linked ${f##*/}"
	done
	assert_equal "$linked" " sbx-egress"
}
