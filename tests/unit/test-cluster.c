/* Redis Cluster client: CRC16 slots against the reference vector and the
 * server's own CLUSTER KEYSLOT, the one-slot check (every sbx key family of
 * a tenant in one slot; a multi-key command across slots refused before it
 * is sent), which nodes get the password (fake nodes, tests/lib/
 * fake-redis-node.py: a redirect, CLUSTER SLOTS or a sentinel naming a node
 * the configuration does not allow is refused and the node never sees a
 * connection; the profile's redis_nodes lets one in), and, against a real 6-node cluster started by
 * tests/lib/cluster.sh (only with SBX_SCALE=1: `make check-scale`): routing,
 * pipelines split per node in one round trip, MOVED after a slot migration,
 * ASK during one, SCAN on every master, WAIT-acknowledged scripts, and a
 * master killed with -9 (the call waits for the failover). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "keys.h"
#include "redis.h"
#include "tap.h"
#include "util.h"

static char dir[] = "/tmp/sbx-test-cluster.XXXXXX";
static char top[1024];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	int rc = system(cmd);
	free(cmd);
	return rc;
}

/* The first line a shell command prints (malloc'd, newline cut). */
static char *sh_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *sh_out(const char *fmt, ...)
{
	char *cmd, line[4096] = "";
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	FILE *f = popen(cmd, "r");
	free(cmd);
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		pclose(f);
	}
	line[strcspn(line, "\n")] = '\0';
	return sbx_xstrdup(line);
}

static void offline_tests(void)
{
	struct sbx_err err = {0};
	is_int(sbx_redis_key_slot("123456789", 9), 12739, "CRC16-XMODEM check value (0x31C3)");
	is_int(sbx_redis_key_slot("{user1000}.following", 20), sbx_redis_key_slot("user1000", 8),
	       "the hash tag decides the slot");
	is_int(sbx_redis_key_slot("foo{}{bar}", 10), sbx_redis_key_slot("foo{}{bar}", 10),
	       "an empty tag: the whole key");
	is_int(sbx_redis_key_slot("foo{{bar}}zap", 13), sbx_redis_key_slot("{bar", 4),
	       "the tag ends at the first '}'");

	/* Every key family of one tenant shares one slot; another tenant's not
	 * (for these two ids). */
	const char *t = "acme", *s = "sess:{evil}";
	char *k[8];
	k[0] = sbx_key_session("sbx", t, 4, s, strlen(s), SBX_KEY_BINDING);
	k[1] = sbx_key_session("sbx", t, 4, s, strlen(s), SBX_KEY_LOCK);
	k[2] = sbx_key_session("sbx", t, 4, s, strlen(s), SBX_KEY_FENCE);
	k[3] = sbx_key_session("sbx", t, 4, s, strlen(s), SBX_KEY_TURN);
	k[4] = sbx_key_tenant("sbx", t, 4, SBX_KEY_BOUND);
	k[5] = sbx_key_tenant("sbx", t, 4, SBX_KEY_IMAGE);
	k[6] = sbx_key_tenant("sbx", t, 4, SBX_KEY_LEDGER);
	k[7] = sbx_key_skill("sbx", t, 4, "pdf", 3);
	const char *ev[11] = {"EVALSHA", "0123", "8"};
	for (int i = 0; i < 8; i++)
		ev[3 + i] = k[i];
	ok(sbx_redis_command_slot(11, ev, NULL, &err) == (int)sbx_redis_key_slot(k[4], strlen(k[4])),
	   "a script over all eight key families of a tenant is one slot");
	SBX_AUTOFREE char *other = sbx_key_tenant("sbx", "globex", 6, SBX_KEY_BOUND);
	const char *bad[] = {"EVALSHA", "0123", "2", k[0], other};
	ok(sbx_redis_command_slot(5, bad, NULL, &err) == -2 && err.kind == SBX_INTERNAL &&
	   strstr(err.msg, "span cluster slots"), "two tenants in one script: refused (%s)", err.msg);
	const char *del[] = {"DEL", "a", "b"};
	ok(sbx_redis_command_slot(3, del, NULL, &err) == -2, "DEL a b: refused");
	const char *mset[] = {"MSET", "{x}a", "1", "{x}b", "2"};
	ok(sbx_redis_command_slot(5, mset, NULL, &err) >= 0, "MSET in one tag: values are not keys");
	const char *ping[] = {"PING"};
	is_int(sbx_redis_command_slot(1, ping, NULL, &err), -1, "PING names no key");
	SBX_AUTOFREE char *pat = sbx_key_session_pattern("sbx", t, 4, SBX_KEY_BINDING);
	const char *scan[] = {"SCAN", "0", "MATCH", pat};
	is_int(sbx_redis_command_slot(4, scan, NULL, &err), (int)sbx_redis_key_slot(k[4], strlen(k[4])),
	       "SCAN MATCH of a tenant's pattern goes to the tenant's slot");
	const char *scan2[] = {"SCAN", "0", "MATCH", "sbx:{*}:bound"};
	is_int(sbx_redis_command_slot(4, scan2, NULL, &err), -1, "a glob in the tag: no slot");
	/* The event stream (events.c): its key sits after a subcommand or
	 * after STREAMS, never at argv[1]. */
	SBX_AUTOFREE char *es = sbx_key_tenant("sbx", t, 4, SBX_KEY_EVENTS);
	int tslot = (int)sbx_redis_key_slot(k[4], strlen(k[4]));
	is_int(sbx_redis_command_slot(2, (const char *[]){"XLEN", es}, NULL, &err), tslot,
	       "the event stream is in the tenant's slot");
	const char *xg[] = {"XGROUP", "CREATE", es, "g", "0", "MKSTREAM"};
	is_int(sbx_redis_command_slot(6, xg, NULL, &err), tslot, "XGROUP CREATE: the key is argv[2]");
	const char *xr[] = {"XREADGROUP", "GROUP", "g", "c", "COUNT", "100", "BLOCK", "1000",
			    "STREAMS", es, ">"};
	is_int(sbx_redis_command_slot(11, xr, NULL, &err), tslot,
	       "XREADGROUP: the key after STREAMS, its id not a key");
	const char *xr2[] = {"XREAD", "STREAMS", es, other, "0", "0"};
	ok(sbx_redis_command_slot(6, xr2, NULL, &err) == -2, "XREAD of two tenants' streams: refused");
	for (int i = 0; i < 8; i++)
		free(k[i]);
}

/* ---- fake nodes: who gets credentials ---------------------------------- */

static char fdir[] = "/tmp/sbx-test-fake.XXXXXX";

/* Start a fake node NAME (role, listening on host) in fdir/NAME; its port,
 * or 0 when it did not come up. */
static int fake_start(const char *name, const char *role, const char *host, const char *target)
{
	sh("mkdir -p %s/%s && python3 %s/tests/lib/fake-redis-node.py %s %s %s/%s %s "
	   "</dev/null >/dev/null 2>&1 &", fdir, name, top, role, host, fdir, name, target);
	for (int i = 0; i < 400; i++) {
		SBX_AUTOFREE char *p = sh_out("cat %s/%s/port 2>/dev/null", fdir, name);
		if (atoi(p) > 0)
			return atoi(p);
		usleep(25000);
	}
	return 0;
}

/* How many lines of fake node NAME's log are `what` (CONNECT, AUTH, GET). */
static int fake_saw(const char *name, const char *what)
{
	SBX_AUTOFREE char *n = sh_out("grep -cx '%s' %s/%s/log 2>/dev/null || true", what, fdir,
				      name);
	return atoi(n);
}

/* A profile for sbx_redis_open: the URL and its redis_nodes (or none). */
static int open_with(const char *url, const char *nodes_cidr, struct sbx_redis **r,
		     struct sbx_err *err)
{
	char *nodes[] = {(char *)nodes_cidr, NULL};
	struct sbx_profile p = {.redis_url = (char *)url, .prefix = "sbx",
				.redis_nodes = nodes_cidr ? nodes : NULL};
	return sbx_redis_open(&p, r, err);
}

static void credential_tests(void)
{
	struct sbx_err err = {0};
	struct sbx_redis *r = NULL;
	redisReply *rep = NULL;
	char url[256], tgt[64];
	if (!mkdtemp(fdir))
		return;
	setenv("SBX_REDIS_FAILOVER_WAIT", "1s", 1);

	/* An ASK to a node elsewhere (127.0.0.2: loopback, but not the
	 * seed's address, and no redis_nodes). */
	int x = fake_start("x", "sink", "127.0.0.2", "");
	snprintf(tgt, sizeof(tgt), "127.0.0.2:%d", x);
	int s = fake_start("s", "seed-ask", "127.0.0.1", tgt);
	ok(x && s, "fake nodes: a seed at 127.0.0.1:%d, a node at %s", s, tgt);
	snprintf(url, sizeof(url), "redis+cluster://:hunter2@127.0.0.1:%d", s);
	ok(open_with(url, NULL, &r, &err) == 0, "open the fake cluster (%s)", err.msg);
	long long rt = r ? r->round_trips : 0;
	ok(r && sbx_redis_cmdf(r, &rep, &err, "GET %s", "{a}k") < 0 && err.kind == SBX_UNAVAILABLE &&
	   strstr(err.msg, "a MOVED/ASK redirect names node 127.0.0.2:") &&
	   strstr(err.msg, "no credentials sent"), "an ASK to a node not allowed: unavailable (%s)",
	   err.msg);
	ok(r && r->round_trips - rt == 1, "... at once, not after the failover budget (%lld round "
	   "trips)", r ? r->round_trips - rt : -1);
	is_int(fake_saw("x", "CONNECT"), 0, "... and the node never saw a connection");
	is_int(fake_saw("s", "AUTH"), 1, "the seed itself got the password");
	sbx_redis_close(r);
	r = NULL;

	/* The same with the profile's redis_nodes naming it: let in. */
	sbx_err_clear(&err);
	ok(open_with(url, "127.0.0.2/32", &r, &err) == 0 && sbx_redis_cmdf(r, &rep, &err, "GET %s",
	   "{a}k") == 0, "redis_nodes [127.0.0.2/32]: the ASK is followed (%s)", err.msg);
	if (rep)
		freeReplyObject(rep);
	rep = NULL;
	ok(fake_saw("x", "AUTH") == 1 && fake_saw("x", "GET") == 1,
	   "... and the node got the password, then the command");
	sbx_redis_close(r);
	r = NULL;

	/* A MOVED (the map then agrees: CLUSTER SLOTS names the new node). */
	int y = fake_start("y", "sink", "127.0.0.2", "");
	snprintf(tgt, sizeof(tgt), "127.0.0.2:%d", y);
	int m = fake_start("m", "seed", "127.0.0.1", tgt);
	snprintf(url, sizeof(url), "redis+cluster://:hunter2@127.0.0.1:%d", m);
	ok(open_with(url, NULL, &r, &err) == 0 && sbx_redis_cmdf(r, &rep, &err, "SET %s v", "{b}k") < 0 &&
	   err.kind == SBX_UNAVAILABLE && strstr(err.msg, "MOVED/ASK redirect names node 127.0.0.2:"),
	   "a MOVED to a node not allowed: unavailable (%s)", err.msg);
	is_int(fake_saw("y", "CONNECT"), 0, "... and the node never saw a connection");
	sbx_redis_close(r);
	r = NULL;

	/* CLUSTER SLOTS naming a node elsewhere. */
	int z = fake_start("z", "sink", "127.0.0.2", "");
	snprintf(tgt, sizeof(tgt), "slots=127.0.0.2:%d", z);
	int c = fake_start("c", "seed", "127.0.0.1", tgt);
	snprintf(url, sizeof(url), "redis+cluster://:hunter2@127.0.0.1:%d", c);
	ok(open_with(url, NULL, &r, &err) == 0 && sbx_redis_cmdf(r, &rep, &err, "GET %s", "{c}k") < 0 &&
	   strstr(err.msg, "CLUSTER SLOTS names node 127.0.0.2:"), "CLUSTER SLOTS naming a node not "
	   "allowed: refused (%s)", err.msg);
	is_int(fake_saw("z", "CONNECT"), 0, "... and the node never saw a connection");
	sbx_redis_close(r);
	r = NULL;

	/* Never a link-local (metadata) address, whatever redis_nodes says;
	 * never a host name the URL does not name.  Nothing listens there:
	 * the refusal comes before any connection. */
	int k = fake_start("k", "seed-ask", "127.0.0.1", "169.254.169.254:6379");
	snprintf(url, sizeof(url), "redis+cluster://:hunter2@127.0.0.1:%d", k);
	ok(open_with(url, "0.0.0.0/0", &r, &err) == 0 && sbx_redis_cmdf(r, &rep, &err, "GET %s",
	   "{d}k") < 0 && strstr(err.msg, "169.254.169.254:6379, an address that is never allowed "
	   "(link-local"), "an ASK to 169.254.169.254 with redis_nodes [0.0.0.0/0]: refused (%s)",
	   err.msg);
	sbx_redis_close(r);
	r = NULL;
	int h = fake_start("h", "seed-ask", "127.0.0.1", "redis.evil.example:6379");
	snprintf(url, sizeof(url), "redis+cluster://:hunter2@127.0.0.1:%d", h);
	ok(open_with(url, "0.0.0.0/0", &r, &err) == 0 && sbx_redis_cmdf(r, &rep, &err, "GET %s",
	   "{e}k") < 0 && strstr(err.msg, "a host name the URL does not name"),
	   "an ASK to a host name: refused (%s)", err.msg);
	sbx_redis_close(r);
	r = NULL;

	/* A sentinel naming a master elsewhere. */
	int w = fake_start("w", "sink", "127.0.0.2", "");
	snprintf(tgt, sizeof(tgt), "127.0.0.2:%d", w);
	int sn = fake_start("sn", "sentinel", "127.0.0.1", tgt);
	snprintf(url, sizeof(url), "redis+sentinel://:hunter2@127.0.0.1:%d/m", sn);
	ok(open_with(url, NULL, &r, &err) < 0 && err.kind == SBX_UNAVAILABLE &&
	   strstr(err.msg, "a sentinel names node 127.0.0.2:"), "a sentinel naming a master not "
	   "allowed: unavailable (%s)", err.msg);
	is_int(fake_saw("w", "CONNECT"), 0, "... and that master never saw a connection");
	is_int(fake_saw("sn", "AUTH"), 0, "... nor the sentinel the password");
	sbx_err_clear(&err);
	ok(open_with(url, "127.0.0.0/8", &r, &err) == 0, "redis_nodes [127.0.0.0/8]: the master is "
	   "used (%s)", err.msg);
	is_int(fake_saw("w", "AUTH"), 1, "... and gets the password");
	sbx_redis_close(r);

	/* A script whose connection broke after it was sent: resent only
	 * when it says it is safe to run twice (a token-checked release). */
	struct sbx_script keep = {.src = "return 1"}, again = {.src = "return 1", .resend = 1};
	const char *keys[] = {"{f}lock"};
	int d1 = fake_start("d1", "drop-once", "127.0.0.1", "");
	snprintf(url, sizeof(url), "redis+cluster://127.0.0.1:%d", d1);
	sbx_err_clear(&err);
	ok(open_with(url, NULL, &r, &err) == 0 && sbx_redis_eval(r, &again, &rep, 1, keys, 0, NULL,
	   &err) == 0 && rep->integer == 1, "a resend script broken after the send: sent again, "
	   "answered (%s)", err.msg);
	if (rep)
		freeReplyObject(rep);
	rep = NULL;
	is_int(fake_saw("d1", "EVALSHA"), 2, "... the node saw it twice");
	sbx_redis_close(r);
	r = NULL;
	int d2 = fake_start("d2", "drop-once", "127.0.0.1", "");
	snprintf(url, sizeof(url), "redis+cluster://127.0.0.1:%d", d2);
	ok(open_with(url, NULL, &r, &err) == 0 && sbx_redis_eval(r, &keep, &rep, 1, keys, 0, NULL,
	   &err) < 0 && err.kind == SBX_UNAVAILABLE, "any other script: not resent, unavailable (%s)",
	   err.msg);
	is_int(fake_saw("d2", "EVALSHA"), 1, "... the node saw it once");
	sbx_redis_close(r);
	r = NULL;

	unsetenv("SBX_REDIS_FAILOVER_WAIT");
	sh("for f in %s/*/pid; do kill $(cat $f) 2>/dev/null; done; rm -rf %s", fdir, fdir);
}

static struct sbx_redis *open_cluster(const char *url)
{
	struct sbx_redis *r = NULL;
	struct sbx_err err = {0};
	if (sbx_redis_open_url(url, NULL, 2000, &r, &err) < 0)
		printf("# open: %s\n", err.msg);
	return r;
}

static long long dbsize_sum(void)
{
	SBX_AUTOFREE char *s = sh_out("for p in $(cat %s/c/ports); do [ -f %s/c/$p/killed ] || "
				      "[ \"$(redis-cli -p $p role | head -1)\" != master ] || "
				      "redis-cli -p $p dbsize; done | awk '{s+=$1} END {print s+0}'",
				      dir, dir);
	return atoll(s);
}

static int count_key(const char *key, size_t len, void *ctx, struct sbx_err *err)
{
	(void)key, (void)len, (void)err;
	(*(long *)ctx)++;
	return 0;
}

static void routing_tests(struct sbx_redis *r)
{
	struct sbx_err err = {0};
	redisReply *rep;
	is_int(sbx_redis_masters(r), 3, "three masters in the slot map");
	SBX_AUTOFREE char *p1 = sh_out("head -1 %s/c/ports", dir);
	int bad = 0;
	for (int i = 0; i < 50; i++) {
		char key[32];
		snprintf(key, sizeof(key), "k%d:x{%d}", i * 7919, i);
		SBX_AUTOFREE char *ks = sh_out("redis-cli -p %s cluster keyslot '%s'", p1, key);
		bad += atoi(ks) != (int)sbx_redis_key_slot(key, strlen(key));
	}
	is_int(bad, 0, "our slot equals CLUSTER KEYSLOT for 50 keys");

	long long before = r->round_trips;
	for (int i = 0; i < 300; i++) {
		char key[32], val[32];
		snprintf(key, sizeof(key), "pk%d", i);
		snprintf(val, sizeof(val), "v%d", i);
		const char *argv[] = {"SET", key, val};
		if (sbx_redis_append(r, 3, argv, NULL, &err) < 0)
			break;
	}
	int good = 0;
	for (int i = 0; i < 300; i++) {
		if (sbx_redis_read(r, &rep, &err) < 0)
			break;
		good += rep->type == REDIS_REPLY_STATUS;
		freeReplyObject(rep);
	}
	is_int(good, 300, "a pipeline of 300 SETs over three masters: 300 OK");
	is_int(r->round_trips - before, 1, "... in one round trip");
	is_int(dbsize_sum(), 300, "the masters hold 300 keys between them");
	long n = 0;
	int rc = sbx_redis_scan_all(r, "pk*", count_key, &n, &err);
	ok(rc == 0 && n == 300, "SCAN on every master finds all 300 (%ld)", n);

	before = r->round_trips;
	const char *cross[] = {"DEL", "pk1", "pk2"};
	ok(sbx_redis_cmd(r, &rep, &err, 3, cross, NULL) < 0 && err.kind == SBX_INTERNAL &&
	   r->round_trips == before, "a cross-slot DEL is refused before it is sent");
	ok(sbx_redis_append(r, 3, cross, NULL, &err) < 0, "... and in a pipeline");
}

static void migration_tests(struct sbx_redis *r)
{
	struct sbx_err err = {0};
	redisReply *rep;
	const char *key = "sbx:{mig}:k";
	unsigned slot = sbx_redis_key_slot(key, strlen(key));
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", key, "before") == 0, "SET before the move");
	freeReplyObject(rep);
	sh("%s/tests/lib/cluster.sh migrate %s/c %u begin", top, dir, slot);
	long long red = r->redirects;
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", "sbx:{mig}:new", "1") == 0 &&
	   rep->type == REDIS_REPLY_STATUS, "a new key while the slot migrates: written");
	freeReplyObject(rep);
	ok(r->redirects > red, "... through an ASK (%lld)", r->redirects - red);
	ok(sbx_redis_cmdf(r, &rep, &err, "GET %s", key) == 0 && rep->str &&
	   strcmp(rep->str, "before") == 0, "an old key is still read at the source");
	freeReplyObject(rep);
	long found = 0;
	int src = sbx_redis_scan(r, "sbx:{mig}:*", 100, count_key, &found, &err);
	ok(src == 0 && found == 2,
	   "a scan of the migrating slot finds the old key at the source and the new one at the "
	   "target (%ld)", found);
	sh("%s/tests/lib/cluster.sh migrate %s/c %u keys", top, dir, slot);
	sh("%s/tests/lib/cluster.sh migrate %s/c %u end", top, dir, slot);
	red = r->redirects;
	ok(sbx_redis_cmdf(r, &rep, &err, "GET %s", key) == 0 && rep->str &&
	   strcmp(rep->str, "before") == 0, "after the move: the value is found");
	freeReplyObject(rep);
	ok(r->redirects == red + 1, "... after one MOVED");
	red = r->redirects;
	ok(sbx_redis_cmdf(r, &rep, &err, "GET %s", key) == 0 && r->redirects == red,
	   "the next call goes straight to the new master");
	freeReplyObject(rep);
}

static void durable_tests(struct sbx_redis *r)
{
	struct sbx_err err = {0};
	redisReply *rep;
	struct sbx_script s = {.src = "return redis.call('INCR', KEYS[1])", .durable = 1};
	const char *keys[] = {"sbx:{d}:fence"};
	ok(r->wait_replicas == 1, "a cluster URL waits for one replica by default");
	ok(sbx_redis_eval(r, &s, &rep, 1, keys, 0, NULL, &err) == 0 && rep->integer == 1,
	   "a durable script acknowledged by its replica counts");
	freeReplyObject(rep);
	r->wait_replicas = 2;
	r->wait_ms = 200;
	ok(sbx_redis_eval(r, &s, &rep, 1, keys, 0, NULL, &err) < 0 && err.kind == SBX_UNAVAILABLE &&
	   strstr(err.msg, "does not count"), "two replicas asked, one exists: unavailable (%s)",
	   err.msg);
	r->wait_replicas = 1;
	r->wait_ms = 1000;
}

static void failover_tests(struct sbx_redis *r)
{
	struct sbx_err err = {0};
	redisReply *rep;
	const char *key = "sbx:{fo}:k";
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", key, "kept") == 0, "SET before the crash");
	freeReplyObject(rep);
	SBX_AUTOFREE char *port = sh_out("%s/tests/lib/cluster.sh master-of %s/c '%s'", top, dir, key);
	ok(sh("%s/tests/lib/cluster.sh kill %s/c %s", top, dir, port) == 0, "kill -9 its master (%s)",
	   port);
	setenv("SBX_REDIS_FAILOVER_WAIT", "20s", 1);
	ok(sbx_redis_cmdf(r, &rep, &err, "GET %s", key) == 0 && rep->str && !strcmp(rep->str, "kept"),
	   "GET waits for the failover and reads the acknowledged value");
	if (rep)
		freeReplyObject(rep);
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", key, "after") == 0, "SET on the new master");
	if (rep)
		freeReplyObject(rep);
	sh("%s/tests/lib/cluster.sh restart %s/c %s && rm -f %s/c/%s/killed", top, dir, port, dir, port);
	unsetenv("SBX_REDIS_FAILOVER_WAIT");
}

/* Last (it leaves a slot range without any node): a master and its replica
 * both killed, then a pipeline of 200 reads in that slot.  Each fails, and
 * only the first waits out the failover budget: the others fail with its
 * error, so the pipeline costs a handful of round trips, not 200 budgets. */
static void dead_slot_tests(struct sbx_redis *r)
{
	struct sbx_err err = {0};
	redisReply *rep;
	const char *key = "sbx:{dead}:k";
	SBX_AUTOFREE char *port = sh_out("%s/tests/lib/cluster.sh master-of %s/c '%s'", top, dir, key);
	SBX_AUTOFREE char *rport = sh_out("for p in $(cat %s/c/ports); do redis-cli -p $p role 2>/dev/null"
					  " | sed -n '1p;3p' | paste -sd' ' | grep -q '^slave %s$' && echo $p;"
					  " done", dir, port);
	ok(*rport != '\0', "the master of {dead} (%s) has a replica (%s)", port, rport);
	sh("%s/tests/lib/cluster.sh kill %s/c %s; %s/tests/lib/cluster.sh kill %s/c %s", top, dir, port,
	   top, dir, rport);
	setenv("SBX_REDIS_FAILOVER_WAIT", "1s", 1);
	for (int i = 0; i < 200; i++) {
		char k[32];
		snprintf(k, sizeof(k), "sbx:{dead}:%d", i);
		const char *argv[] = {"GET", k};
		sbx_redis_append(r, 2, argv, NULL, &err);
	}
	long long before = r->round_trips;
	int failed = 0;
	for (int i = 0; i < 200; i++) {
		if (sbx_redis_read(r, &rep, &err) < 0)
			failed++;
		else
			freeReplyObject(rep);
	}
	is_int(failed, 200, "200 reads of a slot nobody serves all fail (%s)", err.msg);
	ok(r->round_trips - before < 40, "... after one node's worth of retries, not 200 (%lld round trips)",
	   r->round_trips - before);
	unsetenv("SBX_REDIS_FAILOVER_WAIT");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	offline_tests();
	const char *b = getenv("SBX_TOP");
	snprintf(top, sizeof(top), "%s", b ? b : ".");
	char fake[1100];
	snprintf(fake, sizeof(fake), "%s/tests/lib/fake-redis-node.py", top);
	if (system("command -v python3 >/dev/null") == 0 && access(fake, R_OK) == 0)
		credential_tests();
	else
		printf("# credential tests: no python3 or no %s for the fake nodes\n", fake);
	if (!getenv("SBX_SCALE") || strcmp(getenv("SBX_SCALE"), "1") != 0 ||
	    system("command -v redis-server >/dev/null") != 0) {
		printf("# cluster tests: only with SBX_SCALE=1 (make check-scale)\n");
		return tap_done();
	}
	if (!mkdtemp(dir))
		return 1;
	ok(sh("%s/tests/lib/cluster.sh start %s/c", top, dir) == 0, "a 6-node cluster starts");
	SBX_AUTOFREE char *url = sh_out("cat %s/c/url", dir);
	struct sbx_redis *r = open_cluster(url);
	ok(r != NULL, "open %s", url);
	if (r) {
		is_int(r->round_trips, 1, "opening costs one round trip (CLUSTER SLOTS)");
		routing_tests(r);
		migration_tests(r);
		durable_tests(r);
		failover_tests(r);
		dead_slot_tests(r);
		sbx_redis_close(r);
	}
	sh("%s/tests/lib/cluster.sh stop %s/c", top, dir);
	sh("rm -rf %s", dir);
	return tap_done();
}
