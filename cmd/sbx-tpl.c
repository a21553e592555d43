/* sbx-tpl - templates: list, show, import, delete.
 *
 *   sbx-tpl ls                                    one {"template": ...} per template
 *   sbx-tpl show ID
 *   sbx-tpl import NAME [--file PATH | --dir PATH | -]   a rootfs tarball or folder
 *   sbx-tpl rm ID
 *
 * Listings never show snapshots (the backend subtracts them).  Reads no
 * documents; writes one document per template, or an error document. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "cliutil.h"
#include "doc.h"
#include "util.h"

enum { O_PROFILE, O_FILE, O_DIR };
enum { S_LS, S_SHOW, S_IMPORT, S_RM };

static const struct sbx_sub subs[] = {
	[S_LS] = {"ls", "", 0, 0, "one document per template", NULL},
	[S_SHOW] = {"show", "ID", 1, 1, "one template", NULL},
	[S_IMPORT] = {"import", "NAME [-]", 1, 2, "make a template from a rootfs tarball or folder", NULL},
	[S_RM] = {"rm", "ID", 1, 1, "delete a template", NULL},
	{0},
};

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"file", 'f', "PATH", "import: read the rootfs tarball from PATH (default: stdin)", O_FILE,
	 SBX_SUB(S_IMPORT)},
	{"dir", 'd', "PATH", "import: copy the rootfs from the host folder PATH", O_DIR,
	 SBX_SUB(S_IMPORT)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-tpl",
	.synopsis = "ls | show ID | import NAME [--file PATH | --dir PATH | -] | rm ID",
	.summary = "List, show, import and delete templates (snapshots are never listed).",
	.opts = opts,
	.subs = subs,
};

struct tpl_opts {
	struct sbx_app app;
	const char *file, *dir;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct tpl_opts *o = ctx;
	(void)err;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_FILE: o->file = arg; return 0;
	case O_DIR: o->dir = arg; return 0;
	}
	return 0;
}

static int emit_tpl(const struct sbx_template *t, const char *backend, struct sbx_err *err)
{
	json_object *doc = json_object_new_object();
	sbx_template_json(t, backend, sbx_json_child(doc, "template"));
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

static int do_ls(struct sbx_backend *b, struct sbx_err *err)
{
	struct sbx_template *v = NULL;
	size_t n = 0;
	if (sbx_call(b, template_list, err, &v, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = emit_tpl(&v[i], b->ops->name, err);
	sbx_templates_free(v, n);
	return rc;
}

static int do_show(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	struct sbx_template t = {0};
	if (sbx_call(b, template_get, err, id, &t) < 0)
		return -1;
	int rc = emit_tpl(&t, b->ops->name, err);
	free(t.id);
	free(t.name);
	free(t.kind);
	return rc;
}

static int do_import(struct tpl_opts *o, struct sbx_backend *b, const char *name,
		     struct sbx_err *err)
{
	SBX_AUTOCLOSE int fd = -1;
	if (!o->dir) {
		if (o->file && strcmp(o->file, "-") != 0) {
			fd = open(o->file, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return sbx_fail_errno(err, SBX_NOT_FOUND, "template_import", "%s", o->file);
		} else if (isatty(0)) {
			return sbx_usage_err(err, "import: pipe a tarball in, or give --file or --dir");
		} else {
			fd = dup(0);
		}
	}
	struct sbx_template t = {0};
	int64_t t0 = sbx_mono_ms();
	if (sbx_call(b, template_import, err, name, fd, o->dir, &t) < 0)
		return -1;
	json_object *doc = json_object_new_object();
	json_object *j = sbx_json_child(doc, "template");
	sbx_template_json(&t, b->ops->name, j);
	sbx_json_set_int(j, "duration_ms", sbx_mono_ms() - t0);
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	free(t.id);
	free(t.name);
	free(t.kind);
	return rc;
}

static int do_rm(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	int gone = 0;
	if (sbx_call(b, template_delete, err, id, &gone) < 0)
		return -1;
	return sbx_cli_emit_deleted("template", id, gone, err);
}

int main(int argc, char **argv)
{
	struct tpl_opts o = {0};
	struct sbx_err err = {0};
	struct sbx_args a;
	int rc = sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err);
	if (rc == 0 && a.argc == 2 && strcmp(a.argv[1], "-") != 0)
		rc = sbx_usage_err(&err, "unexpected argument '%s'", a.argv[1]);
	else if (rc == 0 && a.argc == 2 && (o.file || o.dir))
		rc = sbx_usage_err(&err, "'-' excludes --file and --dir");
	else if (rc == 0 && o.file && o.dir)
		rc = sbx_usage_err(&err, "--file and --dir exclude each other");
	if (rc < 0)
		return sbx_cli_report(cmd.name, &err);
	if (a.argc == 2)
		o.file = "-";

	struct sbx_backend *b;
	rc = sbx_app_backend(&o.app, NULL, &b, &err);
	if (rc == 0) {
		switch (a.sub) {
		case S_LS: rc = do_ls(b, &err); break;
		case S_SHOW: rc = do_show(b, a.argv[0], &err); break;
		case S_IMPORT: rc = do_import(&o, b, a.argv[0], &err); break;
		default: rc = do_rm(b, a.argv[0], &err); break;
		}
	}
	int st = sbx_cli_finish(cmd.name, rc, &err);
	sbx_app_close(&o.app);
	return st;
}
