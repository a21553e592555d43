/* netpolicy.c - the egress policy model (see netpolicy.h): parse the text
 * and document forms strictly, write the canonical document, judge a
 * connection or a lookup.  Pure: no I/O but what a caller hands in. */
#include "netpolicy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "ssrf.h"
#include "util.h"

static void strv_free(char **v)
{
	for (char **e = v; e && *e; e++)
		free(*e);
	free(v);
}

void sbx_np_clear(struct sbx_netpolicy *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->rules[i].dest);
		free(p->rules[i].ports);
		strv_free(p->rules[i].methods);
		free(p->rules[i].path);
	}
	free(p->rules);
	memset(p, 0, sizeof(*p));
}

int sbx_np_name_norm(char *name)
{
	size_t n = strlen(name);
	if (n && name[n - 1] == '.')
		name[--n] = '\0';
	if (n == 0 || n > 253)
		return -1;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c == '.') {
			if (label == 0)
				return -1;
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return -1;
		name[i] = (char)tolower(c);
		if (++label > 63)
			return -1;
	}
	return 0;
}

/* "443", "80,443", "8000-8100": ranges into r->ports. */
static int parse_ports(const char *s, struct sbx_np_rule *r, const char *what, struct sbx_err *err)
{
	if (!*s)
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s: empty port list", what);
	while (*s) {
		char *end;
		errno = 0;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;
		if (end == s || !isdigit((unsigned char)*s) || errno)
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s: bad port list", what);
		if (*end == '-') {
			s = end + 1;
			if (!isdigit((unsigned char)*s))
				return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s: bad port range", what);
			hi = strtoul(s, &end, 10);
		}
		if (lo < 1 || hi > 65535 || lo > hi)
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
					"%s: ports are 1-65535, low before high", what);
		if (r->nports == SBX_NP_MAX_PORTS)
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s: more than %d port ranges",
					what, SBX_NP_MAX_PORTS);
		r->ports = sbx_xrealloc(r->ports, (r->nports + 1) * sizeof(*r->ports));
		r->ports[r->nports++] = (struct sbx_np_ports){(uint16_t)lo, (uint16_t)hi};
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s: bad port list", what);
		s = end;
	}
	return 0;
}

/* The destination alone: a CIDR, a bare address, a domain, "*.suffix". */
static int parse_dest(const char *d, struct sbx_np_rule *r, const char *what, struct sbx_err *err)
{
	unsigned char a[16];
	int af, len;
	int is_addr = sbx_cidr_parse(d, &af, a, &len) == 0;
	if (!is_addr && inet_pton(AF_INET, d, a) == 1)
		af = AF_INET, len = 32, is_addr = 1;
	else if (!is_addr && inet_pton(AF_INET6, d, a) == 1)
		af = AF_INET6, len = 128, is_addr = 1;
	if (is_addr) {
		char txt[INET6_ADDRSTRLEN];
		inet_ntop(af, a, txt, sizeof(txt));
		r->kind = SBX_NP_CIDR;
		r->af = af;
		r->plen = len;
		memcpy(r->addr, a, af == AF_INET ? 4 : 16);
		r->dest = sbx_xasprintf("%s/%d", txt, len);
		return 0;
	}
	if (strchr(d, '/') || (strchr(d, ':')))
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
				"%s: '%.80s' is not a CIDR (ADDR/LEN, no host bits)", what, d);
	int suffix = d[0] == '*';
	if (suffix && d[1] != '.')
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
				"%s: a wildcard is '*.suffix', not '%.80s'", what, d);
	SBX_AUTOFREE char *name = sbx_xstrdup(d + (suffix ? 2 : 0));
	if (sbx_np_name_norm(name) < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
				"%s: '%.80s' is not a CIDR, a domain or '*.suffix'", what, d);
	r->kind = suffix ? SBX_NP_SUFFIX : SBX_NP_DOMAIN;
	r->dest = suffix ? sbx_xasprintf("*.%s", name) : sbx_xstrdup(name);
	return 0;
}

static struct sbx_np_rule *new_rule(struct sbx_netpolicy *p, enum sbx_np_action a,
				    struct sbx_err *err)
{
	if (p->n >= SBX_NP_MAX_RULES) {
		sbx_fail(err, SBX_INVALID_REQUEST, "policy", "more than %d rules", SBX_NP_MAX_RULES);
		return NULL;
	}
	p->rules = sbx_xrealloc(p->rules, (p->n + 1) * sizeof(*p->rules));
	struct sbx_np_rule *r = &p->rules[p->n];
	memset(r, 0, sizeof(*r));
	r->action = a;
	return r;
}

static void drop_last(struct sbx_netpolicy *p)
{
	free(p->rules[p->n].dest);
	free(p->rules[p->n].ports);
	strv_free(p->rules[p->n].methods);
	free(p->rules[p->n].path);
}

int sbx_np_rule_l7(const struct sbx_np_rule *r)
{
	return r->scheme || r->methods || r->path;
}

/* A method token (RFC 9110: tchar), upper-case letters here, 1-16. */
static int method_ok(const char *m)
{
	size_t n = strlen(m);
	if (n == 0 || n > 16)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(m[i] >= 'A' && m[i] <= 'Z') && m[i] != '-' && m[i] != '_')
			return 0;
	return 1;
}

/* "scheme", "methods", "path" of a rule document into r (its dest parsed). */
static int l7_from_json(json_object *scheme, json_object *methods, json_object *path,
			struct sbx_np_rule *r, const char *what, struct sbx_err *err)
{
	if ((scheme || methods || path) && r->kind == SBX_NP_CIDR)
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
				"%s: scheme, methods and path need a name in \"to\", not a CIDR", what);
	if (scheme) {
		const char *s = json_object_is_type(scheme, json_type_string) ? json_object_get_string(scheme) : "";
		if (!strcmp(s, "http"))
			r->scheme = SBX_NP_HTTP;
		else if (!strcmp(s, "https"))
			r->scheme = SBX_NP_HTTPS;
		else
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
					"%s: \"scheme\" is \"http\" or \"https\"", what);
	}
	if (methods) {
		size_t n = json_object_is_type(methods, json_type_array) ? json_object_array_length(methods) : 0;
		if (n == 0 || n > 16)
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
					"%s: \"methods\" is an array of 1 to 16 methods", what);
		r->methods = sbx_xcalloc(n + 1, sizeof(char *));
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(methods, i);
			const char *m = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
			if (!method_ok(m))
				return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
						"%s: methods[%zu] is not an upper-case method", what, i);
			r->methods[i] = sbx_xstrdup(m);
		}
	}
	if (path) {
		const char *s = json_object_is_type(path, json_type_string) ? json_object_get_string(path) : "";
		if (s[0] != '/' || strlen(s) > 1024 || strpbrk(s, " \t\r\n?#"))
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
					"%s: \"path\" starts with '/', has no space, '?' or '#', "
					"at most 1024 bytes", what);
		r->path = sbx_xstrdup(s);
		r->path_glob = strpbrk(s, "*[") != NULL;
	}
	return 0;
}

int sbx_np_add(struct sbx_netpolicy *p, enum sbx_np_action a, const char *text,
	       struct sbx_err *err)
{
	struct sbx_np_rule *r = new_rule(p, a, err);
	if (!r)
		return -1;
	SBX_AUTOFREE char *what = sbx_xasprintf("rule %zu ('%.80s')", p->n + 1, text);
	SBX_AUTOFREE char *d = sbx_xstrdup(text);
	char *ports = NULL;
	if (d[0] == '[') {                   /* [v6]:PORTS */
		char *close = strchr(d, ']');
		if (!close || close[1] != ':')
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s: '[CIDR]:PORTS' expected", what);
		*close = '\0';
		ports = close + 2;
		memmove(d, d + 1, strlen(d));
		if (!strchr(d, ':'))
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
					"%s: brackets are for IPv6 only", what);
	} else if (!strchr(d, ':') || strchr(d, ':') == strrchr(d, ':')) {
		char *c = strchr(d, ':');    /* one colon: DEST:PORTS */
		if (c) {
			*c = '\0';
			ports = c + 1;
		}
	}
	if (parse_dest(d, r, what, err) < 0 || (ports && parse_ports(ports, r, what, err) < 0)) {
		drop_last(p);
		return -1;
	}
	p->n++;
	return 0;
}

int sbx_np_add_rule(struct sbx_netpolicy *p, const struct sbx_np_rule *src, struct sbx_err *err)
{
	struct sbx_np_rule *r = new_rule(p, src->action, err);
	if (!r)
		return -1;
	*r = *src;
	r->dest = sbx_xstrdup(src->dest);
	r->ports = src->nports ? sbx_xmalloc(src->nports * sizeof(*r->ports)) : NULL;
	if (src->nports)
		memcpy(r->ports, src->ports, src->nports * sizeof(*r->ports));
	r->path = src->path ? sbx_xstrdup(src->path) : NULL;
	r->methods = NULL;
	if (src->methods) {
		size_t n = 0;
		while (src->methods[n])
			n++;
		r->methods = sbx_xcalloc(n + 1, sizeof(char *));
		for (size_t i = 0; i < n; i++)
			r->methods[i] = sbx_xstrdup(src->methods[i]);
	}
	p->n++;
	return 0;
}

void sbx_np_finish(struct sbx_netpolicy *p)
{
	if (p->dflt_set)
		return;
	p->dflt = SBX_NP_ALLOW;
	for (size_t i = 0; i < p->n; i++)
		if (p->rules[i].action == SBX_NP_ALLOW)
			p->dflt = SBX_NP_DENY;
}

static int parse_action(const char *s, enum sbx_np_action *a)
{
	if (s && !strcmp(s, "allow"))
		*a = SBX_NP_ALLOW;
	else if (s && !strcmp(s, "deny"))
		*a = SBX_NP_DENY;
	else
		return -1;
	return 0;
}

static int rule_from_json(json_object *o, struct sbx_netpolicy *p, struct sbx_err *err)
{
	size_t i = p->n + 1;
	if (!json_object_is_type(o, json_type_object))
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "rule %zu: not an object", i);
	json_object *act = NULL, *to = NULL, *ports = NULL, *scheme = NULL, *methods = NULL,
		    *path = NULL;
	json_object_object_foreach(o, k, v) {
		if (!strcmp(k, "action"))
			act = v;
		else if (!strcmp(k, "scheme"))
			scheme = v;
		else if (!strcmp(k, "methods"))
			methods = v;
		else if (!strcmp(k, "path"))
			path = v;
		else if (!strcmp(k, "to"))
			to = v;
		else if (!strcmp(k, "ports"))
			ports = v;
		else
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "rule %zu: unknown key '%.40s'",
					i, k);
	}
	enum sbx_np_action a;
	if (!act || !json_object_is_type(act, json_type_string) ||
	    parse_action(json_object_get_string(act), &a) < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
				"rule %zu: \"action\" must be \"allow\" or \"deny\"", i);
	if (!to || !json_object_is_type(to, json_type_string))
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "rule %zu: \"to\" must be a string", i);
	const char *dest = json_object_get_string(to);
	if (strchr(dest, ':') && !strchr(strchr(dest, ':') + 1, ':'))
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
				"rule %zu: ports go in \"ports\", not in \"to\"", i);
	struct sbx_np_rule *r = new_rule(p, a, err);
	if (!r)
		return -1;
	SBX_AUTOFREE char *what = sbx_xasprintf("rule %zu ('%.80s')", i, dest);
	if (parse_dest(dest, r, what, err) < 0 ||
	    l7_from_json(scheme, methods, path, r, what, err) < 0) {
		drop_last(p);
		return -1;
	}
	if (ports) {
		if (!json_object_is_type(ports, json_type_array) || json_object_array_length(ports) == 0) {
			drop_last(p);
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
					"%s: \"ports\" must be a non-empty array", what);
		}
		for (size_t k = 0; k < json_object_array_length(ports); k++) {
			json_object *e = json_object_array_get_idx(ports, k);
			SBX_AUTOFREE char *s = NULL;
			if (json_object_is_type(e, json_type_int))
				s = sbx_xasprintf("%lld", (long long)json_object_get_int64(e));
			else if (json_object_is_type(e, json_type_string) &&
				 !strchr(json_object_get_string(e), ','))
				s = sbx_xstrdup(json_object_get_string(e));
			if (!s || parse_ports(s, r, what, err) < 0) {
				drop_last(p);
				if (!s)
					sbx_fail(err, SBX_INVALID_REQUEST, "policy",
						 "%s: a port is a number or \"LOW-HIGH\"", what);
				return -1;
			}
		}
	}
	p->n++;
	return 0;
}

int sbx_np_from_json(json_object *doc, struct sbx_netpolicy *p, struct sbx_err *err)
{
	if (!doc || !json_object_is_type(doc, json_type_object))
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "a network policy is a JSON object");
	json_object *rules = NULL, *dflt = NULL;
	json_object_object_foreach(doc, k, v) {
		if (!strcmp(k, "rules"))
			rules = v;
		else if (!strcmp(k, "default"))
			dflt = v;
		else
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "unknown key '%.40s'", k);
	}
	if (rules && !json_object_is_type(rules, json_type_array))
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "\"rules\" must be an array");
	if (dflt) {
		if (!json_object_is_type(dflt, json_type_string) ||
		    parse_action(json_object_get_string(dflt), &p->dflt) < 0)
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
					"\"default\" must be \"allow\" or \"deny\"");
		p->dflt_set = 1;
	}
	for (size_t i = 0; rules && i < json_object_array_length(rules); i++)
		if (rule_from_json(json_object_array_get_idx(rules, i), p, err) < 0)
			return -1;
	sbx_np_finish(p);
	return 0;
}

int sbx_np_from_text(const char *text, size_t len, struct sbx_netpolicy *p, struct sbx_err *err)
{
	json_tokener *t = json_tokener_new();
	json_tokener_set_flags(t, JSON_TOKENER_STRICT);
	json_object *o = json_tokener_parse_ex(t, text, (int)len);
	int ok = o && json_tokener_get_parse_end(t) == len;
	json_tokener_free(t);
	if (!ok) {
		json_object_put(o);
		return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "the network policy is not one JSON object");
	}
	int rc = sbx_np_from_json(o, p, err);
	json_object_put(o);
	return rc;
}

static char *ports_text(const struct sbx_np_rule *r, json_object *arr)
{
	size_t cap = 16 + r->nports * 12, len = 0;
	char *b = sbx_xmalloc(cap);
	b[0] = '\0';
	for (size_t i = 0; i < r->nports; i++) {
		char one[16];
		if (r->ports[i].lo == r->ports[i].hi)
			snprintf(one, sizeof(one), "%u", r->ports[i].lo);
		else
			snprintf(one, sizeof(one), "%u-%u", r->ports[i].lo, r->ports[i].hi);
		if (arr)
			json_object_array_add(arr, r->ports[i].lo == r->ports[i].hi
							   ? json_object_new_int(r->ports[i].lo)
							   : json_object_new_string(one));
		len += (size_t)snprintf(b + len, cap - len, "%s%s", i ? "," : "", one);
	}
	return b;
}

json_object *sbx_np_to_json(const struct sbx_netpolicy *p)
{
	json_object *o = json_object_new_object(), *rules = json_object_new_array();
	for (size_t i = 0; i < p->n; i++) {
		const struct sbx_np_rule *r = &p->rules[i];
		json_object *j = json_object_new_object();
		json_object_object_add(j, "action", json_object_new_string(r->action == SBX_NP_ALLOW ? "allow" : "deny"));
		json_object_object_add(j, "to", json_object_new_string(r->dest));
		if (r->nports) {
			json_object *a = json_object_new_array();
			free(ports_text(r, a));
			json_object_object_add(j, "ports", a);
		}
		if (r->scheme)
			json_object_object_add(j, "scheme", json_object_new_string(r->scheme == SBX_NP_HTTP ? "http" : "https"));
		if (r->methods) {
			json_object *a = json_object_new_array();
			for (char **m = r->methods; *m; m++)
				json_object_array_add(a, json_object_new_string(*m));
			json_object_object_add(j, "methods", a);
		}
		if (r->path)
			json_object_object_add(j, "path", json_object_new_string(r->path));
		json_object_array_add(rules, j);
	}
	json_object_object_add(o, "rules", rules);
	json_object_object_add(o, "default", json_object_new_string(p->dflt == SBX_NP_ALLOW ? "allow" : "deny"));
	return o;
}

/* An L7 rule reads "allow GET,HEAD https://api.example.com:443/v1/..."
 * (methods, scheme, ports and path each only when set). */
char *sbx_np_rule_text(const struct sbx_np_rule *r)
{
	const char *a = r->action == SBX_NP_ALLOW ? "allow" : "deny";
	SBX_AUTOFREE char *ports = r->nports ? ports_text(r, NULL) : NULL;
	if (sbx_np_rule_l7(r)) {
		size_t ml = 1;
		for (char **m = r->methods; m && *m; m++)
			ml += strlen(*m) + 1;
		SBX_AUTOFREE char *meth = sbx_xcalloc(1, ml);
		for (char **m = r->methods; m && *m; m++) {
			if (*meth)
				strcat(meth, ",");
			strcat(meth, *m);
		}
		return sbx_xasprintf("%s %s%s%s%s%s%s%s", a, meth, *meth ? " " : "",
				     r->scheme == SBX_NP_HTTP ? "http://" : r->scheme == SBX_NP_HTTPS ? "https://" : "",
				     r->dest, ports ? ":" : "", ports ? ports : "", r->path ? r->path : "");
	}
	if (!r->nports)
		return sbx_xasprintf("%s %s", a, r->dest);
	int br = r->kind == SBX_NP_CIDR && r->af == AF_INET6;
	return sbx_xasprintf("%s %s%s%s:%s", a, br ? "[" : "", r->dest, br ? "]" : "", ports);
}

/* Is "0.0.0.0/0" (E2B's ALL_TRAFFIC) among the strings of `l`? */
static int has_all_traffic(json_object *l)
{
	if (!l || !json_object_is_type(l, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(l); i++) {
		json_object *e = json_object_array_get_idx(l, i);
		if (json_object_is_type(e, json_type_string) && !strcmp(json_object_get_string(e), "0.0.0.0/0"))
			return 1;
	}
	return 0;
}

int sbx_np_from_e2b(json_object *allow_out, json_object *deny_out, int allow_internet,
		    struct sbx_netpolicy *p, struct sbx_err *err)
{
	/* denyOut ALL_TRAFFIC is E2B's "the rest denied" (its internet access
	 * off): the default, not a rule, so that a name no allowOut entry
	 * names is refused as a name (DNS included) and the round trip
	 * through sbx_np_to_e2b gives the policy back; its "::/0" partner is
	 * the same default. */
	int all = has_all_traffic(deny_out);
	for (int pass = 0; pass < 2; pass++) {
		json_object *l = pass ? deny_out : allow_out;
		if (!l)
			continue;
		if (!json_object_is_type(l, json_type_array))
			return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s must be an array",
					pass ? "denyOut" : "allowOut");
		for (size_t i = 0; i < json_object_array_length(l); i++) {
			json_object *e = json_object_array_get_idx(l, i);
			if (!json_object_is_type(e, json_type_string))
				return sbx_fail(err, SBX_INVALID_REQUEST, "policy", "%s[%zu] must be a string",
						pass ? "denyOut" : "allowOut", i);
			const char *s = json_object_get_string(e);
			if (strchr(s, ':') && !strchr(strchr(s, ':') + 1, ':'))
				return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
						"%s[%zu]: E2B's entries have no ports", pass ? "denyOut" : "allowOut", i);
			if (pass && all && (!strcmp(s, "0.0.0.0/0") || !strcmp(s, "::/0")))
				continue;
			if (sbx_np_add(p, pass ? SBX_NP_DENY : SBX_NP_ALLOW, s, err) < 0)
				return -1;
			if (pass && p->rules[p->n - 1].kind != SBX_NP_CIDR)
				return sbx_fail(err, SBX_INVALID_REQUEST, "policy",
						"denyOut[%zu]: '%.80s': denyOut takes IPs and CIDRs only", i, s);
		}
	}
	p->dflt = allow_internet && !all ? SBX_NP_ALLOW : SBX_NP_DENY;
	p->dflt_set = 1;
	return 0;
}

int sbx_np_to_e2b(const struct sbx_netpolicy *p, json_object **allow_out, json_object **deny_out,
		  struct sbx_err *err)
{
	*allow_out = *deny_out = NULL;
	int seen_deny = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct sbx_np_rule *r = &p->rules[i];
		SBX_AUTOFREE char *t = sbx_np_rule_text(r);
		if (r->nports)
			return sbx_fail(err, SBX_UNSUPPORTED, "policy",
					"rule %zu (%s): E2B's lists have no ports", i + 1, t);
		if (sbx_np_rule_l7(r))
			return sbx_fail(err, SBX_UNSUPPORTED, "policy",
					"rule %zu (%s): E2B's lists have no scheme, method or path", i + 1, t);
		if (r->action == SBX_NP_DENY && r->kind != SBX_NP_CIDR)
			return sbx_fail(err, SBX_UNSUPPORTED, "policy",
					"rule %zu (%s): E2B's denyOut takes IPs and CIDRs only", i + 1, t);
		if (r->action == SBX_NP_ALLOW && seen_deny)
			return sbx_fail(err, SBX_UNSUPPORTED, "policy",
					"rule %zu (%s): an allow after a deny (on E2B allow always wins)", i + 1, t);
		seen_deny |= r->action == SBX_NP_DENY;
	}
	*allow_out = json_object_new_array();
	*deny_out = json_object_new_array();
	for (size_t i = 0; i < p->n; i++)
		json_object_array_add(p->rules[i].action == SBX_NP_ALLOW ? *allow_out : *deny_out,
				      json_object_new_string(p->rules[i].dest));
	if (p->dflt == SBX_NP_DENY) {
		json_object_array_add(*deny_out, json_object_new_string("0.0.0.0/0"));
		json_object_array_add(*deny_out, json_object_new_string("::/0"));
	}
	return 0;
}

static int port_in(const struct sbx_np_rule *r, unsigned port)
{
	if (!r->nports)
		return 1;
	for (size_t i = 0; i < r->nports; i++)
		if (port >= r->ports[i].lo && port <= r->ports[i].hi)
			return 1;
	return 0;
}

static int name_match(const struct sbx_np_rule *r, const char *name)
{
	if (r->kind == SBX_NP_DOMAIN)
		return strcmp(r->dest, name) == 0;
	size_t n = strlen(name), s = strlen(r->dest) - 1;   /* ".suffix" */
	return n > s && strcmp(name + n - s, r->dest + 1) == 0;
}

static int addr_match(const struct sbx_np_rule *r, const struct sockaddr *sa)
{
	return sbx_cidr_contains(r->dest, sa);
}

static int req_match(const struct sbx_np_rule *r, const struct sbx_np_req *rq)
{
	if (r->scheme && r->scheme != rq->scheme)
		return 0;
	if (r->methods) {
		char **m = r->methods;
		while (*m && strcmp(*m, rq->method))
			m++;
		if (!*m)
			return 0;
	}
	if (r->path)
		return r->path_glob ? fnmatch(r->path, rq->path, 0) == 0
				    : strncmp(rq->path, r->path, strlen(r->path)) == 0;
	return 1;
}

enum sbx_np_action sbx_np_judge(const struct sbx_netpolicy *p, const char *name,
				const struct sockaddr *sa, unsigned port, size_t *rule)
{
	return sbx_np_judge_req(p, name, sa, port, NULL, rule);
}

int sbx_np_l7(const struct sbx_netpolicy *p, const char *name, unsigned port)
{
	for (size_t i = 0; name && i < p->n; i++)
		if (sbx_np_rule_l7(&p->rules[i]) && port_in(&p->rules[i], port) &&
		    name_match(&p->rules[i], name))
			return 1;
	return 0;
}

enum sbx_np_action sbx_np_judge_req(const struct sbx_netpolicy *p, const char *name,
				    const struct sockaddr *sa, unsigned port,
				    const struct sbx_np_req *rq, size_t *rule)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct sbx_np_rule *r = &p->rules[i];
		if (!port_in(r, port))
			continue;
		if (sbx_np_rule_l7(r) && (!rq || !req_match(r, rq)))
			continue;
		if (r->kind == SBX_NP_CIDR ? (sa && addr_match(r, sa)) : (name && name_match(r, name))) {
			*rule = i;
			return r->action;
		}
	}
	*rule = SBX_NP_DEFAULT;
	return p->dflt;
}

enum sbx_np_action sbx_np_judge_name(const struct sbx_netpolicy *p, const char *name,
				     size_t *rule)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->rules[i].kind != SBX_NP_CIDR && name_match(&p->rules[i], name) &&
		    !(sbx_np_rule_l7(&p->rules[i]) && p->rules[i].action == SBX_NP_DENY)) {
			*rule = i;
			return p->rules[i].action;
		}
	*rule = SBX_NP_DEFAULT;
	return p->dflt;
}

int sbx_np_wants_name(const struct sbx_netpolicy *p, unsigned port)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->rules[i].kind != SBX_NP_CIDR && port_in(&p->rules[i], port))
			return 1;
	return 0;
}
