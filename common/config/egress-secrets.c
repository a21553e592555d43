/* egress-secrets.c - see egress-secrets.h. */
#include "egress-secrets.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "config.h"
#include "doc.h"
#include "netpolicy.h"
#include "util.h"

#define VALUE_MAX 4096

static int name_ok(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > 64 || (k[0] >= '0' && k[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return 0;
	return 1;
}

/* A header name (an RFC 9110 token of letters, digits and '-'). */
static int header_ok(const char *h)
{
	if (!*h || strlen(h) > 64)
		return 0;
	for (; *h; h++)
		if (!((*h >= 'A' && *h <= 'Z') || (*h >= 'a' && *h <= 'z') || (*h >= '0' && *h <= '9') ||
		      *h == '-'))
			return 0;
	return 1;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int check_one(const char *pn, const char *k, json_object *s, struct sbx_err *err)
{
	if (!name_ok(k))
		return sbx_fail_config(err, "config", "profile '%s': egress_secrets: '%.64s' is not a "
				       "variable name", pn, k);
	if (!json_object_is_type(s, json_type_object))
		return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s must be an object",
				       pn, k);
	int src = 0, forms = 0;
	json_object *to = NULL;
	json_object_object_foreach(s, key, v) {
		int str = json_object_is_type(v, json_type_string);
		if (!strcmp(key, "file") || !strcmp(key, "env")) {
			src++;
			if (!str || !*json_object_get_string(v))
				return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s.%s "
						       "must be a string", pn, k, key);
		} else if (!strcmp(key, "to")) {
			to = v;
		} else if (!strcmp(key, "header") || !strcmp(key, "basic") || !strcmp(key, "query")) {
			forms++;
			const char *t = str ? json_object_get_string(v) : "";
			if (!strcmp(key, "basic") ? (!*t || strchr(t, ':') || !printable(t)) : !header_ok(t))
				return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s.%s "
						       "is not a valid %s", pn, k, key,
						       !strcmp(key, "basic") ? "user name" : "name");
		} else if (!strcmp(key, "format")) {
			const char *f = str ? json_object_get_string(v) : "";
			const char *b = strstr(f, "{}");
			if (!b || strstr(b + 2, "{}") || !printable(f) || strlen(f) > 256)
				return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s.format "
						       "holds {} once (\"Bearer {}\")", pn, k);
		} else {
			return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s: unknown key "
					       "'%.40s'", pn, k, key);
		}
	}
	if (src != 1)
		return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s needs \"file\" or "
				       "\"env\" (one)", pn, k);
	if (forms != 1)
		return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s needs one of "
				       "\"header\", \"basic\", \"query\"", pn, k);
	if (json_object_object_get_ex(s, "format", NULL) && !json_object_object_get_ex(s, "header", NULL))
		return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s: \"format\" goes "
				       "with \"header\"", pn, k);
	size_t n = to && json_object_is_type(to, json_type_array) ? json_object_array_length(to) : 0;
	if (n == 0)
		return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s.to must be a "
				       "non-empty array of names", pn, k);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(to, i);
		struct sbx_netpolicy t = {0};
		struct sbx_err e2 = {0};
		const char *d = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
		int ok = !strchr(d, ':') && sbx_np_add(&t, SBX_NP_ALLOW, d, &e2) == 0 &&
			 t.rules[0].kind != SBX_NP_CIDR;
		sbx_np_clear(&t);
		if (!ok)
			return sbx_fail_config(err, "config", "profile '%s': egress_secrets.%s.to[%zu] is "
					       "not a name or '*.suffix'", pn, k, i);
	}
	return 0;
}

int sbx_egress_secrets_check(const char *name, json_object *o, struct sbx_err *err)
{
	json_object *s, *ca;
	if (o && json_object_object_get_ex(o, "egress_upstream_ca", &ca) &&
	    (!json_object_is_type(ca, json_type_string) || json_object_get_string(ca)[0] != '/'))
		return sbx_fail_config(err, "config", "profile '%s': egress_upstream_ca must be an "
				       "absolute path", name);
	if (!o || !json_object_object_get_ex(o, "egress_secrets", &s))
		return 0;
	if (!json_object_is_type(s, json_type_object) || json_object_object_length(s) > SBX_EGRESS_SECRETS_MAX)
		return sbx_fail_config(err, "config", "profile '%s': egress_secrets must be an object "
				       "of at most %d secrets", name, SBX_EGRESS_SECRETS_MAX);
	json_object_object_foreach(s, k, v)
		if (check_one(name, k, v, err) < 0)
			return -1;
	return 0;
}

void sbx_egress_secrets_free(json_object *secrets)
{
	for (size_t i = 0; secrets && i < json_object_array_length(secrets); i++) {
		json_object *v;
		if (json_object_object_get_ex(json_object_array_get_idx(secrets, i), "value", &v)) {
			const char *s = json_object_get_string(v);
			explicit_bzero((char *)s, strlen(s));
		}
	}
	json_object_put(secrets);
}

int sbx_egress_secrets_read(json_object *o, json_object **out, struct sbx_err *err)
{
	json_object *s;
	*out = NULL;
	if (!o || !json_object_object_get_ex(o, "egress_secrets", &s) ||
	    !json_object_is_type(s, json_type_object))
		return 0;
	json_object *arr = json_object_new_array();
	json_object_object_foreach(s, k, v) {
		const char *file = sbx_json_str(v, "file"), *env = sbx_json_str(v, "env");
		char *val = NULL;
		if (file) {
			size_t len;
			if (sbx_read_file(file, VALUE_MAX + 1, &val, &len, err) < 0) {
				sbx_egress_secrets_free(arr);
				err->exit_status = SBX_EXIT_CONFIG;
				return -1;
			}
			char *t = sbx_trim(val);
			memmove(val, t, strlen(t) + 1);
		} else {
			const char *e = getenv(env);
			val = sbx_xstrdup(e ? e : "");
		}
		int bad = !*val || strlen(val) > VALUE_MAX || !printable(val);
		if (bad) {
			explicit_bzero(val, strlen(val));
			free(val);
			sbx_egress_secrets_free(arr);
			return sbx_fail_config(err, "config", "egress secret %s: %s %s is empty, over %d "
					       "bytes or holds control characters", k,
					       file ? "file" : "variable", file ? file : env, VALUE_MAX);
		}
		json_object *e = json_object_new_object();
		json_object_object_add(e, "name", json_object_new_string(k));
		json_object_object_add(e, "value", json_object_new_string(val));
		explicit_bzero(val, strlen(val));
		free(val);
		json_object_object_foreach(v, kk, vv)
			if (strcmp(kk, "file") && strcmp(kk, "env"))
				json_object_object_add(e, kk, json_object_get(vv));
		json_object_array_add(arr, e);
	}
	*out = arr;
	return 0;
}

int sbx_egress_l7_needed(json_object *o, const struct sbx_netpolicy *np, json_object *headers)
{
	if (!np)
		return 0;
	if (headers && json_object_array_length(headers))
		return 1;
	for (size_t i = 0; i < np->n; i++)
		if (sbx_np_rule_l7(&np->rules[i]))
			return 1;
	json_object *s;
	return o && json_object_object_get_ex(o, "egress_secrets", &s) &&
	       json_object_is_type(s, json_type_object) && json_object_object_length(s) > 0;
}

json_object *sbx_egress_l7_env(json_object *o, const struct sbx_netpolicy *np, json_object *headers,
			       json_object *env)
{
	if (!sbx_egress_l7_needed(o, np, headers))
		return env ? json_object_get(env) : NULL;
	json_object *n = json_object_new_object();
	static const char *const bundle_vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT",
						  "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(bundle_vars); i++)
		json_object_object_add(n, bundle_vars[i], json_object_new_string(SBX_EGRESS_BUNDLE_IN));
	json_object_object_add(n, "NODE_EXTRA_CA_CERTS", json_object_new_string(SBX_EGRESS_CA_IN));
	json_object *s;
	if (json_object_object_get_ex(o, "egress_secrets", &s)) {
		json_object_object_foreach(s, k, v) {
			(void)v;
			SBX_AUTOFREE char *ph = sbx_xasprintf(SBX_SECRET_PREFIX "%s", k);
			json_object_object_add(n, k, json_object_new_string(ph));
		}
	}
	if (env) {                 /* the caller's own win over these */
		json_object_object_foreach(env, k, v)
			json_object_object_add(n, k, json_object_get(v));
	}
	return n;
}

/* The value of header entry `h` with each ${e2b.secrets.X} replaced by
 * X's value from `sec` (checked to exist by sbx_egress_headers_from_e2b;
 * one that is gone since is an error).  malloc'd, or NULL with err. */
static char *header_value(json_object *h, json_object *sec, struct sbx_err *err)
{
	const char *v = sbx_json_str(h, "value");
	size_t cap = strlen(v) + 1, n = 0;
	char *o = sbx_xmalloc(cap);
	while (*v) {
		const char *p = strstr(v, "${e2b.secrets.");
		const char *e = p ? strchr(p, '}') : NULL;
		if (!p || !e) {
			p = v + strlen(v);
			e = NULL;
		}
		size_t lit = (size_t)(p - v);
		const char *val = "";
		if (e) {
			size_t nl = (size_t)(e - p - 14);
			for (size_t i = 0; sec && i < json_object_array_length(sec); i++) {
				json_object *s = json_object_array_get_idx(sec, i);
				const char *nm = sbx_json_str(s, "name");
				if (nm && strlen(nm) == nl && !strncmp(nm, p + 14, nl))
					val = sbx_json_str(s, "value");
			}
			if (!*val) {
				explicit_bzero(o, cap);
				free(o);
				sbx_fail(err, SBX_INVALID_REQUEST, "create", "secret %.*s is not the profile's",
					 (int)nl, p + 14);
				return NULL;
			}
		}
		size_t vl = strlen(val);
		if (n + lit + vl + 1 > cap) {
			size_t nc = (n + lit + vl + 1) * 2;
			char *no = sbx_xmalloc(nc);
			memcpy(no, o, n);
			explicit_bzero(o, cap);
			free(o);
			o = no;
			cap = nc;
		}
		memcpy(o + n, v, lit);
		n += lit;
		memcpy(o + n, val, vl);
		n += vl;
		v = e ? e + 1 : p;
	}
	o[n] = '\0';
	return o;
}

int sbx_egress_keys_doc(const struct sbx_profile *p, const struct sbx_netpolicy *np,
			json_object *headers, char **out, struct sbx_err *err)
{
	*out = NULL;
	if (!p || !sbx_egress_l7_needed(p->raw, np, headers))
		return 0;
	json_object *sec = NULL;
	if (sbx_egress_secrets_read(p->raw, &sec, err) < 0)
		return -1;
	json_object *all = json_object_new_array();   /* the profile's, then the rules' */
	for (size_t i = 0; sec && i < json_object_array_length(sec); i++)
		json_object_array_add(all, json_object_get(json_object_array_get_idx(sec, i)));
	for (size_t i = 0; headers && i < json_object_array_length(headers); i++) {
		json_object *h = json_object_array_get_idx(headers, i);
		char *v = header_value(h, sec, err);
		if (!v) {
			json_object_put(all);
			sbx_egress_secrets_free(sec);
			return -1;
		}
		json_object *e = json_object_new_object(), *to = json_object_new_array();
		char nm[32];
		snprintf(nm, sizeof(nm), "e2b-rule-%zu", i + 1);
		json_object_object_add(e, "name", json_object_new_string(nm));
		json_object_object_add(e, "value", json_object_new_string(v));
		explicit_bzero(v, strlen(v));
		free(v);
		json_object_array_add(to, json_object_new_string(sbx_json_str(h, "to")));
		json_object_object_add(e, "to", to);
		json_object_object_add(e, "header", json_object_new_string(sbx_json_str(h, "header")));
		json_object_object_add(e, "format", json_object_new_string("{}"));
		json_object_object_add(e, "override", json_object_new_boolean(1));
		json_object_array_add(all, e);
	}
	json_object_put(sec);      /* its entries live on in `all`, wiped with it */
	sec = all;
	json_object *d = json_object_new_object();
	SBX_AUTOFREE char *dir = sbx_egress_ca_dir(p);
	json_object_object_add(d, "ca", json_object_new_string(dir));
	json_object_object_add(d, "profile", json_object_new_string(p->name));
	const char *up = sbx_json_str(p->raw, "egress_upstream_ca");
	if (up)
		json_object_object_add(d, "upstream_ca", json_object_new_string(up));
	if (json_object_array_length(sec))
		json_object_object_add(d, "secrets", json_object_get(sec));
	const char *t = json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	*out = sbx_xstrdup(t);
	explicit_bzero((char *)t, strlen(t));     /* json-c's own copy */
	json_object_put(d);
	sbx_egress_secrets_free(sec);
	return 0;
}

char *sbx_egress_ca_dir(const struct sbx_profile *p)
{
	return sbx_xasprintf("%s/egress-ca/%s", p->state_dir, p->name);
}

int sbx_egress_ca_rotate(const struct sbx_profile *p, int *had, struct sbx_err *err)
{
	SBX_AUTOFREE char *dir = sbx_egress_ca_dir(p);
	SBX_AUTOFREE char *pem = sbx_xasprintf("%s/ca.pem", dir);
	*had = unlink(pem) == 0;
	if (!*had && errno != ENOENT)
		return sbx_fail_errno(err, SBX_INTERNAL, "egress-ca", "remove %s", pem);
	return 0;
}

int sbx_egress_headers_from_e2b(json_object *rules, json_object *o, json_object **out,
				struct sbx_err *err)
{
	*out = NULL;
	if (!rules)
		return 0;
	if (!json_object_is_type(rules, json_type_object))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create",
				"network.rules must be an object of names to rule lists");
	json_object *sec = NULL, *arr = json_object_new_array();
	if (o)
		json_object_object_get_ex(o, "egress_secrets", &sec);
	json_object_object_foreach(rules, name, list) {
		struct sbx_netpolicy t = {0};
		struct sbx_err e2 = {0};
		int ok = !strchr(name, ':') && sbx_np_add(&t, SBX_NP_ALLOW, name, &e2) == 0 &&
			 t.rules[0].kind != SBX_NP_CIDR;
		sbx_np_clear(&t);
		size_t n = ok && json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
		if (!ok || !json_object_is_type(list, json_type_array)) {
			json_object_put(arr);
			return sbx_fail(err, SBX_INVALID_REQUEST, "create", "network.rules: '%.80s' must be "
					"a name or '*.suffix' with a list of rules", name);
		}
		for (size_t i = 0; i < n; i++) {
			json_object *r = json_object_array_get_idx(list, i), *tr = NULL, *hs = NULL;
			int shape = json_object_is_type(r, json_type_object) && json_object_object_length(r) == 1 &&
				    json_object_object_get_ex(r, "transform", &tr) &&
				    json_object_is_type(tr, json_type_object) && json_object_object_length(tr) == 1 &&
				    json_object_object_get_ex(tr, "headers", &hs) &&
				    json_object_is_type(hs, json_type_object);
			if (!shape) {
				json_object_put(arr);
				return sbx_fail(err, SBX_INVALID_REQUEST, "create", "network.rules['%.80s'][%zu]: "
						"sbx-serve implements {\"transform\": {\"headers\": {...}}} only", name, i);
			}
			json_object_object_foreach(hs, hn, hv) {
				const char *v = json_object_is_type(hv, json_type_string) ? json_object_get_string(hv) : NULL;
				const char *why = !header_ok(hn) ? "is not a header name"
						: !v || !*v || strlen(v) > VALUE_MAX || !printable(v) ? "must be a "
						  "string of printable characters, at most 4 KiB" : NULL;
				for (const char *p = v ? strstr(v, "${e2b.secrets.") : NULL; p && !why;
				     p = strstr(p + 1, "${e2b.secrets.")) {
					const char *e = strchr(p, '}');
					char nm[72];
					size_t nl = e ? (size_t)(e - p - 14) : 0;
					if (!e || nl == 0 || nl >= sizeof(nm)) {
						why = "holds a malformed ${e2b.secrets.NAME}";
						break;
					}
					memcpy(nm, p + 14, nl);
					nm[nl] = '\0';
					if (!sec || !json_object_object_get_ex(sec, nm, NULL)) {
						json_object_put(arr);
						return sbx_fail(err, SBX_INVALID_REQUEST, "create",
								"network.rules['%.80s']: secret %s is not one of the "
								"profile's egress_secrets", name, nm);
					}
				}
				if (why) {
					json_object_put(arr);
					return sbx_fail(err, SBX_INVALID_REQUEST, "create",
							"network.rules['%.80s']: header '%.64s' %s", name, hn, why);
				}
				json_object *h = json_object_new_object();
				json_object_object_add(h, "to", json_object_new_string(name));
				json_object_object_add(h, "header", json_object_new_string(hn));
				json_object_object_add(h, "value", json_object_new_string(v));
				json_object_array_add(arr, h);
			}
		}
	}
	if (json_object_array_length(arr) == 0) {
		json_object_put(arr);
		return 0;
	}
	*out = arr;
	return 0;
}
