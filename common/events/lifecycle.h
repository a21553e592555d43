/* lifecycle.h - the sandbox operations of sbx-ctl whose change is an
 * event (events.h): pause, resume, a new idle timer.  Each is the backend's
 * call, then, when it succeeded, the event of the sandbox's tenant (r NULL,
 * or a sandbox of no tenant: no event).  The event never fails the call. */
#ifndef SBX_LIFECYCLE_H
#define SBX_LIFECYCLE_H

#include "backend.h"
#include "redis.h"

int sbx_lifecycle_pause(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			struct sbx_err *err);
int sbx_lifecycle_resume(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			 struct sbx_err *err);
/* Hibernate (backend.h ops->hibernate, with its flags), refused with the
 * reason where the backend cannot here: never a plain pause in its place.
 * A running session sandbox takes the paused side of its quota first, as
 * a pause does (a failed hibernate puts the slot back).  The event is
 * "hibernated" with `why` ("command", "idle", "retention"). */
int sbx_lifecycle_hibernate(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			    unsigned flags, const char *why, struct sbx_err *err);
/* *t is updated as the backend's set_timeout leaves it; the event's detail
 * is {seconds, on_timeout, auto_resume?}. */
int sbx_lifecycle_timeout(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			  struct sbx_timeout_policy *t, struct sbx_err *err);

#endif
