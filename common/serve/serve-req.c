/* serve-req.c - what a request names, as the handlers read it: headers
 * and query parameters, the envd user, and sandbox paths made absolute
 * from the user's home (serve-envd.c's opening says how).  Leaf functions:
 * nothing here calls back into a plane.
 *
 * Promises: a path serve_sandbox_path returns is in the normal spelling of
 * the one path rule (path.h); serve_ct_eq takes time that depends on the lengths only. */
#include "serve-int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "path.h"
#include "util.h"

int serve_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && c == '-')))
			return 0;
	}
	return 1;
}

int serve_token_char(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

int serve_header_name_ok(const char *name)
{
	if (!*name || strlen(name) > 128)
		return 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (!serve_token_char(*p))
			return 0;
	return 1;
}

const char *serve_hdr(const struct serve_req *r, const char *lname)
{
	for (size_t i = 0; i < r->nhdr; i++)
		if (strcmp(r->hdr[i].k, lname) == 0)
			return r->hdr[i].v;
	return NULL;
}

const char *serve_query(const struct serve_req *r, const char *name)
{
	for (size_t i = 0; i < r->nquery; i++)
		if (strcmp(r->query[i].k, name) == 0)
			return r->query[i].v;
	return NULL;
}

void serve_req_clear(struct serve_req *r)
{
	for (size_t i = 0; i < r->nhdr; i++) {
		free(r->hdr[i].k);
		free(r->hdr[i].v);
	}
	for (size_t i = 0; i < r->nquery; i++) {
		free(r->query[i].k);
		free(r->query[i].v);
	}
	free(r->query);
	free(r->path);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

char *serve_map_path(const char *p, int as_root)
{
	const char *home = as_root ? "/root" : SERVE_HOME;
	if (!p || !*p || !strcmp(p, "~"))
		return sbx_xstrdup(home);
	if (!strncmp(p, "~/", 2))
		return sbx_xasprintf("%s/%s", home, p + 2);
	if (p[0] != '/')
		return sbx_xasprintf("%s/%s", home, p);
	return sbx_xstrdup(p);
}

char *serve_sandbox_path(const char *p, int as_root, struct sbx_err *err)
{
	SBX_AUTOFREE char *m = serve_map_path(p, as_root);
	return sbx_path_norm(m, "path", err);
}

int serve_ct_eq(const char *a, const char *b)
{
	size_t n = strlen(a);
	if (n != strlen(b))
		return 0;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

int serve_envd_user(const struct serve_req *r, const char *name, char who[65])
{
	char buf[128] = "";
	const char *a = serve_hdr(r, "authorization");
	if (!name && a && !strncasecmp(a, "Basic ", 6)) {
		char *dec;
		size_t n;
		if (serve_unb64(a + 6, &dec, &n) == 0) {
			snprintf(buf, sizeof(buf), "%.*s", (int)n, dec);
			free(dec);
			char *colon = strchr(buf, ':');
			if (colon)
				*colon = '\0';
		}
		name = buf;
	}
	if (!name || !*name || !strcmp(name, "user"))
		return 0;
	if (!strcmp(name, "root"))
		return 1;
	snprintf(who, 65, "%s", name);
	return -1;
}

char *serve_b64(const void *data, size_t len)
{
	return sbx_base64(data, len, NULL);
}

/* Standard or URL-safe, padded or not. */
int serve_unb64(const char *s, char **out, size_t *len)
{
	size_t n = strlen(s);
	char *t = sbx_xmalloc(n + 4);
	for (size_t i = 0; i < n; i++)
		t[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
	while (n % 4)
		t[n++] = '=';
	t[n] = '\0';
	*out = sbx_xmalloc(n / 4 * 3 + 1);
	long got = sbx_base64_decode((unsigned char *)*out, t, n);
	free(t);
	if (got < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	*len = (size_t)got;
	(*out)[*len] = '\0';
	return 0;
}
