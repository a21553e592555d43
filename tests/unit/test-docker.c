/* The Docker backend through its vtable, against a real dockerd: the one
 * DOCKER_HOST names (tests/lib/dockerd.sh starts a private one and builds
 * sbx/base:latest).  Skipped, not faked, when there is no daemon or no
 * base image.  Everything created carries a per-run label and is removed
 * at the end.
 *
 * What it proves: the handle (full id, labels as metadata, state);
 * demultiplexed stdout/stderr and exit codes; uid 1000 by default and 0
 * with as_root; stdin (a megabyte, written while output is read); output
 * caps; the in-sandbox timeout; raw streaming; files as the sandbox user,
 * with a planted symlink replaced rather than written through and the
 * reserved paths refused; pause and exec auto-resume; label listing;
 * snapshot = commit, usable as a template, hidden from templates, not
 * carrying the source's session labels, in-use delete = conflict;
 * idempotent deletes; the idle sweep (dry run, a marker in the past, a
 * marker in the future ignored); template import from a folder. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "doc.h"
#include "docker-container.h"
#include "docker-sweep.h"
#include "http.h"
#include "path.h"
#include "tap.h"
#include "util.h"

static struct sbx_backend *B;
static char run_label[40];

/* The HTTP status of GET `path` on the engine at DOCKER_HOST (unix://
 * only), 0 when it cannot be asked. */
static int engine_status(const char *path)
{
	const char *h = getenv("DOCKER_HOST");
	if (!h || strncmp(h, "unix://", 7) != 0)
		return 0;
	struct sbx_http_opts o = {.base_url = "http://docker", .unix_socket = h + 7, .timeout_ms = 3000};
	struct sbx_http *http;
	struct sbx_err e = {0};
	if (sbx_http_open(&o, &http, &e) < 0)
		return 0;
	struct sbx_http_req rq = {.method = "GET", .path = path};
	struct sbx_http_resp rs = {0};
	int st = sbx_http_do(http, &rq, &rs, &e) == 0 ? rs.status : 0;
	sbx_http_resp_clear(&rs);
	sbx_http_close(http);
	return st;
}

static int daemon_ready(void)
{
	return engine_status("/v1.41/images/sbx/base:latest/json") == 200;
}

static int sh(struct sbx_sandbox *sb, int as_root, const char *cmd, struct sbx_exec_result *r)
{
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	struct sbx_exec_req req = {.argv = argv, .as_root = as_root, .raw_out_fd = -1,
				   .raw_err_fd = -1, .raw_in_fd = -1};
	struct sbx_err e = {0};
	int rc = B->ops->exec(B, sb, &req, r, &e);
	if (rc < 0)
		printf("# exec '%s': %s: %s\n", cmd, sbx_kind_name(e.kind), e.msg);
	return rc;
}

/* stdout of a command, trimmed (static buffer). */
static const char *out_of(struct sbx_sandbox *sb, int as_root, const char *cmd)
{
	static char buf[4096];
	struct sbx_exec_result r;
	buf[0] = 0;
	if (sh(sb, as_root, cmd, &r) == 0) {
		snprintf(buf, sizeof(buf), "%s", r.out ? r.out : "");
		sbx_trim(buf);
		sbx_exec_result_clear(&r);
	}
	return buf;
}

/* Set the activity marker's mtime to `when`: an exec marks its own end
 * (docker-exec.c), so the touch is made by a child that waits for the
 * exec's wrapper to be gone; the caller then waits a second. */
static void age_marker(struct sbx_sandbox *sb, const char *when)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "w=$PPID; (while kill -0 $w 2>/dev/null; do sleep 0.1 2>/dev/null || sleep 1; done; "
		 "touch -d '%s' /var/lib/sbx-activity) </dev/null >/dev/null 2>&1 &", when);
	out_of(sb, 1, cmd);
}

static void dirent_clear(struct sbx_dirent *d)
{
	free(d->name);
	free(d->path);
	free(d->link_target);
	memset(d, 0, sizeof(*d));
}

/* Create with auto_resume on, as a profile's default is. */
static int make(struct sbx_sandbox *sb, const char *tpl, const char *k, const char *v, int64_t ttl)
{
	struct sbx_create_req req = {.template_id = tpl, .timeout.seconds = ttl,
				     .timeout.auto_resume = 1};
	req.metadata = json_object_new_object();
	json_object_object_add(req.metadata, "unit.run", json_object_new_string(run_label));
	if (k)
		json_object_object_add(req.metadata, k, json_object_new_string(v));
	req.env = json_object_new_object();
	json_object_object_add(req.env, "SBX_UNIT", json_object_new_string("yes"));
	struct sbx_err e = {0};
	int rc = B->ops->create(B, &req, sb, &e);
	if (rc < 0)
		printf("# create: %s: %s\n", sbx_kind_name(e.kind), e.msg);
	json_object_put(req.metadata);
	json_object_put(req.env);
	return rc;
}

static void test_exec(struct sbx_sandbox *sb)
{
	struct sbx_exec_result r;
	struct sbx_err e = {0};
	ok(sh(sb, 0, "echo out; echo err >&2; exit 3", &r) == 0, "exec runs");
	is_str(r.out, "out\n", "stdout demultiplexed");
	is_str(r.err, "err\n", "stderr demultiplexed");
	is_int(r.exit_code, 3, "exit code");
	ok(!r.timed_out, "not timed out");
	sbx_exec_result_clear(&r);

	is_str(out_of(sb, 0, "id -u"), "1000", "uid 1000 by default");
	is_str(out_of(sb, 1, "id -u"), "0", "uid 0 as root");
	is_str(out_of(sb, 0, "pwd"), "/workspace", "cwd /workspace by default");
	is_str(out_of(sb, 0, "echo $SBX_UNIT"), "yes", "create env reaches commands");
	is_str(out_of(sb, 0, "ls /sys/class/net | tr '\\n' ' '"), "lo", "egress off: only lo");

	/* A megabyte of stdin round-trips through cat: stdin is written
	 * while the output is read, and half-closed at its end. */
	size_t n = 1 << 20;
	char *big = sbx_xmalloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26);
	char *argv[] = {"cat", NULL};
	struct sbx_exec_req req = {.argv = argv, .stdin_data = big, .stdin_len = n,
				   .output_cap = 2 << 20, .raw_out_fd = -1, .raw_err_fd = -1,
				   .raw_in_fd = -1};
	ok(B->ops->exec(B, sb, &req, &r, &e) == 0, "exec with 1 MiB of stdin");
	ok(r.out_len == n && memcmp(r.out, big, n) == 0, "stdin came back byte for byte");
	sbx_exec_result_clear(&r);
	free(big);

	char *yes[] = {"sh", "-c", "yes | head -c 100000; yes | head -c 10 >&2", NULL};
	struct sbx_exec_req capped = {.argv = yes, .output_cap = 1000, .raw_out_fd = -1,
				      .raw_err_fd = -1, .raw_in_fd = -1};
	ok(B->ops->exec(B, sb, &capped, &r, &e) == 0, "exec with an output cap");
	ok(r.out_len == 1000 && r.out_truncated, "stdout capped and flagged (%zu)", r.out_len);
	ok(!r.err_truncated, "stderr under the cap is not flagged");
	is_int(r.exit_code, 0, "the capped command still finished");
	sbx_exec_result_clear(&r);

	char *slow[] = {"sleep", "30", NULL};
	struct sbx_exec_req to = {.argv = slow, .timeout_ms = 1000, .raw_out_fd = -1,
				  .raw_err_fd = -1, .raw_in_fd = -1};
	ok(B->ops->exec(B, sb, &to, &r, &e) == 0, "a timeout is a result, not an error");
	ok(r.timed_out && r.exit_code == -1 && r.signal == 9, "timed out, exit -1, signal 9");
	sbx_exec_result_clear(&r);

	char *tree[] = {"sh", "-c", "sleep 300 & sleep 301", NULL};
	to.argv = tree;
	ok(B->ops->exec(B, sb, &to, &r, &e) == 0 && r.timed_out, "a process tree times out");
	sbx_exec_result_clear(&r);
	is_str(out_of(sb, 0, "ps -o args | grep -c '^sleep 30[01]'"), "0",
	       "the timeout killed the whole tree, not just the command");

	char *cat2[] = {"sh", "-c", "cat; exit 4", NULL};
	struct sbx_exec_req tin = {.argv = cat2, .timeout_ms = 30000, .stdin_data = "piped",
				   .stdin_len = 5, .raw_out_fd = -1, .raw_err_fd = -1, .raw_in_fd = -1};
	ok(B->ops->exec(B, sb, &tin, &r, &e) == 0, "stdin under a timeout");
	ok(r.out && !strcmp(r.out, "piped") && r.exit_code == 4 && !r.timed_out,
	   "stdin reaches the command and its exit code survives the wrapper");
	sbx_exec_result_clear(&r);

	char tmpl[] = "/tmp/sbx-unit-raw.XXXXXX";
	int fd = mkstemp(tmpl);
	unlink(tmpl);
	char *pr[] = {"printf", "raw\\n", NULL};
	struct sbx_exec_req raw = {.argv = pr, .raw_out_fd = fd, .raw_err_fd = -1, .raw_in_fd = -1};
	ok(B->ops->exec(B, sb, &raw, &r, &e) == 0 && r.out == NULL, "raw mode streams to the fd");
	char got[16] = "";
	lseek(fd, 0, SEEK_SET);
	ok(read(fd, got, sizeof(got) - 1) == 4 && !strcmp(got, "raw\n"), "raw bytes arrived");
	close(fd);
	sbx_exec_result_clear(&r);

	char *missing[] = {"/no/such/program", NULL};
	struct sbx_exec_req nf = {.argv = missing, .raw_out_fd = -1, .raw_err_fd = -1, .raw_in_fd = -1};
	ok(B->ops->exec(B, sb, &nf, &r, &e) == 0 && r.exit_code == 127, "missing program: exit 127");
	sbx_exec_result_clear(&r);
}

static void test_files(struct sbx_sandbox *sb)
{
	struct sbx_err e = {0};
	char *data;
	size_t len;
	const char *txt = "line one\nline two\n";
	ok(B->ops->file_write(B, sb, "/workspace/a dir/f.txt", txt, strlen(txt), 0640, 0, &e) == 0,
	   "file_write creates parents");
	ok(B->ops->file_read(B, sb, "/workspace/a dir/f.txt", 0, 0, &data, &len, &e) == 0 &&
	   len == strlen(txt) && !memcmp(data, txt, len), "file_read returns the bytes");
	free(data);
	struct sbx_dirent st;
	ok(B->ops->file_stat(B, sb, "/workspace/a dir/f.txt", 0, &st, &e) == 0, "file_stat");
	ok(st.type == SBX_FT_FILE && st.size == (int64_t)strlen(txt) && st.mode == 0640 &&
	   st.uid == 1000, "stat: file, size, mode 0640, owner 1000");
	is_str(st.name, "f.txt", "stat name");
	dirent_clear(&st);

	ok(B->ops->file_read(B, sb, "/workspace/nope", 0, 0, &data, &len, &e) < 0 &&
	   e.kind == SBX_NOT_FOUND, "missing file: not_found");
	ok(B->ops->file_read(B, sb, "/workspace/a dir/f.txt", 3, 0, &data, &len, &e) < 0 &&
	   e.kind == SBX_INVALID_REQUEST, "read over max: invalid_request");

	/* The escape the archive API allows: a symlink to a root-only file. */
	out_of(sb, 0, "ln -s /etc/passwd /workspace/evil");
	const char *pw = "owned\n";
	ok(B->ops->file_write(B, sb, "/workspace/evil", pw, strlen(pw), 0644, 0, &e) == 0,
	   "write to a planted symlink succeeds");
	ok(strstr(out_of(sb, 0, "head -1 /etc/passwd"), "root:") != NULL, "/etc/passwd untouched");
	ok(B->ops->file_stat(B, sb, "/workspace/evil", 0, &st, &e) == 0 && st.type == SBX_FT_FILE,
	   "the symlink was replaced by a file");
	dirent_clear(&st);
	ok(B->ops->file_write(B, sb, "/etc/passwd", pw, strlen(pw), 0644, 0, &e) < 0 &&
	   e.kind == SBX_INVALID_REQUEST, "uid 1000 cannot write /etc (%s)", e.msg);

	/* Through the library's entry, as every caller goes: the path rule
	 * (relative, "..", "//") above the vtable, then docker's own refusals
	 * (/proc, /sys, /dev, the activity marker) on the normalised path. */
	const char *bad[] = {"relative", "/workspace/../etc/passwd", "/proc/1/environ", "/sys/x",
			     "/dev/null", "/var/lib/sbx-activity", "//proc/self"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(bad); i++)
		ok(sbx_file_write(B, sb, bad[i], "x", 1, 0644, 1, &e) < 0 &&
		   e.kind == SBX_INVALID_REQUEST, "refused: %s", bad[i]);

	ok(B->ops->file_mkdir(B, sb, "/workspace/d/e", 0750, 0, &e) == 0, "mkdir -p");
	ok(B->ops->file_mkdir(B, sb, "/workspace/d/e", 0750, 0, &e) == 0, "mkdir of an existing dir");
	const char *odd = "/workspace/d/new\nline";
	ok(B->ops->file_write(B, sb, odd, "x", 1, 0600, 0, &e) == 0, "a name with a newline");
	ok(B->ops->file_write(B, sb, "/workspace/d/.hidden", "", 0, 0600, 0, &e) == 0, "empty file");
	struct sbx_dirent *ls;
	size_t n;
	ok(B->ops->file_list(B, sb, "/workspace/d", 0, &ls, &n, &e) == 0, "file_list");
	is_int(n, 3, "three entries (dir, newline name, dot file)");
	int seen_nl = 0, seen_dir = 0, seen_dot = 0;
	for (size_t i = 0; i < n; i++) {
		seen_nl |= !strcmp(ls[i].name, "new\nline") && ls[i].type == SBX_FT_FILE && ls[i].size == 1;
		seen_dir |= !strcmp(ls[i].name, "e") && ls[i].type == SBX_FT_DIR && ls[i].mode == 0750;
		seen_dot |= !strcmp(ls[i].name, ".hidden") && ls[i].size == 0;
	}
	ok(seen_nl && seen_dir && seen_dot, "entries with their types, sizes and modes");
	sbx_dirents_free(ls, n);
	ok(B->ops->file_list(B, sb, "/workspace/empty-nothing", 0, &ls, &n, &e) < 0 &&
	   e.kind == SBX_NOT_FOUND, "list of a missing dir: not_found");

	ok(B->ops->file_move(B, sb, odd, "/workspace/d/moved", 0, &e) == 0, "move");
	ok(B->ops->file_stat(B, sb, "/workspace/d/moved", 0, &st, &e) == 0, "moved file exists");
	dirent_clear(&st);
	ok(B->ops->file_remove(B, sb, "/workspace/d", 0, 0, &e) < 0 && e.kind == SBX_CONFLICT,
	   "non-recursive remove of a full dir: conflict");
	ok(B->ops->file_remove(B, sb, "/workspace/d", 1, 0, &e) == 0, "recursive remove");
	ok(B->ops->file_stat(B, sb, "/workspace/d", 0, &st, &e) < 0 && e.kind == SBX_NOT_FOUND,
	   "gone after remove");
	ok(B->ops->file_remove(B, sb, "/workspace/d", 1, 0, &e) == 0, "remove of a missing path is fine");

	ok(B->ops->file_write(B, sb, "/opt/sbx/skills/s/run.sh", "#!/bin/sh\n", 10, 0755, 1, &e) == 0,
	   "root writes under /opt/sbx/skills");
	is_str(out_of(sb, 0, "stat -c '%u %a' /opt/sbx/skills/s/run.sh"), "0 755", "root-owned, 0755");
	ok(B->ops->file_write(B, sb, "/opt/sbx/skills/s/run.sh", "x", 1, 0644, 0, &e) < 0,
	   "the user cannot overwrite a skill");
}

static void test_pause(struct sbx_sandbox *sb)
{
	struct sbx_err e = {0};
	ok(B->ops->pause(B, sb, &e) == 0 && sb->state == SBX_STATE_PAUSED, "pause");
	ok(B->ops->pause(B, sb, &e) == 0 && sb->state == SBX_STATE_PAUSED, "pause again is fine");
	struct sbx_sandbox g = {0};
	ok(B->ops->get(B, sb->id, &g, &e) == 0 && g.state == SBX_STATE_PAUSED, "get sees paused");
	sbx_sandbox_clear(&g);
	is_str(out_of(sb, 0, "echo back"), "back", "exec into a paused sandbox resumes it");
	ok(B->ops->get(B, sb->id, &g, &e) == 0 && g.state == SBX_STATE_RUNNING, "running again");
	sbx_sandbox_clear(&g);
	ok(B->ops->pause(B, sb, &e) == 0, "pause");
	ok(B->ops->connect(B, sb, &e) == 0 && sb->state == SBX_STATE_RUNNING, "connect resumes");

	/* auto_resume off: a command is refused until connect resumes it. */
	struct sbx_create_req req = {.timeout.auto_resume = 0};
	req.metadata = json_object_new_object();
	json_object_object_add(req.metadata, "unit.run", json_object_new_string(run_label));
	struct sbx_sandbox off = {0};
	ok(B->ops->create(B, &req, &off, &e) == 0, "create with auto_resume off");
	json_object_put(req.metadata);
	ok(B->ops->pause(B, &off, &e) == 0, "pause it");
	char *argv[] = {"true", NULL};
	struct sbx_exec_req x = {.argv = argv, .raw_out_fd = -1, .raw_err_fd = -1, .raw_in_fd = -1};
	struct sbx_exec_result r;
	ok(B->ops->exec(B, &off, &x, &r, &e) < 0 && e.kind == SBX_CONFLICT && strstr(e.msg, "sbx-ctl resume"),
	   "a command into it is a conflict naming sbx-ctl resume (%s)", e.msg);
	ok(B->ops->get(B, off.id, &g, &e) == 0 && g.state == SBX_STATE_PAUSED, "and it stays paused");
	sbx_sandbox_clear(&g);
	ok(B->ops->connect(B, &off, &e) == 0 && off.state == SBX_STATE_RUNNING, "connect resumes it");
	int gone;
	ok(B->ops->remove(B, off.id, &gone, &e) == 0, "remove it");
	sbx_sandbox_clear(&off);
}

static int in_templates(const char *id)
{
	struct sbx_template *t;
	size_t n;
	struct sbx_err e = {0};
	int found = 0;
	if (B->ops->template_list(B, &t, &n, &e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		found |= !strcmp(t[i].id, id);
	sbx_templates_free(t, n);
	return found;
}

/* snapshot_flatten: one layer, the same files, the source's Env, listed
 * as a snapshot under its name, never a template; deletable on its own. */
static void test_flatten(const struct sbx_snapshot_ref *src, const char *name)
{
	struct sbx_err e = {0};
	struct sbx_snapshot_ref fl = {0};
	char fname[96];
	snprintf(fname, sizeof(fname), "%s-flat", name);
	ok(B->ops->snapshot_flatten(B, src->id, fname, &fl, &e) == 0, "snapshot_flatten (%s)", e.msg);
	ok(fl.id && !strncmp(fl.id, "sha256:", 7) && strcmp(fl.id, src->id), "a new image id");
	is_int(fl.layers, 1, "flattened: one layer");
	struct sbx_snapshot_ref *v;
	size_t n;
	int found = 0;
	ok(B->ops->snapshot_list(B, NULL, &v, &n, NULL, &e) == 0, "snapshot_list");
	for (size_t i = 0; i < n; i++)
		found |= !strcmp(v[i].id, fl.id) && v[i].name && !strcmp(v[i].name, fname);
	sbx_snapshot_refs_free(v, n);
	ok(found, "the flattened image is a snapshot, listed with its name");
	is_int(in_templates(fl.id), 0, "... and not a template");
	struct sbx_sandbox s3 = {0};
	ok(make(&s3, fl.id, NULL, NULL, 0) == 0, "create from the flattened image");
	is_str(out_of(&s3, 0, "cat /opt/sbx/skills/marker"), "skill", "it has the source's files");
	int gone = 0;
	ok(B->ops->remove(B, s3.id, &gone, &e) == 0, "remove it");
	ok(B->ops->snapshot_delete(B, fl.id, &gone, &e) == 0 && !gone, "delete the flattened image");
	sbx_sandbox_clear(&s3);
	free(fl.id);
	free(fl.name);
	free(fl.parent);
}

static void test_snapshots(struct sbx_sandbox *sb)
{
	struct sbx_err e = {0};
	struct sbx_snapshot_ref ref;
	out_of(sb, 1, "echo skill > /opt/sbx/skills/marker");
	char name[64];
	snprintf(name, sizeof(name), "unit %s/snap", run_label);
	ok(B->ops->snapshot_create(B, sb, name, &ref, &e) == 0, "snapshot_create");
	ok(ref.id && !strncmp(ref.id, "sha256:", 7), "the snapshot id is an image id");
	is_str(ref.name, name, "snapshot keeps its name");
	struct sbx_snapshot_ref *v;
	size_t n;
	int found = 0;
	ok(B->ops->snapshot_list(B, NULL, &v, &n, NULL, &e) == 0, "snapshot_list");
	for (size_t i = 0; i < n; i++)
		found |= !strcmp(v[i].id, ref.id) && v[i].name && !strcmp(v[i].name, name);
	sbx_snapshot_refs_free(v, n);
	ok(found, "the snapshot is listed with its name");
	is_int(in_templates(ref.id), 0, "snapshots are not templates");
	is_int(in_templates("sbx/base:latest"), 1, "the base image is a template");

	struct sbx_sandbox s2 = {0};
	ok(make(&s2, ref.id, NULL, NULL, 0) == 0, "create from the snapshot id");
	is_str(out_of(&s2, 0, "cat /opt/sbx/skills/marker"), "skill", "the new sandbox sees the file");
	ok(!sbx_json_str(s2.metadata, "unit.case") && !sbx_json_str(s2.metadata, "sbx.snapshot"),
	   "no labels leak from the source sandbox or the snapshot image");
	/* podman's Config.Image is the image's name, not the id create got;
	 * the skill install's "stands on the current image" check needs it. */
	is_str(s2.template_id, ref.id, "a sandbox from a snapshot names the snapshot id as its template");
	struct sbx_sandbox g2 = {0};
	ok(B->ops->get(B, s2.id, &g2, &e) == 0 && g2.template_id && !strcmp(g2.template_id, ref.id),
	   "... and so does get");
	sbx_sandbox_clear(&g2);
	ok(ref.layers >= 2 && ref.size_bytes > 0, "the snapshot reports its layers and size");
	test_flatten(&ref, name);
	int gone = 0;
	ok(B->ops->snapshot_delete(B, ref.id, &gone, &e) < 0 && e.kind == SBX_CONFLICT,
	   "deleting a snapshot in use: conflict");
	ok(B->ops->remove(B, s2.id, &gone, &e) == 0 && !gone, "remove the user");
	ok(B->ops->snapshot_delete(B, ref.id, &gone, &e) == 0 && !gone, "snapshot_delete");
	ok(B->ops->snapshot_delete(B, ref.id, &gone, &e) == 0 && gone, "again: gone, no error");
	ok(B->ops->snapshot_delete(B, "sbx/base:latest", &gone, &e) < 0, "a template is not a snapshot");
	sbx_sandbox_clear(&s2);
	free(ref.id);
	free(ref.name);
	free(ref.parent);
}

static void test_idle(void)
{
	struct sbx_err e = {0};
	struct sbx_sandbox old = {0}, fut = {0}, fresh = {0};
	ok(make(&old, NULL, "unit.idle", "old", 3600) == 0, "create (ttl 1h)");
	ok(make(&fut, NULL, "unit.idle", "future", 3600) == 0, "create (ttl 1h)");
	ok(make(&fresh, NULL, "unit.idle", "fresh", 3600) == 0, "create (ttl 1h)");
	age_marker(&old, "2000-01-01 00:00:00");
	age_marker(&fut, "2099-01-01 00:00:00");
	sleep(2);

	json_object *rep = json_object_new_object();
	ok(sbx_docker_reap_idle(B, 1, rep, &e) == 0, "dry-run sweep");
	const char *js = json_object_to_json_string(rep);
	ok(strstr(js, old.id) && !strstr(js, fut.id) && !strstr(js, fresh.id),
	   "dry run names only the idle one");
	json_object_put(rep);
	struct sbx_sandbox g = {0};
	ok(B->ops->get(B, old.id, &g, &e) == 0, "dry run deleted nothing");
	sbx_sandbox_clear(&g);

	rep = json_object_new_object();
	ok(sbx_docker_reap_idle(B, 0, rep, &e) == 0, "sweep");
	json_object *del = NULL;
	json_object_object_get_ex(rep, "deleted", &del);
	js = del ? json_object_to_json_string(del) : "";
	ok(strstr(js, old.id) && !strstr(js, fut.id) && !strstr(js, fresh.id),
	   "only the idle container was deleted (a future marker is ignored)");
	json_object_put(rep);
	ok(B->ops->get(B, old.id, &g, &e) < 0 && e.kind == SBX_NOT_FOUND, "idle one is gone: not_found");
	ok(B->ops->get(B, fut.id, &g, &e) == 0, "future-marker one survives");
	sbx_sandbox_clear(&g);
	int gone;
	B->ops->remove(B, fut.id, &gone, &e);
	B->ops->remove(B, fresh.id, &gone, &e);
	sbx_sandbox_clear(&old);
	sbx_sandbox_clear(&fut);
	sbx_sandbox_clear(&fresh);
}

static void test_templates(void)
{
	struct sbx_err e = {0};
	char dir[] = "/tmp/sbx-unit-tpl.XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	char p[256];
	snprintf(p, sizeof(p), "%s/bin", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/hello", dir);
	FILE *f = fopen(p, "w");
	fputs("hi\n", f);
	fclose(f);
	char name[80];
	snprintf(name, sizeof(name), "sbx-unit/%s:v1", run_label);
	struct sbx_template t;
	int rc = B->ops->template_import(B, name, -1, dir, &t, &e);
	ok(rc == 0, "template_import from a folder (%s)", rc ? e.msg : "");
	if (rc == 0) {
		is_str(t.kind, "image", "kind image");
		free(t.id);
		free(t.name);
		free(t.kind);
	}
	is_int(in_templates(name), 1, "the import is listed");
	int gone;
	ok(B->ops->template_delete(B, name, &gone, &e) == 0 && !gone, "template_delete");
	ok(B->ops->template_delete(B, name, &gone, &e) == 0 && gone, "again: gone");
	ok(B->ops->template_import(B, "Bad Name", -1, dir, &t, &e) < 0 &&
	   e.kind == SBX_INVALID_REQUEST, "invalid names are refused");
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", dir);
}

int main(void)
{
	if (!daemon_ready()) {
		printf("ok 1 # SKIP no dockerd (DOCKER_HOST unset or unreachable, or no sbx/base:latest)\n1..1\n");
		return 0;
	}
	setenv("SBX_DOCKER_NO_SWEEP", "1", 1);   /* the sweep is tested explicitly */
	struct sbx_err e = {0};
	char st[] = "/tmp/sbx-unit-docker.XXXXXX";
	if (!mkdtemp(st))
		return 2;
	if (sbx_random_hex(run_label, 8, &e) < 0)
		return 2;
	struct sbx_profile *p = sbx_xcalloc(1, sizeof(*p));
	p->name = sbx_xstrdup("unit");
	p->backend = sbx_xstrdup("docker");
	p->state_dir = sbx_xstrdup(st);
	p->prefix = sbx_xstrdup("sbx");

	ok(sbx_backend_open(p, &B, &e) == 0, "open the docker backend");
	if (!B) {
		printf("# %s\n", e.msg);
		return tap_done();
	}
	ok(B->ops->health(B, &e) == 0, "health: /_ping");
	unsigned caps = B->ops->caps(B);
	ok((caps & (SBX_CAP_EXEC | SBX_CAP_FILES | SBX_CAP_SNAPSHOTS | SBX_CAP_IDLE_KILL |
		    SBX_CAP_INSTALL | SBX_CAP_LIST | SBX_CAP_METADATA)) ==
	   (SBX_CAP_EXEC | SBX_CAP_FILES | SBX_CAP_SNAPSHOTS | SBX_CAP_IDLE_KILL | SBX_CAP_INSTALL |
	    SBX_CAP_LIST | SBX_CAP_METADATA), "caps: exec files snapshots idle_kill install list metadata");
	ok(!(caps & SBX_CAP_TIMEOUT) && (caps & SBX_CAP_NETPOLICY),
	   "caps: no set_timeout; network_policy (the egress broker)");
	char fp[65];
	ok(B->ops->fingerprint(B, fp, &e) == 0, "fingerprint");
	is_str(fp, "1121950f2cb6299df091d9b000bcb04fac50e576e983fd61977db14e3e679046",
	       "fingerprint = sha256(\"docker\\n\\nlocal-daemon\")");

	struct sbx_sandbox sb = {0};
	ok(make(&sb, NULL, "unit.case", "main", 0) == 0, "create");
	ok(sb.id && strlen(sb.id) == 64, "the id is the full container id");
	ok(sb.state == SBX_STATE_RUNNING, "running");
	is_str(sbx_json_str(sb.metadata, "unit.case"), "main", "metadata from labels");
	ok(!sbx_json_str(sb.metadata, DOCKER_LABEL_TTL), "internal labels are not metadata");
	is_str(sb.backend, "docker", "backend name in the handle");

	struct sbx_create_req bad = {.template_id = "sbx/no-such-image:latest"};
	struct sbx_sandbox x = {0};
	ok(B->ops->create(B, &bad, &x, &e) < 0 && e.kind == SBX_INVALID_REQUEST,
	   "a missing template is invalid_request (%s)", e.msg);
	struct sbx_create_req net = {.net.allow_internet = 1};
	/* Egress needs no bridge network: the broker is the way out. */
	ok(B->ops->create(B, &net, &x, &e) == 0 && x.id, "egress without a bridge network (%s)", e.msg);
	if (x.id) {
		int gone = 0;
		ok(B->ops->remove(B, x.id, &gone, &e) == 0, "remove the egress sandbox");
		sbx_sandbox_clear(&x);
		memset(&x, 0, sizeof(x));
	}
	struct sbx_create_req pz = {.timeout = {.seconds = 60, .on_timeout_pause = 1}};
	ok(B->ops->create(B, &pz, &x, &e) < 0 && e.kind == SBX_UNSUPPORTED,
	   "pause-on-idle: unsupported (idle policy is kill)");

	test_exec(&sb);
	test_files(&sb);
	test_pause(&sb);

	struct sbx_list_filter f = {.metadata = json_object_new_object()};
	json_object_object_add(f.metadata, "unit.run", json_object_new_string(run_label));
	json_object_object_add(f.metadata, "unit.case", json_object_new_string("main"));
	struct sbx_page pg = {0};
	ok(B->ops->list(B, &f, NULL, &pg, &e) == 0 && pg.n == 1 && !strcmp(pg.items[0].id, sb.id),
	   "list by labels finds exactly this sandbox");
	sbx_page_clear(&pg);
	f.states = 1u << SBX_STATE_PAUSED;
	ok(B->ops->list(B, &f, NULL, &pg, &e) == 0 && pg.n == 0, "state filter: none paused");
	sbx_page_clear(&pg);
	json_object_put(f.metadata);

	test_snapshots(&sb);
	test_idle();
	test_templates();

	int gone = -1;
	ok(B->ops->remove(B, sb.id, &gone, &e) == 0 && gone == 0, "remove");
	ok(B->ops->remove(B, sb.id, &gone, &e) == 0 && gone == 1, "remove again: gone, no error");
	struct sbx_sandbox g = {0};
	ok(B->ops->get(B, sb.id, &g, &e) < 0 && e.kind == SBX_NOT_FOUND, "get after remove: not_found");
	struct sbx_exec_result r;
	ok(sh(&sb, 0, "true", &r) < 0, "exec after remove fails");
	sbx_sandbox_clear(&sb);

	/* Whatever a failed assertion left behind. */
	f.metadata = json_object_new_object();
	json_object_object_add(f.metadata, "unit.run", json_object_new_string(run_label));
	f.states = 0;
	if (B->ops->list(B, &f, NULL, &pg, &e) == 0) {
		for (size_t i = 0; i < pg.n; i++)
			B->ops->remove(B, pg.items[i].id, &gone, &e);
		sbx_page_clear(&pg);
	}
	json_object_put(f.metadata);
	sbx_backend_close(B);
	sbx_profile_free(p);
	sbx_rm_rf(st, &e);
	return tap_done();
}
