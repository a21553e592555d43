/* sset.h - a hash set of byte strings, each with a long value (open
 * addressing, FNV-1a, grown at half full).  For what is looked up once per
 * listed object (page tokens, tenant names, template ids, snapshot
 * references), so that a pass over N objects stays O(N).
 *
 * Keys are copied in (any bytes, NUL included); a zeroed struct is an
 * empty set; sbx_sset_free empties it again.  Allocation failure aborts
 * (util.h). */
#ifndef SBX_SSET_H
#define SBX_SSET_H

#include <stddef.h>

struct sbx_sset_slot {
	char *k;                 /* NUL-terminated copy; NULL = empty slot */
	size_t len;
	long v;
};

struct sbx_sset {
	struct sbx_sset_slot *s;
	size_t cap, n;
};

int sbx_sset_has(struct sbx_sset *s, const char *k, size_t n);
/* The entry for k, or NULL.  Valid until the next add. */
struct sbx_sset_slot *sbx_sset_get(struct sbx_sset *s, const char *k, size_t n);
/* Returns 1 when added (value 0), 0 when already present. */
int sbx_sset_add(struct sbx_sset *s, const char *k, size_t n);
void sbx_sset_free(struct sbx_sset *s);

#endif
