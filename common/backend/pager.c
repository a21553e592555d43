/* pager.c - every page of a backend listing (see pager.h for the promises
 * and the test points). */
#include "pager.h"

#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "sset.h"
#include "util.h"

enum { PAGING_REAL, PAGING_ONE, PAGING_FAIL_SECOND, PAGING_REPEAT };

/* Where the pages come from: the backend, or (test points) the backend's
 * whole listing read once and handed out one item per page. */
struct source {
	struct sbx_backend *b;
	const struct sbx_list_filter *f;
	int mode;
	struct sbx_sandbox *all;
	size_t nall;
	int loaded;
};

static int source_mode(void)
{
	if (sbx_fault_on("list:fail-page-2"))
		return PAGING_FAIL_SECOND;
	if (sbx_fault_on("list:repeat-token"))
		return PAGING_REPEAT;
	if (sbx_fault_on("list:pages-of-one"))
		return PAGING_ONE;
	return PAGING_REAL;
}

/* A page token the loop has not seen yet (0), else -1: the backend loops. */
static int fresh_token(struct sbx_sset *seen, const char *token, long pages, const char *op,
		       struct sbx_err *err)
{
	if (!sbx_sset_add(seen, token, strlen(token)))
		return sbx_fail(err, SBX_INTERNAL, op,
				"the backend returned a repeated page token after %ld pages; "
				"the listing cannot be trusted", pages);
	/* Fresh tokens forever are a loop too, just a slower one. */
	if (pages >= SBX_PAGES_MAX)
		return sbx_fail(err, SBX_INTERNAL, op,
				"the backend listing did not end after %ld pages", pages);
	return 0;
}

static int collect(struct sbx_sandbox *sb, void *ctx, struct sbx_err *err)
{
	(void)err;
	struct source *s = ctx;
	s->all = sbx_xrealloc(s->all, (s->nall + 1) * sizeof(*s->all));
	s->all[s->nall++] = *sb;
	memset(sb, 0, sizeof(*sb));
	return 0;
}

static int each_page(struct source *s, sbx_list_fn fn, void *ctx, long *pages,
		     struct sbx_err *err);

/* The test points' pages: tokens "p1", "p2", ... index the listing. */
static int fake_page(struct source *s, const char *token, struct sbx_page *out,
		     struct sbx_err *err)
{
	if (!s->loaded) {
		struct source real = {.b = s->b, .f = s->f, .mode = PAGING_REAL};
		if (each_page(&real, collect, s, NULL, err) < 0)
			return -1;
		s->loaded = 1;
	}
	size_t k = 0;
	if (token) {
		if (token[0] != 'p' || (k = strtoul(token + 1, NULL, 10)) == 0 || k >= s->nall + 1)
			return sbx_fail(err, SBX_INVALID_REQUEST, "list", "bad page token '%s'", token);
		if (s->mode == PAGING_FAIL_SECOND && k == 1)
			return sbx_fail(err, SBX_UNAVAILABLE, "list",
					"test fault (SBX_FAULT=list:fail-page-2): page 2 failed");
	}
	memset(out, 0, sizeof(*out));
	if (k < s->nall) {
		out->items = sbx_xcalloc(1, sizeof(*out->items));
		out->items[0] = s->all[k];
		memset(&s->all[k], 0, sizeof(s->all[k]));
		out->n = 1;
	}
	if (k + 1 < s->nall)
		out->next = s->mode == PAGING_REPEAT ? sbx_xstrdup("p1")
						     : sbx_xasprintf("p%zu", k + 1);
	return 0;
}

static int each_page(struct source *s, sbx_list_fn fn, void *ctx, long *pages,
		     struct sbx_err *err)
{
	struct sbx_sset seen = {0};
	char *token = NULL;
	long n = 0;
	int rc = 0;
	for (;;) {
		struct sbx_page p = {0};
		int got = s->mode == PAGING_REAL ? sbx_call(s->b, list, err, s->f, token, &p)
						 : fake_page(s, token, &p, err);
		if (got < 0) {
			sbx_err_prefix(err, "listing page %ld", n + 1);
			rc = -1;
			break;
		}
		n++;
		for (size_t i = 0; i < p.n && rc == 0; i++)
			rc = fn(&p.items[i], ctx, err);
		free(token);
		token = p.next;
		p.next = NULL;
		sbx_page_clear(&p);
		if (rc < 0 || !token || !*token)
			break;
		if ((rc = fresh_token(&seen, token, n, "list", err)) < 0)
			break;
	}
	free(token);
	sbx_sset_free(&seen);
	if (pages)
		*pages = n;
	return rc;
}

int sbx_list_each(struct sbx_backend *b, const struct sbx_list_filter *f, sbx_list_fn fn,
		  void *ctx, long *pages, struct sbx_err *err)
{
	struct source s = {.b = b, .f = f, .mode = source_mode()};
	int rc = each_page(&s, fn, ctx, pages, err);
	for (size_t i = 0; i < s.nall; i++)
		sbx_sandbox_clear(&s.all[i]);
	free(s.all);
	return rc;
}

int sbx_list_all(struct sbx_backend *b, const struct sbx_list_filter *f,
		 struct sbx_sandbox **out, size_t *n, long *pages, struct sbx_err *err)
{
	struct source got = {0};
	*out = NULL;
	*n = 0;
	if (sbx_list_each(b, f, collect, &got, pages, err) < 0) {
		for (size_t i = 0; i < got.nall; i++)
			sbx_sandbox_clear(&got.all[i]);
		free(got.all);
		return -1;
	}
	*out = got.all;
	*n = got.nall;
	return 0;
}

int sbx_snapshots_all(struct sbx_backend *b, struct sbx_snapshot_ref **out, size_t *n,
		      struct sbx_err *err)
{
	struct sbx_snapshot_ref *all = NULL;
	struct sbx_sset seen = {0};
	size_t nall = 0;
	char *token = NULL;
	int rc = 0;
	for (long page = 1;; page++) {
		struct sbx_snapshot_ref *items = NULL;
		size_t ni = 0;
		char *next = NULL;
		if (sbx_call(b, snapshot_list, err, token, &items, &ni, &next) < 0) {
			sbx_err_prefix(err, "listing snapshot page %ld", page);
			rc = -1;
			break;
		}
		all = sbx_xrealloc(all, (nall + ni + 1) * sizeof(*all));
		if (ni)     /* memcpy from NULL is undefined even for 0 bytes */
			memcpy(all + nall, items, ni * sizeof(*items));
		nall += ni;
		free(items);        /* the fields moved into `all` */
		free(token);
		token = next;
		if (!token || !*token)
			break;
		if ((rc = fresh_token(&seen, token, page, "snapshot_list", err)) < 0)
			break;
	}
	free(token);
	sbx_sset_free(&seen);
	if (rc < 0) {
		sbx_snapshot_refs_free(all, nall);
		return -1;
	}
	*out = all;
	*n = nall;
	return 0;
}
