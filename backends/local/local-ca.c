/* local-ca.c - see local-ca.h.  OpenSSL (libcrypto) only: the broker is
 * the one program that links it for this. */
#include "local-ca.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "util.h"

#define CA_DAYS 3650
#define LEAF_DAYS 30

struct leaf {
	char *name;
	X509 *cert;
};

struct local_ca {
	EVP_PKEY *key;        /* the CA's */
	X509 *cert;
	EVP_PKEY *leaf_key;   /* every leaf's */
	pthread_mutex_t mu;
	struct leaf leaves[LOCAL_CA_LEAVES];
	size_t nleaves, next;
};

static EVP_PKEY *new_key(void)
{
	return EVP_EC_gen("P-256");
}

/* One extension on x, issued by `issuer` (x itself when self-signed). */
static int ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX c;
	X509V3_set_ctx_nodb(&c);
	X509V3_set_ctx(&c, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &c, nid, value);
	if (!e)
		return -1;
	int rc = X509_add_ext(x, e, -1) ? 0 : -1;
	X509_EXTENSION_free(e);
	return rc;
}

/* A certificate for `cn` with key `pub`, signed by `ikey` as `issuer`
 * (NULL: self-signed), valid from an hour ago for `days`. */
static X509 *make_cert(const char *cn, EVP_PKEY *pub, X509 *issuer, EVP_PKEY *ikey, int days,
		       int is_ca)
{
	X509 *x = X509_new();
	unsigned char serial[16];
	if (!x || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
	int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	if (!ok || !X509_set_version(x, 2) || !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) || !X509_set_pubkey(x, pub))
		goto fail;
	X509_NAME *n = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n))
		goto fail;
	X509 *iss = issuer ? issuer : x;
	if (is_ca) {
		if (ext(x, iss, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
		    ext(x, iss, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
		    ext(x, iss, NID_subject_key_identifier, "hash") < 0)
			goto fail;
	} else {
		SBX_AUTOFREE char *san = sbx_xasprintf("DNS:%s", cn);
		if (ext(x, iss, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
		    ext(x, iss, NID_key_usage, "critical,digitalSignature") < 0 ||
		    ext(x, iss, NID_ext_key_usage, "serverAuth") < 0 ||
		    ext(x, iss, NID_subject_alt_name, san) < 0 ||
		    ext(x, iss, NID_subject_key_identifier, "hash") < 0 ||
		    ext(x, iss, NID_authority_key_identifier, "keyid:always") < 0)
			goto fail;
	}
	if (!X509_sign(x, ikey, EVP_sha256()))
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

/* Write a new CA to a temporary file beside `path` and link it there:
 * 0 made, 1 someone else's is there now, -1 failed (errno). */
static int make_ca(const char *path, const char *profile)
{
	EVP_PKEY *k = new_key();
	SBX_AUTOFREE char *cn = sbx_xasprintf("sbx egress CA (profile %s)", profile);
	X509 *x = k ? make_cert(cn, k, NULL, k, CA_DAYS, 1) : NULL;
	SBX_AUTOFREE char *tmp = sbx_xasprintf("%s.%d.tmp", path, (int)getpid());
	int rc = -1;
	int fd = x ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) && PEM_write_X509(f, x) &&
	    fflush(f) == 0 && fsync(fd) == 0) {
		rc = link(tmp, path) == 0 ? 0 : errno == EEXIST ? 1 : -1;
	}
	int e = errno;
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	if (fd >= 0)
		unlink(tmp);
	X509_free(x);
	EVP_PKEY_free(k);
	errno = e;
	return rc;
}

struct local_ca *local_ca_open(const char *dir, const char *profile, struct sbx_err *err)
{
	if (sbx_mkdir_p(dir, 0700, err) < 0)
		return NULL;
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/ca.pem", dir);
	if (access(path, F_OK) != 0 && make_ca(path, profile) < 0) {
		sbx_fail_errno(err, SBX_INTERNAL, "egress", "make the interception CA %s", path);
		return NULL;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & 077) || st.st_uid != geteuid()) {
		if (fd >= 0)
			close(fd);
		sbx_fail(err, SBX_INTERNAL, "egress",
			 "the interception CA %s is not a file of this user's with mode 0600", path);
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	struct local_ca *ca = sbx_xcalloc(1, sizeof(*ca));
	ca->key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	ca->cert = ca->key ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
	fclose(f);
	ca->leaf_key = new_key();
	if (!ca->cert || !ca->leaf_key || X509_check_private_key(ca->cert, ca->key) != 1) {
		local_ca_free(ca);
		sbx_fail(err, SBX_INTERNAL, "egress", "the interception CA %s cannot be read "
			 "(remove it with sbx-ctl egress-ca rotate)", path);
		return NULL;
	}
	pthread_mutex_init(&ca->mu, NULL);
	return ca;
}

void local_ca_free(struct local_ca *ca)
{
	if (!ca)
		return;
	for (size_t i = 0; i < ca->nleaves; i++) {
		free(ca->leaves[i].name);
		X509_free(ca->leaves[i].cert);
	}
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->cert);
	free(ca);
}

char *local_ca_cert_pem(struct local_ca *ca)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL;
	if (b && PEM_write_bio_X509(b, ca->cert)) {
		char *p;
		long n = BIO_get_mem_data(b, &p);
		out = sbx_xmalloc((size_t)n + 1);
		memcpy(out, p, (size_t)n);
		out[n] = '\0';
	}
	BIO_free(b);
	return out;
}

int local_ca_use_leaf(struct local_ca *ca, SSL *ssl, const char *name)
{
	pthread_mutex_lock(&ca->mu);
	X509 *x = NULL;
	for (size_t i = 0; i < ca->nleaves && !x; i++)
		if (!strcmp(ca->leaves[i].name, name))
			x = ca->leaves[i].cert;
	if (!x && (x = make_cert(name, ca->leaf_key, ca->cert, ca->key, LEAF_DAYS, 0))) {
		struct leaf *l;
		if (ca->nleaves < LOCAL_CA_LEAVES) {
			l = &ca->leaves[ca->nleaves++];
		} else {                /* full: the oldest goes */
			l = &ca->leaves[ca->next];
			ca->next = (ca->next + 1) % LOCAL_CA_LEAVES;
			free(l->name);
			X509_free(l->cert);
		}
		l->name = sbx_xstrdup(name);
		l->cert = x;
	}
	/* SSL_use_certificate takes its own reference: a leaf dropped from
	 * the cache later stays valid for this connection. */
	int rc = x && SSL_use_certificate(ssl, x) == 1 && SSL_use_PrivateKey(ssl, ca->leaf_key) == 1 &&
		 SSL_add1_chain_cert(ssl, ca->cert) == 1 ? 0 : -1;
	pthread_mutex_unlock(&ca->mu);
	return rc;
}
