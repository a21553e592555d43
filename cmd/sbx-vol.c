/* sbx-vol - named volumes of a tenant: folders of files that outlive every
 * sandbox and are mounted at create (sbx-create --volume).
 *
 *   sbx-vol --tenant T create [--size SIZE] NAME
 *   sbx-vol --tenant T ls | show NAME | rm NAME
 *   sbx-vol --tenant T put [--mode MODE] NAME SRC DEST
 *   sbx-vol --tenant T get [--max SIZE] NAME SRC DEST
 *
 * Writes one {"volume": ...} document per volume (ls: one each), or for
 * put/get the volume with a "files" result.  put and get move one file
 * between the host and the volume without a sandbox, confined like sbx-fs
 * (volume.h); SRC of put and DEST of get may be "-" (stdin, stdout).  A
 * put is atomic and kept within the volume's budget. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "doc.h"
#include "util.h"
#include "volume.h"

#define VOL_MAX_FILE ((size_t)1 << 30)     /* put from stdin, get of a file */

enum { O_PROFILE, O_TENANT, O_SIZE, O_MODE, O_MAX };
enum sub { S_CREATE, S_LS, S_SHOW, S_RM, S_PUT, S_GET };

static const struct sbx_sub subs[] = {
	[S_CREATE] = {"create", "NAME", 1, 1, "make an empty volume", "tenant"},
	[S_LS] = {"ls", "", 0, 0, "list the tenant's volumes", "tenant"},
	[S_SHOW] = {"show", "NAME", 1, 1, "describe one volume, with the bytes it holds", "tenant"},
	[S_RM] = {"rm", "NAME", 1, 1, "remove a volume no sandbox mounts, and its files", "tenant"},
	[S_PUT] = {"put", "NAME SRC DEST", 3, 3, "copy a host file (or - : stdin) into the volume", "tenant"},
	[S_GET] = {"get", "NAME SRC DEST", 3, 3, "copy a file of the volume to the host (or - : stdout)", "tenant"},
	{0},
};

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"tenant", 0, "TENANT", "the tenant that owns the volumes", O_TENANT, SBX_ALL},
	{"size", 0, "SIZE", "create: the volume's size budget (e.g. 2G; default none)", O_SIZE,
	 SBX_SUB(S_CREATE)},
	{"mode", 'm', "MODE", "put: octal permission bits (default: the source's)", O_MODE,
	 SBX_SUB(S_PUT)},
	{"max", 0, "SIZE", "get: largest file to read (default 1G)", O_MAX, SBX_SUB(S_GET)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-vol",
	.synopsis = "[OPTIONS] COMMAND ARG...",
	.summary = "Make, list, show and remove a tenant's named volumes; copy files in and out.",
	.opts = opts,
	.subs = subs,
};

struct vol_opts {
	struct sbx_app app;
	const char *tenant;
	int64_t size, max;
	int mode_set;
	unsigned mode;
	struct sbx_redis *r;
	struct sbx_backend *remote;   /* the backend, when its service keeps the volumes */
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct vol_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_TENANT: o->tenant = arg; return 0;
	case O_SIZE:
	case O_MAX: {
		int64_t n;
		if (sbx_parse_size(arg, &n, err) < 0 || n <= 0)
			return sbx_usage_err(err, "--%s must be a positive size, got '%s'",
					     key == O_SIZE ? "size" : "max", arg);
		*(key == O_SIZE ? &o->size : &o->max) = n;
		return 0;
	}
	case O_MODE: {
		char *end;
		unsigned long m = strtoul(arg, &end, 8);
		if (!*arg || *end || m > 07777)
			return sbx_usage_err(err, "--mode must be octal permission bits, got '%s'", arg);
		o->mode = (unsigned)m;
		o->mode_set = 1;
		return 0;
	}
	}
	return 0;
}

static int emit_vol(const struct sbx_vol *v, json_object *files, struct sbx_err *err)
{
	json_object *doc = json_object_new_object(), *vo = json_object_new_object();
	sbx_vol_json(v, vo);
	json_object_object_add(doc, "volume", vo);
	if (files)
		json_object_object_add(doc, "files", files);
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

/* put NAME SRC DEST: the host file (mapped, not copied) or stdin. */
static int do_put(struct vol_opts *o, const struct sbx_vol *v, const char *src,
		  const char *dest, struct sbx_err *err)
{
	SBX_AUTOFREE char *buf = NULL;
	void *data = NULL;
	size_t len = 0;
	unsigned mode = 0644;
	SBX_AUTOCLOSE int fd = -1;
	if (!strcmp(src, "-")) {
		if (sbx_read_all_fd(0, VOL_MAX_FILE, &buf, &len, err) < 0)
			return -1;
		data = buf;
	} else {
		struct stat st;
		fd = open(src, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INVALID_REQUEST,
					      "put", "%s", src);
		if (!S_ISREG(st.st_mode))
			return sbx_fail(err, SBX_INVALID_REQUEST, "put", "%s: not a file", src);
		len = (size_t)st.st_size;
		mode = (unsigned)(st.st_mode & 0777);   /* setuid/setgid never travel */
		data = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : (void *)"";
		if (data == MAP_FAILED)
			return sbx_fail_errno(err, SBX_INTERNAL, "put", "%s", src);
	}
	unsigned m = o->mode_set ? o->mode : mode;
	int rc = o->remote ? sbx_vol_put_remote(o->r, o->remote, v, dest, data, len, m, err)
			   : sbx_vol_put(v, dest, data, len, m, err);
	if (fd >= 0 && len)
		munmap(data, len);
	if (rc < 0)
		return -1;
	json_object *f = json_object_new_object();
	sbx_json_set_str(f, "op", "put");
	sbx_json_set_str(f, "source", src);
	sbx_json_set_str(f, "path", dest);
	sbx_json_set_int(f, "size", (int64_t)len);
	return emit_vol(v, f, err);
}

/* get NAME SRC DEST: to a host file (atomically, as sbx-fs get) or stdout. */
static int do_get(struct vol_opts *o, const struct sbx_vol *v, const char *src,
		  const char *dest, struct sbx_err *err)
{
	SBX_AUTOFREE char *data = NULL;
	size_t len = 0;
	unsigned mode = 0600;
	size_t max = o->max ? (size_t)o->max : VOL_MAX_FILE;
	/* DEST is replaced by a rename: never a device, FIFO or folder there
	 * (renaming over /dev/null as root would replace it).  Checked
	 * first, before a copy is made for nothing. */
	struct stat st;
	int out = !strcmp(dest, "-");
	if (!out && lstat(dest, &st) == 0 && !S_ISREG(st.st_mode))
		return sbx_fail(err, SBX_INVALID_REQUEST, "get",
				"%s: not a regular file (use - for stdout)", dest);
	if ((o->remote ? sbx_vol_get_remote(o->r, o->remote, v, src, max, &data, &len, &mode, err)
		       : sbx_vol_get(v, src, max, &data, &len, &mode, err)) < 0)
		return -1;
	if (out)
		return sbx_write_all(1, data, len) < 0
			       ? sbx_fail_errno(err, SBX_INTERNAL, "get", "stdout") : 0;
	if (sbx_write_file_atomic(dest, data, len, mode & 0777, 0, err) < 0)
		return -1;
	json_object *f = json_object_new_object();
	sbx_json_set_str(f, "op", "get");
	sbx_json_set_str(f, "path", src);
	sbx_json_set_str(f, "dest", dest);
	sbx_json_set_int(f, "size", (int64_t)len);
	return emit_vol(v, f, err);
}

/* Before rm: users whose sandbox the backend no longer has are dropped
 * (sbx_vol_prune); the backend is opened only when there are users. */
static int prune_users(struct vol_opts *o, struct sbx_redis *r, const char *name,
		       struct sbx_err *err)
{
	struct sbx_vol v = {0};
	struct sbx_backend *b;
	if (sbx_vol_load(r, o->app.profile, o->tenant, name, &v, err) < 0)
		return err->kind == SBX_NOT_FOUND ? (sbx_err_clear(err), 0) : -1;
	long long users = v.users;
	sbx_vol_clear(&v);
	if (!users)
		return 0;
	if (sbx_app_backend(&o->app, NULL, &b, err) < 0)
		return -1;
	return sbx_vol_prune(r, b, o->tenant, name, err);
}

static int vol_ls(struct vol_opts *o, struct sbx_redis *r, struct sbx_err *err)
{
	struct sbx_vol *v;
	size_t n;
	if (sbx_vol_list(r, o->app.profile, o->tenant, &v, &n, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = emit_vol(&v[i], NULL, err);
	sbx_vols_free(v, n);
	return rc;
}

static int vol_run(struct vol_opts *o, enum sub sub, char **argv, struct sbx_err *err)
{
	struct sbx_redis *r;
	if (sbx_app_use(&o->app, NULL, err) < 0 || sbx_app_redis(&o->app, &r, err) < 0)
		return -1;
	const struct sbx_profile *p = o->app.profile;
	if (sub == S_LS)
		return vol_ls(o, r, err);
	o->r = r;
	if (sub != S_SHOW) {   /* the backend says where the files are */
		struct sbx_backend *b;
		if (sbx_app_backend(&o->app, NULL, &b, err) < 0)
			return -1;
		o->remote = sbx_vol_is_remote(b) ? b : NULL;
	}
	struct sbx_vol v = {0};
	int rc;
	if (sub == S_CREATE) {
		rc = sbx_vol_create(r, p, o->tenant, argv[0], o->size, &v, err);
		if (rc == 0 && o->remote)
			rc = sbx_vol_make_remote(r, o->remote, p, o->tenant, argv[0], err);
		rc = rc < 0 ? -1 : emit_vol(&v, NULL, err);
	} else if (sub == S_RM) {
		rc = prune_users(o, r, argv[0], err);
		if (rc == 0)
			rc = o->remote ? sbx_vol_remove_remote(r, o->remote, p, o->tenant, argv[0], err)
				       : sbx_vol_remove(r, p, o->tenant, argv[0], err);
		if (rc == 0) {
			json_object *doc = json_object_new_object(), *vo = json_object_new_object();
			sbx_json_set_str(vo, "tenant", o->tenant);
			sbx_json_set_str(vo, "name", argv[0]);
			sbx_json_set_bool(vo, "removed", 1);
			json_object_object_add(doc, "volume", vo);
			rc = sbx_emit(doc, err);
			json_object_put(doc);
		}
	} else if (sbx_vol_load(r, p, o->tenant, argv[0], &v, err) < 0) {
		rc = -1;
	} else if (sub == S_SHOW) {
		int64_t used = 0;
		rc = sbx_vol_used(&v, &used, err);
		if (rc == 0) {
			json_object *doc = json_object_new_object(), *vo = json_object_new_object();
			sbx_vol_json(&v, vo);
			sbx_json_set_int(vo, "used", used);
			json_object_object_add(doc, "volume", vo);
			rc = sbx_emit(doc, err);
			json_object_put(doc);
		}
	} else {
		rc = (sub == S_PUT ? do_put : do_get)(o, &v, argv[1], argv[2], err);
	}
	sbx_vol_clear(&v);
	return rc;
}

int main(int argc, char **argv)
{
	struct vol_opts o = {0};
	struct sbx_err err = {0};
	struct sbx_args a;
	if (sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	int rc = vol_run(&o, (enum sub)a.sub, a.argv, &err);
	int st = sbx_cli_finish(cmd.name, rc, &err);
	sbx_app_close(&o.app);
	return st;
}
