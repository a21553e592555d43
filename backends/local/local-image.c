/* local-image.c - templates and snapshots of the local backend: immutable
 * layer stacks, their records and layers (the store).  Taking a snapshot and
 * flattening one are local-snapshot.c, over local-image-int.h.
 *
 * Layout, under <state_dir>/local/images/ (mode 0700: layers hold setuid
 * files that host users must not reach):
 *
 *   layers/<lid>/          one immutable layer (a directory tree); lid = 8 hex
 *   templates/<id>.json    one record per template or snapshot:
 *                          {id, name, kind, parent, layers: [lid|"/"...] top
 *                          first, created_at, size_bytes[, flattened_from]
 *                          [, sandbox, taken_at_ns, checkpoint_of]: a
 *                          checkpoint's, local-snapshot.c]}
 *   tmp/<lid>.<pid>        work in progress (imports, snapshot copies) and
 *                          layers being deleted (<lid>.del.<pid>)
 *   tmp/.work-<lid>.<pid>.lock  flock held by the worker while
 *                          tmp/<lid>.<pid> is in progress
 *   .lock                  flock: commits, deletes and garbage collection
 *
 * The builtin template `host` is the host root "/" as one read-only layer;
 * it has no record, is always present and cannot be deleted.  A snapshot is
 * its parent's stack plus one new layer (a copy of the sandbox's overlay
 * upper dir, reflinked where the filesystem can), so create-from-snapshot
 * is just a deeper lowerdir: nothing is copied at create.
 *
 * Promises: a record is written only after its layer is complete and
 * renamed into layers/, under the lock, so no reader ever sees a half
 * image.  A crash leaves at most a tmp/ entry nobody holds the lock of or
 * a layer no record names; the next delete, import, recovery or reaper run
 * collects both (local_store_gc), a commit the first.  A layer is
 * deleted only when no record references it, and a record only when no
 * other record stacks on it and no sandbox was created from it. */
#include "local-image-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "doc.h"
#include "local-copy.h"
#include "local-sb.h"
#include "local-state.h"
#include "tar.h"
#include "fault.h"
#include "util.h"

void rec_clear(struct rec *r)
{
	free(r->id);
	free(r->name);
	free(r->kind);
	free(r->parent);
	free(r->from);
	free(r->sandbox);
	free(r->checkpoint_of);
	for (size_t i = 0; i < r->nlayers; i++)
		free(r->layers[i]);
	free(r->layers);
	memset(r, 0, sizeof(*r));
}

static void recs_free(struct rec *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rec_clear(&r[i]);
	free(r);
}

void rec_add_layer(struct rec *r, const char *lid)
{
	r->layers = sbx_xrealloc(r->layers, (r->nlayers + 1) * sizeof(char *));
	r->layers[r->nlayers++] = sbx_xstrdup(lid);
}

int is_snapshot(const struct rec *r)
{
	return strcmp(r->kind, "snapshot") == 0 || sbx_str_starts(r->id, SNAP_PREFIX);
}

static void host_rec(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sbx_xstrdup(HOST_ID);
	r->name = sbx_xstrdup(HOST_ID);
	r->kind = sbx_xstrdup("builtin");
	r->size_bytes = -1;
	rec_add_layer(r, HOST_LAYER);
}

char *img_path(struct sbx_backend *b, const char *fmt, ...)
{
	struct local *l = b->priv;
	char *tail;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&tail, fmt, ap) < 0)
		abort();
	va_end(ap);
	char *p = sbx_xasprintf("%s/images/%s", l->dir, tail);
	free(tail);
	return p;
}

/* The absolute directory of a layer as overlay's lowerdir wants it. */
char *layer_abs(struct sbx_backend *b, const char *lid)
{
	return strcmp(lid, HOST_LAYER) == 0 ? sbx_xstrdup(HOST_LAYER) : img_path(b, "layers/%s", lid);
}

/* Template names and ids: [a-z0-9][a-z0-9._-]*, at most 64 bytes.  Every
 * id is also a file name, so this is what keeps ids inside templates/. */
static int valid_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			 (i > 0 && (c == '.' || c == '_' || c == '-'));
		if (!ok)
			return 0;
	}
	return 1;
}

/* Snapshot names are free text chosen by callers (the skills ledger plans
 * them): printable, 1..255 bytes. */
int valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

int images_init(struct sbx_backend *b, struct sbx_err *err)
{
	static const char *const subs[] = {"layers", "templates", "tmp"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(subs); i++) {
		SBX_AUTOFREE char *p = img_path(b, "%s", subs[i]);
		struct stat st;
		if (stat(p, &st) == 0)
			continue;
		if (sbx_mkdir_p(p, 0700, err) < 0)
			return -1;
	}
	return 0;
}

/* Open (creating) the lock file at `path` and flock it in `mode`, waiting
 * as long as it takes.  Returns the fd that holds the lock (closing it
 * releases it), or -1 with err (kind internal, op `op`). */
int lock_file(const char *path, int mode, const char *op, struct sbx_err *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, op, "open %s", path);
	while (flock(fd, mode) < 0) {
		if (errno != EINTR) {
			sbx_fail_errno(err, SBX_INTERNAL, op, "lock %s", path);
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* The images lock (flock; exclusive for commits and deletes, shared for
 * resolving a stack).  Returns an fd to close, or -1. */
static int img_lock_mode(struct sbx_backend *b, int mode, struct sbx_err *err)
{
	if (images_init(b, err) < 0)
		return -1;
	SBX_AUTOFREE char *p = img_path(b, ".lock");
	return lock_file(p, mode, "image", err);
}

static int img_lock(struct sbx_backend *b, struct sbx_err *err)
{
	return img_lock_mode(b, LOCK_EX, err);
}

static json_object *rec_to_json(const struct rec *r)
{
	json_object *o = json_object_new_object();
	sbx_json_set_str(o, "id", r->id);
	sbx_json_set_str(o, "name", r->name);
	sbx_json_set_str(o, "kind", r->kind);
	if (r->parent)
		sbx_json_set_str(o, "parent", r->parent);
	if (r->from)
		sbx_json_set_str(o, "flattened_from", r->from);
	if (r->sandbox)
		sbx_json_set_str(o, "sandbox", r->sandbox);
	if (r->checkpoint_of)
		sbx_json_set_str(o, "checkpoint_of", r->checkpoint_of);
	if (r->taken_at_ns)
		sbx_json_set_int(o, "taken_at_ns", r->taken_at_ns);
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < r->nlayers; i++)
		json_object_array_add(a, json_object_new_string(r->layers[i]));
	json_object_object_add(o, "layers", a);
	sbx_json_set_int(o, "created_at", r->created_at);
	sbx_json_set_int(o, "size_bytes", r->size_bytes);
	return o;
}

static char *dup_or_null(const char *s)
{
	return s ? sbx_xstrdup(s) : NULL;
}

/* Load the record of `id`.  not_found when there is none (or the id cannot
 * name one); internal when it is unreadable or malformed. */
static int rec_load(struct sbx_backend *b, const char *id, struct rec *r, struct sbx_err *err)
{
	memset(r, 0, sizeof(*r));
	if (!valid_id(id))
		return sbx_fail(err, SBX_NOT_FOUND, "image", "no template or snapshot '%s'", id);
	SBX_AUTOFREE char *p = img_path(b, "templates/%s.json", id);
	SBX_AUTOCLOSE int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return sbx_fail(err, SBX_NOT_FOUND, "image", "no template or snapshot '%s'", id);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "image", "open %s", p);
	SBX_AUTOFREE char *text = NULL;
	size_t len;
	if (sbx_read_all_fd(fd, 1 << 20, &text, &len, err) < 0)
		return -1;
	json_object *o = json_tokener_parse(text);
	json_object *layers = NULL;
	if (o)
		json_object_object_get_ex(o, "layers", &layers);
	if (!o || !sbx_json_str(o, "id") || !layers || !json_object_is_type(layers, json_type_array) ||
	    json_object_array_length(layers) == 0) {
		json_object_put(o);
		return sbx_fail(err, SBX_INTERNAL, "image", "malformed image record %s", p);
	}
	r->id = sbx_xstrdup(sbx_json_str(o, "id"));
	r->name = sbx_xstrdup(sbx_json_str(o, "name") ? sbx_json_str(o, "name") : r->id);
	r->kind = sbx_xstrdup(sbx_json_str(o, "kind") ? sbx_json_str(o, "kind") : "rootfs");
	r->parent = dup_or_null(sbx_json_str(o, "parent"));
	r->from = dup_or_null(sbx_json_str(o, "flattened_from"));
	r->sandbox = dup_or_null(sbx_json_str(o, "sandbox"));
	r->checkpoint_of = dup_or_null(sbx_json_str(o, "checkpoint_of"));
	r->taken_at_ns = sbx_json_int(o, "taken_at_ns", 0);
	r->created_at = sbx_json_int(o, "created_at", 0);
	r->size_bytes = sbx_json_int(o, "size_bytes", -1);
	for (size_t i = 0; i < json_object_array_length(layers); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(layers, i));
		rec_add_layer(r, s ? s : "");
	}
	json_object_put(o);
	return 0;
}

/* A template or snapshot id, including the builtin host. */
int image_load(struct sbx_backend *b, const char *id, struct rec *r, struct sbx_err *err)
{
	if (!id || !*id || strcmp(id, HOST_ID) == 0) {
		host_rec(r);
		return 0;
	}
	return rec_load(b, id, r, err);
}

static int rec_save(struct sbx_backend *b, const struct rec *r, struct sbx_err *err)
{
	SBX_AUTOFREE char *p = img_path(b, "templates/%s.json", r->id);
	json_object *o = rec_to_json(r);
	int rc = sbx_json_write_file(p, o, 0600, 0, err);
	json_object_put(o);
	return rc;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* Every record on disk (host excluded), oldest first.  A record deleted
 * while we list is skipped. */
static int rec_all(struct sbx_backend *b, struct rec **out, size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	if (images_init(b, err) < 0)
		return -1;
	SBX_AUTOFREE char *p = img_path(b, "templates");
	DIR *d = opendir(p);
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "image", "opendir %s", p);
	struct rec *v = NULL;
	size_t cnt = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;    /* also skips "<id>.json.tmp.<pid>" */
		char id[256];
		snprintf(id, sizeof(id), "%.*s", (int)(len - 5), e->d_name);
		struct rec r;
		struct sbx_err e2 = {0};
		if (rec_load(b, id, &r, &e2) < 0) {
			if (e2.kind == SBX_NOT_FOUND)
				continue;
			*err = e2;
			rc = -1;
			break;
		}
		v = sbx_xrealloc(v, (cnt + 1) * sizeof(*v));
		v[cnt++] = r;
	}
	closedir(d);
	if (rc < 0) {
		recs_free(v, cnt);
		return -1;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_rec);
	*out = v;
	*n = cnt;
	return 0;
}

static int rec_has_layer(const struct rec *r, const char *lid)
{
	for (size_t i = 0; i < r->nlayers; i++)
		if (strcmp(r->layers[i], lid) == 0)
			return 1;
	return 0;
}

/* The lowerdir string of a stack must fit the mount options page.  (A
 * stack over the host's "/" mounts "/" through a view of its own, so that
 * overlayfs does not see our layers as lying inside another lower layer:
 * see mount_host_view in local-init.c.) */
int check_stack(struct sbx_backend *b, const struct rec *r, struct sbx_err *err)
{
	size_t total = 0;
	for (size_t i = 0; i < r->nlayers; i++) {
		SBX_AUTOFREE char *p = layer_abs(b, r->layers[i]);
		total += strlen(p) + 1;
	}
	if (total > LOCAL_IMAGE_LOWERDIR_MAX)
		return sbx_fail(err, SBX_CAPACITY, "snapshot",
				"a stack of %zu layers is too deep to mount (%zu bytes of lowerdir); "
				"flatten the source image first (sbx-snap flatten)", r->nlayers, total);
	return 0;
}

static int pid_alive(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot)
		return 0;
	long pid = strtol(dot + 1, NULL, 10);
	if (pid <= 0)
		return 0;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Is the work entry tmp/<name> abandoned?  A worker holds an flock on
 * tmp/<name>.lock from before it creates tmp/<name> until after it is
 * renamed or removed (new_work), so a lock we can take means
 * nobody is working there, whatever pid namespace the worker ran in and
 * whoever holds its pid now; the kernel drops the lock of a killed worker.
 * (The lock is tmp/.work-<name>.lock: a hidden name, like the per-sandbox
 * locks, so that tmp/ looks empty when no work is left.)
 * Entries without a lock file (layers being deleted, <lid>.del.<pid>)
 * belong to a live pid or to nobody.  Returns 1 (abandoned; *lockfd, when
 * not -1, holds the taken lock until the entry is gone), or 0. */
static int work_abandoned(int dirfd, const char *name, int *lockfd)
{
	*lockfd = -1;
	SBX_AUTOFREE char *lk = sbx_xasprintf(".work-%s.lock", name);
	int fd = openat(dirfd, lk, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return !pid_alive(name);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return 0;
	}
	*lockfd = fd;
	return 1;
}

/* Garbage collection, under the lock: tmp/ entries nobody works on any
 * more (see work_abandoned), and (all_layers) layers that no record names
 * (a crash between a commit's rename and its record write, or a delete
 * interrupted after the record went: both happen under this lock, so an
 * unnamed layer seen here is never one being committed).  Commits collect
 * tmp/ only, which is cheap; deletes, imports, recovery and the reaper do
 * all.  `st` (may be NULL) counts what was (dry_run: would be) removed.
 * Removal is best effort: what fails is retried next time. */
static int img_gc(struct sbx_backend *b, int all_layers, int dry_run, struct sbx_store_gc *st,
		  struct sbx_err *err)
{
	struct sbx_store_gc none = {0};
	if (!st)
		st = &none;
	SBX_AUTOFREE char *tmp = img_path(b, "tmp");
	DIR *d = opendir(tmp);
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "image", "opendir %s", tmp);
	struct dirent *e;
	while ((e = readdir(d))) {
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", tmp, e->d_name);
		int lk;
		if (sbx_str_starts(e->d_name, ".work-") && ends_with(e->d_name, ".lock")) {
			/* A work lock whose entry is gone (renamed into
			 * layers/, removed, or never created): drop it once
			 * nobody holds it. */
			SBX_AUTOFREE char *entry = sbx_xasprintf("%s/%.*s", tmp,
				(int)(strlen(e->d_name) - 11), e->d_name + 6);
			SBX_AUTOCLOSE int fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
			if (access(entry, F_OK) < 0 && errno == ENOENT && fd >= 0 &&
			    flock(fd, LOCK_EX | LOCK_NB) == 0 && !dry_run)
				unlink(p);
			continue;
		}
		if (e->d_name[0] == '.')
			continue;
		if (!work_abandoned(dirfd(d), e->d_name, &lk))
			continue;
		int64_t bytes = 0;
		struct sbx_err ignored = {0};
		lcopy_du(p, &bytes, &ignored);
		st->tmp++;
		st->bytes += bytes;
		if (!dry_run) {
			sbx_rm_rf(p, &ignored);
			if (lk >= 0) {
				SBX_AUTOFREE char *lp = sbx_xasprintf("%s/.work-%s.lock", tmp,
								      e->d_name);
				unlink(lp);
			}
		}
		if (lk >= 0)
			close(lk);
	}
	closedir(d);
	if (!all_layers)
		return 0;

	struct rec *all;
	size_t n;
	if (rec_all(b, &all, &n, err) < 0)
		return -1;
	SBX_AUTOFREE char *lay = img_path(b, "layers");
	d = opendir(lay);
	if (!d) {
		recs_free(all, n);
		return sbx_fail_errno(err, SBX_INTERNAL, "image", "opendir %s", lay);
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int used = 0;
		for (size_t i = 0; i < n && !used; i++)
			used = rec_has_layer(&all[i], e->d_name);
		if (used)
			continue;
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", lay, e->d_name);
		int64_t bytes = 0;
		struct sbx_err ignored = {0};
		lcopy_du(p, &bytes, &ignored);
		st->layers++;
		st->bytes += bytes;
		if (!dry_run)
			sbx_rm_rf(p, &ignored);
	}
	closedir(d);
	recs_free(all, n);
	return 0;
}

int local_store_gc(struct sbx_backend *b, int dry_run, struct sbx_store_gc *out,
		   struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	SBX_AUTOCLOSE int lk = img_lock(b, err);
	if (lk < 0)
		return -1;
	return img_gc(b, 1, dry_run, out, err);
}

/* Make the finished tree `tmp` the top layer of `r` (r->layers[0] is
 * replaced by the layer id actually used) and write r's record, under the
 * lock.  An existing record of the same id is a conflict (imports race on
 * names).  A crash after the rename leaves an unnamed layer for img_gc.
 * On failure tmp is removed. */
int img_commit(struct sbx_backend *b, struct rec *r, const char *tmp, int gc_all,
	       struct sbx_err *err)
{
	SBX_AUTOCLOSE int lk = img_lock(b, err);
	if (lk < 0)
		return -1;
	struct sbx_err ignored = {0};
	img_gc(b, gc_all, 0, NULL, &ignored);     /* best effort: leftovers of crashed runs */
	SBX_AUTOFREE char *rp = img_path(b, "templates/%s.json", r->id);
	if (access(rp, F_OK) == 0) {
		sbx_rm_rf(tmp, &ignored);
		return sbx_fail(err, SBX_CONFLICT, "image", "'%s' exists already", r->id);
	}
	for (int tries = 0;; tries++) {
		SBX_AUTOFREE char *dst = img_path(b, "layers/%s", r->layers[0]);
		if (rename(tmp, dst) == 0)
			break;
		if ((errno != EEXIST && errno != ENOTEMPTY) || tries >= 8) {
			sbx_fail_errno(err, SBX_INTERNAL, "image", "rename %s", dst);
			sbx_rm_rf(tmp, &ignored);
			return -1;
		}
		char lid[9];
		if (sbx_random_hex(lid, 4, err) < 0)
			return -1;
		free(r->layers[0]);
		r->layers[0] = sbx_xstrdup(lid);
	}
	sbx_fault("image-commit");
	return rec_save(b, r, err);
}

/* A fresh layer id and its work directory tmp/<lid>.<pid> (not created),
 * with the flock on tmp/.work-<lid>.<pid>.lock that marks it as being worked on
 * (*lk; closing it, or dying, ends the work: see work_abandoned).  The
 * lock file itself is left for img_gc, which drops it once free. */
int new_work(struct sbx_backend *b, char lid[9], char **tmp, int *lk,
	     struct sbx_err *err)
{
	*lk = -1;
	if (images_init(b, err) < 0 || sbx_random_hex(lid, 4, err) < 0)
		return -1;
	*tmp = img_path(b, "tmp/%s.%d", lid, (int)getpid());
	SBX_AUTOFREE char *lp = img_path(b, "tmp/.work-%s.%d.lock", lid, (int)getpid());
	*lk = lock_file(lp, LOCK_EX, "image", err);
	return *lk < 0 ? -1 : 0;
}

/* Flush the new layer's filesystem before its record exists: a record
 * must never outlive its data across a power loss. */
int sync_tree(const char *path, struct sbx_err *err)
{
	SBX_AUTOCLOSE int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || syncfs(fd) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "image", "sync %s", path);
	return 0;
}

int layer_settle(const char *path, int64_t *bytes, struct sbx_err *err)
{
	return lcopy_du(path, bytes, err) < 0 ? -1 : sync_tree(path, err);
}

void ref_from_rec(const struct rec *r, struct sbx_snapshot_ref *out)
{
	memset(out, 0, sizeof(*out));
	out->id = sbx_xstrdup(r->id);
	out->name = sbx_xstrdup(r->name);
	out->parent = dup_or_null(r->parent);
	out->created_at = r->created_at;
	out->size_bytes = r->size_bytes;
	out->layers = (int)r->nlayers;
}

static void tpl_from_rec(const struct rec *r, struct sbx_template *out)
{
	memset(out, 0, sizeof(*out));
	out->id = sbx_xstrdup(r->id);
	out->name = sbx_xstrdup(r->name);
	out->kind = sbx_xstrdup(r->kind);
	out->created_at = r->created_at;
	out->size_bytes = r->size_bytes;
}

/* Under the shared lock, so that a delete (which checks the sandboxes and
 * unlinks the record under the exclusive lock) is either wholly before
 * this read (not_found) or wholly after it (and then sees the sandbox,
 * provided the caller recorded it before resolving: see do_create in
 * local.c). */
int local_image_layers(struct sbx_backend *b, const char *template_id, json_object **layers,
		       struct sbx_err *err)
{
	struct rec r;
	int host = !template_id || !*template_id || strcmp(template_id, HOST_ID) == 0;
	SBX_AUTOCLOSE int lk = host ? -1 : img_lock_mode(b, LOCK_SH, err);
	if (!host && lk < 0)
		return -1;
	if (image_load(b, template_id, &r, err) < 0)
		return -1;
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < r.nlayers; i++) {
		char *p = layer_abs(b, r.layers[i]);
		json_object_array_add(a, json_object_new_string(p));
		free(p);
	}
	rec_clear(&r);
	*layers = a;
	return 0;
}

/* Ids of the records other than `r` whose stack holds r's top layer. */
static void dependents_of(const struct rec *r, const struct rec *all, size_t n, char ***ids,
			  size_t *cnt)
{
	*ids = NULL;
	*cnt = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(all[i].id, r->id) == 0 || !rec_has_layer(&all[i], r->layers[0]))
			continue;
		*ids = sbx_xrealloc(*ids, (*cnt + 1) * sizeof(char *));
		(*ids)[(*cnt)++] = sbx_xstrdup(all[i].id);
	}
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int local_image_dependents(struct sbx_backend *b, const char *template_id, char ***ids,
			   size_t *n, struct sbx_err *err)
{
	struct rec r, *all;
	size_t na;
	if (image_load(b, template_id, &r, err) < 0)
		return -1;
	if (rec_all(b, &all, &na, err) < 0) {
		rec_clear(&r);
		return -1;
	}
	dependents_of(&r, all, na, ids, n);
	recs_free(all, na);
	rec_clear(&r);
	return 0;
}

/* Delete template or snapshot `id` (want_snapshot says which the caller
 * meant; the other kind is invalid_request).  Missing: 0 and *gone = 1.
 * Refused with conflict while another record stacks on it or a sandbox was
 * created from it.  The record goes first (under the lock), then each of
 * its layers that no remaining record references is moved to tmp/ and
 * removed outside the lock; a crash in between leaves work for img_gc,
 * never a record without its layers. */
static int image_delete(struct sbx_backend *b, const char *id, int want_snapshot, int *gone,
			struct sbx_err *err)
{
	const char *op = want_snapshot ? "snapshot_delete" : "template_delete";
	*gone = 0;
	if (id && strcmp(id, HOST_ID) == 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "the builtin template 'host' cannot be deleted");
	SBX_AUTOCLOSE int lk = img_lock(b, err);
	if (lk < 0)
		return -1;
	/* Asked under the lock: a create resolving this image now waits, and
	 * then finds no record (see local_image_layers). */
	char **used = NULL;
	size_t nused = 0;
	if (local_sb_templates_in_use(b, &used, &nused, err) < 0)
		return -1;
	int in_use = 0;
	for (size_t i = 0; i < nused; i++)
		in_use |= id && used[i] && strcmp(used[i], id) == 0;
	strv_free(used, nused);
	struct rec r;
	struct sbx_err e2 = {0};
	if (rec_load(b, id, &r, &e2) < 0) {
		if (e2.kind != SBX_NOT_FOUND) {
			*err = e2;
			return -1;
		}
		*gone = 1;
		return 0;
	}
	int rc = 0;
	struct rec *all = NULL;
	size_t na = 0;
	char **deps = NULL;
	size_t nd = 0;
	char **doomed = NULL;
	size_t ndoomed = 0;
	SBX_AUTOFREE char *rp = NULL;     /* before any goto: cleaned at return */
	if (is_snapshot(&r) != want_snapshot) {
		rc = sbx_fail(err, SBX_INVALID_REQUEST, op, "'%s' is a %s; use %s", id,
			      want_snapshot ? "template" : "snapshot",
			      want_snapshot ? "sbx-tpl rm" : "sbx-snap rm");
		goto out;
	}
	if (in_use) {
		rc = sbx_fail(err, SBX_CONFLICT, op, "'%s' is in use by a sandbox", id);
		goto out;
	}
	if (rec_all(b, &all, &na, err) < 0) {
		rc = -1;
		goto out;
	}
	dependents_of(&r, all, na, &deps, &nd);
	if (nd) {
		rc = sbx_fail(err, SBX_CONFLICT, op, "'%s' is in use: %s%s stacks on it", id, deps[0],
			      nd > 1 ? " (and others)" : "");
		goto out;
	}
	rp = img_path(b, "templates/%s.json", id);
	if (unlink(rp) < 0) {
		rc = sbx_fail_errno(err, SBX_INTERNAL, op, "unlink %s", rp);
		goto out;
	}
	sbx_fault("image-delete");
	for (size_t i = 0; i < r.nlayers; i++) {
		const char *lid = r.layers[i];
		int shared = strcmp(lid, HOST_LAYER) == 0;
		for (size_t j = 0; j < na && !shared; j++)
			shared = strcmp(all[j].id, id) != 0 && rec_has_layer(&all[j], lid);
		if (shared)
			continue;
		SBX_AUTOFREE char *from = img_path(b, "layers/%s", lid);
		char *to = img_path(b, "tmp/%s.del.%d", lid, (int)getpid());
		if (rename(from, to) < 0) {
			free(to);      /* already gone, or img_gc's business */
			continue;
		}
		doomed = sbx_xrealloc(doomed, (ndoomed + 1) * sizeof(char *));
		doomed[ndoomed++] = to;
	}
	*gone = 0;
	img_gc(b, 1, 0, NULL, &e2);       /* best effort */
out:
	close(lk);
	lk = -1;
	for (size_t i = 0; i < ndoomed; i++) {
		struct sbx_err ignored = {0};
		sbx_rm_rf(doomed[i], &ignored);    /* leftovers: img_gc */
	}
	strv_free(doomed, ndoomed);
	strv_free(deps, nd);
	recs_free(all, na);
	rec_clear(&r);
	return rc;
}

int local_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	return image_delete(b, id, 1, gone, err);
}

int local_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	return image_delete(b, id, 0, gone, err);
}

int local_snapshot_list(struct sbx_backend *b, const char *page_token,
			struct sbx_snapshot_ref **out, size_t *n, char **next, struct sbx_err *err)
{
	(void)page_token;        /* one page holds everything */
	struct rec *all;
	size_t na;
	*out = NULL;
	*n = 0;
	if (next)
		*next = NULL;
	if (rec_all(b, &all, &na, err) < 0)
		return -1;
	struct sbx_snapshot_ref *v = sbx_xcalloc(na ? na : 1, sizeof(*v));
	size_t cnt = 0;
	for (size_t i = 0; i < na; i++)
		if (is_snapshot(&all[i]))
			ref_from_rec(&all[i], &v[cnt++]);
	recs_free(all, na);
	*out = v;
	*n = cnt;
	return 0;
}

int local_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
			struct sbx_err *err)
{
	struct rec *all;
	size_t na;
	*out = NULL;
	*n = 0;
	if (rec_all(b, &all, &na, err) < 0)
		return -1;
	struct sbx_template *v = sbx_xcalloc(na + 1, sizeof(*v));
	struct rec host;
	host_rec(&host);
	tpl_from_rec(&host, &v[0]);
	rec_clear(&host);
	size_t cnt = 1;
	/* Snapshots are subtracted twice over: by kind and by id prefix. */
	for (size_t i = 0; i < na; i++)
		if (!is_snapshot(&all[i]))
			tpl_from_rec(&all[i], &v[cnt++]);
	recs_free(all, na);
	*out = v;
	*n = cnt;
	return 0;
}

int local_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
		       struct sbx_err *err)
{
	struct rec r;
	if (image_load(b, id, &r, err) < 0)
		return -1;
	tpl_from_rec(&r, out);
	rec_clear(&r);
	return 0;
}

/* Import: extract or copy into tmp/, measure, sync, commit.  The template
 * is visible only after the commit; a crash before leaves a tmp/ entry of
 * a dead pid. */
int local_template_import(struct sbx_backend *b, const char *name, int fd, const char *dir,
			  struct sbx_template *out, struct sbx_err *err)
{
	if (!valid_id(name) || sbx_str_starts(name, SNAP_PREFIX) || strcmp(name, HOST_ID) == 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_import",
				"bad template name '%s': [a-z0-9][a-z0-9._-]* (at most 64), "
				"not 'host', not starting with 'snap-'", name ? name : "");
	SBX_AUTOFREE char *rp = img_path(b, "templates/%s.json", name);
	if (access(rp, F_OK) == 0)
		return sbx_fail(err, SBX_CONFLICT, "template_import", "template '%s' exists already", name);
	char lid[9];
	SBX_AUTOFREE char *tmp = NULL;
	SBX_AUTOCLOSE int wlk = -1;
	if (new_work(b, lid, &tmp, &wlk, err) < 0)
		return -1;
	int rc;
	struct sbx_err ignored = {0};
	if (dir) {
		rc = lcopy_tree(dir, tmp, 0, NULL, err);
	} else {
		rc = -1;
		if (mkdir(tmp, 0755) < 0) {
			sbx_fail_errno(err, SBX_INTERNAL, "template_import", "mkdir %s", tmp);
		} else {
			SBX_AUTOCLOSE int root = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
			/* A rootfs tarball carries /dev/null and friends: dropped,
			 * as a --dir import and a snapshot copy drop them. */
			struct sbx_tar_extract_opts o = {.keep_owner = 1, .force_uid = -1, .force_gid = -1,
							 .drop_devices = 1};
			if (root < 0)
				sbx_fail_errno(err, SBX_INTERNAL, "template_import", "open %s", tmp);
			else
				rc = sbx_tar_extract(fd, root, &o, err);
		}
	}
	sbx_fault("import-extracted");
	struct rec r = {0};
	if (rc == 0)
		rc = layer_settle(tmp, &r.size_bytes, err);
	if (rc < 0) {
		sbx_err_prefix(err, "import %s", name);
		sbx_rm_rf(tmp, &ignored);
		return -1;
	}
	r.id = sbx_xstrdup(name);
	r.name = sbx_xstrdup(name);
	r.kind = sbx_xstrdup(dir ? "folder" : "rootfs");
	r.created_at = sbx_now_ms() / 1000;
	rec_add_layer(&r, lid);
	rc = img_commit(b, &r, tmp, 1, err);
	if (rc == 0 && out)
		tpl_from_rec(&r, out);
	rec_clear(&r);
	return rc;
}

