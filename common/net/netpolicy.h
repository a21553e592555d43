/* netpolicy.h - a sandbox's egress policy (issue 28), one model for every
 * backend.
 *
 * A policy is an ordered list of rules; the first rule that matches a
 * connection decides it, and a connection no rule matches gets the
 * policy's default.  A rule is
 *
 *   allow | deny   ×   a CIDR | an exact domain | "*.suffix"   ×   ports
 *
 * (ports optional: none means every port).  A domain rule matches the
 * name a connection carries (TLS SNI, HTTP Host, a CONNECT target), a
 * CIDR rule the address being dialled (for a named connection the
 * addresses the name resolves to, for an IP-literal one the address the
 * sandbox chose).  "*.example.com" matches every name below example.com,
 * not example.com itself.
 *
 * The default, unless the document says it: deny when the policy has an
 * allow rule, else allow ("any allow rule makes the default deny").  What
 * a backend always refuses (metadata, link-local, loopback, private, the
 * host's own addresses) is not part of the policy: no rule opens it; only
 * a profile's egress_allow does (see docs/security.md, "Egress").
 *
 * Text forms (sbx-create --allow-out/--deny-out, sbx-ctl network):
 *   DEST            every port        10.1.0.0/16  api.example.com  *.pypi.example
 *   DEST:PORTS      443  80,443  8000-8100
 *   [V6CIDR]:PORTS  [2001:db8::/32]:443
 * A bare address is its /32 (/128).
 *
 * The document (--network-policy FILE, stored with the sandbox):
 *   {"rules": [{"action": "allow", "to": "*.example.com", "ports": [443, "8000-8100"]}, ...],
 *    "default": "deny"}
 *
 * L7 fields (issue 29), on a rule whose "to" is a domain or "*.suffix"
 * only (Cube's shape: a rule needs a host):
 *   {"action": "allow", "to": "api.example.com", "scheme": "https",
 *    "methods": ["GET", "HEAD"], "path": "/v1/models"}
 * "scheme" is "http" or "https" (the connection: plain or TLS), "methods"
 * upper-case tokens, "path" a prefix ("/v1/" matches "/v1/x") or, when it
 * holds '*' or '?' or '[', an fnmatch(3) glob over the whole path (a '*'
 * crosses '/').  The path matched is the request's, without its query.  A
 * rule with any of them is an L7 rule: it matches a request, never a bare
 * connection, so sbx_np_judge skips it; a connection whose name an L7 rule
 * covers (sbx_np_l7) is read request by request (plain HTTP in the broker,
 * HTTPS by terminating TLS there) and each request is judged by
 * sbx_np_judge_req over every rule, first match wins.  The text forms
 * (--allow-out) have no L7 fields: a document carries them.
 *
 * parsed strictly: an unknown key, a wrong type, a malformed destination,
 * a port out of range, more than SBX_NP_MAX_RULES rules: each is an
 * invalid_request naming the rule.  sbx_np_to_json writes the canonical
 * form (lower-case names, canonical CIDRs, "default" always present), which
 * sbx_np_from_json reads back to the same policy. */
#ifndef SBX_NETPOLICY_H
#define SBX_NETPOLICY_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "err.h"

#define SBX_NP_MAX_RULES 4096
#define SBX_NP_MAX_PORTS 64        /* port ranges per rule */
#define SBX_NP_DEFAULT ((size_t)-1) /* "rule index" of the default */

enum sbx_np_action { SBX_NP_ALLOW = 1, SBX_NP_DENY = 2 };
enum sbx_np_kind { SBX_NP_CIDR = 1, SBX_NP_DOMAIN, SBX_NP_SUFFIX };

struct sbx_np_ports { uint16_t lo, hi; };

struct sbx_np_rule {
	enum sbx_np_action action;
	enum sbx_np_kind kind;
	char *dest;                /* canonical: "10.1.0.0/16", "api.example.com", "*.example.com" */
	int af, plen;              /* CIDR only */
	unsigned char addr[16];
	struct sbx_np_ports *ports;
	size_t nports;             /* 0: every port */
	/* L7 (none set: an L4 rule).  scheme 0 any, else SBX_NP_HTTP/HTTPS. */
	int scheme;
	char **methods;            /* NULL-terminated upper-case; NULL: any */
	char *path;                /* prefix or glob; NULL: any */
	int path_glob;
};

enum { SBX_NP_HTTP = 1, SBX_NP_HTTPS = 2 };

/* One HTTP request as an L7 rule sees it (sbx_np_judge_req). */
struct sbx_np_req {
	int scheme;                /* SBX_NP_HTTP or SBX_NP_HTTPS */
	const char *method;        /* as sent (tokens compare exactly) */
	const char *path;          /* the target's path, no query, no fragment */
};

struct sbx_netpolicy {
	struct sbx_np_rule *rules;
	size_t n;
	enum sbx_np_action dflt;   /* valid after sbx_np_finish (or a parse) */
	int dflt_set;              /* the document named the default */
};

void sbx_np_clear(struct sbx_netpolicy *p);

/* Append one rule in text form (see above).  0 / -1 invalid_request. */
int sbx_np_add(struct sbx_netpolicy *p, enum sbx_np_action a, const char *text,
	       struct sbx_err *err);
/* Append a copy of rule `r` (of another policy).  0 / -1 too many rules. */
int sbx_np_add_rule(struct sbx_netpolicy *p, const struct sbx_np_rule *r, struct sbx_err *err);
/* Set the default from flags ("allow"/"deny") and fill it when unset. */
void sbx_np_finish(struct sbx_netpolicy *p);

/* The document form, both ways.  from_json appends to `p` (rules after
 * any already there) and finishes it; to_json needs a finished policy. */
int sbx_np_from_json(json_object *doc, struct sbx_netpolicy *p, struct sbx_err *err);
int sbx_np_from_text(const char *text, size_t len, struct sbx_netpolicy *p, struct sbx_err *err);
json_object *sbx_np_to_json(const struct sbx_netpolicy *p);

/* E2B's lists (allowOut: IPs, CIDRs, domains, "*.suffix"; denyOut: IPs and
 * CIDRs only), exactly as E2B defines them: allow wins when both match, and
 * what neither matches is allowed unless internet access is off (that is
 * denyOut ["0.0.0.0/0"]).  So: the allowOut entries first as allow rules,
 * then the denyOut entries as deny rules, then the default allow (deny
 * when allow_internet is 0, or when denyOut holds "0.0.0.0/0": that entry,
 * and "::/0" beside it, is the default deny, not a rule).  A domain in
 * denyOut is invalid_request. */
int sbx_np_from_e2b(json_object *allow_out, json_object *deny_out, int allow_internet,
		    struct sbx_netpolicy *p, struct sbx_err *err);

/* The other way, for a service that takes E2B's lists (e2b, cube): 0 with
 * *allow_out and *deny_out new arrays when `p` means the same under
 * E2B's rules (no ports; deny rules on CIDRs only; every allow rule
 * before every deny rule, so that "allow wins" is "first match wins"; a
 * default deny becomes denyOut "0.0.0.0/0" and "::/0"); -1 unsupported
 * naming what cannot be expressed. */
int sbx_np_to_e2b(const struct sbx_netpolicy *p, json_object **allow_out, json_object **deny_out,
		  struct sbx_err *err);

/* The rule's text form, "allow *.example.com:443"; malloc'd. */
char *sbx_np_rule_text(const struct sbx_np_rule *r);

/* A connection to `port`, carrying `name` (lower-case, no trailing dot;
 * NULL when it carries none) and going to `sa` (NULL when not known yet):
 * the verdict, and in *rule the index of the deciding rule (or
 * SBX_NP_DEFAULT).  A domain rule never matches a NULL name, a CIDR rule
 * never a NULL address. */
enum sbx_np_action sbx_np_judge(const struct sbx_netpolicy *p, const char *name,
				const struct sockaddr *sa, unsigned port, size_t *rule);

/* 1 when rule r has an L7 field. */
int sbx_np_rule_l7(const struct sbx_np_rule *r);

/* A request on a connection to `port` carrying `name` (as sbx_np_judge),
 * judged by every rule in order: an L4 rule matches as for a connection,
 * an L7 rule when its scheme, method and path match `rq` too.  With rq
 * NULL this is sbx_np_judge (L7 rules never match). */
enum sbx_np_action sbx_np_judge_req(const struct sbx_netpolicy *p, const char *name,
				    const struct sockaddr *sa, unsigned port,
				    const struct sbx_np_req *rq, size_t *rule);

/* 1 when an L7 rule covers `name` on `port`: that connection is judged
 * request by request, never spliced whole. */
int sbx_np_l7(const struct sbx_netpolicy *p, const char *name, unsigned port);

/* May the sandbox resolve `name`?  The first domain rule that matches it
 * (on any port) decides, an L7 deny rule excepted (it refuses some
 * requests, not the name); a name no domain rule matches may be resolved
 * only when the default is allow (a CIDR-only allow-list resolves no
 * names: a lookup would carry the name out).  *rule as above. */
enum sbx_np_action sbx_np_judge_name(const struct sbx_netpolicy *p, const char *name,
				     size_t *rule);

/* 1 when some domain rule covers `port`: a connection there must be read
 * for its name before it can be judged. */
int sbx_np_wants_name(const struct sbx_netpolicy *p, unsigned port);

/* Normalise a host name in place (lower-case, trailing dot dropped) and
 * check it: labels of letters, digits, '-' and '_', 1-63 bytes, 253 in
 * all.  0 when valid, -1 otherwise. */
int sbx_np_name_norm(char *name);

#endif
