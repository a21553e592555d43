/* sbx_poll_until and sbx_sleep_ms (util.h): the value `ready` gives back
 * ends the wait (a failure too), a wait that runs out returns 0 only once
 * the deadline has passed on the monotonic clock, after a last call at
 * the deadline.  Only lower bounds on time are checked (never "fast
 * enough"), so a loaded machine cannot fail them. */
#include <stdint.h>

#include "util.h"
#include "tap.h"

struct counter {
	int calls, ready_at, value;
	int64_t last_ms;
};

static int count(void *ctx)
{
	struct counter *c = ctx;
	c->calls++;
	c->last_ms = sbx_mono_ms();
	return c->calls >= c->ready_at ? c->value : 0;
}

int main(void)
{
	struct counter c = {.ready_at = 1, .value = 7};
	is_int(sbx_poll_until(1000, 10, count, &c), 7, "ready at once: its value, at once");
	is_int(c.calls, 1, "called once");

	c = (struct counter){.ready_at = 3, .value = 1};
	is_int(sbx_poll_until(60000, 1, count, &c), 1, "ready on the third call");
	is_int(c.calls, 3, "called three times");

	c = (struct counter){.ready_at = 2, .value = -1};
	is_int(sbx_poll_until(60000, 1, count, &c), -1, "a failure stops the wait and is returned");
	is_int(c.calls, 2, "no call after the failure");

	c = (struct counter){.ready_at = 1 << 30, .value = 1};
	int64_t t0 = sbx_mono_ms();
	is_int(sbx_poll_until(50, 20, count, &c), 0, "never ready: 0");
	ok(c.last_ms - t0 >= 50, "the last call was at the deadline or later (%lld ms)",
	   (long long)(c.last_ms - t0));
	ok(c.calls >= 2, "called at the start and at the deadline (%d calls)", c.calls);

	c = (struct counter){.ready_at = 1 << 30, .value = 1};
	is_int(sbx_poll_until(0, 10, count, &c), 0, "no time: one call, then 0");
	is_int(c.calls, 1, "one call");

	t0 = sbx_mono_ms();
	sbx_sleep_ms(30);
	ok(sbx_mono_ms() - t0 >= 30, "sbx_sleep_ms sleeps at least as long as asked");
	sbx_sleep_ms(0);
	sbx_sleep_ms(-5);
	ok(1, "zero and negative return");
	return tap_done();
}
