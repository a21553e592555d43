/* local-audit.c - the egress broker's queue and spool writer (see
 * local-audit.h for what it promises). */
#include "local-audit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "doc.h"
#include "spool.h"
#include "util.h"

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int on, required;
	char *dir;
	char *buf;              /* queued lines */
	size_t len;
	int64_t max;            /* the spool's bound */
	int64_t spool;          /* its size at the writer's last look */
	long open;              /* connections begun, not ended */
	unsigned long dropped;  /* records not kept, not yet said */
	unsigned long refused;  /* connections refused (required), not yet said */
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* A count record ({"kind": KIND, "data": {"count": N}}) into the spool, in
 * the slack above its bound; what is still to be said: 0 once written, N
 * when the spool had no room (the caller keeps it for the next batch). */
static unsigned long spool_count(const char *kind, unsigned long n, int64_t *size)
{
	if (!n)
		return 0;
	char line[96];
	int len = snprintf(line, sizeof(line), "{\"kind\":\"%s\",\"data\":{\"count\":%lu}}\n", kind, n);
	return sbx_spool_append(q.dir, line, (size_t)len, q.max + LOCAL_AUDIT_RECORD_MAX, size) == len ? 0 : n;
}

static void flush(char *buf, size_t len)
{
	pthread_mutex_lock(&q.mu);
	unsigned long dropped = q.dropped, refused = q.refused;
	q.dropped = q.refused = 0;
	pthread_mutex_unlock(&q.mu);
	int64_t size = 0;
	/* The counts go first, in the slack above the bound: a spool kept
	 * full (Redis away) still says what it lost and refused. */
	dropped = spool_count("dropped", dropped, &size);
	refused = spool_count("refused", refused, &size);
	unsigned long lost = dropped;
	long put = len ? sbx_spool_append(q.dir, buf, len, q.max, &size) : 0;
	for (size_t i = put < 0 ? 0 : (size_t)put; i < len; i++)
		lost += buf[i] == '\n';
	pthread_mutex_lock(&q.mu);
	q.dropped += lost;
	q.refused += refused;
	q.spool = size ? size : sbx_spool_size(q.dir);
	pthread_mutex_unlock(&q.mu);
}

static void *writer(void *unused)
{
	(void)unused;
	for (;;) {
		pthread_mutex_lock(&q.mu);
		if (!q.len && !q.dropped && !q.refused && !q.spool)
			pthread_cond_wait(&q.cv, &q.mu);
		pthread_mutex_unlock(&q.mu);
		sbx_sleep_ms(200);        /* a batch: what came in meanwhile */
		pthread_mutex_lock(&q.mu);
		char *buf = q.buf;
		size_t len = q.len;
		q.buf = NULL, q.len = 0;
		pthread_mutex_unlock(&q.mu);
		flush(buf, len);          /* also: the spool's size, a taker may have emptied it */
		free(buf);
	}
	return NULL;
}

void local_audit_start(const char *dir)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" SBX_SPOOL_CONF, dir);
	SBX_AUTOFREE char *text = NULL;
	size_t len;
	struct sbx_err err = {0};
	json_object *c = NULL;
	if (sbx_read_file(path, 4096, &text, &len, &err) < 0 ||
	    sbx_json_parse_object(text, len, &c, &err) < 0)
		return;
	q.required = sbx_json_bool(c, "required", 0);
	q.max = sbx_json_int(c, "spool_max", 4096);
	json_object_put(c);
	q.dir = sbx_xstrdup(dir);
	q.spool = sbx_spool_size(dir);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 128 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	q.on = pthread_create(&t, &at, writer, NULL) == 0;
	pthread_attr_destroy(&at);
}

int local_audit_begin(void)
{
	if (!q.on)
		return 0;
	pthread_mutex_lock(&q.mu);
	int room = !q.required ||
		   q.spool + (int64_t)q.len + (q.open + 1) * LOCAL_AUDIT_RECORD_MAX <= q.max;
	if (room)
		q.open++;
	else
		q.refused++, pthread_cond_signal(&q.cv);
	pthread_mutex_unlock(&q.mu);
	return room ? 0 : -1;
}

void local_audit_end(json_object *rec)
{
	if (!q.on) {
		json_object_put(rec);
		return;
	}
	const char *s = rec ? json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;
	size_t n = s ? strlen(s) : 0;
	pthread_mutex_lock(&q.mu);
	q.open--;
	if (s && (n + 1 > LOCAL_AUDIT_RECORD_MAX || q.len + n + 1 > LOCAL_AUDIT_QUEUE)) {
		q.dropped++;
	} else if (s) {
		if (!q.buf)
			q.buf = sbx_xmalloc(LOCAL_AUDIT_QUEUE);
		memcpy(q.buf + q.len, s, n);
		q.buf[q.len + n] = '\n';
		q.len += n + 1;
	}
	pthread_cond_signal(&q.cv);
	pthread_mutex_unlock(&q.mu);
	json_object_put(rec);
}
