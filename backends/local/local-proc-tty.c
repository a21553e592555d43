/* local-proc-tty.c - the terminal of a detached process of a local
 * sandbox: proc_resize and proc_claim (contracts in backend.h; the files
 * in local-procd.h).
 *
 * Promises:
 *  - A resize is one record written whole into the record's `winsize`
 *    FIFO (smaller than PIPE_BUF: atomic), which sbx-procd applies; when
 *    the FIFO is full (sbx-procd stopped), the resize is refused with
 *    `timeout`, never waited on forever.
 *  - A claim is flock(LOCK_EX | LOCK_NB) on the record's `attach` file:
 *    the kernel drops it with the last fd, so a claimer killed -9 leaves
 *    no stale claim behind. */
#include "local-proc.h"
#include "local-procd.h"
#include "local-sb.h"
#include "local-state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "proc.h"
#include "util.h"

/* The running terminal `sel` names, as the caller's user may act on it. */
static int open_tty(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_proc_sel *sel,
		    int as_root, const char *what, struct local_prec *p, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	SBX_AUTOFREE char *procs = local_procs_dir(&r);
	local_rec_free(&r);
	if (local_prec_find(procs, sel, p, err) < 0)
		return -1;
	int rc = sbx_proc_may_act(&p->i, as_root, what, err);
	if (rc == 0 && !p->i.tty)
		rc = sbx_fail(err, SBX_CONFLICT, "proc", "process %d has no terminal", p->i.pid);
	else if (rc == 0 && !p->i.running)
		rc = sbx_fail(err, SBX_CONFLICT, "proc", "process %d has exited", p->i.pid);
	if (rc < 0)
		local_prec_free(p);
	return rc;
}

int local_proc_resize(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, unsigned cols, unsigned rows, int as_root,
		      struct sbx_err *err)
{
	if (!cols || !rows || cols > 0xffff || rows > 0xffff)
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "a size is 1 to 65535 each way");
	struct local_prec p;
	if (open_tty(b, sb, sel, as_root, "resize", &p, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" LOCAL_PROC_WINSIZE, p.dir);
	int pid = p.i.pid;
	local_prec_free(&p);
	SBX_AUTOCLOSE int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENXIO || errno == ENOENT
		       ? sbx_fail(err, SBX_CONFLICT, "proc", "the terminal of %d is gone", pid)
		       : sbx_fail_errno(err, SBX_INTERNAL, "proc", "open the terminal of %d", pid);
	uint16_t rec[2] = {(uint16_t)cols, (uint16_t)rows};
	ssize_t w = write(fd, rec, sizeof(rec));
	if (w == (ssize_t)sizeof(rec))
		return 0;
	if (w < 0 && errno == EAGAIN)
		return sbx_fail(err, SBX_TIMEOUT, "proc", "the terminal of %d takes no resize", pid);
	return sbx_fail_errno(err, SBX_INTERNAL, "proc", "resize the terminal of %d", pid);
}

int local_proc_claim(struct sbx_backend *b, struct sbx_sandbox *sb,
		     const struct sbx_proc_sel *sel, int as_root, int *hold, struct sbx_err *err)
{
	*hold = -1;
	struct local_prec p;
	if (open_tty(b, sb, sel, as_root, "attach to", &p, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" LOCAL_PROC_ATTACH, p.dir);
	int pid = p.i.pid;
	local_prec_free(&p);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "open the terminal of %d", pid);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK)
			return sbx_fail(err, SBX_CONFLICT, "proc",
					"the terminal of %d is attached elsewhere (one writer at a time)",
					pid);
		errno = e;
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "claim the terminal of %d", pid);
	}
	*hold = fd;
	return 0;
}
