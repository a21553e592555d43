/* sbx-serve - an E2B-compatible server over any sbx backend.
 *
 *   sbx-serve --listen 127.0.0.1:PORT --api-key-file FILE [OPTIONS]
 *
 * Serves E2B's control plane and the envd data plane on one address, so
 * that E2B SDK clients (E2B_API_URL and E2B_SANDBOX_URL pointed here, or a
 * domain whose "49983-<id>" host names resolve here) use sbx sandboxes.
 * The backend is the profile's (-p, $SBX_PROFILE, the usual SBX_*
 * environment).  Runs until SIGTERM or SIGINT, then stops accepting and
 * lets requests in flight finish (--grace).  One log line per request on
 * stderr.  Reads no documents and writes none. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "serve.h"
#include "util.h"

enum { O_PROFILE, O_LISTEN, O_KEYFILE, O_DOMAIN, O_STATE_DIR, O_FLAVOR, O_TLS_CERT, O_TLS_KEY,
       O_MAX_BODY, O_MAX_SANDBOXES, O_MAX_STREAMS, O_MAX_STREAMS_KEY, O_MAX_WORKERS,
       O_MAX_WORKERS_KEY, O_MAX_CONNS, O_CLIENT_TIMEOUT, O_HEAD_TIMEOUT, O_UPLOAD_DEADLINE,
       O_GRACE, O_QUIET, O_HOOK_PRIVATE };

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"listen", 'l', "HOST:PORT", "the one address to serve both planes on (numeric; port 0 picks one)", O_LISTEN, SBX_ALL},
	{"api-key-file", 'k', "FILE", "accepted API keys, one a line (repeatable)", O_KEYFILE, SBX_ALL},
	{"domain", 0, "DOMAIN", "route hosts PORT-ID.DOMAIN and answer this domain", O_DOMAIN, SBX_ALL},
	{"state-dir", 0, "DIR", "where E2B records live (default: the profile's state dir/serve)", O_STATE_DIR, SBX_ALL},
	{"flavor", 0, "e2b|cube", "speak plain E2B (default) or Cube's dialect", O_FLAVOR, SBX_ALL},
	{"tls-cert-file", 0, "FILE", "serve HTTPS with this PEM certificate", O_TLS_CERT, SBX_ALL},
	{"tls-key-file", 0, "FILE", "the PEM private key for --tls-cert-file", O_TLS_KEY, SBX_ALL},
	{"max-body", 0, "SIZE", "largest /files upload (default 64M)", O_MAX_BODY, SBX_ALL},
	{"max-sandboxes", 0, "N", "live sandboxes per API key (default 100)", O_MAX_SANDBOXES, SBX_ALL},
	{"max-streams", 0, "N", "open process streams per sandbox (default 16)", O_MAX_STREAMS, SBX_ALL},
	{"max-streams-per-key", 0, "N", "open process streams per API key (default 3/4 of --max-workers-per-key)", O_MAX_STREAMS_KEY, SBX_ALL},
	{"max-workers", 0, "N", "requests in flight (default 64)", O_MAX_WORKERS, SBX_ALL},
	{"max-workers-per-key", 0, "N", "requests in flight per API key (default half of --max-workers)", O_MAX_WORKERS_KEY, SBX_ALL},
	{"max-connections", 0, "N", "concurrent connections (default 256)", O_MAX_CONNS, SBX_ALL},
	{"client-timeout", 0, "DURATION", "close a connection silent this long (default 30s)", O_CLIENT_TIMEOUT, SBX_ALL},
	{"head-timeout", 0, "DURATION", "close a connection whose request head, or idle keep-alive, takes this long (default 10s)", O_HEAD_TIMEOUT, SBX_ALL},
	{"upload-deadline", 0, "DURATION", "cut off a request body still arriving after this long (default 2m)", O_UPLOAD_DEADLINE, SBX_ALL},
	{"grace", 0, "DURATION", "on SIGTERM, wait this long for requests in flight (default 10s)", O_GRACE, SBX_ALL},
	{"quiet", 'q', NULL, "no request log", O_QUIET, SBX_ALL},
	{"webhook-allow-private", 0, NULL, "let webhooks reach loopback and private addresses (tests; link-local never)", O_HOOK_PRIVATE, SBX_ALL},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-serve",
	.synopsis = "--listen HOST:PORT --api-key-file FILE [OPTIONS]",
	.summary = "Serve E2B's control plane and envd data plane over sbx sandboxes.",
	.opts = opts,
};

struct serve_opts {
	struct sbx_app app;
	struct sbx_serve_cfg cfg;
	const char *keys[17];
	size_t nkeys;
	int64_t grace_ms;
	int quiet;
};

static int count_arg(const char *arg, const char *flag, unsigned *out, struct sbx_err *err)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || v < 1 || v > 100000)
		return sbx_usage_err(err, "%s must be a number from 1 to 100000", flag);
	*out = (unsigned)v;
	return 0;
}

/* A DURATION of at least 1s into whole seconds (a fraction is dropped). */
static int secs_arg(const char *arg, const char *flag, unsigned *out, struct sbx_err *err)
{
	int64_t v;
	if (sbx_parse_duration_ms(arg, &v, err) < 0)
		return -1;
	if (v < 1000)
		return sbx_usage_err(err, "%s must be at least 1s", flag);
	*out = (unsigned)(v / 1000);
	return 0;
}

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct serve_opts *o = ctx;
	int64_t v;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_LISTEN: o->cfg.listen = arg; return 0;
	case O_KEYFILE:
		if (o->nkeys == 16)
			return sbx_usage_err(err, "at most 16 --api-key-file");
		o->keys[o->nkeys++] = arg;
		return 0;
	case O_DOMAIN: o->cfg.domain = arg; return 0;
	case O_STATE_DIR: o->cfg.state_dir = arg; return 0;
	case O_FLAVOR:
		if (!strcmp(arg, "cube"))
			o->cfg.flavor = SBX_SERVE_CUBE;
		else if (strcmp(arg, "e2b") != 0)
			return sbx_usage_err(err, "--flavor must be e2b or cube");
		return 0;
	case O_TLS_CERT: o->cfg.tls_cert_file = arg; return 0;
	case O_TLS_KEY: o->cfg.tls_key_file = arg; return 0;
	case O_MAX_BODY:
		if (sbx_parse_size(arg, &v, err) < 0)
			return -1;
		if (v < 1024 || v > (4LL << 30))
			return sbx_usage_err(err, "--max-body must be 1K to 4G");
		o->cfg.max_body = (size_t)v;
		return 0;
	case O_MAX_SANDBOXES: return count_arg(arg, "--max-sandboxes", &o->cfg.max_sandboxes_per_key, err);
	case O_MAX_STREAMS: return count_arg(arg, "--max-streams", &o->cfg.max_streams_per_sandbox, err);
	case O_MAX_STREAMS_KEY: return count_arg(arg, "--max-streams-per-key", &o->cfg.max_streams_per_key, err);
	case O_MAX_WORKERS: return count_arg(arg, "--max-workers", &o->cfg.max_workers, err);
	case O_MAX_WORKERS_KEY: return count_arg(arg, "--max-workers-per-key", &o->cfg.max_workers_per_key, err);
	case O_MAX_CONNS: return count_arg(arg, "--max-connections", &o->cfg.max_conns, err);
	case O_CLIENT_TIMEOUT: return secs_arg(arg, "--client-timeout", &o->cfg.client_timeout_s, err);
	case O_HEAD_TIMEOUT: return secs_arg(arg, "--head-timeout", &o->cfg.head_timeout_s, err);
	case O_UPLOAD_DEADLINE: return secs_arg(arg, "--upload-deadline", &o->cfg.request_deadline_s, err);
	case O_GRACE:
		if (sbx_parse_duration_ms(arg, &o->grace_ms, err) < 0)
			return -1;
		return 0;
	case O_QUIET: o->quiet = 1; return 0;
	case O_HOOK_PRIVATE: o->cfg.webhook_allow_private = 1; return 0;
	}
	return 0;
}

/* "YYYY-MM-DDTHH:MM:SSZ" of `now`, computed here rather than by gmtime_r:
 * glibc's gmtime_r takes its time zone lock, and a worker forked (by the
 * pool's thread, serve-pool.c) while another thread held it would hang at
 * its own first gmtime_r, for as long as it lives.  So no thread of the
 * server takes that lock.  (Days to a civil date: H. Hinnant's algorithm.) */
static void utc_iso(time_t now, char *buf, size_t len)
{
	long long s = (long long)now, days = s / 86400, sec = s % 86400;
	if (sec < 0) {
		sec += 86400;
		days--;
	}
	days += 719468;
	long long era = (days >= 0 ? days : days - 146096) / 146097;
	long long doe = days - era * 146097;
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	long long mp = (5 * doy + 2) / 153;
	long long d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	long long y = yoe + era * 400 + (m <= 2);
	snprintf(buf, len, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", y, m, d, sec / 3600,
		 sec / 60 % 60, sec % 60);
}

static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	char t[32];
	utc_iso(time(NULL), t, sizeof(t));
	fprintf(stderr, "%s sbx-serve: %s\n", t, line);
}

int main(int argc, char **argv)
{
	struct serve_opts o = {.grace_ms = 10000};
	struct sbx_err err = {0};
	struct sbx_args a;
	if (sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	if (!o.cfg.listen || !o.nkeys) {
		sbx_usage_err(&err, "give --listen HOST:PORT and at least one --api-key-file FILE");
		return sbx_cli_report(cmd.name, &err);
	}
	o.cfg.key_files = o.keys;
	if (!o.quiet)
		o.cfg.log = log_line;
	/* Block the stop signals in every thread; main waits for them. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct sbx_backend *b;
	if (sbx_app_backend(&o.app, NULL, &b, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	o.cfg.profile = o.app.profile;
	struct sbx_serve *s;
	if (sbx_serve_start(&o.cfg, &s, &err) < 0) {
		sbx_app_close(&o.app);
		return sbx_cli_report(cmd.name, &err);
	}
	char line[160];
	snprintf(line, sizeof(line), "listening on port %u (backend %s, profile %s)", sbx_serve_port(s),
		 b->ops->name, o.app.profile->name);
	log_line(NULL, line);
	int sig;
	sigwait(&stop, &sig);
	log_line(NULL, "stopping");
	sbx_serve_stop(s, o.grace_ms);
	sbx_app_close(&o.app);
	log_line(NULL, "stopped");
	return 0;
}
