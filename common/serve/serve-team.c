/* serve-team.c - the sandboxes of a key ("team"): those whose metadata
 * names its id under SERVE_TEAM_KEY, listed newest first, and counted
 * for the key's sandbox limit. */
#include "serve-int.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "util.h"

/* Every sandbox of the team matching `md` and the states, newest first
 * (created_at desc, id asc). */
int serve_team_list(const struct serve_req *r, struct sbx_backend *b, json_object *md,
		     unsigned states, struct sbx_sandbox **out, size_t *n, struct sbx_err *err)
{
	json_object *f = json_object_new_object();
	if (md) {
		json_object_object_foreach(md, k, v)
			json_object_object_add(f, k, json_object_get(v));
	}
	sbx_json_set_str(f, SERVE_TEAM_KEY, r->team);
	struct sbx_list_filter flt = {.metadata = f, .states = states};
	struct sbx_sandbox *all = NULL;
	size_t na = 0;
	char *tok = NULL;
	int rc = 0;
	for (int pages = 0; pages < 1000; pages++) {
		struct sbx_page pg = {0};
		if (sbx_call(b, list, err, &flt, tok, &pg) < 0) {
			rc = -1;
			break;
		}
		all = sbx_xrealloc(all, (na + pg.n + 1) * sizeof(*all));
		if (pg.n)
			memcpy(all + na, pg.items, pg.n * sizeof(*all));
		na += pg.n;
		free(pg.items);
		pg.items = NULL;
		pg.n = 0;
		int again = pg.next && (!tok || strcmp(pg.next, tok) != 0);
		free(tok);
		tok = pg.next;
		pg.next = NULL;
		if (!again)
			break;
	}
	free(tok);
	json_object_put(f);
	if (rc < 0) {
		for (size_t i = 0; i < na; i++)
			sbx_sandbox_clear(&all[i]);
		free(all);
		return -1;
	}
	/* newest first; ties by id */
	for (size_t i = 1; i < na; i++)
		for (size_t j = i; j > 0; j--) {
			struct sbx_sandbox *x = &all[j - 1], *y = &all[j];
			if (x->created_at > y->created_at ||
			    (x->created_at == y->created_at && strcmp(x->id, y->id) < 0))
				break;
			struct sbx_sandbox t = *x;
			*x = *y;
			*y = t;
		}
	*out = all;
	*n = na;
	return 0;
}

int serve_team_count(const struct serve_req *r, struct sbx_backend *b, size_t *n,
		      struct sbx_err *err)
{
	struct sbx_sandbox *v;
	if (serve_team_list(r, b, NULL, 0, &v, n, err) < 0)
		return -1;
	size_t live = 0;
	for (size_t i = 0; i < *n; i++) {
		if (v[i].state != SBX_STATE_TERMINAL)
			live++;
		sbx_sandbox_clear(&v[i]);
	}
	free(v);
	*n = live;
	return 0;
}
