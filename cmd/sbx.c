/* sbx - the front command: `sbx create ...` runs `sbx-create ...`.
 * It looks for sbx-NAME beside itself first, then on PATH. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

static const struct sbx_opt opts[] = {{0}};
static const char *const subcommands[] = {
	"create", "exec", "fs", "snap", "tpl", "ls", "ctl", "lease", "reap", NULL,
};
static const struct sbx_cmd cmd = {
	.name = "sbx",
	.synopsis = "COMMAND [ARG...]",
	.summary = "Run an sbx program: `sbx exec ...` is `sbx-exec ...`.",
	.opts = opts,
	.subcommands = subcommands,
	.stop_at_operand = 1,
};

static int no_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	(void)key; (void)arg; (void)ctx;
	return sbx_usage_err(err, "sbx takes no options of its own");
}

int main(int argc, char **argv)
{
	struct sbx_err err = {0};
	int i = sbx_cli_parse(&cmd, argc, argv, no_opt, NULL, &err);
	if (i < 0)
		return sbx_cli_report("sbx", &err);
	if (i >= argc) {
		sbx_cli_help(&cmd, stderr);
		return SBX_EXIT_USAGE;
	}
	const char *sub = argv[i];
	if (strchr(sub, '/') || sub[0] == '-') {
		sbx_usage_err(&err, "unknown command '%s'", sub);
		return sbx_cli_report("sbx", &err);
	}
	char self[PATH_MAX], path[PATH_MAX + 300], name[256];
	snprintf(name, sizeof(name), "sbx-%s", sub);
	argv[i] = name;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/%s", self, name);
			execv(path, argv + i);
		}
	}
	execvp(name, argv + i);
	if (errno == ENOENT)
		sbx_usage_err(&err, "unknown command '%s'", sub);
	else
		sbx_fail_errno(&err, SBX_INTERNAL, "exec", "%s", name);
	return sbx_cli_report("sbx", &err);
}
