/* redis-cluster.c - Redis Cluster for hiredis 0.14 (which has none): the
 * slot of a command, the slot map, routing with MOVED and ASK, one
 * connection per node, pipelines split per node, and SCAN of a slot's
 * nodes or of every master.
 *
 * Promises:
 *   - A command whose keys span slots is refused before it is sent, in
 *     every mode (sbx_redis_command_slot), so no multi-key script can
 *     silently lose its atomicity on a cluster.
 *   - A command is sent to the master its slot map names; MOVED updates
 *     the slot (and reloads the whole map when it names a node we did not
 *     know), ASK sends ASKING then the command to the named node, once.
 *     At most 16 redirections per command, then `unavailable`.
 *   - Only nodes the configuration allows are connected to and get the
 *     password (sbx_redis__node_allowed: the URL's hosts and their
 *     addresses, the profile's redis_nodes, never a link-local or metadata
 *     address): a node that CLUSTER SLOTS or a redirect names elsewhere
 *     fails the command at once, `unavailable`, naming it.
 *   - A node that refuses connections, or a reply that says "not executed"
 *     (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, READONLY), makes the
 *     call reload the map and try again, with backoff, for the failover
 *     budget (sbx_redis__failover_ms).  A connection that breaks after a
 *     write was sent is not retried (the write may have run): `unavailable`,
 *     unless the caller says the command is safe to run twice (a
 *     token-checked release or renewal).  A cached connection the node
 *     closed (it died, or timed the client out) is opened again before use,
 *     so a command is never lost to a socket known to be dead.
 *   - A pipeline costs one round trip whatever the number of nodes: every
 *     node's share is written before any reply is read.  Redirected
 *     commands of a pipeline are sent again one by one, in order of their
 *     replies, which the caller still reads in the order it appended. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redis-int.h"
#include "util.h"

#define NSLOTS 16384
#define MAX_REDIRECTS 16
#define MAX_NODES 512

/* ---- slots ------------------------------------------------------------- */

/* CRC16-CCITT (XMODEM: poly 0x1021, init 0), as Redis Cluster's keyHashSlot. */
static uint16_t crc16(const char *p, size_t n)
{
	uint16_t crc = 0;
	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)((unsigned char)p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned sbx_redis_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len);
	if (open) {
		size_t rest = len - (size_t)(open - key) - 1;
		const char *close = memchr(open + 1, '}', rest);
		if (close && close > open + 1)
			return crc16(open + 1, (size_t)(close - open - 1)) & (NSLOTS - 1);
	}
	return crc16(key, len) & (NSLOTS - 1);
}

static int cmd_is(const char *cmd, size_t len, const char *name)
{
	return strlen(name) == len && strncasecmp(cmd, name, len) == 0;
}

static int is_any(const char *cmd, size_t len, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cmd_is(cmd, len, names[i]))
			return 1;
	return 0;
}

/* The key positions of a command: [first, last] stepping by `step`
 * (last < 0: to the end).  0 keys: first = 0. */
static void key_spec(int argc, const char **argv, const size_t *lens, int *first, int *last,
		     int *step)
{
	static const char *const keyless[] = {
		"PING", "AUTH", "SELECT", "SCRIPT", "INFO", "CLUSTER", "ROLE", "WAIT", "TIME",
		"DBSIZE", "FLUSHALL", "FLUSHDB", "CONFIG", "CLIENT", "ECHO", "ASKING", "READONLY",
		"SENTINEL", "MULTI", "EXEC", "DISCARD", "KEYS", "RANDOMKEY", "DEBUG", "COMMAND",
		"SHUTDOWN", "SAVE", "BGSAVE", "LASTSAVE", "HELLO", "QUIT", "SLOWLOG", "LATENCY",
	};
	static const char *const all_keys[] = {
		"DEL", "UNLINK", "EXISTS", "MGET", "TOUCH", "WATCH", "SINTER", "SUNION", "SDIFF",
		"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "PFCOUNT", "PFMERGE",
	};
	static const char *const two_keys[] = {"RENAME", "RENAMENX", "SMOVE", "RPOPLPUSH",
					       "LMOVE", "COPY"};
	size_t l0 = lens ? lens[0] : strlen(argv[0]);
	*first = 0, *last = 0, *step = 1;
	if (argc < 2 || is_any(argv[0], l0, keyless, SBX_ARRAY_LEN(keyless)))
		return;
	if (cmd_is(argv[0], l0, "EVAL") || cmd_is(argv[0], l0, "EVALSHA") ||
	    cmd_is(argv[0], l0, "EVAL_RO") || cmd_is(argv[0], l0, "EVALSHA_RO") ||
	    cmd_is(argv[0], l0, "FCALL")) {
		long nk = argc >= 3 ? strtol(argv[2], NULL, 10) : 0;
		if (nk > 0 && nk <= argc - 3)
			*first = 3, *last = 2 + (int)nk;
		return;
	}
	if (cmd_is(argv[0], l0, "MEMORY") || cmd_is(argv[0], l0, "OBJECT")) {
		if (argc >= 3)
			*first = *last = 2;
		return;
	}
	/* Streams: XGROUP and XINFO name their key after a subcommand; XREAD
	 * and XREADGROUP after STREAMS, the keys then their ids. */
	if (cmd_is(argv[0], l0, "XGROUP") || cmd_is(argv[0], l0, "XINFO")) {
		if (argc >= 3)
			*first = *last = 2;
		return;
	}
	if (cmd_is(argv[0], l0, "XREAD") || cmd_is(argv[0], l0, "XREADGROUP")) {
		for (int i = 1; i < argc; i++)
			if (cmd_is(argv[i], lens ? lens[i] : strlen(argv[i]), "STREAMS") &&
			    argc - i - 1 >= 2) {
				*first = i + 1, *last = i + (argc - i - 1) / 2;
				return;
			}
		return;
	}
	if (cmd_is(argv[0], l0, "MSET") || cmd_is(argv[0], l0, "MSETNX")) {
		*first = 1, *last = -1, *step = 2;
		return;
	}
	if (is_any(argv[0], l0, all_keys, SBX_ARRAY_LEN(all_keys))) {
		*first = 1, *last = -1;
		return;
	}
	*first = 1;
	*last = argc >= 3 && is_any(argv[0], l0, two_keys, SBX_ARRAY_LEN(two_keys)) ? 2 : 1;
}

/* SCAN ... MATCH pattern: the slot of the pattern's hash tag when the tag
 * holds no glob character (then every match lives in that slot), else -1. */
static int scan_slot(int argc, const char **argv, const size_t *lens)
{
	for (int i = 2; i + 1 < argc; i++) {
		size_t l = lens ? lens[i] : strlen(argv[i]);
		if (!cmd_is(argv[i], l, "MATCH"))
			continue;
		const char *p = argv[i + 1];
		size_t pl = lens ? lens[i + 1] : strlen(p);
		const char *open = memchr(p, '{', pl);
		const char *close = open ? memchr(open + 1, '}', pl - (size_t)(open - p) - 1) : NULL;
		if (!close || close == open + 1)
			return -1;
		for (const char *c = p; c < close; c++)
			if (strchr("*?[\\", *c))
				return -1;
		return (int)sbx_redis_key_slot(p, pl);
	}
	return -1;
}

int sbx_redis_command_slot(int argc, const char **argv, const size_t *lens,
			   struct sbx_err *err)
{
	if (argc < 1)
		return -1;
	size_t l0 = lens ? lens[0] : strlen(argv[0]);
	if (cmd_is(argv[0], l0, "SCAN"))
		return scan_slot(argc, argv, lens);
	int first, last, step;
	key_spec(argc, argv, lens, &first, &last, &step);
	if (!first)
		return -1;
	if (last < 0 || last >= argc)
		last = argc - 1;
	int slot = -1, at = 0;
	for (int i = first; i <= last; i += step) {
		int s = (int)sbx_redis_key_slot(argv[i], lens ? lens[i] : strlen(argv[i]));
		if (slot < 0) {
			slot = s, at = i;
		} else if (s != slot) {
			char cmd[32];
			snprintf(cmd, sizeof(cmd), "%.*s", (int)(l0 < 31 ? l0 : 31), argv[0]);
			return sbx_fail(err, SBX_INTERNAL, "redis",
					"redis %s refused before sending: its keys span cluster slots "
					"(key %d is in slot %d, key %d in slot %d)", cmd, at - first + 1,
					slot, (i - first) / step + 1, s) - 1;
		}
	}
	return slot;
}

/* ---- the slot map -------------------------------------------------------- */

struct cnode {
	char *host;
	int port;
	char *where;          /* "host:port (of <cluster url>)" for messages */
	redisContext *c;
	int owns;             /* slots this node serves in the current map */
	const char *by;       /* who named it first: the URL, CLUSTER SLOTS, a redirect */
	int allowed;          /* sbx_redis__node_allowed said yes (checked once) */
	int refused;          /* ... said no: never connected to */
};

struct qcmd {
	int argc;
	char **argv;
	size_t *lens;
	int slot;
};

struct sbx_redis_cluster {
	struct cnode *nodes;
	size_t nnodes;
	int16_t slot_node[NSLOTS];     /* index into nodes, -1: unknown */
	struct qcmd *q;                /* appended, not sent yet */
	size_t nq, qcap;
	redisReply **out;              /* the last pipeline's replies, in order */
	struct sbx_err *out_err;       /* per reply: why it is missing (NULL reply) */
	size_t nout, opos;
};

static int node_get(struct sbx_redis *r, const char *host, int port, const char *by)
{
	struct sbx_redis_cluster *cl = r->cl;
	for (size_t i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].port == port && strcmp(cl->nodes[i].host, host) == 0)
			return (int)i;
	if (cl->nnodes >= MAX_NODES)
		return -1;
	cl->nodes = sbx_xrealloc(cl->nodes, (cl->nnodes + 1) * sizeof(*cl->nodes));
	struct cnode *n = &cl->nodes[cl->nnodes];
	memset(n, 0, sizeof(*n));
	n->host = sbx_xstrdup(host);
	n->port = port;
	n->by = by;
	n->where = sbx_xasprintf("%s:%d (%s)", host, port, r->safe_url);
	return (int)cl->nnodes++;
}

/* The node's context, opened on first use and opened again when the cached
 * one is no longer usable (the node closed it or died since: see
 * sbx_redis__ctx_usable), so a command is never written to a socket whose
 * peer is known to be gone.  A node the configuration does not allow
 * (sbx_redis__node_allowed) is never connected to: -1 with n->refused set,
 * and callers fail at once instead of waiting for a failover. */
static int node_ctx(struct sbx_redis *r, int i, struct sbx_err *err)
{
	struct cnode *n = &r->cl->nodes[i];
	if (!n->allowed) {
		if (sbx_redis__node_allowed(r, n->host, n->port, n->by, err) < 0)
			return n->refused = 1, -1;
		n->allowed = 1;
	}
	if (n->c && !sbx_redis__ctx_usable(n->c)) {
		if (r->c == n->c)
			r->c = NULL;
		redisFree(n->c);
		n->c = NULL;
	}
	if (n->c)
		return 0;
	return sbx_redis__connect(r, n->host, n->port, NULL, 0, 1, n->where, &n->c, err);
}

/* Fill the map from one CLUSTER SLOTS reply; 0 when it covered any slot. */
static int apply_slots(struct sbx_redis *r, int asked, redisReply *rep)
{
	struct sbx_redis_cluster *cl = r->cl;
	int16_t map[NSLOTS];
	int any = 0;
	for (int s = 0; s < NSLOTS; s++)
		map[s] = -1;
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
		redisReply *e = rep->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER ||
		    e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
			continue;
		redisReply *m = e->element[2];
		if (m->element[0]->type != REDIS_REPLY_STRING ||
		    m->element[1]->type != REDIS_REPLY_INTEGER)
			continue;
		/* An empty or "?" host means "the node you asked". */
		const char *host = m->element[0]->str;
		if (!*host || !strcmp(host, "?"))
			host = cl->nodes[asked].host;
		int n = node_get(r, host, (int)m->element[1]->integer, "CLUSTER SLOTS");
		long long lo = e->element[0]->integer, hi = e->element[1]->integer;
		if (n < 0 || lo < 0 || hi >= NSLOTS || lo > hi)
			continue;
		for (long long s = lo; s <= hi; s++)
			map[s] = (int16_t)n;
		any = 1;
	}
	if (!any)
		return -1;
	memcpy(cl->slot_node, map, sizeof(map));
	for (size_t i = 0; i < cl->nnodes; i++)
		cl->nodes[i].owns = 0;
	for (int s = 0; s < NSLOTS; s++)
		if (map[s] >= 0)
			cl->nodes[map[s]].owns++;
	return 0;
}

/* Ask the known masters, then every other known node, then the seeds, for
 * CLUSTER SLOTS; the first answer that covers a slot becomes the map. */
static int load_slots(struct sbx_redis *r, struct sbx_err *err)
{
	struct sbx_redis_cluster *cl = r->cl;
	for (size_t i = 0; i < r->addr->nseeds; i++)
		node_get(r, r->addr->seeds[i].host, r->addr->seeds[i].port, "the URL");
	int tried = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < cl->nnodes; i++) {
			if ((pass == 0) != (cl->nodes[i].owns > 0))
				continue;
			tried++;
			if (node_ctx(r, (int)i, err) < 0)
				continue;
			const char *argv[] = {"CLUSTER", "SLOTS"};
			redisReply *rep;
			if (sbx_redis__exchange(r, &cl->nodes[i].c, cl->nodes[i].where, 0, 2, argv,
						NULL, 0, &rep, NULL, err) < 0)
				continue;
			int ok = apply_slots(r, (int)i, rep) == 0;
			if (!ok && rep->type == REDIS_REPLY_ERROR)
				sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis CLUSTER SLOTS at %s: %s",
					 cl->nodes[i].where, rep->str);
			else if (!ok)
				sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s serves no slot yet",
					 cl->nodes[i].where);
			freeReplyObject(rep);
			if (ok)
				return 0;
		}
	}
	if (!tried)
		return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: no node known",
				r->safe_url);
	return -1;
}

static int any_master(struct sbx_redis_cluster *cl)
{
	for (int s = 0; s < NSLOTS; s += 1024)
		if (cl->slot_node[s] >= 0)
			return cl->slot_node[s];
	for (size_t i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].owns)
			return (int)i;
	return -1;
}

int sbx_cluster_open(struct sbx_redis *r, struct sbx_err *err)
{
	r->cl = sbx_xcalloc(1, sizeof(*r->cl));
	for (int s = 0; s < NSLOTS; s++)
		r->cl->slot_node[s] = -1;
	int64_t deadline = sbx_mono_ms() + sbx_redis__failover_ms();
	for (int attempt = 0;; attempt++) {
		if (load_slots(r, err) == 0)
			break;
		if (sbx_mono_ms() >= deadline)
			return -1;
		sbx_redis__backoff(attempt);
	}
	int n = any_master(r->cl);
	r->c = n >= 0 ? r->cl->nodes[n].c : NULL;
	return 0;
}

static void queue_clear(struct sbx_redis_cluster *cl)
{
	for (size_t i = 0; i < cl->nq; i++) {
		for (int a = 0; a < cl->q[i].argc; a++)
			free(cl->q[i].argv[a]);
		free(cl->q[i].argv);
		free(cl->q[i].lens);
	}
	cl->nq = 0;
}

static void out_clear(struct sbx_redis_cluster *cl)
{
	for (size_t i = cl->opos; i < cl->nout; i++)
		if (cl->out[i])
			freeReplyObject(cl->out[i]);
	free(cl->out);
	free(cl->out_err);
	cl->out = NULL;
	cl->out_err = NULL;
	cl->nout = cl->opos = 0;
}

void sbx_cluster_free(struct sbx_redis *r)
{
	struct sbx_redis_cluster *cl = r->cl;
	if (!cl)
		return;
	for (size_t i = 0; i < cl->nnodes; i++) {
		if (cl->nodes[i].c)
			redisFree(cl->nodes[i].c);
		free(cl->nodes[i].host);
		free(cl->nodes[i].where);
	}
	free(cl->nodes);
	queue_clear(cl);
	free(cl->q);
	out_clear(cl);
	free(cl);
	r->cl = NULL;
	r->c = NULL;
}

int sbx_redis_masters(const struct sbx_redis *r)
{
	if (r->mode != SBX_REDIS_CLUSTER || !r->cl)
		return 1;
	int n = 0;
	for (size_t i = 0; i < r->cl->nnodes; i++)
		n += r->cl->nodes[i].owns > 0;
	return n;
}

/* ---- routing ------------------------------------------------------------- */

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": 1 moved, 2 ask, 0 neither. */
static int redirect_of(struct sbx_redis *r, const redisReply *rep, int *slot, int *node)
{
	if (rep->type != REDIS_REPLY_ERROR || !rep->str)
		return 0;
	int kind = sbx_str_starts(rep->str, "MOVED ") ? 1 : sbx_str_starts(rep->str, "ASK ") ? 2 : 0;
	if (!kind)
		return 0;
	const char *p = strchr(rep->str, ' ') + 1;
	char *end;
	long s = strtol(p, &end, 10);
	if (*end != ' ' || s < 0 || s >= NSLOTS)
		return 0;
	const char *hp = end + 1, *colon = strrchr(hp, ':');
	if (!colon || colon == hp)
		return 0;
	long port = strtol(colon + 1, &end, 10);
	if (port <= 0 || port > 65535)
		return 0;
	SBX_AUTOFREE char *host = strndup(hp, (size_t)(colon - hp));
	*slot = (int)s;
	*node = node_get(r, host, (int)port, "a MOVED/ASK redirect");
	return *node < 0 ? 0 : kind;
}

static void free2(redisReply **rep, redisReply **wrep)
{
	if (*rep)
		freeReplyObject(*rep);
	if (wrep && *wrep)
		freeReplyObject(*wrep);
	*rep = NULL;
	if (wrep)
		*wrep = NULL;
}

/* Follow a redirection: 0 to try again, -1 (err) when there were too many. */
static int follow(struct sbx_redis *r, int kind, int slot, int to, int *ask, int *redirects,
		  struct sbx_err *err)
{
	struct sbx_err ignored = {0};
	if (++*redirects > MAX_REDIRECTS)
		return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: more than %d "
				"redirections for one command", r->safe_url, MAX_REDIRECTS);
	r->redirects++;
	if (kind == 2) {
		*ask = to;
		return 0;
	}
	int known = r->cl->nodes[to].owns > 0;
	r->cl->slot_node[slot] = (int16_t)to;
	if (!known || *redirects > 1)
		load_slots(r, &ignored);       /* a new master, or the map is behind */
	return 0;
}

int sbx_cluster_exec(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		     int wait_n, int resend, redisReply **rep, redisReply **wrep, struct sbx_err *err)
{
	struct sbx_redis_cluster *cl = r->cl;
	struct sbx_err ignored = {0};
	int slot = sbx_redis_command_slot(argc, argv, lens, err);
	int ro = resend || sbx_redis__read_only(argv[0], lens ? lens[0] : strlen(argv[0]));
	int64_t deadline = sbx_mono_ms() + sbx_redis__failover_ms();
	int ask = -1, redirects = 0;
	for (int attempt = 0;; attempt++) {
		int late = attempt > 0 && sbx_mono_ms() >= deadline;
		int n = ask >= 0 ? ask : slot >= 0 ? cl->slot_node[slot] : any_master(cl);
		if (n < 0 || node_ctx(r, n, err) < 0) {
			if (n >= 0 && cl->nodes[n].refused)
				return -1;
			if (n < 0)
				sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: slot %d has no "
					 "master", r->safe_url, slot);
			if (late)
				return -1;
			sbx_redis__backoff(attempt);
			load_slots(r, &ignored);     /* a failover may have moved it */
			ask = -1;
			continue;
		}
		int asking = ask >= 0;
		ask = -1;
		struct cnode *nd = &cl->nodes[n];
		if (sbx_redis__exchange(r, &nd->c, nd->where, asking, argc, argv, lens, wait_n, rep,
					wrep, err) < 0) {
			if (!ro || late)
				return -1;
			sbx_redis__backoff(attempt);
			load_slots(r, &ignored);
			continue;
		}
		r->c = nd->c;
		int rs, to, kind = redirect_of(r, *rep, &rs, &to);
		if (kind) {
			free2(rep, wrep);
			if (follow(r, kind, rs, to, &ask, &redirects, err) < 0)
				return -1;
			continue;
		}
		if (sbx_redis__transient(*rep) && !late) {
			free2(rep, wrep);
			sbx_redis__backoff(attempt);
			load_slots(r, &ignored);
			continue;
		}
		return 0;
	}
}

/* ---- pipelines ----------------------------------------------------------- */

int sbx_cluster_append(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		       struct sbx_err *err)
{
	struct sbx_redis_cluster *cl = r->cl;
	int slot = sbx_redis_command_slot(argc, argv, lens, err);
	if (slot == -2)
		return -1;
	if (cl->nq == cl->qcap) {
		cl->qcap = cl->qcap ? 2 * cl->qcap : 64;
		cl->q = sbx_xrealloc(cl->q, cl->qcap * sizeof(*cl->q));
	}
	struct qcmd *q = &cl->q[cl->nq++];
	q->argc = argc;
	q->slot = slot;
	q->argv = sbx_xcalloc((size_t)argc, sizeof(*q->argv));
	q->lens = sbx_xcalloc((size_t)argc, sizeof(*q->lens));
	for (int i = 0; i < argc; i++) {
		size_t l = lens ? lens[i] : strlen(argv[i]);
		q->argv[i] = sbx_xmalloc(l + 1);
		memcpy(q->argv[i], argv[i], l);
		q->argv[i][l] = '\0';
		q->lens[i] = l;
	}
	r->unflushed = 1;
	return 0;
}

/* Send the queue: every node's commands are appended and written, then
 * the replies are read node by node into out[] (in append order).
 * sent[i] says whether command i reached a socket. */
static void batch_send(struct sbx_redis *r, int *node_of, char *sent)
{
	struct sbx_redis_cluster *cl = r->cl;
	struct sbx_err ignored = {0};
	for (size_t n = 0; n < cl->nnodes; n++) {
		int used = 0;
		for (size_t i = 0; i < cl->nq; i++)
			used |= node_of[i] == (int)n;
		if (!used || node_ctx(r, (int)n, &ignored) < 0)
			continue;
		for (size_t i = 0; i < cl->nq && cl->nodes[n].c; i++) {
			if (node_of[i] != (int)n)
				continue;
			if (redisAppendCommandArgv(cl->nodes[n].c, cl->q[i].argc,
						   (const char **)cl->q[i].argv, cl->q[i].lens) != REDIS_OK)
				sbx_redis__ctx_fail(r, &cl->nodes[n].c, cl->nodes[n].where, &ignored);
			else
				sent[i] = 1;
		}
		int done = 0;
		while (cl->nodes[n].c && !done)
			if (redisBufferWrite(cl->nodes[n].c, &done) != REDIS_OK)
				sbx_redis__ctx_fail(r, &cl->nodes[n].c, cl->nodes[n].where, &ignored);
	}
	r->round_trips++;      /* the nodes answer in parallel */
	for (size_t i = 0; i < cl->nq; i++) {
		int n = node_of[i];
		void *x = NULL;
		if (!sent[i] || n < 0 || !cl->nodes[n].c)
			continue;
		if (redisGetReply(cl->nodes[n].c, &x) != REDIS_OK || !x)
			sbx_redis__ctx_fail(r, &cl->nodes[n].c, cl->nodes[n].where, &cl->out_err[i]);
		else
			cl->out[i] = x;
	}
}

/* Run the queued commands.  A reply that redirects or says "not executed",
 * and a command that never reached its node, is sent again alone; one that
 * was sent on a connection that then broke is retried only if read-only.
 * Once a resend for a node fails (its failover did not finish within the
 * budget), the node's other commands fail with the same error at once:
 * a pipeline of 10,000 never waits out the budget 10,000 times. */
static void batch_run(struct sbx_redis *r)
{
	struct sbx_redis_cluster *cl = r->cl;
	out_clear(cl);
	size_t nq = cl->nq;
	cl->out = sbx_xcalloc(nq + 1, sizeof(*cl->out));
	cl->out_err = sbx_xcalloc(nq + 1, sizeof(*cl->out_err));
	cl->nout = nq;
	SBX_AUTOFREE int *node_of = sbx_xcalloc(nq + 1, sizeof(int));
	SBX_AUTOFREE char *sent = sbx_xcalloc(nq + 1, 1);
	for (size_t i = 0; i < nq; i++)
		node_of[i] = cl->q[i].slot >= 0 ? cl->slot_node[cl->q[i].slot] : any_master(cl);
	batch_send(r, node_of, sent);
	SBX_AUTOFREE struct sbx_err *dead = sbx_xcalloc(cl->nnodes + 1, sizeof(*dead));
	size_t ndead = cl->nnodes;
	for (size_t i = 0; i < nq; i++) {
		struct qcmd *q = &cl->q[i];
		redisReply *x = cl->out[i];
		int s, to, n = node_of[i];
		int again = x ? (redirect_of(r, x, &s, &to) || sbx_redis__transient(x))
			      : (!sent[i] || sbx_redis__read_only(q->argv[0], q->lens[0]));
		if (!again)
			continue;
		if (x)
			freeReplyObject(x);
		cl->out[i] = NULL;
		if (n >= 0 && (size_t)n < ndead && dead[n].kind) {
			cl->out_err[i] = dead[n];
			continue;
		}
		sbx_err_clear(&cl->out_err[i]);
		if (sbx_cluster_exec(r, q->argc, (const char **)q->argv, q->lens, 0, 0, &cl->out[i],
				     NULL, &cl->out_err[i]) < 0) {
			cl->out[i] = NULL;
			if (n >= 0 && (size_t)n < ndead)
				dead[n] = cl->out_err[i];
		}
	}
	queue_clear(cl);
}

int sbx_cluster_read(struct sbx_redis *r, redisReply **rep, struct sbx_err *err)
{
	struct sbx_redis_cluster *cl = r->cl;
	*rep = NULL;
	if (cl->opos >= cl->nout) {
		if (!cl->nq)
			return sbx_fail(err, SBX_INTERNAL, "redis", "redis at %s: no reply is pending",
					r->safe_url);
		r->unflushed = 0;
		batch_run(r);
	}
	size_t i = cl->opos++;
	if (!cl->out[i]) {
		*err = cl->out_err[i];
		if (!err->kind)
			sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis unavailable at %s: connection "
				 "lost", r->safe_url);
		return -1;
	}
	*rep = cl->out[i];
	cl->out[i] = NULL;
	return 0;
}

/* ---- SCAN ------------------------------------------------------------------ */

/* SCAN `pattern` on node n to the end of its cursor.  0; -1 with *fatal
 * set when fn failed or a reply was not a SCAN reply (nothing to retry);
 * -1 with *fatal clear when the node could not be reached or refused the
 * page unexecuted (LOADING, ...): the caller may start again. */
static int scan_node(struct sbx_redis *r, int n, const char *pattern, sbx_redis_key_fn fn,
		     void *ctx, int *fatal, struct sbx_err *err)
{
	struct cnode *nd = &r->cl->nodes[n];
	SBX_AUTOFREE char *cursor = sbx_xstrdup("0");
	do {
		const char *argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
		redisReply *rep;
		if (node_ctx(r, n, err) < 0)
			return *fatal = nd->refused, -1;
		if (sbx_redis__exchange(r, &nd->c, nd->where, 0, 6, argv, NULL, 0, &rep, NULL, err) < 0)
			return -1;
		if (rep->type == REDIS_REPLY_ERROR) {
			sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis SCAN at %s: %.100s", nd->where,
				 rep->str ? rep->str : "");
			*fatal = !sbx_redis__transient(rep);
			freeReplyObject(rep);
			return -1;
		}
		if (sbx_redis__scan_page(rep, &cursor, fn, ctx, err) < 0)
			return *fatal = 1, -1;
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

/* The nodes that hold slot `slot`'s keys now: its master (*owner) and,
 * while the slot migrates, the node importing it (*importing, else -1).
 * One probe in the slot (EXISTS of a key no one writes, whose tag is the
 * slot's) asks the master the map names: MOVED corrects the map, ASK
 * names the importing node (a migrating master answers ASK for a key it
 * lacks).  -1 when the master cannot be reached or is not known (*fatal
 * set when the configuration refuses it). */
static int slot_nodes(struct sbx_redis *r, int slot, const char *tag, size_t tlen, int *owner,
		      int *importing, int *fatal, struct sbx_err *err)
{
	struct sbx_redis_cluster *cl = r->cl;
	SBX_AUTOFREE char *probe = sbx_xasprintf("sbx-scan-probe:{%.*s}", (int)tlen, tag);
	const char *argv[] = {"EXISTS", probe};
	*importing = -1;
	for (int hops = 0;; hops++) {
		int n = cl->slot_node[slot];
		if (n < 0)
			return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: slot %d has no "
					"master", r->safe_url, slot);
		redisReply *rep;
		if (node_ctx(r, n, err) < 0 ||
		    sbx_redis__exchange(r, &cl->nodes[n].c, cl->nodes[n].where, 0, 2, argv, NULL, 0,
					&rep, NULL, err) < 0)
			return *fatal = cl->nodes[n].refused, -1;
		int rs, to, kind = redirect_of(r, rep, &rs, &to);
		int transient = sbx_redis__transient(rep);
		if (transient || (kind && hops >= MAX_REDIRECTS))
			sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: %.100s",
				 cl->nodes[n].where, rep->str ? rep->str : "");
		freeReplyObject(rep);
		if (transient || (kind && hops >= MAX_REDIRECTS))
			return -1;
		if (kind == 1 && rs == slot) {
			r->redirects++;
			cl->slot_node[slot] = (int16_t)to;
			continue;
		}
		*owner = n;
		if (kind == 2 && to != n)
			*importing = to, r->redirects++;
		return 0;
	}
}

/* One pass: the slot's nodes, or (slot < 0) every master of a fresh map. */
static int scan_pass(struct sbx_redis *r, int slot, const char *tag, size_t tlen,
		     const char *pattern, sbx_redis_key_fn fn, void *ctx, int *fatal,
		     struct sbx_err *err)
{
	struct sbx_redis_cluster *cl = r->cl;
	if (slot >= 0) {
		int owner = -1, importing = -1;
		if (slot_nodes(r, slot, tag, tlen, &owner, &importing, fatal, err) < 0 ||
		    scan_node(r, owner, pattern, fn, ctx, fatal, err) < 0)
			return -1;
		return importing >= 0 ? scan_node(r, importing, pattern, fn, ctx, fatal, err) : 0;
	}
	if (load_slots(r, err) < 0)       /* the masters of now, not of the open */
		return -1;
	for (size_t n = 0; n < cl->nnodes; n++)
		if (cl->nodes[n].owns && scan_node(r, (int)n, pattern, fn, ctx, fatal, err) < 0)
			return -1;
	return 0;
}

/* SCAN MATCH `pattern` where its keys can be.  A pattern whose hash tag
 * holds no glob (a tenant's: "sbx:{acme}:sess:*:binding") names one slot:
 * only that slot's master is scanned (and the node importing the slot,
 * while it migrates), so a master that holds none of the keys may be down.
 * Any other pattern scans every master.  A pass that cannot reach a node
 * (it died, a failover runs) starts again from a fresh map, with backoff,
 * for the failover budget (sbx_redis__failover_ms), as every command does;
 * fn may see a key again after a restart (SCAN's own contract too). */
int sbx_cluster_scan_all(struct sbx_redis *r, const char *pattern, sbx_redis_key_fn fn,
			 void *ctx, struct sbx_err *err)
{
	const char *argv[] = {"SCAN", "0", "MATCH", pattern};
	struct sbx_err ignored = {0};
	int slot = sbx_redis_command_slot(4, argv, NULL, &ignored);
	const char *tag = strchr(pattern, '{');
	size_t tlen = slot >= 0 ? strcspn(tag + 1, "}") : 0;
	int64_t deadline = sbx_mono_ms() + sbx_redis__failover_ms();
	for (int attempt = 0;; attempt++) {
		int fatal = 0;
		if (attempt > 0)
			load_slots(r, &ignored);     /* a failover may have moved it */
		if (scan_pass(r, slot, slot >= 0 ? tag + 1 : NULL, tlen, pattern, fn, ctx, &fatal,
			      err) == 0)
			return 0;
		if (fatal || sbx_mono_ms() >= deadline)
			return -1;
		sbx_redis__backoff(attempt);
	}
}
