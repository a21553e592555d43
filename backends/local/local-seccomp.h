/* local-seccomp.h - the seccomp filter of a local sandbox (local-seccomp.c).
 *
 * One filter per sandbox, kept as raw BPF in <dir>/seccomp.bpf (root's,
 * 0600) when the sandbox is made (built with libseccomp once per rule set
 * into <state>/local/seccomp/, linked from there); every exec only reads
 * those bytes and loads them, right before execve. */
#ifndef SBX_LOCAL_SECCOMP_H
#define SBX_LOCAL_SECCOMP_H

#include <stddef.h>

#include "err.h"

struct local_filter {
	void *insns;             /* struct sock_filter[len] */
	unsigned short len;
};

/* The policy (see local-seccomp.c): allow_userns lifts the refusal of
 * namespace creation, setns and the mount family. */
int local_seccomp_build(int allow_userns, struct local_filter *f, struct sbx_err *err);
/* Store the filter at `path` (mode 0600).  It is built once per rule set
 * (the rules compiled in, the switch, libseccomp's version) into the
 * directory `cache` and linked from there: the build costs more than the
 * rest of the work on the filter at create.  Files in `cache` are never
 * rewritten in place. */
int local_seccomp_write(const char *path, const char *cache, int allow_userns,
			struct sbx_err *err);
/* Read the filter stored at `path`.  A sandbox made before filters were
 * stored has none: then it is built from `allow_userns`, never skipped. */
int local_seccomp_read(const char *path, int allow_userns, struct local_filter *f,
		       struct sbx_err *err);
void local_filter_free(struct local_filter *f);
/* Load `f` into the calling thread.  Needs no_new_privs (or
 * CAP_SYS_ADMIN).  Async-signal-safe: meant for a child between fork and
 * execve.  0, or -1 with errno set. */
int local_seccomp_install(const struct local_filter *f);

#endif
