#!/usr/bin/env bats
# sbx-lease stale --all-tenants (issue 17): every tenant in the tenant
# index has its bindings marked stale, each under its session's lock.

load lib/helpers
load lib/session

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

@test "stale --all-tenants marks every tenant's bindings; --tenant and --all-tenants exclude each other" {
	run sbx-lease stale --tenant a --all-tenants
	[ "$status" -eq 64 ]
	local t s
	for t in ta tb tc; do
		for s in 1 2; do sbx-create --tenant "$t" --session "s$s" >/dev/null; done
	done
	run sbx-lease stale --all-tenants
	assert_success
	[ "$(jqo .lease.all_tenants)" = true ]
	[ "$(jqo .lease.tenants)" = 3 ]
	[ "$(jqo .lease.marked)" = 6 ]
	[ "$(jqo .lease.failed)" = 0 ]
	for t in ta tb tc; do
		for s in 1 2; do
			[ "$(rcli get "$(skey "$t" "s$s" binding)" | jq -r '.stale_at != null')" = true ]
		done
	done
	# Already stale: nothing more to mark.
	run sbx-lease stale --all-tenants
	assert_success
	[ "$(jqo .lease.marked)" = 0 ]
}
