/* Growth of the keyspace over months (issue 17): 10,000 sessions are
 * started (lock, bind, release: what a resolve writes) and ended (what
 * sbx-ctl kill and sbx-reap --retire-idle write: sbx_binding_end), and
 * nothing may be left behind - before fence counters were removed with
 * their session, 10,000 fence keys stayed.  Also measures the bytes a
 * live bound session costs (MEMORY USAGE of its binding and fence key plus
 * its share of the bound set), printed for docs/bench/cluster.md, and checks that
 * a holder from before an ended session cannot write after it (the fence
 * restarts, the token does not repeat). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binding.h"
#include "keys.h"
#include "lock.h"
#include "redis.h"
#include "tap.h"
#include "util.h"

#define N 10000

static char dir[] = "/tmp/sbx-test-growth.XXXXXX";

static struct sbx_binding mk(const char *s, const char *id)
{
	struct sbx_binding b = {
		.backend = "local", .tenant = "grow", .session = (char *)s, .sandbox_id = (char *)id,
		.template_id = "host", .profile = "default", .created_at = 1700000000,
		.host = "host-a",
	};
	return b;
}

static long long num(struct sbx_redis *r, const char *fmt, const char *a)
{
	struct sbx_err err = {0};
	redisReply *rep;
	if (sbx_redis_cmdf(r, &rep, &err, fmt, a) < 0)
		return -1;
	long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
	freeReplyObject(rep);
	return v;
}

/* Start session s: lock, bind sandbox id, release.  0 or -1. */
static int start_session(struct sbx_redis *r, const char *s, const char *id, struct sbx_err *err)
{
	struct sbx_lock *l;
	if (sbx_lock_acquire(r, "grow", 4, s, strlen(s), 2000, &l, err) < 0)
		return -1;
	struct sbx_binding b = mk(s, id);
	int rc = sbx_binding_create(r, l, &b, NULL, err);
	struct sbx_err ignored = {0};
	sbx_lock_release(l, &ignored);
	return rc == 1 ? 0 : -1;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (system("command -v redis-server >/dev/null") != 0 || !mkdtemp(dir)) {
		printf("ok 1 # SKIP redis-server not installed\n1..1\n");
		return 0;
	}
	char cmd[1024], url[512];
	snprintf(cmd, sizeof(cmd), "redis-server --port 0 --unixsocket %s/r.sock --save '' "
		 "--appendonly no --daemonize yes --pidfile %s/r.pid --dir %s >/dev/null && "
		 "for i in $(seq 100); do [ -S %s/r.sock ] && break; sleep 0.05; done", dir, dir, dir, dir);
	if (system(cmd) != 0)
		return 1;
	snprintf(url, sizeof(url), "unix://%s/r.sock", dir);
	struct sbx_redis *r;
	struct sbx_err err = {0};
	ok(sbx_redis_open_url(url, NULL, 5000, &r, &err) == 0, "connect");

	/* One live session: what it costs. */
	ok(start_session(r, "one", "sb-one", &err) == 0, "start one session");
	SBX_AUTOFREE char *bk = sbx_key_session("sbx", "grow", 4, "one", 3, SBX_KEY_BINDING);
	SBX_AUTOFREE char *fk = sbx_key_session("sbx", "grow", 4, "one", 3, SBX_KEY_FENCE);
	SBX_AUTOFREE char *sk = sbx_key_tenant("sbx", "grow", 4, SBX_KEY_BOUND);
	long long bytes = num(r, "MEMORY USAGE %s SAMPLES 0", bk) + num(r, "MEMORY USAGE %s SAMPLES 0", fk);
	printf("# a live bound session: binding + fence key = %lld bytes (plus its bound-set member)\n",
	       bytes);
	ok(bytes > 0, "MEMORY USAGE reads the session's keys");

	/* 10,000 sessions started; the bound set's share per member. */
	int bad = 0;
	long long set0 = num(r, "MEMORY USAGE %s SAMPLES 0", sk);
	for (int i = 0; i < N && bad < 10; i++) {
		char s[32], id[32];
		snprintf(s, sizeof(s), "s%d", i);
		snprintf(id, sizeof(id), "sb-%012d", i);
		bad += start_session(r, s, id, &err) < 0;
	}
	is_int(bad, 0, "10,000 sessions started");
	long long set1 = num(r, "MEMORY USAGE %s SAMPLES 0", sk);
	printf("# the bound set: %.1f bytes per member\n", (double)(set1 - set0) / N);
	long long live = num(r, "DBSIZE", NULL);
	is_int(live, 2 * N + 4, "two keys per live session (binding, fence), one bound set, one "
	       "usage hash (quota.h)");

	/* ... and ended, as sbx-ctl kill ends them (no lock, compare-and-delete). */
	for (int i = 0; i < N && bad < 10; i++) {
		char s[32], id[32];
		snprintf(s, sizeof(s), "s%d", i);
		snprintf(id, sizeof(id), "sb-%012d", i);
		bad += sbx_binding_end(r, NULL, "grow", s, id, &err) != 1;
	}
	is_int(bad, 0, "10,000 sessions ended");
	is_int(num(r, "DBSIZE", NULL), 4, "nothing of them is left (the live session's 2 keys, the set "
	       "and the usage hash)");
	printf("# keys left after 10,000 sessions started and ended: %lld\n", num(r, "DBSIZE", NULL) - 4);

	/* A holder from before the end cannot write after it. */
	struct sbx_lock *old;
	ok(sbx_lock_acquire(r, "grow", 4, "one", 3, 0, &old, &err) == 0 && old->fence == 2,
	   "a holder takes the lock (fence 2)");
	ok(sbx_binding_end(r, NULL, "grow", "one", "sb-one", &err) == 1,
	   "the session is ended meanwhile (binding and fence gone)");
	struct sbx_binding b = mk("one", "sb-stale");
	ok(sbx_binding_create(r, old, &b, NULL, &err) < 0 && err.kind == SBX_CONFLICT,
	   "the old holder's bind is refused (the counter no longer equals its fence)");
	struct sbx_err ignored = {0};
	sbx_lock_release(old, &ignored);
	struct sbx_lock *next;
	ok(sbx_lock_acquire(r, "grow", 4, "one", 3, 0, &next, &err) == 0 && next->fence == 1,
	   "the next holder starts a new sequence (fence 1)");
	b = mk("one", "sb-new");
	is_int(sbx_binding_create(r, next, &b, NULL, &err), 1, "and binds");
	sbx_lock_release(next, &ignored);

	sbx_redis_close(r);
	snprintf(cmd, sizeof(cmd), "kill $(cat %s/r.pid) 2>/dev/null; sleep 0.2; rm -rf %s", dir, dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return tap_done();
}
