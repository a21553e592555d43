/* local-snapshot.c - the local backend's snapshot operations over the
 * image store (local-image.c, whose opening describes the layout and its
 * promises): a snapshot of a running sandbox (a pre-copy, then a short
 * freeze for what changed) and the flattening of a stack into one layer. */
#include "local-image-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "local-copy.h"
#include "local-sb.h"
#include "local-state.h"
#include "fault.h"
#include "util.h"

/* A per-sandbox lock so two snapshots of one sandbox do not interleave
 * their freeze and thaw (the first thaw would unfreeze the second copy). */
static int sb_lock(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	SBX_AUTOFREE char *p = img_path(b, "tmp/.sb-%s.lock", id);
	return lock_file(p, LOCK_EX, "snapshot", err);
}

static int new_snap_id(char id[32], struct sbx_err *err)
{
	char hex[13];
	if (sbx_random_hex(hex, 6, err) < 0)
		return -1;
	snprintf(id, 32, SNAP_PREFIX "%s", hex);
	return 0;
}

/* The pre-copy of a snapshot: the upper dir copied into `tmp` while the
 * sandbox runs, so that the freeze after it only has to copy what changed
 * (lcopy_sync).  `since` is set to a little before the copy began: inode
 * times are coarse-grained (a jiffy), and a change made then is copied
 * again rather than missed.  1 when the pre-copy is whole; 0 when it
 * failed (a race this walk does not expect, a full disk): `tmp` is removed
 * and the snapshot copies everything while frozen, as it did before. */
static int precopy(const char *upper, const char *tmp, struct timespec *since)
{
	clock_gettime(CLOCK_REALTIME, since);
	since->tv_nsec -= 50 * 1000 * 1000;
	if (since->tv_nsec < 0) {
		since->tv_sec--;
		since->tv_nsec += 1000 * 1000 * 1000;
	}
	/* A write through a shared mapping moves ctime only at the first
	 * write fault on a clean page; a page dirtied before `since` would
	 * take later writes silently.  syncfs writes every dirty page back
	 * and write-protects it, so each write after this point faults and
	 * moves ctime past `since`.  It runs before the freeze, not in it;
	 * without it, the whole copy is done frozen. */
	SBX_AUTOCLOSE int ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ufd < 0 || syncfs(ufd) < 0)
		return 0;
	struct sbx_err err = {0};
	if (lcopy_tree(upper, tmp, LCOPY_LIVE, NULL, &err) == 0)
		return 1;
	sbx_rm_rf(tmp, &err);
	return 0;
}

/* Snapshot: resume (auto-resume), pre-copy the upper dir into a new layer
 * while the sandbox runs, freeze, copy again only what changed since the
 * pre-copy began, thaw - always, also when the copy failed - then sync and
 * commit the record {parent's layers + the new one}.  The sandbox keeps
 * running; it stops only for the second pass (issue 20:
 * docs/bench/scale.md measures the window).  A crash while frozen
 * leaves the sandbox frozen: it reads as paused and the next command that
 * touches it resumes it. */
int local_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			  struct sbx_snapshot_ref *out, struct sbx_err *err)
{
	if (!sb || !sb->id || !*sb->id || strchr(sb->id, '/'))
		return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot", "no valid sandbox id");
	if (name && !valid_name(name))
		return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot",
				"bad snapshot name: 1 to 255 printable bytes");
	/* The per-sandbox lock first: another snapshot's freeze must not
	 * look like a pause to our auto-resume below. */
	if (images_init(b, err) < 0)
		return -1;
	SBX_AUTOCLOSE int sl = sb_lock(b, sb->id, err);
	if (sl < 0)
		return -1;
	pid_t init;
	if (local_sb_ensure_running(b, sb->id, &init, err) < 0)
		return -1;
	struct sbx_sandbox cur = {0};
	if (sbx_call(b, get, err, sb->id, &cur) < 0)
		return -1;
	struct rec parent;
	int rc = image_load(b, cur.template_id ? cur.template_id : sb->template_id, &parent, err);
	sbx_sandbox_clear(&cur);
	if (rc < 0) {
		sbx_err_prefix(err, "the sandbox's template");
		return -1;
	}
	struct rec r = {0};
	char id[32], lid[9];
	SBX_AUTOFREE char *tmp = NULL;
	SBX_AUTOCLOSE int wlk = -1;
	SBX_AUTOFREE char *upper = NULL;
	struct lcopy_stats st = {0};
	struct timespec since;
	if (new_snap_id(id, err) < 0 || new_work(b, lid, &tmp, &wlk, err) < 0) {
		rec_clear(&parent);
		return -1;
	}
	r.id = sbx_xstrdup(id);
	r.name = sbx_xstrdup(name ? name : id);
	r.kind = sbx_xstrdup("snapshot");
	r.parent = sbx_xstrdup(parent.id);
	rec_add_layer(&r, lid);
	for (size_t i = 0; i < parent.nlayers; i++)
		rec_add_layer(&r, parent.layers[i]);
	rec_clear(&parent);
	rc = check_stack(b, &r, err);
	if (rc == 0 && !(upper = local_sb_upper(b, sb->id)))
		rc = sbx_fail(err, SBX_INTERNAL, "snapshot", "sandbox %s has no upper layer", sb->id);
	if (rc < 0) {
		rec_clear(&r);
		return -1;
	}

	int pre = precopy(upper, tmp, &since);
	sbx_fault("image:snapshot-precopied");
	if (local_sb_freeze(b, sb->id, 1, err) < 0) {
		rec_clear(&r);
		return -1;
	}
	sbx_fault("snapshot-frozen");
	rc = pre ? lcopy_sync(upper, tmp, &since, &st, err) : lcopy_tree(upper, tmp, 0, &st, err);
	struct sbx_err terr = {0};
	if (local_sb_freeze(b, sb->id, 0, &terr) < 0 && rc == 0) {
		*err = terr;
		sbx_err_prefix(err, "thaw after snapshot");
		rc = -1;
	}
	close(sl);
	sl = -1;
	if (rc == 0)
		rc = sync_tree(tmp, err);
	sbx_fault("snapshot-copied");
	sbx_fault("image:snapshot-copied");
	if (rc < 0) {
		struct sbx_err ignored = {0};
		sbx_rm_rf(tmp, &ignored);
		rec_clear(&r);
		return -1;
	}
	if (lcopy_du(tmp, &r.size_bytes, err) < 0) {
		struct sbx_err ignored = {0};
		sbx_rm_rf(tmp, &ignored);
		rec_clear(&r);
		return -1;
	}
	r.created_at = sbx_now_ms() / 1000;
	rc = img_commit(b, &r, tmp, 0, err);
	if (rc == 0 && out)
		ref_from_rec(&r, out);
	rec_clear(&r);
	return rc;
}

/* Follow parents through snapshots to the template at the bottom. */
static char *root_template(struct sbx_backend *b, const struct rec *r)
{
	char *cur = sbx_xstrdup(r->parent ? r->parent : r->id);
	for (int depth = 0; depth < 1000; depth++) {
		struct rec p;
		struct sbx_err ignored = {0};
		if (image_load(b, cur, &p, &ignored) < 0)
			return cur;
		int snap = is_snapshot(&p) && p.parent;
		if (snap) {
			free(cur);
			cur = sbx_xstrdup(p.parent);
		}
		rec_clear(&p);
		if (!snap)
			break;
	}
	return cur;
}

int local_snapshot_flatten(struct sbx_backend *b, const char *id, const char *name,
			   struct sbx_snapshot_ref *out, struct sbx_err *err)
{
	if (name && !valid_name(name))
		return sbx_fail(err, SBX_INVALID_REQUEST, "flatten",
				"bad snapshot name: 1 to 255 printable bytes");
	struct rec src;
	if (image_load(b, id, &src, err) < 0)
		return -1;
	size_t n = src.nlayers;
	int on_host = strcmp(src.layers[n - 1], HOST_LAYER) == 0;
	if (on_host)
		n--;
	if (n == 0) {
		rec_clear(&src);
		return sbx_fail(err, SBX_INVALID_REQUEST, "flatten", "'%s' has no layers to flatten",
				id);
	}

	char sid[32], lid[9];
	SBX_AUTOFREE char *tmp = NULL;
	SBX_AUTOCLOSE int wlk = -1;
	if (new_snap_id(sid, err) < 0 || new_work(b, lid, &tmp, &wlk, err) < 0) {
		rec_clear(&src);
		return -1;
	}
	/* Bottom up: each layer is applied onto what lies below it. */
	unsigned flags = LCOPY_MERGE | (on_host ? LCOPY_KEEP_WHITEOUTS : 0);
	struct lcopy_stats st = {0};
	int rc = 0;
	for (size_t i = n; i-- > 0 && rc == 0;) {
		SBX_AUTOFREE char *p = layer_abs(b, src.layers[i]);
		rc = lcopy_tree(p, tmp, flags, &st, err);
	}
	struct rec r = {0};
	if (rc == 0)
		rc = layer_settle(tmp, &r.size_bytes, err);
	if (rc < 0) {
		struct sbx_err ignored = {0};
		sbx_rm_rf(tmp, &ignored);
		rec_clear(&src);
		return -1;
	}
	r.id = sbx_xstrdup(sid);
	r.name = name ? sbx_xstrdup(name) : sbx_xasprintf("%s-flat", src.name);
	r.kind = sbx_xstrdup("snapshot");
	r.parent = root_template(b, &src);
	r.from = sbx_xstrdup(src.id);
	r.created_at = sbx_now_ms() / 1000;
	rec_add_layer(&r, lid);
	if (on_host)
		rec_add_layer(&r, HOST_LAYER);
	rec_clear(&src);
	rc = img_commit(b, &r, tmp, 0, err);
	if (rc == 0 && out)
		ref_from_rec(&r, out);
	rec_clear(&r);
	return rc;
}

/* ---- checkpoints ---- */

#define SLOP_NS (50 * 1000 * 1000LL)   /* inode times are coarse: see precopy */

static int64_t clock_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int64_t now_ns(void)
{
	return clock_ns(CLOCK_REALTIME_COARSE);
}

/* The `since` of the next checkpoint, read with the sandbox frozen.  An
 * inode's ctime is max(the coarse clock, the file system's multigrain
 * floor: the latest fine-grained time it handed out), so a change made
 * before now can carry a ctime ahead of the coarse clock by up to a tick
 * (the coarse reading made a file written 10 ms before the freeze look
 * changed after it, and the next checkpoint copied it again: red in 1 of
 * 3 runs of checkpoint.bats), and no ctime is ever ahead of the fine
 * clock.  So: the fine clock now, which every earlier ctime is below,
 * and then a wait (still frozen, at most a tick) until the coarse clock
 * reaches it, so that every later change has a ctime at or after it.  A
 * change from outside the sandbox during the wait is in this
 * checkpoint's frozen pass, which starts after it. */
static int64_t freeze_instant(void)
{
	int64_t t = clock_ns(CLOCK_REALTIME) + 1;
	struct timespec step = {0, 200 * 1000};
	for (int i = 0; i < 250 && now_ns() < t; i++)
		nanosleep(&step, NULL);
	return t;
}

/* What a checkpoint of `sb` (over template `tpl`) stacks on: `prev` when
 * it is a checkpoint of this very sandbox over the same template (its
 * layers above the template's are then the upper dir's state at its
 * taken_at_ns: *lowers, *nlowers, *since_ns), else the template itself
 * (no lowers: the layer is the whole upper dir).  *base is loaded. */
static int ckpt_base(struct sbx_backend *b, const char *sbid, const struct rec *tpl,
		     const char *prev, struct rec *base, char ***lowers, size_t *nlowers,
		     int64_t *since_ns, struct sbx_err *err)
{
	*lowers = NULL;
	*nlowers = 0;
	*since_ns = 0;
	struct rec p = {0};
	int diff = 0;
	struct sbx_err perr = {0};
	if (prev && image_load(b, prev, &p, &perr) < 0) {
		if (perr.kind != SBX_NOT_FOUND) {
			*err = perr;
			return -1;
		}
		prev = NULL;         /* deleted since: the whole upper dir */
	}
	if (prev && p.sandbox && strcmp(p.sandbox, sbid) == 0 && p.taken_at_ns > 0 &&
	    p.nlayers > tpl->nlayers) {
		diff = 1;
		for (size_t i = 0; i < tpl->nlayers; i++)
			if (strcmp(p.layers[p.nlayers - tpl->nlayers + i], tpl->layers[i]))
				diff = 0;
	}
	if (!diff) {
		rec_clear(&p);
		return image_load(b, tpl->id, base, err);
	}
	*nlowers = p.nlayers - tpl->nlayers;
	*lowers = sbx_xmalloc(*nlowers * sizeof(char *));
	for (size_t i = 0; i < *nlowers; i++)
		(*lowers)[i] = layer_abs(b, p.layers[i]);
	*since_ns = p.taken_at_ns;
	*base = p;
	return 0;
}

/* The two passes of a checkpoint into `tmp`: a live pre-pass of what
 * changed since the lowers' state, the freeze, a second diff of what
 * changed since the pre-pass began (over the pre-pass and the lowers,
 * into `tmp2`), the thaw - always - and, with the sandbox running again,
 * the second pass merged into the first.  *taken_ns: the freeze.  When
 * the pre-pass fails (a race it does not expect, a full disk), the one
 * diff is made frozen.  On failure the work directories are removed. */
static int ckpt_copy(struct sbx_backend *b, const char *sbid, const char *upper,
		     char **lowers, size_t nlowers, int64_t since_ns, const char *tmp,
		     const char *tmp2, int64_t *taken_ns, struct sbx_err *err)
{
	struct sbx_err ignored = {0};
	int64_t t1 = now_ns();
	SBX_AUTOCLOSE int ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int pre = ufd >= 0 && syncfs(ufd) == 0 &&        /* see precopy */
		  lcopy_diff(upper, (const char *const *)lowers, nlowers, tmp, since_ns,
			     LCOPY_LIVE, NULL, &ignored) == 0;
	if (!pre)
		sbx_rm_rf(tmp, &ignored);
	sbx_fault("image:checkpoint-precopied");
	SBX_AUTOFREE const char **all = sbx_xmalloc((nlowers + 1) * sizeof(char *));
	all[0] = tmp;
	for (size_t i = 0; i < nlowers; i++)
		all[i + 1] = lowers[i];
	if (local_sb_freeze(b, sbid, 1, err) < 0) {
		sbx_rm_rf(tmp, &ignored);
		return -1;
	}
	*taken_ns = freeze_instant();
	sbx_fault("checkpoint-frozen");
	int rc = pre ? lcopy_diff(upper, all, nlowers + 1, tmp2, t1 - SLOP_NS, 0, NULL, err)
		     : lcopy_diff(upper, all + 1, nlowers, tmp, since_ns, 0, NULL, err);
	struct sbx_err terr = {0};
	if (local_sb_freeze(b, sbid, 0, &terr) < 0 && rc == 0) {
		*err = terr;
		sbx_err_prefix(err, "thaw after checkpoint");
		rc = -1;
	}
	if (rc == 0 && pre)
		rc = lcopy_tree(tmp2, tmp, LCOPY_MERGE | LCOPY_KEEP_WHITEOUTS, NULL, err);
	sbx_rm_rf(tmp2, &ignored);
	if (rc < 0)
		sbx_rm_rf(tmp, &ignored);
	return rc;
}

/* The record of a new checkpoint `id` of sandbox `sbid`: layer `lid` over
 * base's stack (`diff`: base is the previous checkpoint, lid the layer of
 * the difference), checked to be mountable (capacity when too deep). */
static int ckpt_record(struct sbx_backend *b, const char *sbid, const char *id,
		       const char *name, const char *lid, const struct rec *base, int diff,
		       struct rec *r, struct sbx_err *err)
{
	r->id = sbx_xstrdup(id);
	r->name = sbx_xstrdup(name ? name : id);
	r->kind = sbx_xstrdup("snapshot");
	r->parent = sbx_xstrdup(base->id);
	r->sandbox = sbx_xstrdup(sbid);
	if (diff || base->taken_at_ns)
		r->checkpoint_of = sbx_xstrdup(base->id);
	rec_add_layer(r, lid);
	for (size_t i = 0; i < base->nlayers; i++)
		rec_add_layer(r, base->layers[i]);
	return check_stack(b, r, err);
}

/* Checkpoint (the vtable's checkpoint_create, backend.h): a snapshot whose
 * new layer is the difference of the upper dir against `prev` (the
 * session's previous checkpoint) when prev is a checkpoint of this
 * sandbox, stacked on prev's layers; else (and when prev's stack is as
 * deep as a stack can mount) the whole upper dir over the sandbox's
 * template, as a snapshot.  The freeze lasts the second pass
 * only (ckpt_copy).  A crash leaves work directories for img_gc and a
 * sandbox that may read as paused (the next command resumes it), as a
 * snapshot's does. */
int local_checkpoint_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *prev,
			    const char *name, struct sbx_snapshot_ref *out, int64_t *taken_at_ns,
			    struct sbx_err *err)
{
	if (!sb || !sb->id || !*sb->id || strchr(sb->id, '/'))
		return sbx_fail(err, SBX_INVALID_REQUEST, "checkpoint", "no valid sandbox id");
	if (name && !valid_name(name))
		return sbx_fail(err, SBX_INVALID_REQUEST, "checkpoint",
				"bad checkpoint name: 1 to 255 printable bytes");
	if (images_init(b, err) < 0)
		return -1;
	SBX_AUTOCLOSE int sl = sb_lock(b, sb->id, err);
	pid_t init;
	if (sl < 0 || local_sb_ensure_running(b, sb->id, &init, err) < 0)
		return -1;
	struct sbx_sandbox cur = {0};
	if (sbx_call(b, get, err, sb->id, &cur) < 0)
		return -1;
	struct rec tpl, base = {0}, r = {0};
	int rc = image_load(b, cur.template_id ? cur.template_id : sb->template_id, &tpl, err);
	sbx_sandbox_clear(&cur);
	if (rc < 0)
		return -1;
	char **lowers;
	size_t nlowers;
	int64_t since;
	rc = ckpt_base(b, sb->id, &tpl, prev, &base, &lowers, &nlowers, &since, err);
	char id[32], lid[9], lid2[9];
	SBX_AUTOFREE char *tmp = NULL, *tmp2 = NULL, *upper = NULL;
	SBX_AUTOCLOSE int wlk = -1, wlk2 = -1;
	if (rc == 0 && (new_snap_id(id, err) < 0 || new_work(b, lid, &tmp, &wlk, err) < 0 ||
			new_work(b, lid2, &tmp2, &wlk2, err) < 0))
		rc = -1;
	if (rc == 0)
		rc = ckpt_record(b, sb->id, id, name, lid, &base, nlowers > 0, &r, err);
	if (rc < 0 && err->kind == SBX_CAPACITY && nlowers > 0) {
		/* The chain is as deep as a stack can mount: start it again
		 * over the template (this checkpoint copies the whole upper
		 * dir once), rather than refuse every checkpoint from now on. */
		for (size_t i = 0; i < nlowers; i++)
			free(lowers[i]);
		free(lowers);
		rec_clear(&base);
		rec_clear(&r);
		*err = (struct sbx_err){0};
		rc = ckpt_base(b, sb->id, &tpl, NULL, &base, &lowers, &nlowers, &since, err);
		if (rc == 0)
			rc = ckpt_record(b, sb->id, id, name, lid, &base, 0, &r, err);
	}
	if (rc == 0 && !(upper = local_sb_upper(b, sb->id)))
		rc = sbx_fail(err, SBX_INTERNAL, "checkpoint", "sandbox %s has no upper layer", sb->id);
	if (rc == 0)
		rc = ckpt_copy(b, sb->id, upper, lowers, nlowers, since, tmp, tmp2, &r.taken_at_ns,
			       err);
	close(sl);
	sl = -1;
	if (rc == 0)
		rc = layer_settle(tmp, &r.size_bytes, err);
	sbx_fault("image:checkpoint-copied");
	if (rc == 0) {
		r.created_at = sbx_now_ms() / 1000;
		rc = img_commit(b, &r, tmp, 0, err);
	} else if (tmp) {
		struct sbx_err ignored = {0};
		sbx_rm_rf(tmp, &ignored);
	}
	if (rc == 0 && out)
		ref_from_rec(&r, out);
	if (rc == 0 && taken_at_ns)
		*taken_at_ns = r.taken_at_ns;
	for (size_t i = 0; i < nlowers; i++)
		free(lowers[i]);
	free(lowers);
	rec_clear(&r);
	rec_clear(&base);
	rec_clear(&tpl);
	return rc;
}
