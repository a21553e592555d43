/* fingerprint.h - the skill-image fingerprint: which backend credentials a
 * snapshot was built for.
 *
 * fingerprint = lowercase hex SHA-256 of
 *     trim(provider) "\n" trim(api_key) "\n" trim(api_url)
 * exactly as the reference computes it (weknora-semantics §4.3:
 * strings.TrimSpace on each part, joined with "\n").  Trimming follows Go's
 * unicode.IsSpace: ASCII \t \n \v \f \r and space, plus the UTF-8 encoded
 * U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F and
 * U+3000, so a key file with a trailing newline or a pasted no-break space
 * gives the same fingerprint as the reference.
 *
 * A snapshot whose fingerprint differs from the profile's is ignored, and
 * an install with an empty fingerprint is refused.  "Empty" here means the
 * provider is empty after trimming: a fingerprint is never computed for it
 * (invalid_request), because a blank provider would make every
 * misconfigured profile share one identity.  Blank keys and URLs are
 * legitimate (docker over its local socket has neither).
 *
 * The key is hashed in place: it is never copied, logged or put into an
 * error message.
 *
 * Which three strings a backend hashes is its own recipe, in its
 * fingerprint op (backend.h): docker ("docker", tls_cert_path, host or
 * "local-daemon"), local ("local", "", state dir). */
#ifndef SBX_FINGERPRINT_H
#define SBX_FINGERPRINT_H

#include <stdbool.h>

#include "err.h"

#define SBX_FINGERPRINT_LEN 64

/* out gets 64 lowercase hex digits and a NUL.  NULL parts count as "".
 * -1 with invalid_request when the provider is empty after trimming
 * (out is then the empty string), internal if the digest fails. */
int sbx_fingerprint(const char *provider, const char *api_key, const char *api_url,
		    char out[65], struct sbx_err *err);

/* True when `s` (NULL counts as "") is empty after the trimming above:
 * what a backend's recipe calls a blank part (docker's local socket, whose
 * host is then "local-daemon"). */
bool sbx_fingerprint_blank(const char *s);

/* True for a well-formed fingerprint (64 lowercase hex digits). */
bool sbx_fingerprint_valid(const char *fp);

#endif
