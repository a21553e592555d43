/* The egress policy model (common/net/netpolicy.c): the text and document
 * forms parsed strictly (each malformed case refused with the rule named),
 * the canonical document read back to the same policy, first match wins,
 * the default, E2B's lists mapped as E2B defines them. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"
#include "util.h"
#include "tap.h"

static struct sockaddr_storage ss;
static const struct sockaddr *ip(const char *s)
{
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *b = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, s, &a->sin_addr) == 1)
		a->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, s, &b->sin6_addr) == 1)
		b->sin6_family = AF_INET6;
	return (struct sockaddr *)&ss;
}

static char *canon(struct sbx_netpolicy *p)
{
	json_object *j = sbx_np_to_json(p);
	char *s = sbx_xstrdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
	return s;
}

int main(void)
{
	struct sbx_err err = {0};
	struct sbx_netpolicy p = {0};

	/* Text forms, canonicalised. */
	static const char *const good[][2] = {
		{"10.1.0.0/16", "allow 10.1.0.0/16"},
		{"10.1.2.3", "allow 10.1.2.3/32"},
		{"API.Example.COM.", "allow api.example.com"},
		{"*.pypi.example:443", "allow *.pypi.example:443"},
		{"example.com:80,443,8000-8100", "allow example.com:80,443,8000-8100"},
		{"2001:db8::/32", "allow 2001:db8::/32"},
		{"[2001:db8::/32]:443", "allow [2001:db8::/32]:443"},
		{"2001:DB8::1", "allow 2001:db8::1/128"},
		{"_dmarc.x-y.example", "allow _dmarc.x-y.example"},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct sbx_netpolicy q = {0};
		int rc = sbx_np_add(&q, SBX_NP_ALLOW, good[i][0], &err);
		ok(rc == 0, "'%s' parses (%s)", good[i][0], rc ? err.msg : "");
		if (rc == 0) {
			SBX_AUTOFREE char *t = sbx_np_rule_text(&q.rules[0]);
			is_str(t, good[i][1], "'%s' reads as '%s'", good[i][0], good[i][1]);
		}
		sbx_np_clear(&q);
	}
	static const char *const bad[][2] = {
		{"10.1.0.0/8", "not a CIDR"},          /* host bits */
		{"10.1.0.0/33", "not a CIDR"},
		{"", "is not a CIDR, a domain"},
		{"*", "wildcard"},
		{"*example.com", "wildcard"},
		{"a..b", "is not a CIDR, a domain"},
		{"exa mple.com", "is not a CIDR, a domain"},
		{"example.com:0", "ports are 1-65535"},
		{"example.com:65536", "ports are 1-65535"},
		{"example.com:90-80", "low before high"},
		{"example.com:", "empty port list"},
		{"example.com:80,", "bad port list"},
		{"example.com:http", "bad port list"},
		{"example.com:+80", "bad port list"},
		{"[10.0.0.0/8]:80", "brackets are for IPv6"},
		{"[2001:db8::/32]", "'[CIDR]:PORTS' expected"},
		{"http://example.com", "bad port list"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sbx_netpolicy q = {0};
		memset(&err, 0, sizeof(err));
		int rc = sbx_np_add(&q, SBX_NP_DENY, bad[i][0], &err);
		ok(rc < 0 && err.kind == SBX_INVALID_REQUEST && strstr(err.msg, bad[i][1]) &&
			   strstr(err.msg, "rule 1"),
		   "'%s' refused: %s", bad[i][0], err.msg);
		is_int(q.n, 0, "'%s' leaves no rule", bad[i][0]);
		sbx_np_clear(&q);
	}

	/* First match wins; ports; the default. */
	ok(sbx_np_add(&p, SBX_NP_DENY, "evil.example.com", &err) == 0, "deny evil");
	ok(sbx_np_add(&p, SBX_NP_ALLOW, "*.example.com:443", &err) == 0, "allow *.example.com:443");
	ok(sbx_np_add(&p, SBX_NP_DENY, "10.9.0.0/16", &err) == 0, "deny 10.9/16");
	ok(sbx_np_add(&p, SBX_NP_ALLOW, "10.0.0.0/8", &err) == 0, "allow 10/8");
	sbx_np_finish(&p);
	is_int(p.dflt, SBX_NP_DENY, "an allow rule makes the default deny");
	size_t rule;
	is_int(sbx_np_judge(&p, "evil.example.com", NULL, 443, &rule), SBX_NP_DENY, "evil denied");
	is_int(rule, 0, "by rule 0");
	is_int(sbx_np_judge(&p, "api.example.com", NULL, 443, &rule), SBX_NP_ALLOW, "api allowed on 443");
	is_int(rule, 1, "by rule 1");
	is_int(sbx_np_judge(&p, "api.example.com", NULL, 80, &rule), SBX_NP_DENY, "not on 80");
	ok(rule == SBX_NP_DEFAULT, "by the default");
	is_int(sbx_np_judge(&p, "example.com", NULL, 443, &rule), SBX_NP_DENY, "*.x does not match x");
	is_int(sbx_np_judge(&p, "xexample.com", NULL, 443, &rule), SBX_NP_DENY, "*.x does not match yx");
	is_int(sbx_np_judge(&p, NULL, ip("10.9.1.1"), 22, &rule), SBX_NP_DENY, "10.9.1.1 denied");
	is_int(rule, 2, "by rule 2");
	is_int(sbx_np_judge(&p, NULL, ip("10.8.1.1"), 22, &rule), SBX_NP_ALLOW, "10.8.1.1 allowed");
	is_int(sbx_np_judge(&p, NULL, ip("::ffff:10.8.1.1"), 22, &rule), SBX_NP_ALLOW,
	       "a mapped address is its IPv4 address");
	is_int(sbx_np_judge(&p, "api.example.com", ip("10.8.1.1"), 80, &rule), SBX_NP_ALLOW,
	       "a named connection's address is judged by CIDR rules too");
	is_int(sbx_np_judge(&p, NULL, NULL, 443, &rule), SBX_NP_DENY, "no name, no address: default");
	ok(sbx_np_wants_name(&p, 443) && sbx_np_wants_name(&p, 1) && !0, "port 443 wants a name (evil has every port)");
	is_int(sbx_np_judge_name(&p, "api.example.com", &rule), SBX_NP_ALLOW, "api resolves");
	is_int(sbx_np_judge_name(&p, "evil.example.com", &rule), SBX_NP_DENY, "evil does not resolve");
	is_int(sbx_np_judge_name(&p, "other.test", &rule), SBX_NP_DENY,
	       "a name no domain rule names does not resolve under a default deny");

	/* Canonical document, and back. */
	SBX_AUTOFREE char *c1 = canon(&p);
	is_str(c1, "{\"rules\":[{\"action\":\"deny\",\"to\":\"evil.example.com\"},"
		   "{\"action\":\"allow\",\"to\":\"*.example.com\",\"ports\":[443]},"
		   "{\"action\":\"deny\",\"to\":\"10.9.0.0/16\"},{\"action\":\"allow\",\"to\":\"10.0.0.0/8\"}],"
		   "\"default\":\"deny\"}", "canonical document");
	struct sbx_netpolicy q = {0};
	ok(sbx_np_from_text(c1, strlen(c1), &q, &err) == 0, "it parses back");
	SBX_AUTOFREE char *c2 = canon(&q);
	is_str(c2, c1, "to the same policy");
	sbx_np_clear(&q);

	const char *doc = "{\"rules\":[{\"action\":\"deny\",\"to\":\"*.Example.com\",\"ports\":[80,\"8000-8100\"]}]}";
	ok(sbx_np_from_text(doc, strlen(doc), &q, &err) == 0, "ports as numbers and ranges");
	is_int(q.dflt, SBX_NP_ALLOW, "deny rules only: the default is allow");
	ok(q.n == 1 && q.rules[0].nports == 2 && q.rules[0].ports[1].lo == 8000 &&
		   q.rules[0].ports[1].hi == 8100, "two port ranges");
	sbx_np_clear(&q);

	static const char *const bad_docs[][2] = {
		{"[]", "is a JSON object"},
		{"{\"rules\":{}}", "\"rules\" must be an array"},
		{"{\"rule\":[]}", "unknown key 'rule'"},
		{"{\"default\":\"maybe\"}", "\"default\" must be"},
		{"{\"rules\":[{\"action\":\"permit\",\"to\":\"a.b\"}]}", "rule 1: \"action\""},
		{"{\"rules\":[{\"action\":\"allow\"}]}", "rule 1: \"to\""},
		{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.b\",\"port\":1}]}", "rule 1: unknown key 'port'"},
		{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.b:443\"}]}", "ports go in \"ports\""},
		{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.b\",\"ports\":[]}]}", "non-empty array"},
		{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.b\",\"ports\":[\"80,443\"]}]}", "a port is a number"},
		{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.b\",\"ports\":[70000]}]}", "ports are 1-65535"},
		{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.b\"},{\"action\":\"deny\",\"to\":\"10.0.0.1/8\"}]}", "rule 2"},
		{"{\"rules\":[]} x", "not one JSON object"},
		{"{\"rules\":[],}", "not one JSON object"},
	};
	for (size_t i = 0; i < sizeof(bad_docs) / sizeof(bad_docs[0]); i++) {
		struct sbx_netpolicy r = {0};
		memset(&err, 0, sizeof(err));
		int rc = sbx_np_from_text(bad_docs[i][0], strlen(bad_docs[i][0]), &r, &err);
		ok(rc < 0 && err.kind == SBX_INVALID_REQUEST && strstr(err.msg, bad_docs[i][1]),
		   "%s refused: %s", bad_docs[i][0], err.msg);
		sbx_np_clear(&r);
	}
	/* Too many rules: an explicit error, not a silent cut. */
	struct sbx_netpolicy big = {0};
	int rc = 0;
	for (int i = 0; i <= SBX_NP_MAX_RULES && rc == 0; i++) {
		char d[32];
		snprintf(d, sizeof(d), "h%d.example", i);
		rc = sbx_np_add(&big, SBX_NP_ALLOW, d, &err);
	}
	ok(rc < 0 && strstr(err.msg, "more than 4096 rules") && big.n == SBX_NP_MAX_RULES,
	   "rule 4097 refused: %s", err.msg);
	sbx_np_clear(&big);

	/* E2B: allow wins over deny; default allow unless internet is off. */
	json_object *ao = json_tokener_parse("[\"api.example.com\", \"10.1.2.3\"]");
	json_object *dn = json_tokener_parse("[\"0.0.0.0/0\"]");
	struct sbx_netpolicy e = {0};
	ok(sbx_np_from_e2b(ao, dn, 1, &e, &err) == 0, "E2B lists map");
	is_int(sbx_np_judge(&e, "api.example.com", ip("93.184.216.34"), 443, &rule), SBX_NP_ALLOW,
	       "an allowOut name wins over denyOut 0/0");
	is_int(sbx_np_judge(&e, NULL, ip("10.1.2.3"), 22, &rule), SBX_NP_ALLOW, "an allowOut IP wins");
	is_int(sbx_np_judge(&e, "other.example", ip("93.184.216.34"), 443, &rule), SBX_NP_DENY,
	       "the rest is denied by denyOut 0/0");
	ok(e.n == 2 && e.dflt == SBX_NP_DENY, "denyOut 0/0 is the default deny, not a rule (%zu rules)", e.n);
	sbx_np_clear(&e);
	/* The round trip: sbx_np_to_e2b's lists give the policy back. */
	json_object *a2 = NULL, *d2 = NULL;
	ok(sbx_np_add(&e, SBX_NP_ALLOW, "api.example.com", &err) == 0, "allow one name");
	e.dflt = SBX_NP_DENY;
	e.dflt_set = 1;
	struct sbx_netpolicy back = {0};
	ok(sbx_np_to_e2b(&e, &a2, &d2, &err) == 0 && sbx_np_from_e2b(a2, d2, 1, &back, &err) == 0 &&
		   back.n == 1 && back.dflt == SBX_NP_DENY && !strcmp(back.rules[0].dest, "api.example.com"),
	   "allow a name, default deny: to E2B's lists and back");
	json_object_put(a2);
	json_object_put(d2);
	sbx_np_clear(&back);
	sbx_np_clear(&e);
	ok(sbx_np_from_e2b(ao, NULL, 1, &e, &err) == 0 && e.dflt == SBX_NP_ALLOW,
	   "allowOut without denyOut: E2B's default allow stays");
	sbx_np_clear(&e);
	ok(sbx_np_from_e2b(NULL, NULL, 0, &e, &err) == 0 && e.dflt == SBX_NP_DENY,
	   "allow_internet_access false: deny");
	sbx_np_clear(&e);
	json_object *dd = json_tokener_parse("[\"evil.example\"]");
	ok(sbx_np_from_e2b(NULL, dd, 1, &e, &err) < 0 && strstr(err.msg, "IPs and CIDRs only"),
	   "a domain in denyOut refused: %s", err.msg);
	sbx_np_clear(&e);
	json_object_put(ao);
	json_object_put(dn);
	json_object_put(dd);
	/* And back to E2B's lists, where they can say it. */
	struct sbx_netpolicy t = {0};
	json_object *a = NULL, *d = NULL;
	ok(sbx_np_add(&t, SBX_NP_ALLOW, "api.example.com", &err) == 0 &&
		   sbx_np_add(&t, SBX_NP_ALLOW, "10.1.0.0/16", &err) == 0 &&
		   sbx_np_add(&t, SBX_NP_DENY, "10.9.0.0/16", &err) == 0, "an E2B-shaped policy");
	sbx_np_finish(&t);
	ok(sbx_np_to_e2b(&t, &a, &d, &err) == 0, "maps to E2B");
	is_str(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
	       "[\"api.example.com\",\"10.1.0.0/16\"]", "allowOut");
	is_str(json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
	       "[\"10.9.0.0/16\",\"0.0.0.0/0\",\"::/0\"]", "denyOut ends with the default deny");
	json_object_put(a);
	json_object_put(d);
	static const char *const inexpressible[][3] = {
		{"allow", "api.example.com:443", "no ports"},
		{"deny", "evil.example.com", "IPs and CIDRs only"},
	};
	for (size_t i = 0; i < 2; i++) {
		struct sbx_netpolicy u = {0};
		sbx_np_add(&u, strcmp(inexpressible[i][0], "allow") ? SBX_NP_DENY : SBX_NP_ALLOW,
			   inexpressible[i][1], &err);
		sbx_np_finish(&u);
		ok(sbx_np_to_e2b(&u, &a, &d, &err) < 0 && err.kind == SBX_UNSUPPORTED &&
			   strstr(err.msg, inexpressible[i][2]) && !a && !d,
		   "%s %s is unsupported on E2B: %s", inexpressible[i][0], inexpressible[i][1], err.msg);
		sbx_np_clear(&u);
	}
	ok(sbx_np_add(&t, SBX_NP_ALLOW, "late.example.com", &err) == 0 &&
		   sbx_np_to_e2b(&t, &a, &d, &err) < 0 && strstr(err.msg, "an allow after a deny"),
	   "an allow after a deny is unsupported: %s", err.msg);
	sbx_np_clear(&t);

	/* L7 fields (issue 29): parsed, canonical, first match wins per request. */
	{
		static const char l7[] =
			"{\"rules\":[{\"action\":\"allow\",\"to\":\"api.example.com\",\"scheme\":\"https\","
			"\"methods\":[\"GET\",\"HEAD\"],\"path\":\"/v1/models\"},"
			"{\"action\":\"deny\",\"to\":\"api.example.com\",\"path\":\"/v1/*/secret\"},"
			"{\"action\":\"allow\",\"to\":\"api.example.com\",\"methods\":[\"POST\"],\"path\":\"/v1/\"},"
			"{\"action\":\"allow\",\"to\":\"plain.example.com\"}],\"default\":\"deny\"}";
		struct sbx_netpolicy q = {0};
		ok(sbx_np_from_text(l7, strlen(l7), &q, &err) == 0, "an L7 policy parses (%s)", err.msg);
		SBX_AUTOFREE char *c = canon(&q);
		is_str(c, l7, "its canonical form is itself");
		SBX_AUTOFREE char *t0 = sbx_np_rule_text(&q.rules[0]);
		is_str(t0, "allow GET,HEAD https://api.example.com/v1/models", "rule text");
		ok(sbx_np_l7(&q, "api.example.com", 443) && !sbx_np_l7(&q, "plain.example.com", 443) &&
			   !sbx_np_l7(&q, NULL, 443), "sbx_np_l7 names the names L7 rules cover");
		size_t r;
		ok(sbx_np_judge(&q, "api.example.com", NULL, 443, &r) == SBX_NP_DENY && r == SBX_NP_DEFAULT,
		   "a bare connection skips L7 rules");
		struct sbx_np_req g = {SBX_NP_HTTPS, "GET", "/v1/models"};
		ok(sbx_np_judge_req(&q, "api.example.com", NULL, 443, &g, &r) == SBX_NP_ALLOW && r == 0,
		   "GET /v1/models by rule 1");
		g.scheme = SBX_NP_HTTP;
		ok(sbx_np_judge_req(&q, "api.example.com", NULL, 80, &g, &r) == SBX_NP_DENY,
		   "the same over plain HTTP: not rule 1");
		struct sbx_np_req f = {SBX_NP_HTTPS, "POST", "/v1/files"};
		ok(sbx_np_judge_req(&q, "api.example.com", NULL, 443, &f, &r) == SBX_NP_ALLOW && r == 2,
		   "POST /v1/files by rule 3 (prefix)");
		struct sbx_np_req s = {SBX_NP_HTTPS, "POST", "/v1/a/b/secret"};
		ok(sbx_np_judge_req(&q, "api.example.com", NULL, 443, &s, &r) == SBX_NP_DENY && r == 1,
		   "a glob's '*' crosses '/': rule 2 first");
		struct sbx_np_req d = {SBX_NP_HTTPS, "DELETE", "/v1/models"};
		ok(sbx_np_judge_req(&q, "api.example.com", NULL, 443, &d, &r) == SBX_NP_DENY &&
			   r == SBX_NP_DEFAULT, "DELETE: the default");
		ok(sbx_np_judge_name(&q, "api.example.com", &r) == SBX_NP_ALLOW,
		   "a name an L7 allow rule names resolves");
		{
			static const char dl[] = "{\"rules\":[{\"action\":\"deny\",\"to\":\"a.example\",\"path\":\"/x\"},"
						 "{\"action\":\"allow\",\"to\":\"a.example\"}]}";
			struct sbx_netpolicy d2 = {0};
			ok(sbx_np_from_text(dl, strlen(dl), &d2, &err) == 0 &&
				   sbx_np_judge_name(&d2, "a.example", &r) == SBX_NP_ALLOW && r == 1,
			   "an L7 deny rule does not refuse the name's lookup: the L4 allow after it decides");
			sbx_np_clear(&d2);
		}
		json_object *a = NULL, *dd = NULL;
		ok(sbx_np_to_e2b(&q, &a, &dd, &err) < 0 && strstr(err.msg, "no scheme, method or path"),
		   "L7 rules are unsupported on E2B's lists: %s", err.msg);
		sbx_np_clear(&q);
		static const char *const bad7[][2] = {
			{"{\"rules\":[{\"action\":\"allow\",\"to\":\"10.0.0.0/8\",\"path\":\"/\"}]}", "need a name"},
			{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.example\",\"scheme\":\"ftp\"}]}", "\"http\" or \"https\""},
			{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.example\",\"methods\":[\"get\"]}]}", "upper-case method"},
			{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.example\",\"methods\":[]}]}", "1 to 16"},
			{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.example\",\"path\":\"v1\"}]}", "starts with '/'"},
			{"{\"rules\":[{\"action\":\"allow\",\"to\":\"a.example\",\"path\":\"/a?b=1\"}]}", "'?'"},
		};
		for (size_t i = 0; i < sizeof(bad7) / sizeof(bad7[0]); i++) {
			struct sbx_netpolicy u = {0};
			int rc = sbx_np_from_text(bad7[i][0], strlen(bad7[i][0]), &u, &err);
			ok(rc < 0 && err.kind == SBX_INVALID_REQUEST && strstr(err.msg, bad7[i][1]),
			   "L7 refused: %s", err.msg);
			sbx_np_clear(&u);
		}
	}
	sbx_np_clear(&p);
	return tap_done();
}
