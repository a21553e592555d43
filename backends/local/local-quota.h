/* local-quota.h - the disk budget of a local sandbox's own layer
 * (local-quota.c: project quotas). */
#ifndef SBX_LOCAL_QUOTA_H
#define SBX_LOCAL_QUOTA_H

#include <stdint.h>

#include "err.h"

/* 1 when the file system holding `dir` enforces project quotas. */
int local_quota_enforced(const char *dir);
/* Give the layer (`upper` and the overlay `work` dir, both empty) of
 * sandbox `id` a budget of `bytes`.  Where the file system cannot enforce
 * it: unsupported when `required`, else nothing (*enforced = 0). */
int local_quota_apply(const char *upper, const char *work, const char *id, int64_t bytes,
		      int required, int *enforced, struct sbx_err *err);

#endif
