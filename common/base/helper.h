/* helper.h - a helper program started detached from its caller, that
 * says on a pipe when it is ready (the egress broker on local and docker,
 * started by the backends on the host). */
#ifndef SBX_HELPER_H
#define SBX_HELPER_H

#include <stddef.h>

enum sbx_helper_rc {
	SBX_HELPER_READY = 0,   /* it wrote a line starting with R */
	SBX_HELPER_SILENT = 1,  /* no line within 10 s, or it closed the pipe */
	SBX_HELPER_FAILED = 2,  /* it wrote another line: in `why` */
};

/* Detach the calling (forked) process: its own session, stdio on
 * /dev/null, and a fork of which only the child returns (so the helper
 * is nobody's child but init's, and the caller's wait ends at once). */
void sbx_helper_detach(void);

/* Start the program open at `exe` (an O_PATH or O_RDONLY descriptor,
 * run with fexecve) with `argv`, one slot of which is `fd_slot`: the
 * child writes the ready pipe's descriptor number into it.  In the
 * child, `detach(arg)` runs first and must end in sbx_helper_detach (it
 * may move the process to a cgroup before); then nothing of the
 * caller's stays open but the pipe and the program, and the environment
 * is PATH alone (no secret of the caller's reaches a helper).  Waits up
 * to 10 s for the helper's first line (at most `cap` - 1 bytes, into
 * `why`).  Returns an sbx_helper_rc, or -1 with errno when the pipe or
 * the fork could not be made. */
int sbx_helper_start(int exe, const char **argv, char fd_slot[16],
		     void (*detach)(void *), void *arg, char *why, size_t cap);

/* The same, with `in` (a descriptor of the caller's, e.g. a memfd at
 * offset 0; -1 none) as the helper's stdin: how a helper gets what may
 * not be in its argv or environment (the egress broker's secrets). */
/* A memfd (CLOEXEC) holding `text`, at offset 0, for sbx_helper_start_in;
 * -1 with errno. */
int sbx_helper_memfd(const char *text);

int sbx_helper_start_in(int exe, const char **argv, char fd_slot[16], int in,
			void (*detach)(void *), void *arg, char *why, size_t cap);

#endif
