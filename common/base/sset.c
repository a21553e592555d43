/* sset.c - a hash set of byte strings with a value (see sset.h). */
#include "sset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static struct sbx_sset_slot *slot(struct sbx_sset *s, const char *k, size_t n)
{
	size_t i = (size_t)hash_bytes(k, n) & (s->cap - 1);
	for (;;) {
		struct sbx_sset_slot *sl = &s->s[i];
		if (!sl->k || (sl->len == n && memcmp(sl->k, k, n) == 0))
			return sl;
		i = (i + 1) & (s->cap - 1);
	}
}

int sbx_sset_has(struct sbx_sset *s, const char *k, size_t n)
{
	return s->cap && slot(s, k, n)->k != NULL;
}

struct sbx_sset_slot *sbx_sset_get(struct sbx_sset *s, const char *k, size_t n)
{
	if (!s->cap)
		return NULL;
	struct sbx_sset_slot *sl = slot(s, k, n);
	return sl->k ? sl : NULL;
}

int sbx_sset_add(struct sbx_sset *s, const char *k, size_t n)
{
	if ((s->n + 1) * 2 > s->cap) {
		struct sbx_sset g = {.cap = s->cap ? s->cap * 2 : 64};
		g.s = sbx_xcalloc(g.cap, sizeof(*g.s));
		for (size_t i = 0; i < s->cap; i++)
			if (s->s[i].k)
				*slot(&g, s->s[i].k, s->s[i].len) = s->s[i];
		free(s->s);
		s->s = g.s;
		s->cap = g.cap;
	}
	struct sbx_sset_slot *sl = slot(s, k, n);
	if (sl->k)
		return 0;
	sl->k = sbx_xmalloc(n + 1);
	memcpy(sl->k, k, n);
	sl->k[n] = '\0';
	sl->len = n;
	s->n++;
	return 1;
}

void sbx_sset_free(struct sbx_sset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->s[i].k);
	free(s->s);
	memset(s, 0, sizeof(*s));
}
