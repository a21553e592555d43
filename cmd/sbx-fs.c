/* sbx-fs - the session filesystem: move files and folders between the host
 * and a sandbox, and look at or change the sandbox's files.
 *
 *   sbx-fs [--id ID] put [--root] [--mode MODE] SRC DEST
 *   sbx-fs [--id ID] get SRC DEST
 *   sbx-fs [--id ID] ls|stat|cat PATH
 *   sbx-fs [--id ID] mkdir [--root] PATH | rm [-r] [--root] PATH | mv [--root] FROM TO
 *   sbx-fs [--id ID] restore HOSTDIR | collect HOSTDIR
 *
 * Per input document (or the one sandbox named by --id) it acts on the
 * document's sandbox and adds its result under "files".  Sandbox paths are
 * absolute and confined by the backend; reads and writes act as uid 1000
 * unless --root, so a symlink the sandbox planted never reads its root-only
 * files for it.  Copies out to the host are confined too: a folder is
 * extracted into a new private directory below DEST's parent (no name or
 * link in the archive can land outside it), within a byte budget (--max,
 * zeros kept as holes), setuid/setgid bits are cleared, symlinks that
 * would lead out of the copy are removed (and reported), and only then is
 * it renamed into place, so DEST never holds a half copy.  A host copy is
 * never more permissive than its source (a file reached through a symlink
 * lands 0600: its own mode is not known without following the link
 * twice).
 *
 * Folder rule, both ways: DEST *is* the copy.  put merges into an existing
 * sandbox folder; get/collect need a host DEST that does not exist or is
 * empty.  A file goes *into* DEST when DEST ends in "/" or is a directory. */
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
#include "cliutil.h"
#include "doc.h"
#include "fsconfine.h"
#include "hostcopy.h"
#include "path.h"
#include "tar.h"
#include "util.h"

#define FS_MAX_FILE ((size_t)1 << 30)      /* put from stdin, get of a file */
#define FS_CAT_MAX_DEFAULT ((size_t)1 << 20)
#define INPUT_DIR "/workspace/input"
#define OUTPUT_DIR "/workspace/output"

enum { O_PROFILE, O_ID, O_ROOT, O_MODE, O_RECURSIVE, O_MAX };
enum sub { S_PUT, S_GET, S_LS, S_STAT, S_MKDIR, S_RM, S_MV, S_CAT, S_RESTORE, S_COLLECT };

static const struct sbx_sub subs[] = {
	[S_PUT] = {"put", "SRC DEST", 2, 2, "copy a host file or folder (or - with --id: stdin) into the sandbox", NULL},
	[S_GET] = {"get", "SRC DEST", 2, 2, "copy a sandbox file or folder to the host (or - with --id: stdout)", NULL},
	[S_LS] = {"ls", "PATH", 1, 1, "list a folder", NULL},
	[S_STAT] = {"stat", "PATH", 1, 1, "describe one path", NULL},
	[S_MKDIR] = {"mkdir", "PATH", 1, 1, "make a folder and its parents", NULL},
	[S_RM] = {"rm", "PATH", 1, 1, "remove a file (or a folder, with -r)", NULL},
	[S_MV] = {"mv", "FROM TO", 2, 2, "move or rename inside the sandbox", NULL},
	[S_CAT] = {"cat", "PATH", 1, 1, "read a file into the document", NULL},
	[S_RESTORE] = {"restore", "HOSTDIR", 1, 1, "put HOSTDIR's files into /workspace/input", NULL},
	[S_COLLECT] = {"collect", "HOSTDIR", 1, 1, "get /workspace/output into HOSTDIR", NULL},
	{0},
};

#define ALL_BUT_RESTORE (~0u & ~SBX_SUB(S_RESTORE))
static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"id", 0, "ID", "act on this sandbox instead of reading documents", O_ID, SBX_ALL},
	{"root", 0, NULL, "act as root (default: as uid 1000); not for restore", O_ROOT,
	 ALL_BUT_RESTORE},
	{"mode", 'm', "MODE", "octal permission bits for put (a file) and mkdir", O_MODE,
	 SBX_SUB(S_PUT) | SBX_SUB(S_MKDIR)},
	{"recursive", 'r', NULL, "rm: remove a folder and everything below it", O_RECURSIVE,
	 SBX_SUB(S_RM)},
	{"max", 0, "SIZE", "cat: largest file to read (default 1M); get, collect: bytes (default 1G)",
	 O_MAX, SBX_SUB(S_CAT) | SBX_SUB(S_GET) | SBX_SUB(S_COLLECT)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-fs",
	.synopsis = "[OPTIONS] COMMAND ARG...",
	.summary = "Copy files between the host and a sandbox; list, stat, read, "
		   "make, remove and move the sandbox's files.",
	.opts = opts,
	.subs = subs,
};

struct fs_opts {
	struct sbx_app app;
	const char *id;
	int root, recursive;
	int mode_set;
	unsigned mode;
	size_t max;
	int max_set;
	enum sub sub;
	const char *a, *b;       /* operands */
	char *stdin_data;        /* put - DEST: read once, before the loop */
	size_t stdin_len;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct fs_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_ID: o->id = arg; return 0;
	case O_ROOT: o->root = 1; return 0;
	case O_RECURSIVE: o->recursive = 1; return 0;
	case O_MODE: {
		char *end;
		unsigned long m = strtoul(arg, &end, 8);
		if (!*arg || *end || m > 07777)
			return sbx_usage_err(err, "--mode must be octal permission bits, got '%s'", arg);
		o->mode = (unsigned)m;
		o->mode_set = 1;
		return 0;
	}
	case O_MAX: {
		int64_t n;
		if (sbx_parse_size(arg, &n, err) < 0 || n <= 0)
			return sbx_usage_err(err, "--max must be a positive size, got '%s'", arg);
		o->max = (size_t)n;
		o->max_set = 1;
		return 0;
	}
	}
	return 0;
}

/* ---- small helpers ---------------------------------------------------- */

static const char *base_name(const char *p)
{
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		n--;
	const char *s = p + n;
	while (s > p && s[-1] != '/')
		s--;
	return s;
}

/* "dir" + "/" + basename(src), with src's trailing slashes dropped. */
static char *join_base(const char *dir, const char *src)
{
	const char *b = base_name(src);
	size_t bl = strcspn(b, "/");
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	return sbx_xasprintf("%.*s%s%.*s", (int)dl, dir, dir[dl - 1] == '/' ? "" : "/", (int)bl, b);
}

static int ends_with_slash(const char *p)
{
	size_t n = strlen(p);
	return n > 0 && p[n - 1] == '/';
}

static void dirent_clear(struct sbx_dirent *e)
{
	free(e->name);
	free(e->path);
	free(e->link_target);
	memset(e, 0, sizeof(*e));
}

static void progress(const char *fmt, const char *a, const char *b)
{
	if (!sbx_cli_progress)
		return;
	fprintf(stderr, "sbx-fs: ");
	fprintf(stderr, fmt, a, b ? b : "");
	fputc('\n', stderr);
}

/* What is at a sandbox path (lstat): 1 = directory, 0 = something else,
 * 2 = nothing; -1 on any other error. */
static int remote_kind(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		       int as_root, struct sbx_dirent *out, struct sbx_err *err)
{
	struct sbx_dirent e = {0};
	if (sbx_file_stat(b, sb, path, as_root, &e, err) < 0) {
		if (err->kind == SBX_NOT_FOUND) {
			sbx_err_clear(err);
			return 2;
		}
		return -1;
	}
	int dir = e.type == SBX_FT_DIR;
	if (out)
		*out = e;
	else
		dirent_clear(&e);
	return dir;
}

/* ---- subcommands ------------------------------------------------------ */

static int do_put(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		  json_object *res, struct sbx_err *err)
{
	const char *src = o->a, *dest = o->b;
	SBX_AUTOFREE char *target = NULL;
	sbx_json_set_str(res, "source", src);
	if (!strcmp(src, "-")) {
		if (ends_with_slash(dest))
			return sbx_fail(err, SBX_INVALID_REQUEST, "put", "put - needs a file name, not %s", dest);
		progress("put stdin -> %s%s", dest, NULL);
		if (sbx_file_write(b, sb, dest, o->stdin_data, o->stdin_len,
				   o->mode_set ? o->mode : 0644, o->root, err) < 0)
			return -1;
		sbx_json_set_str(res, "path", dest);
		sbx_json_set_str(res, "type", "file");
		sbx_json_set_int(res, "size", (int64_t)o->stdin_len);
		return 0;
	}
	struct stat st;
	if (stat(src, &st) < 0)
		return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INVALID_REQUEST,
				      "put", "%s", src);
	if (S_ISDIR(st.st_mode)) {
		if (o->mode_set)
			return sbx_fail(err, SBX_INVALID_REQUEST, "put",
					"--mode is for files; a folder keeps its modes");
		target = ends_with_slash(dest) ? join_base(dest, src) : sbx_xstrdup(dest);
		progress("put %s -> %s (folder)", src, target);
		if (sbx_hostcopy_put(b, sb, src, target, o->root, 0, err) < 0)
			return -1;
		sbx_json_set_str(res, "path", target);
		sbx_json_set_str(res, "type", "dir");
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return sbx_fail(err, SBX_INVALID_REQUEST, "put", "%s: not a file or folder", src);
	int k = ends_with_slash(dest) ? 1 : remote_kind(b, sb, dest, o->root, NULL, err);
	if (k < 0)
		return -1;
	target = k == 1 ? join_base(dest, src) : sbx_xstrdup(dest);
	SBX_AUTOCLOSE int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INVALID_REQUEST, "put", "%s", src);
	size_t len = (size_t)st.st_size;
	void *data = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : (void *)"";
	if (data == MAP_FAILED)
		return sbx_fail_errno(err, SBX_INTERNAL, "put", "%s", src);
	progress("put %s -> %s", src, target);
	int rc = sbx_file_write(b, sb, target, data, len,
				o->mode_set ? o->mode : (unsigned)(st.st_mode & 07777), o->root, err);
	if (len)
		munmap(data, len);
	if (rc < 0)
		return -1;
	sbx_json_set_str(res, "path", target);
	sbx_json_set_str(res, "type", "file");
	sbx_json_set_int(res, "size", (int64_t)len);
	return 0;
}

static int do_get(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		  const char *src, const char *dest, json_object *res, struct sbx_err *err)
{
	struct sbx_dirent e = {0};
	int k = remote_kind(b, sb, src, o->root, &e, err);
	if (k < 0)
		return -1;
	if (k == 2)
		return sbx_fail(err, SBX_NOT_FOUND, "get", "%s: No such file or directory", src);
	unsigned mode = e.mode;
	int is_dir = e.type == SBX_FT_DIR;
	if (e.type == SBX_FT_SYMLINK) {
		/* Followed (confined, with the reader's rights) like cp does:
		 * a folder behind it?  A read limited to 0 bytes tells without
		 * reading anything.  The link's own mode (0777) says nothing
		 * about its target's: the copy gets the most private one. */
		char *none = NULL;
		size_t nl = 0;
		mode = 0600;
		if (sbx_file_read(b, sb, src, 0, o->root, &none, &nl, err) < 0 &&
		    err->reason == SBX_R_IS_DIR)
			is_dir = 1, mode = 0700;
		free(none);
		sbx_err_clear(err);
	}
	dirent_clear(&e);
	sbx_json_set_str(res, "path", src);
	sbx_json_set_str(res, "type", is_dir ? "dir" : "file");
	if (!strcmp(dest, "-")) {
		if (is_dir)
			return sbx_file_tar_get(b, sb, src, 1, o->root, err) < 0 ? -1 : 1;
		SBX_AUTOFREE char *data = NULL;
		size_t len = 0;
		if (sbx_file_read(b, sb, src, o->max_set ? o->max : FS_MAX_FILE, o->root,
				  &data, &len, err) < 0)
			return -1;
		if (sbx_write_all(1, data, len) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "get", "stdout");
		return 1;
	}
	SBX_AUTOFREE char *target = NULL;
	if (is_dir) {
		target = ends_with_slash(dest) ? join_base(dest, src) : sbx_xstrdup(dest);
		progress("get %s -> %s (folder)", src, target);
		if (sbx_hostcopy_get(b, sb, src, target, mode, o->root,
			    (int64_t)(o->max_set ? o->max : FS_MAX_FILE), res, err) < 0)
			return -1;
	} else {
		struct stat st;
		int into = ends_with_slash(dest) || (stat(dest, &st) == 0 && S_ISDIR(st.st_mode));
		target = into ? join_base(dest, src) : sbx_xstrdup(dest);
		SBX_AUTOFREE char *data = NULL;
		size_t len = 0;
		progress("get %s -> %s", src, target);
		if (sbx_file_read(b, sb, src, o->max_set ? o->max : FS_MAX_FILE, o->root,
				  &data, &len, err) < 0)
			return -1;
		/* setuid/setgid never travel to the host */
		if (sbx_write_file_atomic(target, data, len, mode & 01777, 0, err) < 0)
			return -1;
		sbx_json_set_int(res, "size", (int64_t)len);
	}
	sbx_json_set_str(res, "dest", target);
	return 0;
}

static int do_cat(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		  json_object *res, struct sbx_err *err)
{
	SBX_AUTOFREE char *data = NULL;
	size_t len = 0;
	size_t max = o->max_set ? o->max : FS_CAT_MAX_DEFAULT;
	if (sbx_file_read(b, sb, o->a, max, o->root, &data, &len, err) < 0) {
		if (err->reason == SBX_R_TOO_LARGE)
			sbx_err_prefix(err, "cat reads at most --max (%zu bytes); use sbx-fs get", max);
		return -1;
	}
	sbx_json_set_str(res, "path", o->a);
	sbx_json_set_int(res, "size", (int64_t)len);
	/* Bytes as every document carries them (doc.h): "content", or
	 * "content_base64" when not UTF-8 or holding a NUL (which would make
	 * the document one the next stage refuses). */
	sbx_json_set_bytes(res, "content", data ? data : "", len);
	return 0;
}

static int do_ls(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		 json_object *res, struct sbx_err *err)
{
	struct sbx_dirent *v = NULL;
	size_t n = 0;
	if (sbx_file_list(b, sb, o->a, o->root, &v, &n, err) < 0)
		return -1;
	json_object *arr = json_object_new_array();
	for (size_t i = 0; i < n; i++)
	{
		json_object *e = json_object_new_object();
		sbx_dirent_json(&v[i], e);
		json_object_array_add(arr, e);
	}
	sbx_json_set_str(res, "path", o->a);
	json_object_object_add(res, "entries", arr);
	sbx_dirents_free(v, n);
	return 0;
}

static int do_stat(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		   json_object *res, struct sbx_err *err)
{
	struct sbx_dirent e = {0};
	if (sbx_file_stat(b, sb, o->a, o->root, &e, err) < 0)
		return -1;
	sbx_dirent_json(&e, res);
	dirent_clear(&e);
	return 0;
}

/* mv FROM TO: into TO when it ends in "/" or is a folder. */
static int do_mv(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		 json_object *res, struct sbx_err *err)
{
	int k = ends_with_slash(o->b) ? 1 : remote_kind(b, sb, o->b, o->root, NULL, err);
	if (k < 0)
		return -1;
	SBX_AUTOFREE char *to = k == 1 ? join_base(o->b, o->a) : sbx_xstrdup(o->b);
	int rc = sbx_file_move(b, sb, o->a, to, o->root, err);
	sbx_json_set_str(res, "from", o->a);
	sbx_json_set_str(res, "to", to);
	return rc;
}

/* restore HOSTDIR: the attachments into /workspace/input, owned by 1000
 * (the child extracts), readable by all. */
static int do_restore(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		      json_object *res, struct sbx_err *err)
{
	struct stat st;
	sbx_json_set_str(res, "source", o->a);
	if (stat(o->a, &st) < 0)
		return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INVALID_REQUEST,
				      "restore", "%s", o->a);
	if (!S_ISDIR(st.st_mode))
		return sbx_fail(err, SBX_INVALID_REQUEST, "restore",
				"%s: restore takes a folder of attachments", o->a);
	progress("restore %s -> %s", o->a, INPUT_DIR);
	int rc = sbx_hostcopy_put(b, sb, o->a, INPUT_DIR, 0, 0444, err);
	sbx_json_set_str(res, "path", INPUT_DIR);
	return rc;
}

/* collect HOSTDIR: /workspace/output to a new or empty host folder. */
static int do_collect(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		      json_object *res, struct sbx_err *err)
{
	struct sbx_dirent e = {0};
	int k = remote_kind(b, sb, OUTPUT_DIR, o->root, &e, err);
	dirent_clear(&e);
	if (k < 0)
		return -1;
	if (k != 1)
		return sbx_fail(err, SBX_NOT_FOUND, "collect", "%s is not a folder", OUTPUT_DIR);
	progress("collect %s -> %s", OUTPUT_DIR, o->a);
	int rc = sbx_hostcopy_get(b, sb, OUTPUT_DIR, o->a, 0755, o->root,
				  (int64_t)(o->max_set ? o->max : FS_MAX_FILE), res, err);
	sbx_json_set_str(res, "path", OUTPUT_DIR);
	sbx_json_set_str(res, "dest", o->a);
	return rc;
}

/* The subcommand's work on one sandbox: 0 (res filled), 1 (raw bytes went
 * to stdout: no document), -1. */
static int fs_sub(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		  json_object *res, struct sbx_err *err)
{
	int rc = 0;
	switch (o->sub) {
	case S_PUT:
		rc = do_put(o, b, sb, res, err);
		sbx_json_set_bool(res, "as_root", o->root);
		return rc;
	case S_GET: return do_get(o, b, sb, o->a, o->b, res, err);
	case S_LS: return do_ls(o, b, sb, res, err);
	case S_STAT: return do_stat(o, b, sb, res, err);
	case S_MKDIR:
		rc = sbx_file_mkdir(b, sb, o->a, o->mode_set ? o->mode : 0755, o->root, err);
		sbx_json_set_str(res, "path", o->a);
		return rc;
	case S_RM:
		rc = sbx_file_remove(b, sb, o->a, o->recursive, o->root, err);
		sbx_json_set_str(res, "path", o->a);
		sbx_json_set_bool(res, "recursive", o->recursive);
		return rc;
	case S_MV: return do_mv(o, b, sb, res, err);
	case S_CAT: return do_cat(o, b, sb, res, err);
	case S_RESTORE: return do_restore(o, b, sb, res, err);
	case S_COLLECT: return do_collect(o, b, sb, res, err);
	}
	return 0;
}

/* A transfer or a change is a record of the sandbox's audit (audit.h):
 * op, path, bytes when known.  A look (ls, stat) is not. */
static void fs_audit(struct fs_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		     json_object *res)
{
	const char *op = subs[o->sub].name;
	if (!strcmp(op, "ls") || !strcmp(op, "stat"))
		return;
	json_object *a = json_object_new_object();
	sbx_json_set_str(a, "op", op);
	const char *path = sbx_json_str(res, "path");
	sbx_json_set_str(a, "path", path ? path : o->a);
	if (sbx_json_str(res, "dest"))
		sbx_json_set_str(a, "dest", sbx_json_str(res, "dest"));
	json_object *size;
	if (json_object_object_get_ex(res, "size", &size))
		json_object_object_add(a, "bytes", json_object_get(size));
	sbx_cli_audit(&o->app, b, sb, "file", a);
	json_object_put(a);
}

static int fs_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct fs_opts *o = ctx;
	json_object *sbj = sbx_json_obj(doc, "sandbox");
	struct sbx_sandbox sb;
	struct sbx_backend *b;
	if (!sbj)
		return sbx_fail(err, SBX_INVALID_REQUEST, "files", "the document has no sandbox");
	if (sbx_cli_open_sandbox(&o->app, sbj, &sb, &b, err) < 0)
		return -1;
	if (sbx_backend_require(b, SBX_CAP_FILES, "files", err) < 0) {
		sbx_sandbox_clear(&sb);
		return -1;
	}
	json_object *res = json_object_new_object();
	sbx_json_set_str(res, "op", subs[o->sub].name);
	int rc = fs_sub(o, b, &sb, res, err);
	if (rc >= 0)
		fs_audit(o, b, &sb, res);
	sbx_sandbox_clear(&sb);
	if (rc != 0) {          /* an error, or raw bytes on stdout: no document */
		json_object_put(res);
		return rc < 0 ? -1 : 1;
	}
	json_object_object_add(doc, "files", res);
	sbx_json_set_str(sbj, "state", "running");
	return 0;
}

int main(int argc, char **argv)
{
	struct fs_opts o = {0};
	struct sbx_err err = {0};
	struct sbx_args a;
	if (sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	o.sub = (enum sub)a.sub;
	o.a = a.argv[0];
	o.b = a.argc > 1 ? a.argv[1] : NULL;
	int rc = 0;
	if (o.sub == S_PUT && !strcmp(o.a, "-") && !o.id)
		rc = sbx_usage_err(&err, "put - (bytes on stdin) needs --id: without it stdin carries documents");
	else if (o.sub == S_GET && !strcmp(o.b, "-") && !o.id)
		rc = sbx_usage_err(&err, "get SRC - (bytes on stdout) needs --id: without it stdout carries documents");
	else if (o.sub == S_PUT && !strcmp(o.a, "-"))
		rc = sbx_read_all_fd(0, FS_MAX_FILE, &o.stdin_data, &o.stdin_len, &err);
	if (rc < 0)
		return sbx_cli_report(cmd.name, &err);

	json_object *seed = sbx_cli_id_seed(o.id);
	int st = sbx_cli_run_docs(cmd.name, seed, fs_one, &o);
	json_object_put(seed);
	free(o.stdin_data);
	sbx_app_close(&o.app);
	return st;
}
