/* docker-egress.c - egress of a Docker sandbox through the egress broker
 * (see docker-egress.h).  The broker is the local backend's program,
 * started here as a helper on the engine's host, as the local backend
 * starts it and slirp4netns: one broker implementation, reached through
 * its argv contract (backends/local/sbx-egress.c), never its code. */
#include "docker-egress.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "docker-api.h"
#include "docker-container.h"
#include "doc.h"
#include "egress-secrets.h"
#include "helper.h"
#include "spool.h"
#include "util.h"

#define POLICY_FILE "netpolicy.json"

static char *egress_dir(struct sbx_backend *b, const char *id)
{
	const char *sd = b->profile && b->profile->state_dir ? b->profile->state_dir : "/var/lib/sbx";
	return sbx_xasprintf("%s/docker-egress/%s", sd, id);
}

int docker_egress_plan(struct sbx_backend *b, const struct sbx_create_req *req,
		       struct sbx_netpolicy *np, const struct sbx_netpolicy **use, int *named,
		       struct sbx_err *err)
{
	int lists = (req->net.allow_out && json_object_array_length(req->net.allow_out)) ||
		    (req->net.deny_out && json_object_array_length(req->net.deny_out));
	*named = req->net.policy || lists;
	*use = NULL;
	if (!req->net.allow_internet && !*named)
		return 0;
	if (docker_conn_tls(b))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"egress on the docker backend needs a local engine (its broker runs on the "
				"engine's host); this engine is remote");
	if (req->net.policy) {
		*use = req->net.policy;
	} else if (lists) {
		if (sbx_np_from_e2b(req->net.allow_out, req->net.deny_out, 1, np, err) < 0)
			return -1;
		*use = np;
	} else {
		sbx_np_finish(np);    /* no rules: the default allow */
		*use = np;
	}
	return 1;
}

static int policy_write(const char *dir, const struct sbx_netpolicy *p, struct sbx_err *err)
{
	json_object *doc = sbx_np_to_json(p);
	const char *txt = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE);
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" POLICY_FILE, dir);
	int rc = sbx_write_file_atomic(path, txt, strlen(txt), 0600, 0, err);
	json_object_put(doc);
	return rc;
}

/* libexec/sbx/sbx-egress beside this program's bin/, opened O_PATH. */
static int broker_open(struct sbx_err *err)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "readlink /proc/self/exe");
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/../libexec/sbx/sbx-egress", self);
	int fd = open(p, O_PATH | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return sbx_fail(err, SBX_UNAVAILABLE, "create",
				"the egress broker %s (installed with sbx) is missing", p);
	}
	return fd;
}

/* Detached: its own session, stdio on /dev/null (host root for the
 * container's life). */
static void detach(void *unused)
{
	(void)unused;
	sbx_helper_detach();
}

int docker_egress_start(struct sbx_backend *b, const char *id, long pid,
			const struct sbx_netpolicy *p, json_object *headers, struct sbx_err *err)
{
	if (pid <= 0)
		return sbx_fail(err, SBX_INTERNAL, "create", "the engine reports no init pid for %s", id);
	SBX_AUTOFREE char *dir = egress_dir(b, id);
	if (sbx_mkdir_p(dir, 0700, err) < 0 || policy_write(dir, p, err) < 0 ||
	    sbx_spool_conf_write(dir, b->profile ? b->profile->audit_maxlen : 0,
				 b->profile && b->profile->audit_required, err) < 0)
		return -1;
	SBX_AUTOCLOSE int exe = broker_open(err);
	if (exe < 0)
		return -1;
	const struct docker_conf *c = sbx_backend_conf(b);
	size_t na = 0;
	for (char *const *a = c ? c->egress_allow : NULL; a && *a; a++)
		na++;
	char spid[32], fd[16];
	snprintf(spid, sizeof(spid), "%ld", pid);
	const char **argv = sbx_xcalloc(na + 9, sizeof(char *));
	size_t k = 0;
	argv[k++] = "sbx-egress";
	argv[k++] = "--container";
	argv[k++] = id;
	argv[k++] = spid;
	argv[k++] = dir;
	argv[k++] = fd;
	argv[k++] = c && c->egress_resolver ? c->egress_resolver : "host";
	for (char *const *a = c ? c->egress_allow : NULL; a && *a; a++)
		argv[k++] = *a;
	/* The keys (CA folder, secrets) on the broker's stdin, as local's. */
	char *keys = NULL;
	if (sbx_egress_keys_doc(b->profile, p, headers, &keys, err) < 0) {
		free(argv);
		return -1;
	}
	SBX_AUTOCLOSE int kfd = -1;
	if (keys) {
		kfd = sbx_helper_memfd(keys);
		sbx_secret_free(keys);
		if (kfd < 0) {
			free(argv);
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "the egress broker's keys");
		}
	}
	char why[512];
	int rc = sbx_helper_start_in(exe, argv, fd, kfd, detach, NULL, why, sizeof(why));
	free(argv);
	if (rc < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "start the egress broker of %s", id);
	if (rc == SBX_HELPER_SILENT)
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the egress broker of %s did not come up (it needs root on the engine's host)", id);
	if (rc == SBX_HELPER_FAILED)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "the egress broker of %s failed: %s", id, why);
	return 0;
}

int docker_egress_set_network(struct sbx_backend *b, struct sbx_sandbox *sb,
			      const struct sbx_netpolicy *p, struct sbx_err *err)
{
	json_object *j;
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "network", "the sandbox has no id");
	if (docker_inspect(b, sb->id, "network", &j, err) < 0)
		return -1;
	SBX_AUTOFREE char *id = sbx_xstrdup(sbx_json_str(j, "Id") ? sbx_json_str(j, "Id") : sb->id);
	const char *st = docker_inspect_status(j);
	const char *eg = sbx_json_str(sbx_json_obj(sbx_json_obj(j, "Config"), "Labels"), DOCKER_LABEL_EGRESS);
	int live = st && (!strcmp(st, "running") || !strcmp(st, "paused"));
	int with = eg && !strcmp(eg, "policy");
	int rc = 0;
	if (!live)
		rc = sbx_fail(err, SBX_CONFLICT, "network", "sandbox %s is %s, not running or paused", id,
			      st ? st : "?");
	else if (!with)
		rc = sbx_fail(err, SBX_UNSUPPORTED, "network",
			      "%s was created without a network policy: its egress is all or nothing "
			      "(create it with --allow-out, --deny-out or --network-policy)", id);
	json_object_put(j);
	if (rc < 0)
		return -1;
	SBX_AUTOFREE char *dir = egress_dir(b, id);
	if (access(dir, F_OK) != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "network",
				"the egress broker of %s runs on another host (its policy is not here)", id);
	return policy_write(dir, p, err);
}

char *docker_egress_audit_dir(struct sbx_backend *b, const char *id)
{
	return egress_dir(b, id);
}

json_object *docker_egress_policy_doc(struct sbx_backend *b, const char *id)
{
	SBX_AUTOFREE char *dir = egress_dir(b, id);
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" POLICY_FILE, dir);
	SBX_AUTOFREE char *text = NULL;
	size_t len;
	struct sbx_err e = {0};
	if (sbx_read_file(path, 1 << 22, &text, &len, &e) < 0)
		return NULL;
	return json_tokener_parse(text);
}

void docker_egress_forget(struct sbx_backend *b, const char *id)
{
	SBX_AUTOFREE char *dir = egress_dir(b, id);
	struct sbx_err e = {0};
	(void)sbx_rm_rf(dir, &e);
}
