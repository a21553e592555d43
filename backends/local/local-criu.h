/* local-criu.h - can CRIU checkpoint processes on this host?  The first
 * condition of hibernate on the local backend (issue 33; docs/local.md,
 * Hibernate).
 *
 * Debian 12's CRIU (3.17) passes `criu check` on the kernel it was built
 * for (6.1) and fails it on newer ones (6.18: the vDSO layout).  The
 * verdict is asked of `criu check` itself, once per boot and criu binary:
 * it is kept in <dir>/criu-check under a key of the boot id and the
 * binary's identity (device, inode, size, mtime), so a reboot (perhaps
 * into another kernel) or another criu asks again, and nothing else
 * does. */
#ifndef SBX_LOCAL_CRIU_H
#define SBX_LOCAL_CRIU_H

#include "err.h"

/* 0 when `criu check` passes on this host; else -1 with `unsupported`
 * and why (criu not installed, or criu's own first error line).  `dir` is
 * the local backend's state folder (<state_dir>/local), where the verdict
 * is cached if the folder exists (none is made); a cache that cannot be
 * written costs a `criu check` next time, nothing more.  A crash leaves the old cache or the new one (an
 * atomic write), never a torn one. */
int local_criu_check(const char *dir, struct sbx_err *err);

#endif
