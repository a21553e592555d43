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

/* May the sandbox resolve `name`?  The first domain rule that matches it
 * (on any port) decides; a name no domain rule matches may be resolved
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
