/* A profile's egress secrets (common/config/egress-secrets.c): checked
 * strictly at load (each malformed entry refused, named, as a
 * configuration error, never echoing a value), read from a file or a
 * variable, and what an intercepted sandbox's env gets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "doc.h"
#include "egress-secrets.h"
#include "netpolicy.h"
#include "util.h"
#include "tap.h"

static json_object *obj(const char *s)
{
	json_object *o = json_tokener_parse(s);
	if (!o)
		fprintf(stderr, "bad JSON in the test: %s\n", s);
	return o;
}

int main(void)
{
	struct sbx_err err = {0};
	char key[] = "/tmp/sbx-test-egress-XXXXXX";
	int fd = mkstemp(key);
	ok(fd >= 0 && write(fd, "  sk-file-value-123\n", 20) == 20, "a key file");
	close(fd);

	SBX_AUTOFREE char *good = sbx_xasprintf(
		"{\"egress_secrets\": {"
		"\"API_KEY\": {\"file\": \"%s\", \"to\": [\"api.example.com\", \"*.example.net\"],"
		"  \"header\": \"Authorization\", \"format\": \"Bearer {}\"},"
		"\"PW\": {\"env\": \"SBX_TEST_PW\", \"to\": [\"svc.example\"], \"basic\": \"svc-user\"},"
		"\"Q\": {\"env\": \"SBX_TEST_PW\", \"to\": [\"maps.example\"], \"query\": \"key\"}},"
		"\"egress_upstream_ca\": \"/etc/ssl/test-ca.pem\"}", key);
	json_object *g = obj(good);
	ok(sbx_egress_secrets_check("p", g, &err) == 0, "a good egress_secrets passes (%s)", err.msg);

	static const char *const bad[][2] = {
		{"{\"egress_secrets\": {\"1X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"query\": \"k\"}}}", "not a variable name"},
		{"{\"egress_secrets\": {\"X\": {\"to\": [\"a.example\"], \"query\": \"k\"}}}", "needs \"file\" or"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"file\": \"/f\", \"to\": [\"a.example\"], \"query\": \"k\"}}}", "needs \"file\" or"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"]}}}", "needs one of"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"query\": \"k\", \"basic\": \"u\"}}}", "needs one of"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [], \"query\": \"k\"}}}", "non-empty array"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"10.0.0.0/8\"], \"query\": \"k\"}}}", "not a name"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example:443\"], \"query\": \"k\"}}}", "not a name"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"header\": \"Bad Header\"}}}", "not a valid name"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"header\": \"A\", \"format\": \"Bearer\"}}}", "holds {} once"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"header\": \"A\", \"format\": \"{}\\r\\nX: {}\"}}}", "holds {} once"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"basic\": \"u:p\"}}}", "not a valid user name"},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"query\": \"k\", \"format\": \"{}\"}}}", "goes with \"header\""},
		{"{\"egress_secrets\": {\"X\": {\"env\": \"V\", \"to\": [\"a.example\"], \"query\": \"k\", \"value\": \"sk-inline\"}}}", "unknown key 'value'"},
		{"{\"egress_secrets\": []}", "must be an object"},
		{"{\"egress_upstream_ca\": \"relative.pem\"}", "absolute path"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *o = obj(bad[i][0]);
		int rc = sbx_egress_secrets_check("p", o, &err);
		ok(rc < 0 && strstr(err.msg, bad[i][1]) && strstr(err.msg, "profile 'p'") &&
			   !strstr(err.msg, "sk-inline") && sbx_err_exit_status(&err) == 78,
		   "refused: %s", err.msg);
		json_object_put(o);
	}

	/* Values: the file's trimmed, the variable's; a missing one refused
	 * by name and source. */
	json_object *vals = NULL;
	unsetenv("SBX_TEST_PW");
	ok(sbx_egress_secrets_read(g, &vals, &err) < 0 && strstr(err.msg, "SBX_TEST_PW") && !vals,
	   "an unset variable is refused: %s", err.msg);
	setenv("SBX_TEST_PW", "pw-\001-ctl", 1);
	ok(sbx_egress_secrets_read(g, &vals, &err) < 0 && strstr(err.msg, "control") &&
		   !strstr(err.msg, "pw-"), "a value with a control character is refused: %s", err.msg);
	setenv("SBX_TEST_PW", "pw-from-env", 1);
	ok(sbx_egress_secrets_read(g, &vals, &err) == 0 && vals && json_object_array_length(vals) == 3,
	   "three values read");
	const char *t = vals ? json_object_to_json_string_ext(vals, JSON_C_TO_STRING_PLAIN) : "";
	ok(strstr(t, "\"value\":\"sk-file-value-123\"") && strstr(t, "\"value\":\"pw-from-env\"") &&
		   !strstr(t, "\"file\"") && !strstr(t, "\"env\""), "values trimmed, sources dropped");
	sbx_egress_secrets_free(vals);

	/* The env of an intercepted sandbox: placeholders and the trust
	 * variables; the caller's own win; none without a policy. */
	struct sbx_netpolicy np = {0};
	sbx_np_finish(&np);
	json_object *mine = obj("{\"CURL_CA_BUNDLE\": \"/mine.pem\", \"X\": \"1\"}");
	json_object *env = sbx_egress_l7_env(g, &np, NULL, mine);
	is_str(sbx_json_str(env, "API_KEY"), "sbx-secret:API_KEY", "the placeholder");
	is_str(sbx_json_str(env, "PW"), "sbx-secret:PW", "another");
	is_str(sbx_json_str(env, "SSL_CERT_FILE"), SBX_EGRESS_BUNDLE_IN, "SSL_CERT_FILE");
	is_str(sbx_json_str(env, "NODE_EXTRA_CA_CERTS"), SBX_EGRESS_CA_IN, "NODE_EXTRA_CA_CERTS");
	is_str(sbx_json_str(env, "CURL_CA_BUNDLE"), "/mine.pem", "the caller's own wins");
	ok(!strstr(json_object_to_json_string(env), "pw-from-env") &&
		   !strstr(json_object_to_json_string(env), "sk-file"), "no value in the env");
	json_object_put(env);
	env = sbx_egress_l7_env(g, NULL, NULL, mine);
	ok(env == mine && !sbx_json_str(env, "API_KEY"), "no policy (no broker): nothing added");
	json_object_put(env);
	json_object *none = obj("{}");
	ok(!sbx_egress_l7_needed(none, &np, NULL), "no secrets, no L7 rule: no interception");
	static const char l7[] = "{\"rules\": [{\"action\": \"allow\", \"to\": \"a.example\", \"path\": \"/v1/\"}]}";
	struct sbx_netpolicy q = {0};
	ok(sbx_np_from_text(l7, strlen(l7), &q, &err) == 0 && sbx_egress_l7_needed(none, &q, NULL),
	   "an L7 rule: interception");
	sbx_np_clear(&q);
	json_object_put(none);
	json_object_put(mine);
	json_object_put(g);
	unlink(key);
	return tap_done();
}
