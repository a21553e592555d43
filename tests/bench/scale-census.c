/* tests/bench/scale-census.c - the reaper's Redis phase (sbx_bound_census:
 * SCARD per tenant, SISMEMBER + EXISTS per listed sandbox, pipelined) over
 * N real bindings, on whatever SBX_REDIS_URL names (one server or a
 * cluster), for tests/bench/scale.sh.  Creates the bindings (lock, bind,
 * release per session, spread over N/100 tenants so that a cluster's three
 * masters all hold some), then times R census runs and prints
 * "bindings N round_trips RT ms_per_run X us_per_binding Y".  Not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "lock.h"
#include "redis.h"
#include "util.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000, runs = argc > 2 ? atoi(argv[2]) : 5;
	struct sbx_err err = {0};
	struct sbx_redis *r;
	if (n <= 0 || sbx_redis_open_url(getenv("SBX_REDIS_URL"), NULL, 5000, &r, &err) < 0) {
		fprintf(stderr, "scale-census: %s\n", err.msg);
		return 1;
	}
	int nt = (n + 99) / 100;
	struct sbx_bound_tenant *ts = sbx_xcalloc((size_t)nt, sizeof(*ts));
	struct sbx_bound_probe *ps = sbx_xcalloc((size_t)n, sizeof(*ps));
	for (int t = 0; t < nt; t++) {
		char *name = sbx_xasprintf("bt%d", t);
		ts[t] = (struct sbx_bound_tenant){.name = name, .len = strlen(name)};
	}
	for (int i = 0; i < n; i++) {
		char *s = sbx_xasprintf("s%d", i), *id = sbx_xasprintf("sb-%012d", i);
		ps[i] = (struct sbx_bound_probe){.t = (size_t)(i % nt), .session = s,
						 .slen = strlen(s), .id = id};
		struct sbx_lock *l;
		const char *tn = ts[i % nt].name;
		if (sbx_lock_acquire(r, tn, strlen(tn), s, strlen(s), 2000, &l, &err) < 0) {
			fprintf(stderr, "scale-census: lock: %s\n", err.msg);
			return 1;
		}
		struct sbx_binding b = {.backend = "local", .tenant = (char *)tn, .session = s,
					.sandbox_id = id, .template_id = "host", .profile = "default",
					.created_at = 1700000000};
		int rc = sbx_binding_create(r, l, &b, NULL, &err);
		struct sbx_err ignored = {0};
		sbx_lock_release(l, &ignored);
		if (rc < 0) {
			fprintf(stderr, "scale-census: bind: %s\n", err.msg);
			return 1;
		}
	}
	long long rt0 = r->round_trips;
	int64_t t0 = sbx_mono_ms();
	for (int k = 0; k < runs; k++) {
		if (sbx_bound_census(r, ts, (size_t)nt, ps, (size_t)n, &err) < 0) {
			fprintf(stderr, "scale-census: census: %s\n", err.msg);
			return 1;
		}
	}
	double ms = (double)(sbx_mono_ms() - t0) / runs;
	long bound = 0;
	for (int i = 0; i < n; i++)
		bound += ps[i].bound;
	printf("bindings %d bound %ld masters %d round_trips %lld ms_per_run %.1f us_per_binding %.1f\n",
	       n, bound, sbx_redis_masters(r), (r->round_trips - rt0) / runs, ms, ms * 1000.0 / n);
	sbx_redis_close(r);
	return 0;
}
