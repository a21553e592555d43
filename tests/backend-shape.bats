#!/usr/bin/env bats
# The shape of backends/ (issue 14): no circle between its files, in calls
# (the objects' symbols) or in includes, and no function over 120 lines,
# checked by tools/backend-shape on the build's objects.

load lib/helpers

@test "the backends' files call and include each other in no circle; no function is over 120 lines" {
	run "$SBX_TOP/tools/backend-shape" --src "$SBX_TOP/backends" --obj "$BUILD/obj/backends"
	echo "$output"
	assert_success
	assert_output --partial "no cycle"
}

@test "the shape check sees a circle of calls, one of includes, and a long function" {
	local d=$BATS_TEST_TMPDIR/shape i
	mkdir -p "$d"
	# a.c calls b.c, b.c calls a.c: a circle of calls.
	printf 'int b_fn(void);\nint a_fn(void) { return b_fn(); }\n' >"$d/a.c"
	printf 'int a_fn(void);\nint b_fn(void) { return a_fn() + 1; }\n' >"$d/b.c"
	# c.c and e.c include each other's header: a circle of includes.
	printf '#include "e.h"\nint c_fn(void) { return 1; }\n' >"$d/c.c"
	printf '#include "c.h"\nint e_fn(void) { return 2; }\n' >"$d/e.c"
	: >"$d/c.h"
	: >"$d/e.h"
	{
		echo 'int long_fn(int x)'
		echo '{'
		for i in $(seq 1 125); do echo "	x += $i;"; done
		echo '	return x;'
		echo '}'
	} >"$d/l.c"
	for f in a b c e l; do cc -c -o "$d/$f.o" "$d/$f.c"; done
	run "$SBX_TOP/tools/backend-shape" --src "$d" --obj "$d" --no-libexec
	echo "$output"
	assert_failure
	assert_line --partial "circle: a -> b -> a"
	assert_line --partial "circle: c -> e -> c"
	assert_line --partial "l.c:1: a function of 129 lines"
}
