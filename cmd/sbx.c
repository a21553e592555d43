/* sbx - the front command: `sbx create ...` runs `sbx-create ...`.
 * It looks for sbx-NAME beside itself first, then on PATH. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cliopt.h"
#include "util.h"

static const struct sbx_opt opts[] = {{0}};

static const struct sbx_sub subs[] = {
	{"create", "[ARG...]", 0, -1, "sbx-create: create a sandbox or resolve a session's", NULL},
	{"exec", "[ARG...]", 0, -1, "sbx-exec: run a command in a sandbox", NULL},
	{"fs", "[ARG...]", 0, -1, "sbx-fs: copy, list and change a sandbox's files", NULL},
	{"snap", "[ARG...]", 0, -1, "sbx-snap: snapshots and skill images", NULL},
	{"tpl", "[ARG...]", 0, -1, "sbx-tpl: templates", NULL},
	{"ls", "[ARG...]", 0, -1, "sbx-ls: list sandboxes", NULL},
	{"ctl", "[ARG...]", 0, -1, "sbx-ctl: pause, resume, kill, re-time", NULL},
	{"proc", "[ARG...]", 0, -1, "sbx-proc: detached processes: start, list, signal, feed, follow", NULL},
	{"lease", "[ARG...]", 0, -1, "sbx-lease: turn leases and the session lock", NULL},
	{"reap", "[ARG...]", 0, -1, "sbx-reap: delete what nobody owns", NULL},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx",
	.synopsis = "COMMAND [ARG...]",
	.summary = "Run an sbx program: `sbx exec ...` is `sbx-exec ...`.",
	.opts = opts,
	.subs = subs,
	.stop_at_operand = 1,
};

static int no_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	(void)key; (void)arg; (void)ctx;
	return sbx_usage_err(err, "sbx takes no options of its own");
}

/* Exec sbx-WORD with the arguments after WORD: beside this program
 * first, then on PATH.  Returns only on failure. */
static int run_program(struct sbx_args *a, struct sbx_err *err)
{
	char self[PATH_MAX], path[PATH_MAX + 300], name[256];
	snprintf(name, sizeof(name), "sbx-%s", a->word);
	a->argv[-1] = name;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/%s", self, name);
			execv(path, a->argv - 1);
		}
	}
	execvp(name, a->argv - 1);
	return sbx_fail_errno(err, SBX_INTERNAL, "exec", "%s", name);
}

int main(int argc, char **argv)
{
	struct sbx_err err = {0};
	struct sbx_args a;
	if (sbx_cli_parse(&cmd, argc, argv, no_opt, NULL, &a, &err) == 0)
		run_program(&a, &err);
	return sbx_cli_report(cmd.name, &err);
}
