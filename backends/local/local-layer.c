/* local-layer.c - the layers of a local sandbox's root: the template's
 * read-only stack (resolved through the image store, or the host's "/"
 * for the builtin template) and the sandbox's own writable layer, made
 * ready before the init mounts the overlay: the standard directories,
 * /workspace and the account of uid 1000 "user".
 *
 * Promise: everything here happens on the host, in the sandbox's own
 * directory, before any process of the sandbox exists; a crash midway
 * leaves files that remove takes away with the directory. */
#include "local-layer.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "doc.h"
#include "local-egress.h"
#include "local-hostview.h"
#include "local-image.h"
#include "local-quota.h"
#include "local-sb.h"
#include "util.h"

void local_layers_free(struct local_layers *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->dir[i]);
	free(l->dir);
	memset(l, 0, sizeof(*l));
}

/* Whether layer `dir` hides `rel` (which it lacks) of every layer below,
 * as overlayfs does: one of rel's parents there is not a directory (a
 * whiteout, a file) or is an opaque directory. */
static int layer_hides(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	int n = snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") ? dir : "", rel);
	if (n < 0 || (size_t)n >= sizeof(p))
		return 1;
	for (char *s = p + n - strlen(rel); (s = strchr(s, '/')); *s++ = '/') {
		*s = '\0';
		struct stat st;
		char v;
		if (lstat(p, &st) < 0)
			return 0;
		if (!S_ISDIR(st.st_mode) ||
		    (lgetxattr(p, "trusted.overlay.opaque", &v, 1) == 1 && v == 'y'))
			return 1;
	}
	return 0;
}

/* Where `rel` (no leading slash) is found in the layer stack: the first
 * (top-most) layer that has it, unless a layer above hides it (an opaque
 * or replaced parent: layer_hides).  0 and *st, or -1. */
static int lower_stat(const struct local_layers *l, const char *rel, struct stat *st, char **found)
{
	for (size_t i = 0; i < l->n; i++) {
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", strcmp(l->dir[i], "/") ? l->dir[i] : "",
						      rel);
		if (lstat(p, st) == 0) {
			if (found)
				*found = sbx_xstrdup(p);
			return 0;
		}
		if (layer_hides(l->dir[i], rel))
			return -1;
	}
	return -1;
}

/* mkdir -p of `rel` inside the upper layer; each created directory copies
 * the owner and mode of the lower directory it shadows (so that /var or
 * /etc look the same), or gets root 0755 when the lower has none. */
static int upper_mkdirs(const char *upper, const struct local_layers *l, const char *rel,
			struct sbx_err *err)
{
	char path[PATH_MAX], r[PATH_MAX];
	snprintf(r, sizeof(r), "%s", rel);
	for (char *s = r;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		snprintf(path, sizeof(path), "%s/%s", upper, r);
		if (mkdir(path, 0755) == 0) {
			struct stat st;
			if (lower_stat(l, r, &st, NULL) == 0 && S_ISDIR(st.st_mode)) {
				if (chown(path, st.st_uid, st.st_gid) < 0 ||
				    chmod(path, st.st_mode & 07777) < 0)
					return sbx_fail_errno(err, SBX_INTERNAL, "create", "prepare %s", path);
			}
		} else if (errno != EEXIST) {
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir %s", path);
		}
		if (c == '\0')
			break;
		*s = c;
	}
	return 0;
}

static int upper_dir(const char *upper, const struct local_layers *l, const char *rel, unsigned mode,
		     uid_t uid, gid_t gid, int opaque, struct sbx_err *err)
{
	if (upper_mkdirs(upper, l, rel, err) < 0)
		return -1;
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", upper, rel);
	if (chown(p, uid, gid) < 0 || chmod(p, mode) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "prepare %s", p);
	if (opaque && setxattr(p, "trusted.overlay.opaque", "y", 1, 0) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "make %s opaque", p);
	return 0;
}

/* /etc/passwd and /etc/group must name uid/gid 1000 "user": keep the
 * template's entries except any other claim on that name or number. */
static int upper_account(const char *upper, const struct local_layers *l, const char *file,
			 const char *line, struct sbx_err *err)
{
	SBX_AUTOFREE char *found = NULL;
	SBX_AUTOFREE char *data = NULL;
	struct stat st;
	size_t len = 0;
	SBX_AUTOFREE char *rel = sbx_xasprintf("etc/%s", file);
	if (lower_stat(l, rel, &st, &found) == 0 && S_ISREG(st.st_mode)) {
		struct sbx_err e2 = {0};
		if (sbx_read_file(found, 4 << 20, &data, &len, &e2) < 0)
			data = NULL;
	}
	if (data && strstr(data, line) && (data == strstr(data, line) || strstr(data, line)[-1] == '\n'))
		return 0;
	size_t cap = len + strlen(line) + 64;
	char *out = sbx_xmalloc(cap);
	size_t o = 0;
	if (!data || !strstr(data, "root:"))
		o += (size_t)snprintf(out, cap, "%s", strcmp(file, "passwd") == 0
				      ? "root:x:0:0:root:/root:/bin/sh\n" : "root:x:0:\n");
	for (char *s = data, *nl; s && *s; s = nl ? nl + 1 : NULL) {
		nl = strchr(s, '\n');
		size_t ll = nl ? (size_t)(nl - s) : strlen(s);
		/* name:x:id:... -- drop "user" and anything with id 1000. */
		const char *c1 = memchr(s, ':', ll);
		const char *c2 = c1 ? memchr(c1 + 1, ':', ll - (size_t)(c1 + 1 - s)) : NULL;
		int drop = (c1 && c1 - s == 4 && strncmp(s, "user", 4) == 0) ||
			   (c2 && strncmp(c2 + 1, "1000:", 5) == 0);
		if (!drop && ll) {
			memcpy(out + o, s, ll);
			o += ll;
			out[o++] = '\n';
		}
	}
	o += (size_t)snprintf(out + o, cap - o, "%s", line);
	if (upper_mkdirs(upper, l, "etc", err) < 0) {
		free(out);
		return -1;
	}
	SBX_AUTOFREE char *dst = sbx_xasprintf("%s/etc/%s", upper, file);
	int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = fd < 0 || sbx_write_all(fd, out, o) < 0 ? -1 : 0;
	if (fd >= 0)
		close(fd);
	free(out);
	if (rc < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "write %s", dst);
	return 0;
}

/* /etc/resolv.conf names the sandbox's resolver and nothing of the
 * template's: a template's file (the host's, or one a build host left in
 * an image) names a resolver the sandbox cannot reach, since the egress
 * filter refuses every private, loopback and link-local address, and its
 * search domains are the build host's.  The file is the sandbox's own
 * from here on (root inside may change it; the filter still judges where
 * a query goes).  A template's resolv.conf that is a symlink (to
 * systemd-resolved's stub file) is shadowed, never followed: the file is
 * made new in the upper layer, which holds nothing yet.  /etc/hosts and
 * nsswitch.conf stay the template's. */
static int upper_resolv_conf(const char *upper, const struct local_layers *l, struct sbx_err *err)
{
	static const char text[] =
		"# Written by sbx when this sandbox was created: its resolver.  With\n"
		"# egress it answers through sbx's egress path (it asks the host's resolver,\n"
		"# wherever that is); without egress nothing answers and lookups fail at once.\n"
		"nameserver " LOCAL_SANDBOX_RESOLVER "\n";
	/* A template made from a sandbox (a snapshot) has this very file
	 * already (content, mode, owner): it is kept, mtime and all, and
	 * nothing is written, so an image's tree is the same in every sandbox
	 * made from it.  Anything else - a file its root rewrote, a symlink -
	 * is shadowed. */
	struct stat st;
	SBX_AUTOFREE char *found = NULL, *have = NULL;
	size_t len = 0;
	struct sbx_err ignored = {0};
	if (lower_stat(l, "etc/resolv.conf", &st, &found) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == (off_t)sizeof(text) - 1 && (st.st_mode & 07777) == 0644 &&
	    st.st_uid == geteuid() && st.st_gid == getegid() &&
	    sbx_read_file(found, sizeof(text), &have, &len, &ignored) == 0 &&
	    len == sizeof(text) - 1 && memcmp(have, text, len) == 0)
		return 0;
	if (upper_mkdirs(upper, l, "etc", err) < 0)
		return -1;
	SBX_AUTOFREE char *dst = sbx_xasprintf("%s/etc/resolv.conf", upper);
	SBX_AUTOCLOSE int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || sbx_write_all(fd, text, sizeof(text) - 1) < 0 || fchmod(fd, 0644) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "write %s", dst);
	return 0;
}

/* Everything the sandbox's root needs in its own layer: the standard
 * directories, the account and the resolver.  (What a sandbox over the host must not see
 * is hidden below this layer, by the host mask: local-hostview.c.) */
/* nftw has no context argument; one walk at a time per thread. */
static __thread int64_t layer_walk_bytes;

static int layer_walk_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path, (void)f;
	if (flag != FTW_NS)
		layer_walk_bytes += (int64_t)st->st_blocks * 512;
	return 0;
}

int local_layer_bytes(const char *upper, int64_t *bytes, struct sbx_err *err)
{
	layer_walk_bytes = 0;
	if (nftw(upper, layer_walk_one, 16, FTW_PHYS | FTW_MOUNT) < 0)
		return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INTERNAL, "layer",
				      "%s", upper);
	*bytes = layer_walk_bytes;
	return 0;
}

int local_upper_prepare(const char *upper, const struct local_layers *l, struct sbx_err *err)
{
	static const char *const mnt[] = {"proc", "sys", "dev"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(mnt); i++)
		if (upper_mkdirs(upper, l, mnt[i], err) < 0)
			return -1;
	struct stat st;
	if (upper_dir(upper, l, "tmp", 01777, 0, 0, 0, err) < 0)
		return -1;
	if (lower_stat(l, "var/tmp", &st, NULL) == 0 && S_ISDIR(st.st_mode) &&
	    upper_dir(upper, l, "var/tmp", 01777, 0, 0, 0, err) < 0)
		return -1;
	if (upper_dir(upper, l, "workspace", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "workspace/input", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "workspace/output", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "home/user", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "opt/sbx/skills", 0755, 0, 0, 0, err) < 0)
		return -1;
	if (lower_stat(l, "root", &st, NULL) < 0 &&
	    upper_dir(upper, l, "root", 0700, 0, 0, 0, err) < 0)
		return -1;
	if (upper_account(upper, l, "passwd", "user:x:1000:1000:user:/home/user:/bin/sh\n", err) < 0 ||
	    upper_account(upper, l, "group", "user:x:1000:\n", err) < 0 ||
	    upper_resolv_conf(upper, l, err) < 0)
		return -1;
	return 0;
}

/* The template's read-only layers, top-most first.  The builtin `host`
 * template is the host's "/" when no image module answers for it.  An
 * unknown template is invalid_request (a bad create, not a missing
 * sandbox). */
int local_layers_resolve(struct sbx_backend *b, const char *tpl, struct local_layers *l,
			  struct sbx_err *err)
{
	json_object *arr = NULL;
	memset(l, 0, sizeof(*l));
	struct sbx_err e2 = {0};
	if (local_image_layers(b, tpl, &arr, &e2) < 0) {
		if (e2.kind == SBX_UNSUPPORTED && strcmp(tpl, LOCAL_HOST_TEMPLATE) == 0) {
			l->dir = sbx_xcalloc(1, sizeof(char *));
			l->dir[0] = sbx_xstrdup("/");
			l->n = 1;
			l->host = 1;
			return 0;
		}
		*err = e2;
		if (err->kind == SBX_NOT_FOUND)
			err->kind = SBX_INVALID_REQUEST;   /* a missing template, not sandbox */
		return -1;
	}
	size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	if (n == 0) {
		json_object_put(arr);
		return sbx_fail(err, SBX_INTERNAL, "create", "template %s has no layers", tpl);
	}
	l->dir = sbx_xcalloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(arr, i));
		if (!s || s[0] != '/' || strpbrk(s, ":,")) {
			json_object_put(arr);
			local_layers_free(l);
			return sbx_fail(err, SBX_INTERNAL, "create", "template %s: bad layer path", tpl);
		}
		l->dir[l->n++] = sbx_xstrdup(s);
	}
	json_object_put(arr);
	l->host = strcmp(l->dir[l->n - 1], "/") == 0;
	return 0;
}

/* Layers stacked over the host's "/" mount it through a view of its own
 * (see mount_host_view in backends/local/sbx-init.c), under the host mask that
 * hides what the sandbox must not see (local-hostview.c), built now from
 * the current configuration: [snapshot layers..., mask, view]. */
static int host_view_layers(struct sbx_backend *b, const char *dir, struct local_layers *l,
			    const char *shared_view, char **host_view, struct sbx_err *err)
{
	*host_view = shared_view ? sbx_xstrdup(shared_view) : sbx_xasprintf("%s/hostroot", dir);
	SBX_AUTOFREE char *empty = sbx_xasprintf("%s/hostempty", dir);
	SBX_AUTOFREE char *mask = NULL;
	SBX_AUTOFREE char *cache = sbx_xasprintf("%s/hostmasks", local_of(b)->dir);
	/* Our own mount points even under a shared view: sbx-init mounts its
	 * own there should the shared one be gone by then. */
	if ((!shared_view && mkdir(*host_view, 0755) < 0) || mkdir(empty, 0755) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir host view");
	if (local_hostmask_get(cache, b->profile, &mask, err) < 0)
		return -1;
	l->dir = sbx_xrealloc(l->dir, (l->n + 1) * sizeof(char *));
	free(l->dir[l->n - 1]);
	l->dir[l->n - 1] = sbx_xstrdup(mask);
	l->dir[l->n++] = sbx_xstrdup(*host_view);
	return 0;
}

int local_layers_mount_opts(struct sbx_backend *b, const char *dir, const char *id,
			    const struct sbx_create_req *req, struct local_layers *l,
			    const char *shared_view, char **opts, char **host_view, int *disk_enforced,
			    struct sbx_err *err)
{
	*opts = *host_view = NULL;
	SBX_AUTOFREE char *upper = sbx_xasprintf("%s/upper", dir);
	SBX_AUTOFREE char *work = sbx_xasprintf("%s/work", dir);
	SBX_AUTOFREE char *root = sbx_xasprintf("%s/root", dir);
	int rc = 0;
	if (mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0 || mkdir(root, 0755) < 0)
		rc = sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir layers");
	if (rc == 0)
		rc = local_quota_apply(upper, work, id, req->limits.disk_bytes, req->disk_required,
				       disk_enforced, err);
	if (rc == 0)
		rc = local_upper_prepare(upper, l, err);
	if (rc == 0 && l->host)
		rc = host_view_layers(b, dir, l, shared_view, host_view, err);
	if (rc < 0) {
		local_layers_free(l);
		return -1;
	}
	size_t cap = 80 + strlen(upper) + strlen(work);
	for (size_t i = 0; i < l->n; i++)
		cap += strlen(l->dir[i]) + 1;
	*opts = sbx_xmalloc(cap);
	size_t o = (size_t)snprintf(*opts, cap, "lowerdir=");
	for (size_t i = 0; i < l->n; i++)
		o += (size_t)snprintf(*opts + o, cap - o, "%s%s", i ? ":" : "", l->dir[i]);
	/* volatile: no sync of the upper filesystem, ever.  Unmounting (the
	 * init's death) would otherwise sync the whole host filesystem the
	 * layer lives on, so a kill cost as much as everything dirty on it
	 * (docs/design.md), and a syncfs() in the sandbox would flush
	 * the host's.  Nothing is lost that was kept: a sandbox does not
	 * outlive its host, and snapshots read the upper dir itself. */
	snprintf(*opts + o, cap - o, ",upperdir=%s,workdir=%s,volatile", upper, work);
	local_layers_free(l);
	if (strlen(*opts) >= 4000)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "too many template layers for one mount");
	return 0;
}
