/* The document shapes of the library (issue 27): each value type's one
 * JSON form, as every program writes it.  Each case renders a value and
 * compares the whole document text, so a field that is renamed, dropped,
 * added or reordered fails here before any man page or script sees it;
 * and each checks the rules the shapes share: unknown fields left out,
 * bytes from a sandbox as "<key>_base64" when not UTF-8, and keys already
 * in the target object replaced, not duplicated. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "binding.h"
#include "doc.h"
#include "proc.h"
#include "tap.h"

#define T0 1700000000     /* 2023-11-14T22:13:20Z */

/* The whole text of `o` (then freed) against `want`. */
static void is_doc(json_object *o, const char *want, const char *name)
{
	is_str(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), want, "%s", name);
	json_object_put(o);
}

static void test_dirent(void)
{
	struct sbx_dirent e = {.name = "a.txt", .path = "/workspace/a.txt", .type = SBX_FT_FILE,
			       .size = 5, .mtime = T0, .mode = 0644, .uid = 1000, .gid = 1000};
	json_object *o = json_object_new_object();
	sbx_dirent_json(&e, o);
	is_doc(o, "{\"name\":\"a.txt\",\"path\":\"/workspace/a.txt\",\"type\":\"file\",\"size\":5,"
		  "\"mtime\":\"2023-11-14T22:13:20Z\",\"mode\":\"0644\",\"uid\":1000,\"gid\":1000}",
	       "dirent: a file, no link_target");

	/* Names from inside the sandbox may be any bytes but NUL. */
	struct sbx_dirent l = {.name = "l\377", .path = "/w/l\377", .type = SBX_FT_SYMLINK,
			       .mtime = 0, .mode = 0777, .link_target = "t\377"};
	o = json_object_new_object();
	sbx_dirent_json(&l, o);
	is_doc(o, "{\"name_base64\":\"bP8=\",\"path_base64\":\"L3cvbP8=\",\"type\":\"symlink\","
		  "\"size\":0,\"mtime\":\"1970-01-01T00:00:00Z\",\"mode\":\"0777\",\"uid\":0,"
		  "\"gid\":0,\"link_target_base64\":\"dP8=\"}",
	       "dirent: a symlink; names that are not UTF-8 in base64");

	/* stat adds the shape to its result object: a key already there is replaced. */
	o = json_object_new_object();
	sbx_json_set_str(o, "op", "stat");
	sbx_json_set_str(o, "path", "/workspace/./a.txt");
	sbx_dirent_json(&e, o);
	is_str(sbx_json_str(o, "path"), "/workspace/a.txt", "dirent: replaces a key of the result");
	is_str(sbx_json_str(o, "op"), "stat", "dirent: keeps the result's own keys");
	json_object_put(o);
}

static void test_snapshot(void)
{
	struct sbx_snapshot_ref r = {.id = "snap-1", .name = "pdf-v3", .parent = "busybox",
				     .created_at = T0, .size_bytes = 1048576, .layers = 2};
	json_object *o = json_object_new_object();
	sbx_snapshot_ref_json(&r, o);
	is_doc(o, "{\"id\":\"snap-1\",\"name\":\"pdf-v3\",\"parent\":\"busybox\",\"layers\":2,"
		  "\"size_bytes\":1048576,\"created_at\":\"2023-11-14T22:13:20Z\"}",
	       "snapshot: every field");

	struct sbx_snapshot_ref u = {.id = "snap-2", .size_bytes = -1, .layers = -1};
	o = json_object_new_object();
	sbx_snapshot_ref_json(&u, o);
	is_doc(o, "{\"id\":\"snap-2\",\"name\":\"snap-2\"}",
	       "snapshot: unknown fields left out, the name is the id");

	o = json_object_new_object();
	sbx_json_set_str(o, "snapshot_id", "snap-1");
	sbx_snapshot_size_json(&r, o);
	is_doc(o, "{\"snapshot_id\":\"snap-1\",\"layers\":2,\"size_bytes\":1048576}",
	       "snapshot: the size part alone");
	o = json_object_new_object();
	sbx_snapshot_size_json(&u, o);
	is_doc(o, "{}", "snapshot: sizes unknown, nothing");
}

static void test_template(void)
{
	struct sbx_template t = {.id = "busybox", .name = "busybox", .kind = "rootfs",
				 .created_at = T0, .size_bytes = 123};
	json_object *o = json_object_new_object();
	sbx_template_json(&t, "local", o);
	is_doc(o, "{\"id\":\"busybox\",\"name\":\"busybox\",\"kind\":\"rootfs\",\"backend\":\"local\","
		  "\"created_at\":\"2023-11-14T22:13:20Z\",\"size_bytes\":123}",
	       "template: every field");
	struct sbx_template h = {.id = "host", .size_bytes = -1};
	o = json_object_new_object();
	sbx_template_json(&h, "local", o);
	is_doc(o, "{\"id\":\"host\",\"name\":\"host\",\"kind\":\"unknown\",\"backend\":\"local\"}",
	       "template: unknown fields left out, kind unknown, the name is the id");
}

static void test_proc(void)
{
	char *argv[] = {"sleep", "9", NULL}, *env[] = {"TOKEN", NULL};
	struct sbx_proc_info p = {.pid = 7, .argv = argv, .env = env, .tag = "srv", .running = 1,
				  .stdin_open = 1, .started_at = 1700000000123LL, .out_end = 10,
				  .err_end = 2, .out_start = 0, .err_start = 0};
	json_object *o = json_object_new_object();
	sbx_proc_info_json(&p, o);
	is_doc(o, "{\"pid\":7,\"argv\":[\"sleep\",\"9\"],\"env\":[\"TOKEN\"],\"cwd\":\"/workspace\","
		  "\"tag\":\"srv\",\"as_root\":false,\"running\":true,\"stdin_open\":true,"
		  "\"started_at_ms\":1700000000123,\"stdout_end\":10,\"stderr_end\":2,"
		  "\"stdout_start\":0,\"stderr_start\":0}",
	       "proc: running, with a tag; no exit fields");
	struct sbx_proc_info x = {.pid = 8, .cwd = "/tmp", .as_root = 1, .exit_code = -1,
				  .signal = 9, .timed_out = 1, .started_at = 1, .ended_at = 2};
	o = json_object_new_object();
	sbx_proc_info_json(&x, o);
	is_doc(o, "{\"pid\":8,\"argv\":[],\"env\":[],\"cwd\":\"/tmp\",\"as_root\":true,"
		  "\"running\":false,\"exit_code\":-1,\"signal\":9,\"timed_out\":true,"
		  "\"ended_at_ms\":2,\"stdin_open\":false,\"started_at_ms\":1,\"stdout_end\":0,"
		  "\"stderr_end\":0,\"stdout_start\":0,\"stderr_start\":0}",
	       "proc: exited by its timeout; no tag");
}

static void test_binding(void)
{
	struct sbx_binding b = {.version = 1, .backend = "local", .tenant = "acme", .session = "s42",
				.sandbox_id = "sb-1", .template_id = "host", .profile = "default",
				.created_at = T0, .fence = 3};
	json_object *o = json_object_new_object();
	sbx_binding_json(&b, o);
	is_doc(o, "{\"sandbox_id\":\"sb-1\",\"backend\":\"local\",\"profile\":\"default\","
		  "\"template\":\"host\",\"fence\":3,\"created_at\":\"2023-11-14T22:13:20Z\"}",
	       "binding: not stale; no owner ids (the stored form has them)");
	b.stale_at = T0 + 60;
	o = json_object_new_object();
	sbx_binding_json(&b, o);
	is_str(sbx_json_str(o, "stale_at"), "2023-11-14T22:14:20Z", "binding: stale_at when stale");
	json_object_put(o);
}

/* A backend's own state: documents show its word, the generic code its
 * class; a later stage's handle keeps the word. */
static void test_state(void)
{
	struct sbx_sandbox sb = {.id = "sb-1", .backend = "local", .state = SBX_STATE_TERMINAL,
				 .state_word = "dead"};
	json_object *o = sbx_sandbox_to_json(&sb);
	is_str(sbx_json_str(o, "state"), "dead", "state: a backend's word in the document");
	struct sbx_sandbox back;
	struct sbx_err err = {0};
	ok(sbx_sandbox_from_json(o, &back, &err) == 0 && back.state_word &&
	   !strcmp(back.state_word, "dead"), "state: read back, the word is kept");
	sbx_sandbox_clear(&back);
	json_object_put(o);
	sb.state_word = NULL;
	o = sbx_sandbox_to_json(&sb);
	is_str(sbx_json_str(o, "state"), "terminal", "state: no word, the generic name");
	ok(sbx_sandbox_from_json(o, &back, &err) == 0 && back.state == SBX_STATE_TERMINAL &&
	   !back.state_word, "state: a generic name reads as its state, no word");
	sbx_sandbox_clear(&back);
	json_object_put(o);
	enum sbx_state is = SBX_STATE_UNKNOWN;
	ok(sbx_state_word_find("dead", &is) && is == SBX_STATE_TERMINAL, "dead counts as terminal");
	ok(sbx_state_word_find("stopped", &is) && is == SBX_STATE_RUNNING, "stopped counts as running");
	ok(!sbx_state_word_find("running", &is) && !sbx_state_word_find("bogus", &is),
	   "generic names and others are no backend's word");
	is_int(sbx_state_from_name("dead"), SBX_STATE_UNKNOWN, "dead is not a generic state");
}

/* The one convention for bytes (doc.h), which sbx-fs cat, sbx-exec and
 * sbx-proc output all use. */
static void test_bytes(void)
{
	json_object *o = json_object_new_object();
	sbx_json_set_bytes(o, "content", "h\xc3\xa9llo\n", 7);
	is_doc(o, "{\"content\":\"h\xc3\xa9llo\\n\"}", "bytes: UTF-8 as a string");
	o = json_object_new_object();
	sbx_json_set_bytes(o, "content", "a\0b", 3);
	is_doc(o, "{\"content_base64\":\"YQBi\"}", "bytes: a NUL in base64, nothing under the key");
	o = json_object_new_object();
	sbx_json_set_bytes(o, "stdout", "\377\376", 2);
	is_doc(o, "{\"stdout_base64\":\"//4=\"}", "bytes: not UTF-8 in base64");
	o = json_object_new_object();
	sbx_json_set_bytes(o, "content", "", 0);
	is_doc(o, "{\"content\":\"\"}", "bytes: empty is an empty string");
}

int main(void)
{
	test_dirent();
	test_snapshot();
	test_template();
	test_proc();
	test_binding();
	test_state();
	test_bytes();
	return tap_done();
}
