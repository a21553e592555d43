/* docker-proc.c - detached processes in a Docker sandbox: an in-container
 * supervisor, a small shell started through exec.
 *
 * Each process has a record directory /run/sbx-procs/p-XXXXXX in the
 * container (the parent root's, mode 1777; each record 0700 and owned by
 * the process's user): proc.json (what was asked, env names only, written
 * by us), pid, sup (the supervisor's pid), out, err, stdin (a FIFO, with
 * --stdin), hold (the pid of the process that holds the FIFO's write end
 * open between inputs), stdin.closed (made by the input exec, which then
 * kills the holder: the process reads EOF), timed_out, exit.  The
 * supervisor takes no signal: a trap would interrupt its wait, and a
 * status read after the interruption can be lost (stop 42's CI: exit 138
 * for a cat that ended 0).  The start exec forks the
 * supervisor (setsid, its stdio away from the exec's streams, so the exec
 * returns at once) and waits on a FIFO for the process's pid; the
 * supervisor runs the command in its own session, waits for it and writes
 * its exit status.  Everything else is one exec as root that reads or
 * signals the record; permissions (uid 1000 acts on its own processes
 * only) are checked here, on the recorded user.
 *
 * Weaker than the local backend, and said so in sbx-proc(1): the records
 * live inside the container, so its root (and a process's own user, for
 * that process's record) can change them; output is not bounded; a shell
 * reports death by signal N as status 128+N, which is read back as the
 * signal; every call is an exec, so a paused container is resumed by
 * list and output too - except by a follower: once it follows, a pause is
 * waited out without an exec (await_thaw) and the stream goes on after
 * the resume. */
#include "docker-proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker-container.h"
#include "docker-egress.h"
#include "docker-exec.h"
#include "docker-gate.h"
#include "doc.h"
#include "proc.h"
#include "spool.h"
#include "util.h"

#define ROOT DOCKER_PROC_ROOT
#define READ_CAP (1u << 20)
#define FOLLOW_MS 200
#define INPUT_TIMEOUT_MS 10000

/* As the process's user, with its env: make the record, fork the
 * supervisor, print "PID TOKEN".  $1: the cwd (exit 124 when it is not
 * there); $2: "s" (stdin) or "-"; $3: the timeout in seconds (0: none);
 * then the command.  stdin: proc.json. */
static const char start_script[] =
	"cd \"$1\" 2>/dev/null || exit 124\n"
	"shift\n"
	"d=$(mktemp -d " ROOT "/p-XXXXXX) || exit 125\n"
	"cat >\"$d/proc.json\" && mkfifo \"$d/pidpipe\" || exit 125\n"
	"if [ \"$1\" = s ]; then mkfifo \"$d/stdin\" || exit 125; fi\n"
	"t=$2; shift 2\n"
	"setsid sh -c '\n"
	"d=$1; t=$2; shift 2\n"
	"echo $$ >\"$d/sup\"\n"
	"h=; i=/dev/null\n"
	"if [ -p \"$d/stdin\" ]; then sleep 2147483647 3<>\"$d/stdin\" </dev/null & h=$!; "
	"echo $h >\"$d/hold\"; i=$d/stdin; fi\n"
	"read u0 _ </proc/uptime\n"
	"setsid \"$@\" <\"$i\" >\"$d/out\" 2>\"$d/err\" 3<&- &\n"
	"c=$!\n"
	"echo $c >\"$d/pid\"\n"
	"k=\n"
	"if [ \"$t\" -gt 0 ]; then setsid sh -c '\\''sleep \"$1\"; : >\"$3/timed_out\"; "
	"kill -KILL -- \"-$2\"'\\'' sbx-timeout \"$t\" \"$c\" \"$d\" 3<&- & k=$!; fi\n"
	"echo $c >\"$d/pidpipe\"\n"
	"wait $c; st=$?\n"
	"[ -z \"$k\" ] || kill -KILL -- \"-$k\" 2>/dev/null\n"
	"[ -z \"$h\" ] || [ -e \"$d/stdin.closed\" ] || kill $h 2>/dev/null\n"
	"read u1 _ </proc/uptime; echo \"$u0 $u1\" >\"$d/times\"\n"
	"echo $st >\"$d/exit.t\" && mv \"$d/exit.t\" \"$d/exit\"\n"
	/* the end is activity, as local's (the idle clock starts again) */
	"touch " DOCKER_MARKER " 2>/dev/null\n"
	"' sbx-procd \"$d\" \"$t\" \"$@\" </dev/null >/dev/null 2>&1 &\n"
	"read c <\"$d/pidpipe\"; rm -f \"$d/pidpipe\"\n"
	"echo \"$c ${d##*/}\"\n";

/* As root: for each record token "$@" of the host's pending list, its
 * end "@@ TOKEN PID EXIT TIMEDOUT U0 U1" (U*: /proc/uptime at its start
 * and end) once it ended, "R TOKEN" while it runs, "G TOKEN" when the
 * record is gone. */
static const char ends_script[] =
	"for t; do d=" ROOT "/$t; if [ ! -d \"$d\" ]; then echo \"G $t\"; "
	"elif [ ! -s \"$d/exit\" ]; then echo \"R $t\"; "
	"else printf '@@ %s %s %s %s %s\\n' \"$t\" \"$(cat \"$d/pid\")\" \"$(cat \"$d/exit\")\" "
	"\"$([ -e \"$d/timed_out\" ] && echo t || echo -)\" \"$(cat \"$d/times\" 2>/dev/null || echo '- -')\"; fi; done";

/* As root: the record root, made once, a real directory of root's. */
static const char root_script[] =
	"[ -d " ROOT " ] && [ ! -L " ROOT " ] || { rm -f " ROOT "; mkdir -p -m 1777 " ROOT "; } "
	"&& chown 0:0 " ROOT " && chmod 1777 " ROOT;

/* As root: every record, "@@ TOKEN PID EXIT OUTLEN ERRLEN STDIN TIMEDOUT"
 * then its proc.json on one line. */
static const char list_script[] =
	"for d in " ROOT "/p-*; do [ -s \"$d/pid\" ] && [ -s \"$d/proc.json\" ] || continue\n"
	"printf '@@ %s %s %s %s %s %s %s\\n' \"${d##*/}\" \"$(cat \"$d/pid\")\" "
	"\"$(cat \"$d/exit\" 2>/dev/null || echo -)\" \"$(wc -c <\"$d/out\" 2>/dev/null || echo 0)\" "
	"\"$(wc -c <\"$d/err\" 2>/dev/null || echo 0)\" "
	"\"$([ -e \"$d/stdin.closed\" ] && echo c || echo o)\" \"$([ -e \"$d/timed_out\" ] && echo t || echo -)\"\n"
	"head -n 1 \"$d/proc.json\"; echo; done\n";

/* As root: "$1"'s stream "$2" from byte offset "$3", at most "$4" bytes,
 * after a line with their count. */
static const char read_script[] =
	"f=" ROOT "/$1/$2; s=$(wc -c <\"$f\") || exit 1; n=$((s - $3)); [ $n -gt $4 ] && n=$4; "
	"[ $n -lt 0 ] && n=0; echo $n; [ $n -eq 0 ] || tail -c +$(($3 + 1)) \"$f\" | head -c $n";

struct drec {
	struct sbx_proc_info i;
	char token[16];
	int keep_stdin;
};

static void drecs_free(struct drec *r, size_t n)
{
	for (size_t k = 0; r && k < n; k++)
		sbx_proc_info_clear(&r[k].i);
	free(r);
}

/* One "@@" line and its proc.json into r; 0, or -1 when malformed. */
static int parse_rec(const char *head, const char *js, struct drec *r)
{
	char token[16], ex[16], in[4], to[4];
	long long pid, olen, elen;
	if (sscanf(head, "@@ %15s %lld %15s %lld %lld %3s %3s", token, &pid, ex, &olen, &elen, in,
		   to) != 7)
		return -1;
	json_object *j = json_tokener_parse(js);
	if (!j)
		return -1;
	memset(r, 0, sizeof(*r));
	snprintf(r->token, sizeof(r->token), "%s", token);
	struct sbx_proc_info *i = &r->i;
	i->pid = (int)pid;
	sbx_proc_from_record(j, i, &r->keep_stdin);
	json_object_put(j);
	i->running = strcmp(ex, "-") == 0;
	if (!i->running) {
		int st = atoi(ex);
		i->timed_out = to[0] == 't';
		/* The shell's 128+N for death by signal N. */
		if (st > 128 && st < 128 + NSIG) {
			i->exit_code = -1;
			i->signal = st - 128;
		} else {
			i->exit_code = st;
		}
	}
	i->out_end = olen;
	i->err_end = elen;
	i->stdin_open = r->keep_stdin && i->running && in[0] == 'o';
	return 0;
}

static int list_all(struct sbx_backend *b, struct sbx_sandbox *sb, struct drec **out, size_t *n,
		    struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	struct sbx_exec_result res;
	if (docker_sh(b, sb, 1, list_script, NULL, NULL, 0, -1, 16u << 20, &res, "proc", err) < 0)
		return -1;
	size_t cap = 0;
	char *save = NULL;
	for (char *l = strtok_r(res.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "@@ ", 3) != 0)
			continue;
		char *js = strtok_r(NULL, "\n", &save);
		struct drec r;
		if (!js || parse_rec(l, js, &r) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = sbx_xrealloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = r;
	}
	sbx_exec_result_clear(&res);
	return 0;
}

/* The record `sel` names (by pid; by tag the running one, else the
 * latest): not_found when none. */
static int find(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_proc_sel *sel,
		struct drec *out, struct sbx_err *err)
{
	struct drec *all;
	size_t n;
	if (list_all(b, sb, &all, &n, err) < 0)
		return -1;
	ssize_t pick = -1;
	for (size_t k = 0; k < n; k++) {
		int match = sel->pid > 0 ? all[k].i.pid == sel->pid
			    : sel->tag && all[k].i.tag && strcmp(all[k].i.tag, sel->tag) == 0;
		if (match && (pick < 0 || all[k].i.running || !all[pick].i.running ||
			      all[k].i.started_at > all[pick].i.started_at))
			pick = (ssize_t)k;
	}
	if (pick >= 0) {
		*out = all[pick];
		memset(&all[pick], 0, sizeof(all[pick]));
	}
	drecs_free(all, n);
	if (pick >= 0)
		return 0;
	if (sel->pid > 0)
		return sbx_fail(err, SBX_NOT_FOUND, "proc", "no process %d", sel->pid);
	return sbx_fail(err, SBX_NOT_FOUND, "proc", "no process tagged %s",
			sel->tag ? sel->tag : "");
}

int docker_proc_list(struct sbx_backend *b, struct sbx_sandbox *sb,
		     struct sbx_proc_info **out, size_t *n, struct sbx_err *err)
{
	struct drec *all;
	if (list_all(b, sb, &all, n, err) < 0)
		return -1;
	*out = sbx_xcalloc(*n + 1, sizeof(**out));
	for (size_t k = 0; k < *n; k++) {
		(*out)[k] = all[k].i;
		memset(&all[k].i, 0, sizeof(all[k].i));
	}
	drecs_free(all, *n);
	return 0;
}

/* A tag held by a running process is refused (not atomic across two
 * concurrent starts: the engine has no lock to take). */
static int tag_free(struct sbx_backend *b, struct sbx_sandbox *sb, const char *tag,
		    struct sbx_err *err)
{
	if (!tag)
		return 0;
	struct drec r;
	struct sbx_proc_sel sel = {.tag = tag};
	struct sbx_err e2 = {0};
	if (find(b, sb, &sel, &r, &e2) < 0)
		return e2.kind == SBX_NOT_FOUND ? 0 : (*err = e2, -1);
	int running = r.i.running, pid = r.i.pid;
	sbx_proc_info_clear(&r.i);
	return running ? sbx_fail(err, SBX_CONFLICT, "proc", "tag %s is taken by process %d", tag, pid)
		       : 0;
}

/* ---- the end of a process, for the session record ---- */

/* The host's list of the container's records whose end is not yet in the
 * audit spool (docker_proc_audit_collect): <audit dir>/procs.pending, one
 * token a line, under its own flock.  Made with the spool's audit.json
 * when the sandbox has none yet (no network policy: no broker made it). */
#define PENDING "procs.pending"

static int pending_open(const char *dir)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/" PENDING, dir);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void pending_add(struct sbx_backend *b, const char *id, const char *token)
{
	SBX_AUTOFREE char *dir = docker_egress_audit_dir(b, id);
	struct sbx_err e = {0};
	if (!b->profile || b->profile->audit_maxlen == 0 || !dir || sbx_mkdir_p(dir, 0700, &e) < 0)
		return;
	if (sbx_spool_conf_max(dir) == 0 &&
	    sbx_spool_conf_write(dir, b->profile->audit_maxlen, b->profile->audit_required, &e) < 0)
		return;
	int fd = pending_open(dir);
	if (fd < 0)
		return;
	lseek(fd, 0, SEEK_END);
	char line[32];
	int n = snprintf(line, sizeof(line), "%s\n", token);
	(void)!sbx_write_all(fd, line, (size_t)n);
	close(fd);
}

/* One "@@" line of ends_script as the spool's record (audit.h: kind
 * process, event end), appended to text. */
static void end_line(const char *l, char **text, size_t *len)
{
	char token[16], ex[16], to[4], u0[32], u1[32];
	long long pid;
	if (sscanf(l, "@@ %15s %lld %15s %3s %31s %31s", token, &pid, ex, to, u0, u1) != 6)
		return;
	int st = atoi(ex), code = st, sig = 0;
	if (st > 128 && st < 128 + NSIG)
		code = -1, sig = st - 128;      /* the shell's 128+N */
	char dur[48] = "";
	if (strcmp(u0, "-") != 0)       /* an older supervisor's record has no times */
		snprintf(dur, sizeof(dur), ",\"duration_ms\":%lld",
			 (long long)((strtod(u1, NULL) - strtod(u0, NULL)) * 1000.0 + 0.5));
	char *add = sbx_xasprintf("{\"kind\":\"process\",\"by\":\"sbx-procd\",\"data\":{\"event\":\"end\","
				  "\"pid\":%lld,\"exit_code\":%d,\"signal\":%d,\"timed_out\":%s%s}}\n",
				  pid, code, sig, to[0] == 't' ? "true" : "false", dur);
	size_t n = strlen(add);
	*text = sbx_xrealloc(*text, *len + n + 1);
	memcpy(*text + *len, add, n + 1);
	*len += n;
	free(add);
}

int docker_proc_audit_collect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	SBX_AUTOFREE char *dir = sb->id ? docker_egress_audit_dir(b, sb->id) : NULL;
	SBX_AUTOFREE char *path = dir ? sbx_xasprintf("%s/" PENDING, dir) : NULL;
	struct stat st;
	/* The common case, and a paused container (an exec would resume it):
	 * nothing to do until it runs again. */
	if (!path || stat(path, &st) < 0 || st.st_size == 0 || sb->state == SBX_STATE_PAUSED)
		return 0;
	SBX_AUTOCLOSE int fd = pending_open(dir);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "audit", "lock %s", path);
	SBX_AUTOFREE char *list = NULL;
	size_t len;
	if (sbx_read_file(path, 1 << 20, &list, &len, err) < 0)
		return -1;
	const char *args[256];
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(list, "\n", &save); t && n + 1 < SBX_ARRAY_LEN(args);
	     t = strtok_r(NULL, "\n", &save))
		if (*t)
			args[n++] = t;
	args[n] = NULL;
	if (n == 0)
		return 0;
	struct sbx_exec_result res;
	if (docker_sh(b, sb, 1, ends_script, args, NULL, 0, -1, 1 << 20, &res, "audit", err) < 0)
		return -1;
	SBX_AUTOFREE char *text = NULL, *keep = sbx_xstrdup("");
	size_t tlen = 0, klen = 0;
	save = NULL;
	for (char *l = strtok_r(res.out ? res.out : (char *)"", "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "@@ ", 3)) {
			end_line(l, &text, &tlen);
		} else if (!strncmp(l, "R ", 2)) {
			keep = sbx_xrealloc(keep, klen + strlen(l + 2) + 2);
			klen += (size_t)sprintf(keep + klen, "%s\n", l + 2);
		}
	}
	sbx_exec_result_clear(&res);
	/* Spooled first, then forgotten: a crash between writes the ends
	 * again (at least once, as the spool's takers). */
	int64_t size, max = sbx_spool_conf_max(dir);
	long put = tlen ? sbx_spool_append(dir, text, tlen, max, &size) : 0;
	if (put < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "audit", "append to the spool in %s", dir);
	unsigned long lost = 0;
	for (size_t i = (size_t)put; i < tlen; i++)
		lost += text[i] == '\n';
	if (lost) {     /* a full spool: counted as the broker counts (audit.h) */
		char line[96];
		int k = snprintf(line, sizeof(line), "{\"kind\":\"dropped\",\"data\":{\"count\":%lu}}\n", lost);
		sbx_spool_append(dir, line, (size_t)k, max + 1024, &size);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, keep, klen, 0) != (ssize_t)klen)
		return sbx_fail_errno(err, SBX_INTERNAL, "audit", "rewrite %s", path);
	return 0;
}

int docker_proc_start(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_req *req, struct sbx_proc_info *out,
		      struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (req->tty)
		return sbx_fail(err, SBX_UNSUPPORTED, "proc",
				"detached terminals are not supported on the docker backend");
	if (!req->argv || !req->argv[0] || !req->argv[0][0])
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "no command to run");
	const char *cwd = req->cwd && *req->cwd ? req->cwd : "/workspace";
	if (cwd[0] != '/' || (req->tag && (!*req->tag || strlen(req->tag) > 256)))
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "cwd must be absolute, a tag 1 to 256 bytes");
	struct sbx_exec_result res;
	if (docker_sh(b, sb, 1, root_script, NULL, NULL, 0, -1, 0, &res, "proc", err) < 0)
		return -1;
	sbx_exec_result_clear(&res);
	if (tag_free(b, sb, req->tag, err) < 0)
		return -1;
	size_t n = 0;
	while (req->argv[n])
		n++;
	char secs[24];
	snprintf(secs, sizeof(secs), "%lld", (long long)((req->timeout_ms + 999) / 1000));
	SBX_AUTOFREE char **argv = sbx_xcalloc(n + 8, sizeof(char *));
	const char *fixed[] = {"/bin/sh", "-c", start_script, "sbx-proc", cwd,
			       req->keep_stdin ? "s" : "-", secs};
	for (size_t k = 0; k < SBX_ARRAY_LEN(fixed); k++)
		argv[k] = (char *)fixed[k];
	for (size_t k = 0; k < n; k++)
		argv[SBX_ARRAY_LEN(fixed) + k] = req->argv[k];
	json_object *j = sbx_proc_record(req);
	const char *js = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	struct sbx_exec_req x = {.argv = argv, .env = req->env, .cwd = "/", .as_root = req->as_root,
				 .stdin_data = js, .stdin_len = strlen(js), .timeout_ms = 30000,
				 .raw_out_fd = -1, .raw_err_fd = -1, .raw_in_fd = -1};
	int rc = docker_exec(b, sb, &x, &res, err);
	json_object_put(j);
	if (rc < 0)
		return -1;
	int pid = 0;
	if (res.exit_code == 124)
		rc = sbx_fail(err, SBX_INVALID_REQUEST, "proc", "cwd %s: No such file or directory", cwd);
	else if (res.exit_code != 0 || sscanf(res.out ? res.out : "", "%d", &pid) != 1 || pid <= 0)
		rc = sbx_fail(err, SBX_INTERNAL, "proc", "the process supervisor did not start (exit %d%s%s)",
			      res.exit_code, res.err && *res.err ? ": " : "", res.err ? sbx_trim(res.err) : "");
	sbx_exec_result_clear(&res);
	if (rc < 0)
		return -1;
	struct sbx_proc_sel sel = {.pid = pid};
	struct drec r;
	if (find(b, sb, &sel, &r, err) < 0)
		return -1;
	pending_add(b, sb->id, r.token);
	*out = r.i;
	return 0;
}

int docker_proc_signal(struct sbx_backend *b, struct sbx_sandbox *sb,
		       const struct sbx_proc_sel *sel, int sig, int as_root, struct sbx_err *err)
{
	if (sig <= 0 || sig >= NSIG)
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "no signal %d", sig);
	struct drec r;
	if (find(b, sb, sel, &r, err) < 0)
		return -1;
	int rc = sbx_proc_may_act(&r.i, as_root, "signal", err);
	if (rc == 0 && r.i.running) {
		/* Running: the supervisor has not reaped it, so the pid is
		 * still this process. */
		char num[16], pid[16];
		snprintf(num, sizeof(num), "%d", sig);
		snprintf(pid, sizeof(pid), "%d", r.i.pid);
		const char *args[] = {num, pid, r.token, NULL};
		struct sbx_exec_result res;
		rc = docker_sh(b, sb, 1, "[ -e " ROOT "/$3/exit ] || kill -s $1 $2 2>/dev/null || "
			       "[ -e " ROOT "/$3/exit ]", args, NULL, 0, -1, 0, &res, "proc", err);
		if (rc == 0)
			sbx_exec_result_clear(&res);
	}
	sbx_proc_info_clear(&r.i);
	return rc;
}

int docker_proc_input(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, const void *data, size_t len,
		      int close_stdin, int as_root, struct sbx_err *err)
{
	struct drec r;
	if (find(b, sb, sel, &r, err) < 0)
		return -1;
	int rc = sbx_proc_may_act(&r.i, as_root, "write to", err);
	if (rc == 0 && !r.keep_stdin)
		rc = sbx_fail(err, SBX_CONFLICT, "proc", "process %d was started without stdin", r.i.pid);
	else if (rc == 0 && !r.i.stdin_open)
		rc = sbx_fail(err, SBX_CONFLICT, "proc", "the stdin of process %d is closed%s", r.i.pid,
			      r.i.running ? "" : " (it exited)");
	const char *args[] = {r.token, close_stdin ? "c" : "-", NULL};
	static const char script[] =
		"d=" ROOT "/$1; cat >\"$d/stdin\" || exit 1; [ \"$2\" = c ] || exit 0; "
		": >\"$d/stdin.closed\"; kill \"$(cat \"$d/hold\")\" 2>/dev/null; exit 0";
	if (rc == 0) {
		char *argv[] = {"/bin/sh", "-c", (char *)script, "sbx-proc", (char *)args[0],
				(char *)args[1], NULL};
		struct sbx_exec_req x = {.argv = argv, .cwd = "/", .as_root = 1,
					 .stdin_data = len ? data : "", .stdin_len = len,
					 .timeout_ms = INPUT_TIMEOUT_MS, .raw_out_fd = -1,
					 .raw_err_fd = -1, .raw_in_fd = -1};
		struct sbx_exec_result res;
		rc = docker_exec(b, sb, &x, &res, err);
		if (rc == 0 && res.timed_out)
			rc = sbx_fail(err, SBX_TIMEOUT, "proc", "process %d does not read its stdin",
				      r.i.pid);
		else if (rc == 0 && res.exit_code != 0)
			rc = sbx_fail(err, SBX_CONFLICT, "proc", "process %d no longer reads its stdin",
				      r.i.pid);
		if (rc == 0 || res.out)
			sbx_exec_result_clear(&res);
	}
	sbx_proc_info_clear(&r.i);
	return rc;
}

/* Read stream `name` of record `token` from *off (at most READ_CAP) and
 * feed it to the sink.  1 when something came, 0 when nothing, -1 on
 * error; *stop when the sink said stop. */
static int read_stream(struct sbx_backend *b, struct sbx_sandbox *sb, const char *token,
		       int k, int64_t *off, sbx_proc_sink sink, void *ctx, int *stop,
		       struct sbx_err *err)
{
	char o[24], cap[24];
	snprintf(o, sizeof(o), "%lld", (long long)*off);
	snprintf(cap, sizeof(cap), "%u", READ_CAP);
	const char *args[] = {token, k == 0 ? "out" : "err", o, cap, NULL};
	struct sbx_exec_result res;
	if (docker_sh(b, sb, 1, read_script, args, NULL, 0, -1, READ_CAP + 64, &res, "proc", err) < 0)
		return -1;
	char *nl = res.out ? memchr(res.out, '\n', res.out_len) : NULL;
	long long n = nl ? atoll(res.out) : 0;
	size_t have = nl ? res.out_len - (size_t)(nl + 1 - res.out) : 0;
	if (n > (long long)have)
		n = (long long)have;
	int got = 0;
	if (n > 0) {
		if (sink(ctx, k == 0 ? SBX_PROC_STDOUT : SBX_PROC_STDERR, nl + 1, (size_t)n, *off) != 0)
			*stop = 1;
		*off += n;
		got = 1;
	}
	sbx_exec_result_clear(&res);
	return got;
}

/* Following, and the container is paused: wait for the resume without an
 * exec (one would resume the sandbox on use, or fail with conflict),
 * ticking as usual.  Returns 0 once it is not paused, with the gate held
 * shared so that no pause lands before the next round's execs have
 * started (the caller leaves it); -1 on error, or on *stop by the sink. */
static int await_thaw(struct sbx_backend *b, const char *id, const struct sbx_proc_attach *a,
		      sbx_proc_sink sink, void *ctx, int64_t *quiet_since, int *stop,
		      struct sbx_err *err)
{
	for (;;) {
		if (docker_gate_enter(b, id, 0, DOCKER_GATE_PAUSE_WAIT_MS * 4, err) < 0)
			return -1;
		json_object *j;
		if (docker_inspect(b, id, "proc", &j, err) < 0) {
			docker_gate_leave(id);
			return -1;
		}
		const char *st = docker_inspect_status(j);
		int paused = st && !strcmp(st, "paused");
		json_object_put(j);
		if (!paused)
			return 0;
		docker_gate_leave(id);
		if (a->tick_ms > 0 && sbx_mono_ms() - *quiet_since >= a->tick_ms) {
			if (sink(ctx, SBX_PROC_TICK, NULL, 0, 0) != 0) {
				*stop = 1;
				return -1;
			}
			*quiet_since = sbx_mono_ms();
		}
		sbx_sleep_ms(FOLLOW_MS);
	}
}

int docker_proc_output(struct sbx_backend *b, struct sbx_sandbox *sb,
		       const struct sbx_proc_sel *sel, const struct sbx_proc_attach *a,
		       sbx_proc_sink sink, void *ctx, struct sbx_proc_info *end,
		       struct sbx_err *err)
{
	memset(end, 0, sizeof(*end));
	struct drec r;
	if (find(b, sb, sel, &r, err) < 0)
		return -1;
	int64_t off[2] = {a->out_offset < 0 || a->out_offset > r.i.out_end ? r.i.out_end : a->out_offset,
			  a->err_offset < 0 || a->err_offset > r.i.err_end ? r.i.err_end : a->err_offset};
	struct sbx_proc_sel by_pid = {.pid = r.i.pid};
	SBX_AUTOFREE char *full = a->follow ? docker_full_id(b, sb->id, "proc", err) : NULL;
	if (a->follow && !full) {
		sbx_proc_info_clear(&r.i);
		return -1;
	}
	int stop = 0, rc = 0, gated = 0;
	int64_t quiet_since = sbx_mono_ms();
	for (;;) {
		int running = r.i.running, got = 0;
		for (int k = 0; rc == 0 && k < 2 && !stop; k++) {
			int g = read_stream(b, sb, r.token, k, &off[k], sink, ctx, &stop, err);
			rc = g < 0 ? -1 : 0;
			got |= g > 0;
		}
		if (gated)
			docker_gate_leave(full);
		gated = 0;
		if (rc < 0 || stop || !a->follow || (!running && !got))
			break;
		if (got)
			quiet_since = sbx_mono_ms();
		else if (a->tick_ms > 0 && sbx_mono_ms() - quiet_since >= a->tick_ms) {
			if (sink(ctx, SBX_PROC_TICK, NULL, 0, 0) != 0)
				break;
			quiet_since = sbx_mono_ms();
		}
		if (!got)
			sbx_sleep_ms(FOLLOW_MS);
		sbx_proc_info_clear(&r.i);
		/* A pause while we follow is waited out: the stream goes on
		 * after the resume. */
		if (await_thaw(b, full, a, sink, ctx, &quiet_since, &stop, err) < 0) {
			memset(&r, 0, sizeof(r));
			rc = stop ? 0 : -1;
			break;
		}
		gated = 1;
		if (find(b, sb, &by_pid, &r, err) < 0) {
			docker_gate_leave(full);
			memset(&r, 0, sizeof(r));
			rc = -1;
			break;
		}
	}
	if (rc == 0) {
		*end = r.i;
		return 0;
	}
	sbx_proc_info_clear(&r.i);
	return -1;
}
