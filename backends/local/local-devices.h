/* local-devices.h - the device allow-list of a local sandbox
 * (local-devices.c). */
#ifndef SBX_LOCAL_DEVICES_H
#define SBX_LOCAL_DEVICES_H

#include "err.h"

/* Restrict the device nodes that the sandbox's processes may open or
 * create to the allow-list, in both places the kernel enforces one: the
 * v1 `devices` controller's cgroup `v1` (NULL when that hierarchy is not
 * mounted) and a BPF device program attached to the cgroup2 cgroup `v2`
 * (and so to every cgroup below it).
 * Both must be set up before any process joins them; a failure in either
 * is an error (the sandbox must not start without them). */
int local_devices_limit(const char *v1, const char *v2, struct sbx_err *err);

#endif
