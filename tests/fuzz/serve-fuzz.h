/* serve-fuzz.h - what the sbx-serve fuzz targets share: a request built
 * from fuzz bytes the way sbx-serve's connection thread builds one from
 * what libmicrohttpd parsed (method, target, lower-cased header names,
 * decoded path and query), and a memfd standing in for the worker's pipe.
 *
 * Input: "METHOD TARGET\n" then "Name: value\n" lines, then "\n", then the
 * body.  Anything may be missing or malformed; NUL bytes end a field as
 * they would in MHD's C strings. */
#ifndef SBX_SERVE_FUZZ_H
#define SBX_SERVE_FUZZ_H

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "serve-int.h"

static char *fz_line(const char **p, const char *end)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *e = nl ? nl : end;
	char *s = strndup(*p, (size_t)(e - *p));
	*p = nl ? nl + 1 : end;
	return s;
}

/* Build r from data; returns the raw target (malloc'd) for head checks. */
static char *fz_req(struct serve_req *r, const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	memset(r, 0, sizeof(*r));
	char *first = fz_line(&p, end);
	char *sp = strchr(first, ' ');
	char *target = strdup(sp ? sp + 1 : "/");
	if (sp)
		*sp = '\0';
	snprintf(r->method, sizeof(r->method), "%s", first);
	free(first);
	while (p < end && *p != '\n' && r->nhdr < SERVE_MAX_HEADERS) {
		char *l = fz_line(&p, end);
		char *colon = strchr(l, ':');
		if (colon) {
			*colon = '\0';
			char *v = colon + 1;
			while (*v == ' ')
				v++;
			for (char *c = l; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			r->hdr[r->nhdr].k = strdup(l);
			r->hdr[r->nhdr++].v = strdup(v);
		}
		free(l);
	}
	if (p < end && *p == '\n')
		p++;
	r->body_len = (size_t)(end - p);
	r->body = malloc(r->body_len + 1);
	memcpy(r->body, p, r->body_len);
	r->body[r->body_len] = '\0';
	/* path and query, decoded as MHD does with serve_unescape */
	char *t = strdup(target);
	char *q = strchr(t, '?');
	if (q)
		*q++ = '\0';
	serve_unescape(t);
	r->path = t;
	for (char *save = NULL, *kv = q ? strtok_r(q, "&", &save) : NULL; kv && r->nquery < 64;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (eq)
			*eq++ = '\0';
		r->query = realloc(r->query, (r->nquery + 1) * sizeof(*r->query));
		r->query[r->nquery].k = strdup(kv);
		r->query[r->nquery].v = strdup(eq ? eq : "");
		serve_unescape(r->query[r->nquery].k);
		serve_unescape(r->query[r->nquery].v);
		r->nquery++;
	}
	return target;
}

/* The worker's pipe: a memfd, read back whole (NUL-terminated). */
static char *fz_out_text(struct serve_out *o, size_t *len)
{
	off_t n = lseek(o->fd, 0, SEEK_END);
	char *t = malloc((size_t)n + 1);
	if (n > 0 && pread(o->fd, t, (size_t)n, 0) != n)
		abort();
	t[n] = '\0';
	*len = (size_t)n;
	return t;
}

#endif
