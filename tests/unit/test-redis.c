/* Redis connection: URL forms, AUTH from the URL and from a password file,
 * SELECT, pipelining round trips, EVALSHA with NOSCRIPT fallback, and the
 * failure modes: a stopped server is `unavailable` with a message that
 * names the URL but never the password; a wedged (SIGSTOP'd) server is a
 * timeout, not a hang.  Starts its own redis-server on a unix socket. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/wait.h>

#include "binding.h"
#include "image.h"
#include "keys.h"
#include "lease.h"
#include "lock.h"
#include "redis.h"
#include "tap.h"
#include "util.h"

static void sessions_tests(const char *url);

static char dir[] = "/tmp/sbx-test-redis.XXXXXX";

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

static void start(const char *name, const char *extra)
{
	sh("redis-server --port 0 --unixsocket %s/%s.sock --unixsocketperm 700 --save '' "
	   "--appendonly no --daemonize yes --pidfile %s/%s.pid --logfile %s/%s.log --dir %s %s "
	   ">/dev/null", dir, name, dir, name, dir, name, dir, extra);
	for (int i = 0; i < 100; i++) {
		if (sh("[ -S %s/%s.sock ]", dir, name) == 0)
			break;
		usleep(50000);
	}
	usleep(100000);
}

static long pid_of(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s.pid", dir, name);
	FILE *f = fopen(path, "r");
	long pid = 0;
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return pid;
}

int main(void)
{
	struct sbx_err err = {0};
	struct sbx_redis *r = NULL;
	redisReply *rep;
	char url[512], url2[512];

	signal(SIGPIPE, SIG_IGN);   /* as every program does (cli.c): a dead server is EPIPE */
	if (system("command -v redis-server >/dev/null") != 0) {
		printf("ok 1 # SKIP redis-server not installed\n1..1\n");
		return 0;
	}
	if (!mkdtemp(dir))
		return 1;
	start("plain", "");
	start("auth", "--requirepass 's3cr3t:p@ss'");

	/* Bad URLs are configuration errors that never echo the URL. */
	const char *bad[] = {"http://x", "redis://", "redis://h:0", "redis://h:99999", "unix://rel/sock",
			     "redis://h/notanumber", "unix:///s?x=1"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(bad); i++)
		ok(sbx_redis_open_url(bad[i], NULL, 500, &r, &err) < 0 && err.exit_status == SBX_EXIT_CONFIG,
		   "bad URL %s is a configuration error", bad[i]);
	ok(sbx_redis_open_url(NULL, NULL, 500, &r, &err) < 0 && err.exit_status == SBX_EXIT_CONFIG,
	   "no URL is a configuration error");

	snprintf(url, sizeof(url), "unix://%s/plain.sock", dir);
	ok(sbx_redis_open_url(url, NULL, 0, &r, &err) == 0, "connect over a unix socket");
	is_int(r->timeout_ms, 2000, "default command timeout is 2 s");
	setenv("SBX_REDIS_TIMEOUT", "750ms", 1);
	is_int(sbx_redis_default_timeout_ms(), 750, "SBX_REDIS_TIMEOUT=750ms");
	setenv("SBX_REDIS_TIMEOUT", "bogus", 1);
	is_int(sbx_redis_default_timeout_ms(), 2000, "a bad SBX_REDIS_TIMEOUT falls back to 2 s");
	unsetenv("SBX_REDIS_TIMEOUT");
	is_str(r->prefix, "sbx", "default prefix");
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", "k", "v") == 0, "SET");
	freeReplyObject(rep);
	const char *get[] = {"GET", "k"};
	ok(sbx_redis_cmd(r, &rep, &err, 2, get, NULL) == 0 && rep->type == REDIS_REPLY_STRING &&
	   strcmp(rep->str, "v") == 0, "GET by argv");
	freeReplyObject(rep);
	const char *bogus[] = {"HGETALL", "k"};
	ok(sbx_redis_cmd(r, &rep, &err, 2, bogus, NULL) < 0 && err.kind == SBX_INTERNAL &&
	   strstr(err.msg, "WRONGTYPE"), "an error reply is internal and names the problem");
	ok(r->c != NULL, "an error reply keeps the connection");

	/* Pipelining: three commands, one round trip. */
	long long before = r->round_trips;
	const char *p1[] = {"INCR", "n"}, *p2[] = {"INCR", "n"}, *p3[] = {"GET", "n"};
	ok(sbx_redis_append(r, 2, p1, NULL, &err) == 0 && sbx_redis_append(r, 2, p2, NULL, &err) == 0 &&
	   sbx_redis_append(r, 2, p3, NULL, &err) == 0, "append three commands");
	redisReply *a, *b, *c;
	ok(sbx_redis_read(r, &a, &err) == 0 && sbx_redis_read(r, &b, &err) == 0 &&
	   sbx_redis_read(r, &c, &err) == 0, "read three replies");
	ok(a->integer == 1 && b->integer == 2 && c->str && strcmp(c->str, "2") == 0, "replies in order");
	freeReplyObject(a); freeReplyObject(b); freeReplyObject(c);
	is_int(r->round_trips - before, 1, "a pipeline counts as one round trip");

	/* Scripts: EVALSHA, NOSCRIPT fallback after SCRIPT FLUSH. */
	static struct sbx_script s = {.src = "return redis.call('INCRBY', KEYS[1], ARGV[1])"};
	const char *keys[] = {"cnt"}, *args[] = {"5"};
	before = r->round_trips;
	ok(sbx_redis_eval(r, &s, &rep, 1, keys, 1, args, &err) == 0 && rep->integer == 5,
	   "script runs (first time via the NOSCRIPT fallback)");
	freeReplyObject(rep);
	is_int(r->round_trips - before, 2, "unknown script: EVALSHA + EVAL");
	before = r->round_trips;
	ok(sbx_redis_eval(r, &s, &rep, 1, keys, 1, args, &err) == 0 && rep->integer == 10,
	   "script runs again");
	freeReplyObject(rep);
	is_int(r->round_trips - before, 1, "cached script: one EVALSHA");
	ok(sbx_redis_cmdf(r, &rep, &err, "SCRIPT FLUSH") == 0, "SCRIPT FLUSH");
	freeReplyObject(rep);
	ok(sbx_redis_eval(r, &s, &rep, 1, keys, 1, args, &err) == 0 && rep->integer == 15,
	   "after a flush the script still runs (NOSCRIPT -> EVAL)");
	freeReplyObject(rep);
	static struct sbx_script bad_s = {.src = "return redis.call('HGET', KEYS[1], 'x')"};
	ok(sbx_redis_eval(r, &bad_s, &rep, 1, keys, 0, NULL, &err) < 0 && err.kind == SBX_INTERNAL &&
	   strstr(err.msg, "WRONGTYPE"), "an error inside a script is internal with Redis's text");

	/* dup: an independent connection with the same prefix. */
	struct sbx_redis *d = NULL;
	ok(sbx_redis_set_prefix(r, "pfx", &err) == 0, "set a prefix");
	ok(sbx_redis_set_prefix(r, "a{b", &err) < 0 && err.exit_status == SBX_EXIT_CONFIG,
	   "a prefix with a brace is refused");
	ok(sbx_redis_dup(r, &d, &err) == 0 && strcmp(d->prefix, "pfx") == 0, "dup keeps the prefix");
	ok(sbx_redis_cmdf(d, &rep, &err, "GET cnt") == 0 && strcmp(rep->str, "15") == 0, "dup works");
	freeReplyObject(rep);
	sbx_redis_close(d);

	/* SELECT db through ?db=N. */
	snprintf(url2, sizeof(url2), "unix://%s/plain.sock?db=3", dir);
	ok(sbx_redis_open_url(url2, NULL, 0, &d, &err) == 0, "?db=3 connects");
	ok(sbx_redis_cmdf(d, &rep, &err, "GET k") == 0 && rep->type == REDIS_REPLY_NIL,
	   "db 3 does not see db 0's keys");
	freeReplyObject(rep);
	sbx_redis_close(d);

	/* AUTH: URL password, password file, wrong password. */
	snprintf(url2, sizeof(url2), "unix://:s3cr3t%%3Ap%%40ss@%s/auth.sock", dir);
	ok(sbx_redis_open_url(url2, NULL, 0, &d, &err) == 0, "percent-encoded password in the URL");
	sbx_redis_close(d);
	char pwf[300];
	snprintf(pwf, sizeof(pwf), "%s/pw", dir);
	sh("printf 's3cr3t:p@ss\\n' > %s", pwf);
	snprintf(url2, sizeof(url2), "unix://%s/auth.sock", dir);
	ok(sbx_redis_open_url(url2, pwf, 0, &d, &err) == 0, "password from a file (newline trimmed)");
	sbx_redis_close(d);
	ok(sbx_redis_open_url(url2, NULL, 0, &d, &err) == 0 &&
	   sbx_redis_cmdf(d, &rep, &err, "GET k") < 0 && err.kind == SBX_AUTHENTICATION,
	   "no password: the first command is an authentication error");
	sbx_redis_close(d);
	snprintf(url2, sizeof(url2), "unix://:wrongpassword@%s/auth.sock", dir);
	ok(sbx_redis_open_url(url2, NULL, 0, &d, &err) < 0 && err.kind == SBX_AUTHENTICATION &&
	   !strstr(err.msg, "wrongpassword"), "wrong password: authentication, not echoed");

	/* Down: nothing listening on TCP; message names the URL without the password. */
	ok(sbx_redis_open_url("redis://:hunter2@127.0.0.1:1/0", NULL, 500, &d, &err) < 0 &&
	   err.kind == SBX_UNAVAILABLE && sbx_err_exit_status(&err) == 69, "refused TCP: unavailable (69)");
	ok(!strstr(err.msg, "hunter2") && strstr(err.msg, "redis://127.0.0.1:1/0"),
	   "message names the URL without the password: %s", err.msg);

	/* Wedged: a SIGSTOP'd server times out instead of hanging. */
	long pid = pid_of("plain");
	struct sbx_redis *w = NULL;
	ok(sbx_redis_open_url(url, NULL, 300, &w, &err) == 0, "connect with a 300 ms timeout");
	kill((pid_t)pid, SIGSTOP);
	ok(sbx_redis_cmdf(w, &rep, &err, "PING") < 0 && err.kind == SBX_TIMEOUT, "stopped server: timeout");
	ok(w->c == NULL, "the connection is dropped after an I/O failure");
	ok(sbx_redis_cmdf(w, &rep, &err, "PING") < 0 && err.kind == SBX_UNAVAILABLE, "later calls fail fast");
	kill((pid_t)pid, SIGCONT);
	sbx_redis_close(w);

	sessions_tests(url);

	/* Stopped for good: the open connection reports unavailable. */
	sh("redis-cli -s %s/plain.sock shutdown nosave >/dev/null 2>&1", dir);
	ok(sbx_redis_cmdf(r, &rep, &err, "PING") < 0 &&
	   (err.kind == SBX_UNAVAILABLE), "server shut down: unavailable");
	ok(sbx_redis_open_url(url, NULL, 0, &d, &err) < 0 && err.kind == SBX_UNAVAILABLE &&
	   strchr(err.msg, '\n') == NULL, "connect to a missing socket: one-line unavailable");
	sbx_redis_close(r);

	sh("redis-cli -s %s/auth.sock -a 's3cr3t:p@ss' shutdown nosave >/dev/null 2>&1", dir);
	usleep(100000);
	sh("rm -rf %s", dir);
	return tap_done();
}

static long long int_of(struct sbx_redis *r, const char *fmt, const char *a)
{
	redisReply *rep;
	struct sbx_err err = {0};
	if (sbx_redis_cmdf(r, &rep, &err, fmt, a) < 0)
		return -999;
	long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -998;
	freeReplyObject(rep);
	return v;
}

static struct sbx_binding mk(const char *t, const char *s, const char *id)
{
	struct sbx_binding b = {0};
	b.backend = sbx_xstrdup("local");
	b.tenant = sbx_xstrdup(t);
	b.session = sbx_xstrdup(s);
	b.sandbox_id = sbx_xstrdup(id);
	b.template_id = sbx_xstrdup("host");
	b.profile = sbx_xstrdup("default");
	b.created_at = 1700000000;
	return b;
}

/* A child that takes the lock, is SIGSTOP'd past the TTL, then tries to
 * write.  Exit 0 = every write was refused with conflict. */
static int stopped_holder(const char *url, int ready_fd, int go_fd)
{
	struct sbx_err err = {0};
	struct sbx_redis *r;
	struct sbx_lock *l;
	if (sbx_redis_open_url(url, NULL, 0, &r, &err) < 0 ||
	    sbx_lock_acquire(r, "fence", 5, "s", 1, 0, &l, &err) < 0)
		return 10;
	char c = 'x';
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
		return 11;
	l->tk.lost = 0;       /* pretend the renewal thread did not notice */
	struct sbx_binding b = mk("fence", "s", "stale-writer");
	int rc = 0;
	if (sbx_binding_create(r, l, &b, NULL, &err) != -1 || err.kind != SBX_CONFLICT)
		rc |= 1;
	l->tk.lost = 0;
	if (sbx_binding_delete_if_match(r, l, "fence", "s", "winner", &err) != -1 || err.kind != SBX_CONFLICT)
		rc |= 2;
	struct sbx_binding w = mk("fence", "s", "winner");
	l->tk.lost = 0;
	if (sbx_binding_mark_stale(r, l, &w, 5, &err) != -1 || err.kind != SBX_CONFLICT)
		rc |= 4;
	if (sbx_lock_release(l, &err) != -1 || err.kind != SBX_CONFLICT)
		rc |= 8;
	sbx_binding_clear(&b);
	sbx_binding_clear(&w);
	sbx_redis_close(r);
	return rc;
}

static void sessions_tests(const char *url)
{
	struct sbx_err err = {0};
	struct sbx_redis *r;
	redisReply *rep;
	if (sbx_redis_open_url(url, NULL, 0, &r, &err) < 0) {
		ok(0, "connect for the session tests: %s", err.msg);
		return;
	}

	/* Lock: exclusive, fenced, token-checked release. */
	struct sbx_lock *a = NULL, *b = NULL;
	ok(sbx_lock_acquire(r, "t1", 2, "s1", 2, 0, &a, &err) == 0 && a->fence == 1 && !a->binding_raw,
	   "first acquire: fence 1, no binding");
	ok(strlen(a->tk.token) == 32, "token is 32 hex");
	ok(sbx_lock_acquire(r, "t1", 2, "s1", 2, 0, &b, &err) < 0 && err.kind == SBX_CONFLICT &&
	   sbx_err_exit_status(&err) == 75, "busy lock, no wait: conflict (75)");
	ok(sbx_lock_acquire(r, "t1", 2, "s1", 2, 200, &b, &err) < 0 && err.kind == SBX_CONFLICT,
	   "busy lock with a 200 ms wait: conflict after the wait");
	ok(sbx_lock_acquire(r, "t1", 2, "s2", 2, 0, &b, &err) == 0, "another session's lock is independent");
	ok(sbx_lock_release(b, &err) == 0, "release");

	/* Binding create: SET NX, no TTL, bound set in the same script. */
	struct sbx_binding bd = mk("t1", "s1", "sb-1"), ex;
	is_int(sbx_binding_create(r, a, &bd, &ex, &err), 1, "bind under the lock");
	SBX_AUTOFREE char *bkey = sbx_key_session("sbx", "t1", 2, "s1", 2, SBX_KEY_BINDING);
	SBX_AUTOFREE char *bound = sbx_key_tenant("sbx", "t1", 2, SBX_KEY_BOUND);
	is_int(int_of(r, "TTL %s", bkey), -1, "the binding has no TTL");
	is_int(int_of(r, "SISMEMBER %s sb-1", bound), 1, "the sandbox is in the bound set");
	struct sbx_binding bd2 = mk("t1", "s1", "sb-2");
	is_int(sbx_binding_create(r, a, &bd2, &ex, &err), 0, "a second bind finds the first");
	is_str(ex.sandbox_id, "sb-1", "and returns it");
	is_int(ex.fence, 1, "with the writer's fence");
	sbx_binding_clear(&ex);
	is_int(int_of(r, "SCARD %s", bound), 1, "the losing sandbox is not in the bound set");
	ok(sbx_lock_release(a, &err) == 0, "release after binding");

	/* Reacquire: the binding is read in the acquire script; fence grows. */
	ok(sbx_lock_acquire(r, "t1", 2, "s1", 2, 0, &a, &err) == 0 && a->fence == 2 && a->binding_raw,
	   "second acquire: fence 2, binding read with the lock");
	struct sbx_binding got;
	ok(sbx_binding_decode(a->binding_raw, a->binding_len, "t1", "s1", &got, &err) == 0 &&
	   !strcmp(got.sandbox_id, "sb-1") && got.created_at == 1700000000, "binding decodes");
	sbx_binding_clear(&got);
	ok(sbx_binding_decode(a->binding_raw, a->binding_len, "t1", "other", &got, &err) < 0,
	   "a binding under another session's name is refused");
	is_int(sbx_binding_delete_if_match(r, a, "t1", "s1", "sb-other", &err), 0, "delete-if-match: no match");
	is_int(sbx_binding_delete_if_match(r, a, "t1", "s1", "sb-1", &err), 1, "delete-if-match: match");
	is_int(int_of(r, "EXISTS %s", bkey), 0, "binding gone");
	is_int(int_of(r, "SCARD %s", bound), 0, "bound set exact after delete");
	ok(sbx_lock_release(a, &err) == 0, "release");

	/* Strict decoding: garbage is an error, never "absent". */
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", bkey, "{\"version\":2}") == 0, "store a bad binding");
	freeReplyObject(rep);
	ok(sbx_binding_get(r, "t1", "s1", &got, &err) < 0 && strstr(err.msg, "malformed"),
	   "malformed binding: error (%s)", err.msg);
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", bkey, "not json") == 0, "store garbage");
	freeReplyObject(rep);
	ok(sbx_binding_get(r, "t1", "s1", &got, &err) < 0, "garbage binding: error");
	ok(sbx_redis_cmdf(r, &rep, &err, "DEL %s", bkey) == 0, "clean");
	freeReplyObject(rep);
	is_int(sbx_binding_get(r, "t1", "s1", &got, &err), 0, "absent binding: 0");

	/* drop_for_sandbox (sbx-ctl kill): compare-and-delete by id. */
	ok(sbx_lock_acquire(r, "t1", 2, "s1", 2, 0, &a, &err) == 0, "lock");
	is_int(sbx_binding_create(r, a, &bd, NULL, &err), 1, "bind sb-1");
	sbx_lock_release(a, &err);
	struct sbx_sandbox sb = {.id = "sb-9", .tenant = "t1", .session = "s1"};
	is_int(sbx_binding_drop_for_sandbox(r, &sb, &err), 0, "kill of another sandbox keeps the binding");
	sb.id = "sb-1";
	sb.tenant = NULL;
	sb.session = NULL;
	sb.metadata = json_tokener_parse("{\"sbx.tenant\":\"t1\",\"sbx.session\":\"s1\"}");
	is_int(sbx_binding_drop_for_sandbox(r, &sb, &err), 1, "kill of the bound sandbox drops it (metadata)");
	json_object_put(sb.metadata);
	is_int(int_of(r, "SCARD %s", bound), 0, "bound set exact after the drop");

	/* Fencing: a holder SIGSTOP'd past its TTL cannot write. */
	setenv("SBX_LOCK_TTL_MS", "300", 1);
	int ready[2], go[2];
	if (pipe(ready) < 0 || pipe(go) < 0)
		abort();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(stopped_holder(url, ready[1], go[0]));
	char c;
	ok(read(ready[0], &c, 1) == 1, "child holds the lock");
	kill(pid, SIGSTOP);
	SBX_AUTOFREE char *lkey = sbx_key_session("sbx", "fence", 5, "s", 1, SBX_KEY_LOCK);
	while (int_of(r, "EXISTS %s", lkey) == 1)
		usleep(20000);      /* wait for the stopped holder's lock to expire */
	struct sbx_lock *w = NULL;
	ok(sbx_lock_acquire(r, "fence", 5, "s", 1, 0, &w, &err) == 0 && w->fence == 2,
	   "a new holder takes the expired lock with fence 2");
	struct sbx_binding wb = mk("fence", "s", "winner");
	is_int(sbx_binding_create(r, w, &wb, NULL, &err), 1, "the new holder binds");
	ok(sbx_lock_release(w, &err) == 0, "and releases");
	if (write(go[1], "g", 1) != 1)
		abort();
	kill(pid, SIGCONT);
	int st = 0;
	waitpid(pid, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "the resumed stale holder's create, delete and stale-mark are all refused (status %d)",
	   WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	ok(sbx_binding_get(r, "fence", "s", &got, &err) == 1 && !strcmp(got.sandbox_id, "winner") &&
	   got.fence == 2 && !got.stale_at, "the newer binding is intact");
	sbx_binding_clear(&got);
	close(ready[0]); close(ready[1]); close(go[0]); close(go[1]);

	/* A stored binding with a higher fence than the holder's is never
	 * deleted or re-marked by that holder. */
	ok(sbx_lock_acquire(r, "hi", 2, "s", 1, 0, &a, &err) == 0, "lock hi/s");
	SBX_AUTOFREE char *hkey = sbx_key_session("sbx", "hi", 2, "s", 1, SBX_KEY_BINDING);
	struct sbx_binding hb = mk("hi", "s", "sb-hi");
	hb.fence = 999;
	SBX_AUTOFREE char *hjson = sbx_binding_encode(&hb);
	const char *hset[] = {"SET", hkey, hjson};
	ok(sbx_redis_cmd(r, &rep, &err, 3, hset, NULL) == 0, "store a binding with fence 999");
	freeReplyObject(rep);
	ok(sbx_binding_delete_if_match(r, a, "hi", "s", "sb-hi", &err) < 0 && err.kind == SBX_CONFLICT,
	   "a holder with a lower fence cannot delete it");
	a->tk.lost = 0;
	ok(sbx_binding_mark_stale(r, a, &hb, 5, &err) < 0 && err.kind == SBX_CONFLICT,
	   "nor mark it stale");
	a->tk.lost = 0;
	ok(sbx_binding_get(r, "hi", "s", &got, &err) == 1 && got.fence == 999 && !got.stale_at,
	   "the binding is untouched");
	sbx_binding_clear(&got);
	sbx_binding_clear(&hb);
	sbx_lock_release(a, &err);

	/* Renewal keeps a lock alive past several TTLs. */
	setenv("SBX_LOCK_TTL_MS", "600", 1);
	ok(sbx_lock_acquire(r, "renew", 5, "s", 1, 0, &a, &err) == 0, "lock with a 600 ms TTL");
	usleep(1500000);
	ok(sbx_lock_check(a, &err) == 0 && sbx_lock_release(a, &err) == 0,
	   "still held after 1.5 s: the renewal thread kept it");
	unsetenv("SBX_LOCK_TTL_MS");

	/* Stale marking over a tenant, hostile ids included; another tenant
	 * whose id is a glob of ours is untouched. */
	const char *sess[] = {"a", "b:c", "*", "{x}", "%41"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(sess); i++) {
		char id[32];
		snprintf(id, sizeof(id), "sb-st-%zu", i);
		struct sbx_binding x = mk("ten*", sess[i], id);
		ok(sbx_lock_acquire(r, "ten*", 4, sess[i], strlen(sess[i]), 0, &a, &err) == 0 &&
		   sbx_binding_create(r, a, &x, NULL, &err) == 1 && sbx_lock_release(a, &err) == 0,
		   "bind session '%s' of tenant 'ten*'", sess[i]);
		sbx_binding_clear(&x);
	}
	struct sbx_binding other = mk("tenX", "a", "sb-other");
	ok(sbx_lock_acquire(r, "tenX", 4, "a", 1, 0, &a, &err) == 0 &&
	   sbx_binding_create(r, a, &other, NULL, &err) == 1 && sbx_lock_release(a, &err) == 0,
	   "bind a session of tenant 'tenX'");
	long marked = 0, failed = 0;
	ok(sbx_bindings_mark_stale(r, "ten*", 1800000000, &marked, &failed, &err) == 0,
	   "mark tenant 'ten*' stale");
	is_int(marked, 5, "all five sessions marked");
	is_int(failed, 0, "none failed");
	ok(sbx_binding_get(r, "ten*", "{x}", &got, &err) == 1 && got.stale_at == 1800000000,
	   "stale_at recorded");
	sbx_binding_clear(&got);
	ok(sbx_binding_get(r, "tenX", "a", &got, &err) == 1 && got.stale_at == 0,
	   "tenant 'tenX' (matched by the glob 'ten*' unescaped) is untouched");
	sbx_binding_clear(&got);
	ok(sbx_bindings_mark_stale(r, "ten*", 1800000001, &marked, &failed, &err) == 0 && marked == 0,
	   "marking again changes nothing (already stale)");
	/* A busy session is reported, the others still marked. */
	ok(sbx_lock_acquire(r, "tenX", 4, "a", 1, 0, &a, &err) == 0, "hold tenX/a's lock");
	ok(sbx_bindings_mark_stale(r, "tenX", 1800000000, &marked, &failed, &err) < 0 &&
	   failed == 1 && err.kind == SBX_CONFLICT, "a session whose lock stays busy fails (2 s cap)");
	sbx_lock_release(a, &err);

	/* Turn leases (reference §3.9). */
	struct sbx_turn t;
	long long refs = 0;
	is_int(sbx_turn_consume(r, "t1", "s1", &err), 0, "consume without a lease: 0");
	SBX_AUTOFREE char *tkey = sbx_key_session("sbx", "t1", 2, "s1", 2, SBX_KEY_TURN);
	is_int(int_of(r, "EXISTS %s", tkey), 0, "consume never creates the key");
	ok(sbx_turn_begin(r, "t1", "s1", &refs, &err) == 0 && refs == 1, "begin: refs 1");
	ok(sbx_turn_state(r, "t1", "s1", &t, &err) == 0 && t.active && t.rebuild && t.ttl_ms > 0,
	   "state: active, ticket unspent, TTL set");
	ok(sbx_turn_begin(r, "t1", "s1", &refs, &err) == 0 && refs == 2, "nested begin: refs 2");
	ok(sbx_turn_observe(r, "t1", "s1", &t, &err) == 0 && t.active && t.rebuild,
	   "observe: sees the ticket");
	ok(sbx_turn_observe(r, "t1", "s1", &t, &err) == 0 && t.active && !t.rebuild,
	   "observe again: the ticket was spent");
	ok(sbx_turn_begin(r, "t1", "s1", &refs, &err) == 0 && refs == 3, "another nested begin");
	ok(sbx_turn_state(r, "t1", "s1", &t, &err) == 0 && !t.rebuild, "a nested begin does not reset the ticket");
	ok(sbx_turn_end(r, "t1", "s1", &refs, &err) == 0 && refs == 2, "end: 2");
	ok(sbx_turn_end(r, "t1", "s1", &refs, &err) == 0 && refs == 1, "end: 1");
	ok(sbx_turn_end(r, "t1", "s1", &refs, &err) == 0 && refs == 0, "end: 0");
	is_int(int_of(r, "EXISTS %s", tkey), 0, "the last end deletes the lease");
	ok(sbx_turn_end(r, "t1", "s1", &refs, &err) == 0 && refs == 0, "an extra end is harmless");
	ok(sbx_turn_state(r, "t1", "s1", &t, &err) == 0 && !t.active, "no lease: inactive");
	ok(sbx_redis_cmdf(r, &rep, &err, "SET %s %s", tkey, "x") == 0, "turn key of the wrong type");
	freeReplyObject(rep);
	ok(sbx_turn_observe(r, "t1", "s1", &t, &err) < 0 && strstr(err.msg, "WRONGTYPE"),
	   "unreadable lease: an error (resolve keeps the sandbox)");
	ok(sbx_redis_cmdf(r, &rep, &err, "DEL %s", tkey) == 0, "clean");
	freeReplyObject(rep);

	/* Image pointer: compare-and-set on the generation. */
	struct sbx_image im, nx = {.snapshot_id = "snap-1", .fingerprint = "ab", .base_template = "host"};
	int64_t gen = 0;
	is_int(sbx_image_get(r, "t1", &im, &err), 0, "no image yet");
	is_int(sbx_image_cas(r, "t1", 0, &nx, &gen, &err), 1, "first image set");
	is_int(gen, 1, "generation 1");
	nx.snapshot_id = "snap-2";
	is_int(sbx_image_cas(r, "t1", 0, &nx, &gen, &err), 0, "a stale writer loses");
	is_int(gen, 1, "and learns generation 1");
	is_int(sbx_image_cas(r, "t1", 1, &nx, &gen, &err), 1, "the up-to-date writer wins");
	ok(sbx_image_get(r, "t1", &im, &err) == 1 && !strcmp(im.snapshot_id, "snap-2") &&
	   im.generation == 2 && !strcmp(im.fingerprint, "ab"), "image reads back");
	sbx_image_clear(&im);
	is_int(int_of(r, "SISMEMBER sbx:tenants %s", "t1"), 1, "tenant recorded in sbx:tenants");

	sbx_binding_clear(&bd);
	sbx_binding_clear(&bd2);
	sbx_binding_clear(&wb);
	sbx_binding_clear(&other);
	sbx_redis_close(r);
}
