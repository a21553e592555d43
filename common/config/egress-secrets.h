/* egress-secrets.h - a profile's secrets at egress (issue 29; docs/security.md,
 * "L7 rules and secrets"): API keys a sandbox may use without holding.
 *
 *   "egress_secrets": {
 *     "OPENAI_API_KEY": {"file": "/etc/sbx/openai.key",        (or "env": "VAR")
 *                        "to": ["api.openai.com", "*.openai.example"],
 *                        "header": "Authorization", "format": "Bearer {}"},
 *     "SVC_PASSWORD":   {"env": "SVC_PW", "to": ["svc.example"], "basic": "svc-user"},
 *     "MAPS_KEY":       {"file": "...", "to": ["maps.example"], "query": "key"}}
 *
 * A sandbox of the profile that has a network policy (so a broker) sees
 * only a placeholder: the variable NAME holds "sbx-secret:NAME".  The
 * broker, which alone holds the values (read here by the creator, handed
 * to it on its stdin, never argv or environ), replaces placeholders in an
 * HTTPS request to a name in "to" (a request to such a name is always
 * intercepted): in any header value; in a Basic credential (decoded,
 * replaced, encoded); in the query for the "query" form.  The header form
 * also sets its header to "format" ({} the value) when the request does not
 * carry it, as does the basic form its Basic credential.  A placeholder in a
 * request to any other name the broker reads is refused (403), as is one
 * over plain HTTP.  Values are at most 4 KiB, without control characters.
 * Like every sbx secret, a value is read from a file (trimmed) or from an
 * environment variable of the creator, named by the profile. */
#ifndef SBX_EGRESS_SECRETS_H
#define SBX_EGRESS_SECRETS_H

#include <json-c/json.h>

#include "err.h"

#define SBX_SECRET_PREFIX "sbx-secret:"
#define SBX_EGRESS_SECRETS_MAX 64

struct sbx_netpolicy;

/* Check the profile object's egress_secrets and egress_upstream_ca (a
 * PEM file of the CAs upstream servers are verified against instead of
 * the host's store): a configuration error naming profile `name` and the
 * entry.  Values are not read here. */
int sbx_egress_secrets_check(const char *name, json_object *o, struct sbx_err *err);

/* The secrets with their values: a new array of {"name", "value", "to",
 * and the form's keys}.  A value that cannot be read is a configuration
 * error naming the secret and its source, never the value.  NULL (and 0)
 * when the profile has none.  Free with sbx_egress_secrets_free (wipes). */
int sbx_egress_secrets_read(json_object *o, json_object **out, struct sbx_err *err);
void sbx_egress_secrets_free(json_object *secrets);

/* 1 when a sandbox with policy `np` (NULL: none) under profile object `o`
 * needs interception: an L7 rule, or egress secrets (with a policy). */
int sbx_egress_l7_needed(json_object *o, const struct sbx_netpolicy *np, json_object *headers);

/* E2B's network.rules ({"NAME": [{"transform": {"headers": {"H": "V"}}}]},
 * SDK 2.39+; V may hold ${e2b.secrets.SECRET}, 2.43+) checked and
 * flattened into *out (struct sbx_network's headers).  Strict: a name that
 * is not a host name or "*.suffix", a rule with anything but
 * transform.headers, a header name that is not a token, a value with a
 * control character or over 4 KiB, a ${e2b.secrets.X} whose X the
 * profile object `o` has no egress_secrets entry for: invalid_request
 * naming it (a 400 from sbx-serve).  *out NULL when there are none. */
int sbx_egress_headers_from_e2b(json_object *rules, json_object *o, json_object **out,
				struct sbx_err *err);

/* The egress broker's keys document for a sandbox of profile `p` with
 * policy `np`, in *out (malloc'd; wipe and free with sbx_secret_free), or
 * NULL when it needs no interception: {"ca": "<state_dir>/egress-ca/<profile>",
 * "profile", "upstream_ca"?, "secrets": [...]} (local-l7.h reads it).
 * `headers` (struct sbx_network's) become secrets of their own, named
 * "e2b-rule-N" (no placeholder can name them), with "override": true,
 * their ${e2b.secrets.X} replaced by X's value. */
struct sbx_profile;
int sbx_egress_keys_doc(const struct sbx_profile *p, const struct sbx_netpolicy *np,
			json_object *headers, char **out, struct sbx_err *err);

/* The folder of profile `p`'s interception CA (local-ca.h):
 * <state_dir>/egress-ca/<profile>; malloc'd. */
char *sbx_egress_ca_dir(const struct sbx_profile *p);

/* Rotate it (sbx-ctl egress-ca --rotate): remove its ca.pem, so that the
 * next sandbox that needs one makes a new CA; running sandboxes keep the
 * CA their broker loaded.  *had says whether there was one.  0 / -1. */
int sbx_egress_ca_rotate(const struct sbx_profile *p, int *had, struct sbx_err *err);

/* Where the CA certificate is seen inside such a sandbox, and the bundle
 * (the image's own plus it) that replaces the system bundle there. */
#define SBX_EGRESS_CA_IN "/usr/local/share/ca-certificates/sbx-egress-ca.crt"
#define SBX_EGRESS_BUNDLE_IN "/etc/ssl/certs/ca-certificates.crt"

/* `env` (may be NULL; not changed) plus what a sandbox that needs
 * interception gets: each secret's placeholder, and SSL_CERT_FILE,
 * REQUESTS_CA_BUNDLE, PIP_CERT, GIT_SSL_CAINFO, CURL_CA_BUNDLE (the
 * bundle) and NODE_EXTRA_CA_CERTS (the CA alone).  A new object, or a new
 * reference to `env` when nothing is needed. */
json_object *sbx_egress_l7_env(json_object *o, const struct sbx_netpolicy *np, json_object *headers,
			       json_object *env);

#endif
