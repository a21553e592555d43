/* serve-envd.c - E2B's envd data plane over the backend vtable: the access
 * token, the user, /health, /files (GET, POST multipart and octet-stream)
 * and the filesystem.Filesystem service (Stat, ListDir, MakeDir, Move,
 * Remove).  The process.Process service is serve-proc.c's.
 *
 * Users and homes: E2B's `user` is the sandbox user (uid 1000) and `root`
 * is root; no user named = `user`.  A user's home is one place for every
 * call, as on E2B: /home/user (/root for root) is where "~", "~/x" and
 * relative paths of /files and filesystem calls land, the HOME and the
 * default working directory of commands (serve-proc.c).  Absolute paths
 * are the sandbox's own; sbx's session folder is /workspace, by name.
 *
 * Promises: every path is mapped onto the home, then put under the
 * library's one path rule (path.h: the same spellings mean the same, and
 * ".." is refused, as for sbx-fs), and the backend confines it as it does
 * for sbx-fs; the access token is
 * compared in constant time; an unknown user is 401. */
#include "serve-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <time.h>

#include <zlib.h>

#include "doc.h"
#include "path.h"
#include "sha.h"
#include "util.h"

/* ---- /files ---- */

/* A download is bounded as an upload is (max_body): a file the stat finds
 * larger is 413 before a byte is read, and the read itself stops at the
 * bound (a file that grew meanwhile), so that no sandbox, sparse files
 * included, makes a worker hold more. */
static int files_get(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		     struct sbx_sandbox *sb, int as_root, const char *path)
{
	struct sbx_err err = {0};
	char *data = NULL;
	size_t len = 0, max = r->cfg->max_body;
	struct sbx_dirent st = {0};
	struct sbx_err se = {0};
	if (sbx_file_stat(b, sb, path, as_root, &st, &se) == 0) {
		int64_t size = st.size;
		int file = st.type != SBX_FT_DIR;
		free(st.name);
		free(st.path);
		free(st.link_target);
		if (file && size > (int64_t)max)
			return serve_reply_error(o, 413, "path '%s' is larger than %zu bytes, the server's --max-body",
						 path, max);
	}
	if (sbx_file_read(b, sb, path, max, as_root, &data, &len, &err) < 0) {
		struct sbx_dirent e = {0};
		struct sbx_err e2 = {0};
		if (sbx_file_stat(b, sb, path, as_root, &e, &e2) == 0 && e.type == SBX_FT_DIR) {
			free(e.name);
			free(e.path);
			free(e.link_target);
			return serve_reply_error(o, 400, "path '%s' is a directory", path);
		}
		if (err.kind == SBX_NOT_FOUND)
			return serve_reply_error(o, 404, "path '%s' does not exist", path);
		return serve_reply_err(o, &err);
	}
	const char *base = strrchr(path, '/');
	serve_out_header(o, "Content-Disposition", "inline; filename=\"%s\"", base ? base + 1 : path);
	int rc = serve_reply(o, 200, "application/octet-stream", data, len);
	serve_audit(r->cfg, b, sb, "file", serve_audit_file("get", path, (int64_t)len));
	free(data);
	return rc;
}

/* Write one upload; the parent folders are made first (E2B makes them). */
static int put_one(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		   struct sbx_sandbox *sb, int as_root, const char *dest, const char *data, size_t len,
		   json_object *arr)
{
	struct sbx_err err = {0};
	SBX_AUTOFREE char *path = serve_sandbox_path(dest, as_root, &err);
	if (!path)
		return serve_reply_error(o, 400, "invalid path: %s", err.msg), -1;
	SBX_AUTOFREE char *dir = sbx_xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		struct sbx_err e2 = {0};
		sbx_file_mkdir(b, sb, dir, 0755, as_root, &e2);
	}
	if (sbx_file_write(b, sb, path, data, len, 0644, as_root, &err) < 0) {
		if (err.kind == SBX_CAPACITY)
			return serve_reply_error(o, 507, "not enough disk space available"), -1;
		return serve_reply_err(o, &err), -1;
	}
	serve_audit(r->cfg, b, sb, "file", serve_audit_file("put", path, (int64_t)len));
	json_object *e = json_object_new_object();
	const char *base = strrchr(path, '/');
	sbx_json_set_str(e, "name", base ? base + 1 : path);
	sbx_json_set_str(e, "path", path);
	sbx_json_set_str(e, "type", "file");
	json_object_array_add(arr, e);
	return 0;
}

static const char *memmem_s(const char *h, size_t hl, const char *n, size_t nl)
{
	return memmem(h, hl, n, nl);
}

/* A multipart/form-data body: every part named "file" is written, to
 * ?path= when given (once), else to the part's filename. */
static int files_multipart(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
			   struct sbx_sandbox *sb, int as_root, const char *ct, json_object *arr)
{
	const char *bp = strstr(ct, "boundary=");
	if (!bp)
		return serve_reply_error(o, 400, "multipart without a boundary"), -1;
	char delim[256];
	bp += 9;
	size_t bl = strcspn(bp, ";");
	if (*bp == '"') {
		bp++;
		bl = strcspn(bp, "\"");
	}
	if (bl == 0 || bl > 200)
		return serve_reply_error(o, 400, "bad multipart boundary"), -1;
	int dl = snprintf(delim, sizeof(delim), "--%.*s", (int)bl, bp);
	const char *body = r->body ? r->body : "", *end = body + r->body_len;
	const char *cur = memmem_s(body, r->body_len, delim, (size_t)dl);
	const char *qpath = serve_query(r, "path");
	int used_qpath = 0;
	while (cur) {
		cur += dl;
		if (end - cur >= 2 && cur[0] == '-' && cur[1] == '-')
			break;
		if (end - cur >= 2 && cur[0] == '\r' && cur[1] == '\n')
			cur += 2;
		const char *hend = memmem_s(cur, (size_t)(end - cur), "\r\n\r\n", 4);
		if (!hend)
			return serve_reply_error(o, 400, "malformed multipart body"), -1;
		const char *data = hend + 4;
		const char *next = memmem_s(data, (size_t)(end - data), delim, (size_t)dl);
		if (!next || next - data < 2)
			return serve_reply_error(o, 400, "malformed multipart body"), -1;
		size_t dlen = (size_t)(next - data) - 2;          /* the CRLF before the delimiter */
		SBX_AUTOFREE char *h = strndup(cur, (size_t)(hend - cur));
		char *name = strstr(h, "name=\""), *fn = strstr(h, "filename=\"");
		int is_file = name && (name == h || name[-1] != 'e') && !strncmp(name + 6, "file\"", 5);
		if (!is_file && name) {                            /* name= after filename= */
			char *n2 = strstr(name + 1, " name=\"");
			is_file = n2 && !strncmp(n2 + 7, "file\"", 5);
		}
		if (is_file) {
			SBX_AUTOFREE char *dest = NULL;
			if (qpath && *qpath) {
				if (used_qpath++)
					return serve_reply_error(o, 400, "you cannot upload multiple files to the same path"), -1;
				dest = sbx_xstrdup(qpath);
			} else if (fn) {
				dest = strndup(fn + 10, strcspn(fn + 10, "\""));
			}
			if (!dest || !*dest)
				return serve_reply_error(o, 400, "a file part has no destination"), -1;
			if (put_one(r, o, b, sb, as_root, dest, data, dlen, arr) < 0)
				return -1;
		}
		cur = next;
	}
	return 0;
}

/* Inflate a gzip body into *out, at most `max` bytes (a larger result is
 * refused: a small bomb must not fill the worker's memory).  0 or -1. */
static int gunzip(const char *in, size_t len, size_t max, char **out, size_t *olen)
{
	z_stream z = {0};
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -1;
	size_t cap = len * 4 + 4096 < max ? len * 4 + 4096 : max;
	char *buf = sbx_xmalloc(cap + 1);
	/* zlib counts in uInt: the input and the room are handed over in
	 * pieces of at most UINT_MAX, never a length cast down. */
	size_t in_left = len;
	z.next_in = (Bytef *)in;
	int rc;
	do {
		if (!z.avail_in && in_left) {
			z.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
			in_left -= z.avail_in;
		}
		if (z.total_out == cap) {
			if (cap >= max) {
				rc = Z_BUF_ERROR;
				break;
			}
			cap = cap * 2 < max ? cap * 2 : max;
			buf = sbx_xrealloc(buf, cap + 1);
		}
		size_t room = cap - z.total_out;
		z.next_out = (Bytef *)buf + z.total_out;
		z.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc == Z_BUF_ERROR && z.avail_out && !z.avail_in && !in_left)
			break;                  /* truncated input */
		if (rc == Z_BUF_ERROR)
			rc = Z_OK;              /* no progress this round: more room or input */
	} while (rc == Z_OK);
	*olen = z.total_out;
	inflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

static int files_post(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		      struct sbx_sandbox *sb, int as_root)
{
	const char *ct = serve_hdr(r, "content-type");
	const char *enc = serve_hdr(r, "content-encoding");
	if (enc && *enc && strcasecmp(enc, "identity") != 0) {
		if (strcasecmp(enc, "gzip") != 0)
			return serve_reply_error(o, 400, "unsupported content encoding '%.32s'", enc);
		char *plain;
		size_t plen;
		if (gunzip(r->body ? r->body : "", r->body_len, r->cfg->max_body, &plain, &plen) < 0)
			return serve_reply_error(o, 400, "the gzip body is malformed or larger than %zu bytes",
						 r->cfg->max_body);
		struct serve_req dec = *r;
		dec.body = plain;
		dec.body_len = plen;
		dec.nhdr = 0;                    /* no content-encoding on the decoded copy */
		for (size_t i = 0; i < r->nhdr; i++)
			if (strcmp(r->hdr[i].k, "content-encoding") != 0)
				dec.hdr[dec.nhdr++] = r->hdr[i];
		int rc = files_post(&dec, o, b, sb, as_root);
		free(plain);
		return rc;
	}
	json_object *arr = json_object_new_array();
	int rc;
	if (ct && !strncmp(ct, "multipart/", 10)) {
		rc = files_multipart(r, o, b, sb, as_root, ct, arr);
	} else if (ct && !strncmp(ct, "application/octet-stream", 24)) {
		const char *p = serve_query(r, "path");
		if (!p || !*p) {
			json_object_put(arr);
			return serve_reply_error(o, 400, "path query parameter is required for raw body upload");
		}
		rc = put_one(r, o, b, sb, as_root, p, r->body ? r->body : "", r->body_len, arr);
	} else {
		json_object_put(arr);
		return serve_reply_error(o, 400, "unsupported content type: %.64s", ct ? ct : "");
	}
	if (rc < 0) {
		json_object_put(arr);
		return 0;
	}
	size_t n;
	const char *s = json_object_to_json_string_length(arr, JSON_C_TO_STRING_PLAIN, &n);
	rc = serve_reply(o, 200, "text/plain; charset=utf-8", s, n);
	json_object_put(arr);
	return rc;
}

/* A signed /files URL: v1_ + base64(sha256(path:op:user:token[:exp])). */
static int signature_ok(const struct serve_req *r, const char *token)
{
	const char *sig = serve_query(r, "signature"), *exp = serve_query(r, "signature_expiration");
	const char *path = serve_query(r, "path"), *user = serve_query(r, "username");
	if (!sig || strncmp(sig, "v1_", 3) != 0)
		return 0;
	if (exp && strtoll(exp, NULL, 10) < (long long)time(NULL))
		return 0;
	SBX_AUTOFREE char *raw = sbx_xasprintf("%s:%s:%s:%s%s%s", path ? path : "",
					       !strcmp(r->method, "GET") ? "read" : "write",
					       user ? user : "", token, exp ? ":" : "", exp ? exp : "");
	unsigned char h[SBX_SHA256_LEN];
	sbx_sha256(raw, strlen(raw), h);
	SBX_AUTOFREE char *b = serve_b64(h, sizeof(h));
	size_t bl = strlen(b);
	while (bl && b[bl - 1] == '=')
		b[--bl] = '\0';
	return serve_ct_eq(sig + 3, b);
}

int serve_envd_files(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		     struct sbx_sandbox *sb)
{
	char who[65];
	int as_root = serve_envd_user(r, serve_query(r, "username") ? serve_query(r, "username") : "user", who);
	if (as_root < 0)
		return serve_reply_error(o, 401, "error looking up user '%s'", who);
	if (!strcmp(r->method, "POST"))
		return files_post(r, o, b, sb, as_root);
	if (strcmp(r->method, "GET") != 0)
		return serve_reply_error(o, 405, "method not allowed");
	const char *q = serve_query(r, "path");
	struct sbx_err err = {0};
	SBX_AUTOFREE char *path = serve_sandbox_path(q, as_root, &err);
	if (!path)
		return serve_reply_error(o, 400, "invalid path: %s", err.msg);
	return files_get(r, o, b, sb, as_root, path);
}

/* ---- the plane's entry ---- */

const char *serve_envd_denied(const struct serve_req *r, const char *id)
{
	static const char msg[] = "unauthorized access, please provide a valid access token or method signing if supported";
	char tok[65];
	struct sbx_err err = {0};
	int files = !strcmp(r->path, "/files");
	if (serve_token(r->serve_dir, "envd", id, tok, &err) < 0)
		return msg;
	const char *t = serve_hdr(r, "x-access-token");
	int ok = t ? serve_ct_eq(t, tok) : files && signature_ok(r, tok);
	explicit_bzero(tok, sizeof(tok));
	return ok ? NULL : msg;
}

static int proxy_gone(struct serve_out *o, const char *id, unsigned port)
{
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "sandboxId", id);
	sbx_json_set_str(j, "message", port == SERVE_ENVD_PORT ? "The sandbox was not found"
				       : "The sandbox is running but port is not open");
	if (port != SERVE_ENVD_PORT)
		sbx_json_set_int(j, "port", port);
	sbx_json_set_int(j, "code", 502);
	return serve_reply_json(o, 502, j);
}

int serve_envd(const struct serve_req *r, struct serve_out *o)
{
	const char *id = r->sandbox_id;
	int files = !strcmp(r->path, "/files");
	struct sbx_err err = {0};
	struct serve_rec rec = {0};
	if (serve_rec_load(r->serve_dir, id, &rec, &err) < 0)
		return proxy_gone(o, id, r->port);
	if (r->plane == PLANE_ENVD && !strcmp(r->path, "/health")) {
		serve_rec_clear(&rec);
		serve_out_header(o, "Cache-Control", "no-store");
		return serve_reply(o, 204, NULL, NULL, 0);
	}
	const char *denied = r->plane == PLANE_ENVD ? serve_envd_denied(r, id) : NULL;
	if (denied) {
		serve_rec_clear(&rec);
		return serve_reply_error(o, 401, "%s", denied);
	}
	struct sbx_backend *b = NULL;
	struct sbx_sandbox sb = {0};
	struct serve_req anyone = *r;
	anyone.team[0] = '\0';                 /* the token proved access */
	if (serve_open_backend(r, &b, &err) < 0 || serve_load_sandbox(&anyone, b, id, &sb, &rec, &err) < 0) {
		sbx_backend_close(b);
		return err.kind == SBX_NOT_FOUND ? proxy_gone(o, id, r->port) : serve_reply_err(o, &err);
	}
	int rc;
	if (sb.state == SBX_STATE_PAUSED && !rec.auto_resume) {
		rc = proxy_gone(o, id, r->port);
	} else if (r->plane == PLANE_PROXY) {
		rc = serve_proxy(r, o, b, &sb, &rec);
	} else if (files) {
		rc = serve_envd_files(r, o, b, &sb);
	} else if (!strncmp(r->path, "/filesystem.Filesystem/", 23)) {
		rc = serve_envd_fs(r, o, b, &sb, r->path + 23);
	} else if (!strncmp(r->path, "/process.Process/", 17)) {
		rc = serve_envd_proc(r, o, b, &sb, r->path + 17);
	} else if (!strcmp(r->path, "/envs") && !strcmp(r->method, "GET")) {
		rc = serve_reply_json(o, 200, json_object_new_object());
	} else {
		rc = serve_reply_error(o, 404, "no such route");
	}
	sbx_sandbox_clear(&sb);
	serve_rec_clear(&rec);
	sbx_backend_close(b);
	return rc;
}
