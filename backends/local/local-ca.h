/* local-ca.h - the interception CA of a profile and the leaf
 * certificates the egress broker mints with it (issue 29; docs/security.md,
 * "L7 rules and secrets").
 *
 * One CA per profile, made on first need by the first broker that needs
 * it: <state_dir>/egress-ca/<profile>/ca.pem, the key (EC P-256) and the
 * self-signed certificate in one file, mode 0600 in a 0700 folder, on the
 * host only: no sandbox ever sees the key, only the certificate (added to
 * the trust of a sandbox whose policy or secrets need interception).
 * Published by link(2) of a complete temporary file, so two brokers racing
 * to make it agree on one (the loser loads the winner's) and a crash
 * leaves either no CA or a whole one.  `sbx-ctl egress-ca rotate` removes
 * it: the next sandbox that needs one makes a new CA; running sandboxes
 * keep the one their broker loaded (and trust) until they end.
 *
 * Leaf certificates: one EC key per broker, one certificate per name,
 * minted on first use and kept for the broker's life (at most
 * LOCAL_CA_LEAVES names; beyond that the oldest is dropped). */
#ifndef SBX_LOCAL_CA_H
#define SBX_LOCAL_CA_H

#include <openssl/ssl.h>

#include "err.h"

#define LOCAL_CA_LEAVES 256

struct local_ca;

/* Load the CA of folder `dir` (made with its parents when missing),
 * making it first when it does not exist.  NULL on failure with err. */
struct local_ca *local_ca_open(const char *dir, const char *profile, struct sbx_err *err);
void local_ca_free(struct local_ca *ca);

/* The CA certificate, PEM; malloc'd. */
char *local_ca_cert_pem(struct local_ca *ca);

/* Put the leaf of `name` (a valid host name) on `ssl`: minted and cached
 * on first use.  0, or -1 when OpenSSL fails.  Thread-safe. */
int local_ca_use_leaf(struct local_ca *ca, SSL *ssl, const char *name);

#endif
