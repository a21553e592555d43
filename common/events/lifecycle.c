/* lifecycle.c - see lifecycle.h. */
#include "lifecycle.h"

#include "doc.h"
#include "events.h"

/* The backend's call went through (rc 0): the event of a command. */
static int commanded(int rc, struct sbx_redis *r, struct sbx_sandbox *sb, const char *type)
{
	if (rc < 0)
		return -1;
	sbx_event_sandbox(r, sb, type, NULL, "command", NULL);
	return 0;
}

int sbx_lifecycle_pause(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			struct sbx_err *err)
{
	return commanded(sbx_call(b, pause, err, sb), r, sb, "paused");
}

int sbx_lifecycle_resume(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			 struct sbx_err *err)
{
	return commanded(sbx_call(b, connect, err, sb), r, sb, "resumed");
}

int sbx_lifecycle_timeout(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			  struct sbx_timeout_policy *t, struct sbx_err *err)
{
	if (sbx_call(b, set_timeout, err, sb, t) < 0)
		return -1;
	json_object *d = json_object_new_object();
	sbx_json_set_int(d, "seconds", t->seconds);
	sbx_json_set_str(d, "on_timeout", t->on_timeout_pause ? "pause" : "kill");
	if (t->auto_resume >= 0)
		sbx_json_set_bool(d, "auto_resume", t->auto_resume);
	sbx_event_sandbox(r, sb, "timeout", NULL, "command", d);
	json_object_put(d);
	return 0;
}
