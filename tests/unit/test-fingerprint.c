/* The skill-image fingerprint: known vectors (computed with sha256sum),
 * Go-compatible trimming, the docker and local backends' recipes through
 * their vtable entries, the empty rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "docker-api.h"
#include "fingerprint.h"
#include "util.h"
#include "tap.h"

/* sha256sum of exactly these bytes, via a temp file. */
static void sha256sum(const char *bytes, char out[65])
{
	char path[] = "/tmp/sbx-fp-XXXXXX";
	int fd = mkstemp(path);
	sbx_write_all(fd, bytes, strlen(bytes));
	close(fd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "sha256sum %s", path);
	FILE *p = popen(cmd, "r");
	out[0] = 0;
	if (p && fscanf(p, "%64s", out) != 1)
		out[0] = 0;
	if (p)
		pclose(p);
	unlink(path);
}

static const char *fp(const char *a, const char *b, const char *c)
{
	static char out[4][65];
	static int k;
	struct sbx_err err = {0};
	char *o = out[k++ % 4];
	if (sbx_fingerprint(a, b, c, o, &err) < 0)
		snprintf(o, 65, "error: %s", err.msg);
	return o;
}

/* A backend's fingerprint op on a profile with these fields (static
 * buffer, as fp). */
static const char *vt_fp(const struct sbx_backend_ops *ops, const char *tls, const char *endpoint,
			 const char *state_dir)
{
	static char out[4][65];
	static int k;
	struct docker_conf dc = {.tls_cert_path = (char *)tls};
	struct sbx_profile p = {.endpoint = (char *)endpoint, .state_dir = (char *)state_dir,
				.backend_conf_of = ops,
				.backend_conf = ops == &sbx_backend_docker ? &dc : NULL};
	struct sbx_backend b = {.ops = ops, .profile = &p};
	struct sbx_err err = {0};
	char *o = out[k++ % 4];
	if (!ops || ops->fingerprint(&b, o, &err) < 0)
		snprintf(o, 65, "error: %s", ops ? err.msg : "backend not linked");
	return o;
}

int main(void)
{
	struct sbx_err err = {0};
	char out[65];
	const char *abc = "ea7fb08b7a2dc4619ffb7c7bb38d95a2047935fa165d71b12efd3852a2e6d0cc";
	is_str(fp("a", "b", "c"), abc, "printf 'a\\nb\\nc' | sha256sum");
	is_str(fp("  a\t", "\nb\r\n", " c \v\f"), abc, "ASCII whitespace is trimmed");
	is_str(fp("a\xc2\xa0", "\xe3\x80\x80" "b\xc2\x85", "\xe2\x80\x80" "c\xe2\x80\xa8\xe2\x81\x9f"),
	       abc, "Unicode spaces (NBSP, U+3000, NEL, U+2000, U+2028, U+205F) are trimmed like Go");
	ok(strcmp(fp("a", "b", "c\xe2\x80\x8b"), abc) != 0, "U+200B (not a Go space) is kept");
	ok(strcmp(fp("a", "b c", ""), fp("a", "b", "c")) != 0, "the separator is a newline, not nothing");
	ok(strcmp(fp("ab", "", "c"), fp("a", "b", "c")) != 0, "parts do not run together");
	is_str(fp("e2b", "key", "https://api.e2b.dev"),
	       "7b5f0cc5838f924c0a9a1a9547750ec4972008fd379871ecc881ae86b5644e6c", "an e2b vector");

	/* Against sha256sum on assorted inputs. */
	const char *cases[][3] = {
		{"cube", "sk-1234567890abcdef", "https://cube.example.com/api"},
		{"e2b", "e2b_\xe6\x97\xa5\xe6\x9c\xac", "http://10.0.0.5:3000"},
		{"docker", "/etc/docker/certs", "tcp://10.1.1.1:2376"},
		{"local", "", "/var/lib/sbx"},
		{"x", "multi\nline key", ""},
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(cases); i++) {
		char joined[512], want[65];
		snprintf(joined, sizeof(joined), "%s\n%s\n%s", cases[i][0], cases[i][1], cases[i][2]);
		sha256sum(joined, want);
		ok(strlen(want) == 64, "sha256sum ran (case %zu)", i);
		is_str(fp(cases[i][0], cases[i][1], cases[i][2]), want, "matches sha256sum (case %zu: %s)",
		       i, cases[i][0]);
	}

	/* The backends' recipes, through their vtable entries (they read
	 * only the profile, so the backends are not opened). */
	const char *local_daemon = "1121950f2cb6299df091d9b000bcb04fac50e576e983fd61977db14e3e679046";
	is_str(vt_fp(&sbx_backend_docker, NULL, NULL, NULL), local_daemon,
	       "docker, no host: printf 'docker\\n\\nlocal-daemon'");
	is_str(vt_fp(&sbx_backend_docker, "", "  \n", NULL), local_daemon, "docker: a whitespace host is blank too");
	is_str(vt_fp(&sbx_backend_docker, NULL, "\xc2\xa0\xe3\x80\x80", NULL), local_daemon,
	       "docker: a host of Unicode spaces is blank (Go's trimming)");
	is_str(vt_fp(&sbx_backend_docker, "/certs", "tcp://h:2376", NULL), fp("docker", "/certs", "tcp://h:2376"),
	       "docker with TLS path and host");
	is_str(vt_fp(&sbx_backend_local, NULL, NULL, "/var/lib/sbx"), fp("local", "", "/var/lib/sbx"), "local form");
	is_str(vt_fp(&sbx_backend_local, NULL, NULL, NULL), fp("local", "", "/var/lib/sbx"),
	       "local: no state dir is /var/lib/sbx");
	ok(strcmp(vt_fp(&sbx_backend_local, NULL, NULL, "/srv/sbx"), fp("local", "", "/var/lib/sbx")) != 0,
	   "local: another state dir, another fingerprint");
	ok(sbx_fingerprint_blank(NULL) && sbx_fingerprint_blank(" \t\xe2\x80\xa8") &&
	   !sbx_fingerprint_blank(" x ") && !sbx_fingerprint_blank("\xe2\x80\x8b"),
	   "blank: empty after trimming (U+200B is not a space)");

	/* The empty rule, and no secret in the message. */
	strcpy(out, "garbage");
	ok(sbx_fingerprint("  ", "SECRETKEY", "https://x", out, &err) < 0 && err.kind == SBX_INVALID_REQUEST,
	   "a blank provider is refused");
	is_str(out, "", "and out is empty");
	ok(!strstr(err.msg, "SECRETKEY") && strstr(err.msg, "empty fingerprint"),
	   "the message says why and has no key (%s)", err.msg);
	ok(sbx_fingerprint(NULL, NULL, NULL, out, &err) < 0, "all NULL is refused");
	ok(sbx_fingerprint("p", NULL, NULL, out, &err) == 0 && !strcmp(out, fp("p", "", "")),
	   "NULL key and URL count as empty");

	ok(sbx_fingerprint_valid(abc), "valid: 64 lowercase hex");
	ok(!sbx_fingerprint_valid("EA7FB08B7A2DC4619FFB7C7BB38D95A2047935FA165D71B12EFD3852A2E6D0CC"),
	   "valid: uppercase refused");
	ok(!sbx_fingerprint_valid("") && !sbx_fingerprint_valid(NULL) && !sbx_fingerprint_valid("abc"),
	   "valid: empty/short refused");
	return tap_done();
}
