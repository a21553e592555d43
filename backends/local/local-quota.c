/* local-quota.c - the disk budget of a sandbox's own layer: a project
 * quota on its overlay upper and work directories.
 *
 * Both directories get the sandbox's project id with the inherit flag
 * before anything is written into them, so every file of the layer (copy-
 * ups included: overlay creates them in work/ and renames them into
 * upper/, which needs the same project on both sides) counts against one
 * block limit.  A write past it fails with EDQUOT, which sbx reports as
 * `capacity` (exit 75); inside the sandbox a process sees EDQUOT.
 *
 * Enforced where the state directory's file system enforces project
 * quotas: ext4 made with `-O quota,project` (or tune2fs) and mounted with
 * `prjquota`; XFS mounted with `prjquota` on a kernel with XFS_QUOTA (the
 * same calls; not on the kernel this was tested on).  Elsewhere (ext4
 * without the feature, tmpfs, overlay) there is no budget: a profile's
 * default is then skipped, an explicit one is unsupported.
 *
 * The project id is the first 32 bits of the sandbox's random id (never 0,
 * the default project); two sandboxes drawing the same one would share a
 * budget.  The limit is left in place when the sandbox goes: it limits
 * nothing without files. */
#include "local-quota.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/dqblk_xfs.h>
#include <linux/fs.h>

#include "util.h"

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef PRJQUOTA
#define PRJQUOTA 2
#endif

static int qctl(int fd, int cmd, unsigned id, void *addr)
{
	return (int)syscall(SYS_quotactl_fd, fd, QCMD(cmd, PRJQUOTA), id, addr);
}

int local_quota_enforced(const char *dir)
{
	SBX_AUTOCLOSE int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct fs_quota_stat st;
	memset(&st, 0, sizeof(st));
	if (qctl(fd, Q_XGETQSTAT, 0, &st) < 0)
		return 0;
	return (st.qs_flags & FS_QUOTA_PDQ_ENFD) != 0;
}

static int set_project(const char *dir, unsigned proj, struct sbx_err *err)
{
	SBX_AUTOCLOSE int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct fsxattr fx;
	if (fd < 0 || ioctl(fd, FS_IOC_FSGETXATTR, &fx) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "project of %s", dir);
	fx.fsx_projid = proj;
	fx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
	if (ioctl(fd, FS_IOC_FSSETXATTR, &fx) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "set the project of %s", dir);
	return 0;
}

int local_quota_apply(const char *upper, const char *work, const char *id, int64_t bytes,
		      int required, int *enforced, struct sbx_err *err)
{
	*enforced = 0;
	if (bytes <= 0)
		return 0;
	if (!local_quota_enforced(upper)) {
		if (required)
			return sbx_fail(err, SBX_UNSUPPORTED, "create",
					"a disk budget needs project quotas where the state lives (ext4: "
					"mkfs -O quota,project and mount -o prjquota); %s has none", upper);
		return 0;
	}
	/* "sb-" + hex: the first 8 hex digits. */
	char hex[9] = {0};
	strncpy(hex, id + 3, 8);
	unsigned proj = (unsigned)strtoul(hex, NULL, 16);
	if (proj == 0)
		proj = 1;
	if (set_project(upper, proj, err) < 0 || set_project(work, proj, err) < 0)
		return -1;
	SBX_AUTOCLOSE int fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "open %s", upper);
	struct if_dqblk q;
	memset(&q, 0, sizeof(q));
	q.dqb_bhardlimit = q.dqb_bsoftlimit = ((uint64_t)bytes + 1023) / 1024;   /* 1 KiB blocks */
	q.dqb_valid = QIF_BLIMITS;
	if (qctl(fd, Q_SETQUOTA, proj, &q) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "set the disk budget of %s", upper);
	*enforced = 1;
	return 0;
}
