/* e2b-wire.c - the e2b and cube backends' readers of what a server sends
 * (see e2b-wire.h): value checks, the control plane's JSON into sbx's
 * structures, server errors as kinds, and envd's exec stream.  Pure: no
 * connection, no backend state, so the fuzz targets link it alone. */
#include "e2b-wire.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "metadata.h"
#include "util.h"

#define FRAME_MAX ((size_t)16 << 20)

/* ---- value checks ------------------------------------------------------ */

/* The first 48 bytes of v for a message, anything but visible ASCII as '?'. */
static const char *shown(const char *v, char out[52])
{
	size_t i = 0;
	for (; v && v[i] && i < 48; i++)
		out[i] = v[i] > ' ' && v[i] < 127 ? v[i] : '?';
	if (v && v[i])
		out[i++] = '.', out[i++] = '.', out[i++] = '.';
	out[i] = '\0';
	return out;
}

static int id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	int ok = n > 0 && n <= 128;
	for (size_t i = 0; ok && i < n; i++)
		ok = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		     (id[i] >= '0' && id[i] <= '9') || id[i] == '-';
	return ok;
}

int e2b_check_id(const char *id, const char *what, const char *op, struct sbx_err *err)
{
	char s[52];
	return id_ok(id) ? 0 : sbx_fail(err, SBX_INVALID_REQUEST, op, "invalid %s '%s'", what, shown(id, s));
}

int e2b_reply_id(const char *id, const char *what, const char *op, struct sbx_err *err)
{
	char s[52];
	return id_ok(id) ? 0 : sbx_fail(err, SBX_INTERNAL, op, "the server sent an invalid %s '%s' "
					"(refused: ids are [A-Za-z0-9-]{1,128})", what, shown(id, s));
}

int e2b_reply_token(const char *v, size_t max, const char *what, const char *op,
		    struct sbx_err *err)
{
	size_t n = v ? strlen(v) : 0;
	int ok = n > 0 && n <= max;
	for (size_t i = 0; ok && i < n; i++)
		ok = v[i] > ' ' && v[i] < 127;
	char s[52];
	return ok ? 0 : sbx_fail(err, SBX_INTERNAL, op, "the server sent an invalid %s '%s' (refused: "
				 "1 to %zu visible ASCII characters)", what, shown(v, s), max);
}

int e2b_dns_name(const char *d)
{
	size_t n = d ? strlen(d) : 0, label = 0;
	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = d[i];
		if (c == '.') {
			if (label == 0 || d[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c == '-' && label > 0)) || ++label > 63)
			return 0;
	}
	return label > 0 && d[n - 1] != '-';
}

int e2b_domain_within(const char *d, const char *allowed)
{
	size_t n = strlen(d), a = strlen(allowed);
	if (n == a)
		return strcasecmp(d, allowed) == 0;
	return n > a + 1 && d[n - a - 1] == '.' && strcasecmp(d + n - a, allowed) == 0;
}

/* ---- control plane JSON ------------------------------------------------ */

json_object *e2b_json_arr(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

static json_object *md_rename(json_object *md, const char *from, const char *to)
{
	json_object *o = json_object_new_object();
	if (!md || !json_object_is_type(md, json_type_object))
		return o;
	size_t fl = strlen(from);
	json_object_object_foreach(md, k, v) {
		SBX_AUTOFREE char *key = !strncmp(k, from, fl) ? sbx_xasprintf("%s%s", to, k + fl) : sbx_xstrdup(k);
		json_object_object_add(o, key, json_object_get(v));
	}
	return o;
}

json_object *e2b_md_to_wire(json_object *md) { return md_rename(md, "sbx.", "sbx_"); }
json_object *e2b_md_from_wire(json_object *md) { return md_rename(md, "sbx_", "sbx."); }

int e2b_wire_fill(int cube, const char *profile, struct sbx_sandbox *sb, json_object *j,
		  struct sbx_err *err)
{
	if (!j || !json_object_is_type(j, json_type_object))
		return sbx_fail(err, SBX_INTERNAL, "sandbox", "the server's sandbox is not a JSON object");
	const char *id = sbx_json_str(j, "sandboxID"), *tpl = sbx_json_str(j, "templateID");
	const char *alias = sbx_json_str(j, "alias"), *st = sbx_json_str(j, "state");
	const char *dom = sbx_json_str(j, "domain");
	if ((id && e2b_reply_id(id, "sandboxID", "sandbox", err) < 0) ||
	    (tpl && e2b_reply_token(tpl, E2B_NAME_MAX, "templateID", "sandbox", err) < 0) ||
	    (alias && e2b_reply_token(alias, E2B_NAME_MAX, "alias", "sandbox", err) < 0))
		return -1;
	if (id && sb->id && strcmp(id, sb->id) != 0) {
		char s[52];
		return sbx_fail(err, SBX_INTERNAL, "sandbox", "asked about sandbox %s, the server answered "
				"for '%s' (refused)", sb->id, shown(id, s));
	}
	if (dom && *dom && !e2b_dns_name(dom)) {
		char s[52];
		return sbx_fail(err, SBX_INTERNAL, "sandbox", "the server sent an invalid domain '%s' "
				"(refused: not a DNS name)", shown(dom, s));
	}
	if (id) {
		free(sb->id);
		sb->id = sbx_xstrdup(id);
	}
	free(sb->backend);
	sb->backend = sbx_xstrdup(cube ? "cube" : "e2b");
	if (!sb->profile)
		sb->profile = sbx_xstrdup(profile ? profile : "default");
	if (tpl || alias) {
		free(sb->template_id);
		sb->template_id = sbx_xstrdup(alias ? alias : tpl);
	}
	if (st)
		sb->state = !strcmp(st, "paused") ? SBX_STATE_PAUSED
			  : !strcmp(st, "running") ? SBX_STATE_RUNNING : SBX_STATE_TRANSITIONING;
	json_object *md = sbx_json_obj(j, "metadata");
	if (md || st) {   /* a listing or detail: metadata as the server has it */
		json_object_put(sb->metadata);
		sb->metadata = e2b_md_from_wire(md);
		const char *t = sbx_json_str(sb->metadata, SBX_MD_TENANT);
		const char *s = sbx_json_str(sb->metadata, SBX_MD_SESSION);
		free(sb->tenant);
		free(sb->session);
		sb->tenant = t && *t ? sbx_xstrdup(t) : NULL;
		sb->session = s && *s ? sbx_xstrdup(s) : NULL;
	}
	int64_t started = sbx_time_parse_iso(sbx_json_str(j, "startedAt"));
	if (started > 0)
		sb->created_at = started;
	if (dom && *dom) {
		if (!sb->extra)
			sb->extra = json_object_new_object();
		sbx_json_set_str(sb->extra, "domain", dom);
	}
	return 0;
}

/* "team/name:tag" -> "name" (the tag "default" is E2B's none). */
static char *short_name(const char *n)
{
	const char *slash = strrchr(n, '/');
	const char *s = slash ? slash + 1 : n;
	const char *colon = strrchr(s, ':');
	return colon && !strcmp(colon, ":default") ? strndup(s, (size_t)(colon - s)) : sbx_xstrdup(s);
}

/* The first element of array `key` when it is a string, else NULL. */
static const char *first_str(json_object *j, const char *key)
{
	json_object *a = e2b_json_arr(j, key);
	json_object *v = a && json_object_array_length(a) ? json_object_array_get_idx(a, 0) : NULL;
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int e2b_wire_snapshot(json_object *j, struct sbx_snapshot_ref *r, struct sbx_err *err)
{
	memset(r, 0, sizeof(*r));
	const char *id = sbx_json_str(j, "snapshotID"), *n = first_str(j, "names");
	const char *sb = sbx_json_str(j, "sandboxID");
	if ((id && e2b_reply_token(id, E2B_NAME_MAX, "snapshotID", "snapshot", err) < 0) ||
	    (n && *n && e2b_reply_token(n, E2B_NAME_MAX, "snapshot name", "snapshot", err) < 0) ||
	    (sb && e2b_reply_id(sb, "sandboxID", "snapshot", err) < 0))
		return -1;
	r->id = sbx_xstrdup(id ? id : "");
	if (n && *n && strcmp(n, r->id) != 0)
		r->name = short_name(n);
	r->parent = sb ? sbx_xstrdup(sb) : NULL;
	r->created_at = sbx_time_parse_iso(sbx_json_str(j, "createdAt"));
	if (r->created_at < 0)
		r->created_at = 0;
	r->size_bytes = -1;
	r->layers = -1;
	return 0;
}

int e2b_wire_template(json_object *j, struct sbx_template *t, struct sbx_err *err)
{
	memset(t, 0, sizeof(*t));
	const char *id = sbx_json_str(j, "templateID"), *a0 = first_str(j, "aliases"), *k = sbx_json_str(j, "kind");
	if ((id && e2b_reply_token(id, E2B_NAME_MAX, "templateID", "template", err) < 0) ||
	    (a0 && e2b_reply_token(a0, E2B_NAME_MAX, "template alias", "template", err) < 0) ||
	    (k && e2b_reply_token(k, E2B_NAME_MAX, "template kind", "template", err) < 0))
		return -1;
	t->id = sbx_xstrdup(id ? id : "");
	t->name = sbx_xstrdup(a0 ? a0 : t->id);
	t->kind = sbx_xstrdup(k ? k : "template");
	int64_t c = sbx_time_parse_iso(sbx_json_str(j, "createdAt"));
	t->created_at = c > 0 ? c : 0;
	t->size_bytes = -1;
	return 0;
}

static unsigned owner_id(const char *o)
{
	if (!o || !strcmp(o, "root"))
		return 0;
	if (!strcmp(o, "user"))
		return 1000;
	return (unsigned)strtoul(o, NULL, 10);
}

void e2b_wire_dirent(json_object *e, struct sbx_dirent *d)
{
	memset(d, 0, sizeof(*d));
	const char *type = sbx_json_str(e, "type"), *target = sbx_json_str(e, "symlinkTarget");
	const char *perm = sbx_json_str(e, "permissions");
	d->name = sbx_xstrdup(sbx_json_str(e, "name") ? sbx_json_str(e, "name") : "");
	d->path = sbx_xstrdup(sbx_json_str(e, "path") ? sbx_json_str(e, "path") : "");
	if (perm && perm[0] == 'L')
		d->type = SBX_FT_SYMLINK;
	else if (perm && perm[0] && !strchr("-dL", perm[0]))
		d->type = SBX_FT_OTHER;              /* Go's mode letters: p, S, D, c, ? */
	else if (target && *target)
		d->type = SBX_FT_SYMLINK;
	else if (type && !strcmp(type, "FILE_TYPE_DIRECTORY"))
		d->type = SBX_FT_DIR;
	else if (type && !strcmp(type, "FILE_TYPE_SYMLINK"))
		d->type = SBX_FT_SYMLINK;
	else if (type && !strcmp(type, "FILE_TYPE_FILE"))
		d->type = SBX_FT_FILE;
	else
		d->type = SBX_FT_OTHER;
	d->size = sbx_json_int(e, "size", 0);
	const char *sz = sbx_json_str(e, "size");   /* int64 as a string (proto3 JSON) */
	if (sz)
		d->size = strtoll(sz, NULL, 10);
	d->mode = (unsigned)sbx_json_int(e, "mode", 0) & 07777;
	d->uid = owner_id(sbx_json_str(e, "owner"));
	d->gid = owner_id(sbx_json_str(e, "group"));
	int64_t t = sbx_time_parse_iso(sbx_json_str(e, "modifiedTime"));
	d->mtime = t > 0 ? t : 0;
	if (target)
		d->link_target = sbx_xstrdup(target);
}

/* ---- errors ------------------------------------------------------------ */

/* A message that quotes a server: control characters become spaces, so
 * no server puts a line of its own into sbx's stderr. */
static void plain(char *msg)
{
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 127)
			*c = ' ';
}

enum sbx_kind e2b_connect_kind(const char *code)
{
	static const struct { const char *code; enum sbx_kind kind; } map[] = {
		{"not_found", SBX_NOT_FOUND}, {"already_exists", SBX_CONFLICT},
		{"invalid_argument", SBX_INVALID_REQUEST}, {"failed_precondition", SBX_INVALID_REQUEST},
		{"unauthenticated", SBX_AUTHENTICATION}, {"permission_denied", SBX_AUTHENTICATION},
		{"deadline_exceeded", SBX_TIMEOUT}, {"resource_exhausted", SBX_CAPACITY},
		{"unavailable", SBX_UNAVAILABLE}, {"unimplemented", SBX_UNSUPPORTED},
		{"aborted", SBX_CONFLICT}, {"canceled", SBX_UNAVAILABLE},
	};
	for (size_t i = 0; code && i < SBX_ARRAY_LEN(map); i++)
		if (!strcmp(code, map[i].code))
			return map[i].kind;
	return SBX_INTERNAL;
}

/* The reason a server's reply names, for the callers that act on it: a
 * pause of a paused sandbox, a read of a folder (envd's and sbx-serve's
 * "is a directory"), a template still in use (E2B: a 400 on DELETE
 * /templates while sandboxes use it), a template Cube does not have (a
 * 500 naming CubeMaster's code 130404). */
static enum sbx_reason e2b_reason(int status, const char *text)
{
	if (!text)
		return SBX_R_NONE;
	if (strstr(text, "already paused"))
		return SBX_R_ALREADY_PAUSED;
	if (strcasestr(text, "is a directory"))
		return SBX_R_IS_DIR;
	if (status == 400 && strstr(text, "use"))
		return SBX_R_IN_USE;
	if (status == 500 && strstr(text, "130404"))
		return SBX_R_NO_TEMPLATE;
	return SBX_R_NONE;
}

int e2b_status_err(const char *op, const struct sbx_http_resp *r, struct sbx_err *err)
{
	json_object *j = r->body && r->len ? json_tokener_parse(r->body) : NULL;
	const char *msg = sbx_json_str(j, "message");
	int short_text = r->body && r->len && r->len < 200 && sbx_utf8_valid(r->body, r->len);
	const char *code = sbx_json_str(j, "code");
	enum sbx_kind k = sbx_kind_from_http(op, r->status);
	/* A Connect unary error: {"code": "not_found", "message": ...}. */
	if (code)
		k = e2b_connect_kind(code);
	if (r->status == 401 || r->status == 403)
		k = SBX_AUTHENTICATION;
	if (r->status == 501)
		k = SBX_UNSUPPORTED;                 /* the server has no such thing */
	const char *text = msg ? msg : short_text ? r->body : NULL;
	if (text)
		sbx_fail_reason(err, k, e2b_reason(r->status, text), op, "HTTP %d: %s", r->status, text);
	else
		sbx_fail(err, k, op, "HTTP %d", r->status);
	plain(err->msg);
	sbx_trim(err->msg);
	err->http_status = r->status;
	json_object_put(j);
	return -1;
}

/* ---- the exec stream --------------------------------------------------- */

static int decode_b64(const char *s, unsigned char **out, size_t *n)
{
	size_t l = strlen(s);
	*out = sbx_xmalloc(l / 4 * 3 + 4);
	long k = sbx_base64_decode(*out, s, l);
	if (k < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	*n = (size_t)k;
	return 0;
}

static void keep(char **dst, size_t *dlen, int *trunc, size_t cap, const unsigned char *d, size_t n)
{
	size_t room = *dlen < cap ? cap - *dlen : 0;
	size_t take = n < room ? n : room;
	if (take < n)
		*trunc = 1;
	if (!take)
		return;
	*dst = sbx_xrealloc(*dst, *dlen + take + 1);
	memcpy(*dst + *dlen, d, take);
	*dlen += take;
	(*dst)[*dlen] = '\0';
}

static int signal_of(const char *status)
{
	static const struct { const char *name; int sig; } names[] = {
		{"killed", SIGKILL}, {"terminated", SIGTERM}, {"interrupt", SIGINT},
		{"hangup", SIGHUP}, {"aborted", SIGABRT}, {"segmentation fault", SIGSEGV},
		{"broken pipe", SIGPIPE}, {"quit", SIGQUIT}, {"alarm clock", SIGALRM},
	};
	if (!status || strncmp(status, "signal: ", 8) != 0)
		return 0;
	for (size_t i = 0; i < SBX_ARRAY_LEN(names); i++)
		if (!strncmp(status + 8, names[i].name, strlen(names[i].name)))
			return names[i].sig;
	return SIGKILL;
}

/* One event.  Only the first start counts: envd sends one, and a server
 * that sends more must not start a second feeder (two threads on one
 * handle) nor change the pid the first one feeds. */
static int on_event(struct e2b_exec_stream *s, json_object *ev, struct sbx_err *err)
{
	json_object *x;
	if ((x = sbx_json_obj(ev, "start"))) {
		if (s->started)
			return 0;
		s->started = 1;
		int64_t pid = sbx_json_int(x, "pid", 0);
		s->pid = pid > 0 && pid <= INT32_MAX ? (int)pid : 0;
		return s->on_start ? s->on_start(s->ctx, s->pid, err) : 0;
	} else if ((x = sbx_json_obj(ev, "data"))) {
		/* A terminal's output (pty) is the command's stdout. */
		const char *o = sbx_json_str(x, "stdout"), *e = sbx_json_str(x, "stderr");
		if (!o && !e)
			o = sbx_json_str(x, "pty");
		const char *d = o ? o : e;
		if (!d)
			return 0;
		unsigned char *raw;
		size_t n;
		if (decode_b64(d, &raw, &n) < 0)
			return sbx_fail(err, SBX_INTERNAL, "exec", "envd sent output that is not base64");
		int fd = o ? s->raw_out_fd : s->raw_err_fd;
		int rc = 0;
		if (fd >= 0) {
			if (sbx_write_all(fd, raw, n) < 0)
				rc = sbx_fail_errno(err, SBX_INTERNAL, "exec", "writing the command's output");
		} else if (o) {
			keep(&s->res->out, &s->res->out_len, &s->res->out_truncated, s->out_cap, raw, n);
		} else {
			keep(&s->res->err, &s->res->err_len, &s->res->err_truncated, s->out_cap, raw, n);
		}
		free(raw);
		return rc;
	} else if ((x = sbx_json_obj(ev, "end"))) {
		s->ended = 1;
		int sig = signal_of(sbx_json_str(x, "status"));
		s->res->signal = sig;
		s->res->exit_code = sig ? -1 : (int)sbx_json_int(x, "exitCode", 0);
	}
	return 0;
}

/* The end-of-stream message: {} or {"error": {"code", "message"}}. */
static void on_trailer(struct e2b_exec_stream *s, json_object *m)
{
	json_object *e = sbx_json_obj(m, "error");
	if (!e)
		return;
	const char *code = sbx_json_str(e, "code"), *msg = sbx_json_str(e, "message");
	if (code && !strcmp(code, "deadline_exceeded")) {
		s->res->timed_out = 1;
		s->res->exit_code = -1;
		return;
	}
	s->end_error = 1;
	sbx_fail(&s->end_err, e2b_connect_kind(code), "exec", "envd: %s%s%s", code ? code : "error",
		 msg ? ": " : "", msg ? msg : "");
	plain(s->end_err.msg);
}

int e2b_exec_stream_feed(struct e2b_exec_stream *s, const char *data, size_t len,
			 struct sbx_err *err)
{
	if (s->len + len > s->cap) {
		s->cap = (s->len + len) * 2;
		s->buf = sbx_xrealloc(s->buf, s->cap);
	}
	if (len)
		memcpy(s->buf + s->len, data, len);
	s->len += len;
	size_t off = 0;
	int rc = 0;
	while (rc == 0 && s->len - off >= 5) {
		unsigned char *h = (unsigned char *)s->buf + off;
		uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
		if (n > FRAME_MAX)
			return sbx_fail(err, SBX_INTERNAL, "exec", "envd sent a %u-byte frame", n);
		if (s->len - off - 5 < n)
			break;
		json_tokener *tok = json_tokener_new();
		json_object *m = json_tokener_parse_ex(tok, (char *)h + 5, (int)n);
		json_tokener_free(tok);
		off += 5 + n;
		s->frames++;
		if (!m || !json_object_is_type(m, json_type_object)) {
			json_object_put(m);
			return sbx_fail(err, SBX_INTERNAL, "exec", "envd sent a frame that is not a JSON object");
		}
		if (h[0] & 2)
			on_trailer(s, m);
		else if (sbx_json_obj(m, "event"))
			rc = on_event(s, sbx_json_obj(m, "event"), err);
		json_object_put(m);
	}
	memmove(s->buf, s->buf + off, s->len - off);
	s->len -= off;
	return rc;
}

void e2b_exec_stream_free(struct e2b_exec_stream *s)
{
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
}
