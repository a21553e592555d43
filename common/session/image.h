/* image.h - the tenant's current skill image pointer.
 *
 * <prefix>:{T}:image is a hash {snapshot_id, fingerprint, generation,
 * base_template, updated_at}.  Sessions start from snapshot_id when its
 * fingerprint equals their profile's backend fingerprint, else from the base
 * template.  The pointer only moves by compare-and-set on `generation`, so
 * two installers cannot silently overwrite each other: the loser learns the
 * current generation and decides again.  (Writer: sbx-snap; readers:
 * resolve, sbx-reap.) */
#ifndef SBX_IMAGE_H
#define SBX_IMAGE_H

#include <stdint.h>

#include "err.h"
#include "redis.h"

struct sbx_image {
	char *snapshot_id;
	char *fingerprint;       /* lowercase hex SHA-256 */
	char *base_template;     /* what the image was built over ("" if unknown) */
	int64_t generation;      /* 0 = no image yet; +1 per move */
	int64_t updated_at;      /* unix seconds */
};

void sbx_image_clear(struct sbx_image *im);

/* 1 and *out / 0 when the tenant has no image (out->generation = 0) / -1.
 * A malformed hash (missing snapshot_id or fingerprint, bad generation) is
 * an error, never "no image". */
int sbx_image_get(struct sbx_redis *r, const char *tenant, struct sbx_image *out,
		  struct sbx_err *err);

/* Move the pointer to `next` (snapshot_id and fingerprint required,
 * base_template optional) if the stored generation still equals
 * `expected_generation` (0 = "no image yet").  Also records the tenant in
 * <prefix>:tenants.  Returns 1 and *new_generation on success, 0 when the
 * generation moved on (*new_generation = the current one), -1 on error. */
int sbx_image_cas(struct sbx_redis *r, const char *tenant, int64_t expected_generation,
		  const struct sbx_image *next, int64_t *new_generation, struct sbx_err *err);

#endif
