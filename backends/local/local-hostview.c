/* local-hostview.c - what a sandbox over the `host` template sees of the
 * host: closed by default.
 *
 * The host's "/" enters a sandbox's layer stack read-only, under a *host
 * mask*: a layer of its own, built at every create in the sandbox's
 * directory, lying directly on "/" and below the snapshot layers (if any).
 * A hidden directory appears empty (an opaque directory with the host's
 * owner and mode), a hidden file is absent (a whiteout).  Because the mask
 * is rebuilt at each create from the current configuration, a secret path
 * configured after a snapshot was taken is hidden in sandboxes made from
 * that snapshot too, and nothing of the mask ever travels in a snapshot.
 *
 * What stays visible (docs/security.md gives the reasons):
 *   /bin /sbin /lib* /usr          the software
 *   /etc                           minus the secrets in etc_hidden[]
 *   /var/lib, /var/cache           only what package managers need
 *   /var/log                       empty but for an empty apt/
 *   symlinks in the filtered dirs  (/var/run, /lib64 ...) resolve inside
 *                                  the sandbox, where the mask applies
 * Everything else at the top level (/root, /home, /run, /tmp, /opt, /srv,
 * /mnt, /media, /boot, unknown names) and in /var is hidden, and so is
 * every path the configuration names (every profile's state dir, the
 * config file, key, password and TLS files, Redis and Docker sockets),
 * wherever it lives.
 *
 * The mask is shared: it is planned at every create (reads only), and the
 * plan's digest names a directory in the state dir's mask cache, built
 * once (aside, then renamed into place) and used by every sandbox whose
 * plan is the same.  Every input that changes the plan (a name appearing
 * in a filtered directory, a configured path, its resolution) changes the
 * name.  A mask is never written once it has its name, so a sandbox that
 * stacks it never sees it change.
 *
 * Limits: the lower layer is the live host "/".  A name created on the
 * host after the create inside a directory that is visible (/etc, /usr,
 * /var/lib/dpkg, ...) is visible; a name created in a hidden directory is
 * not.  Configured paths are resolved (symlinks followed) when the mask is
 * built; a path that does not exist yet is hidden by whiting out its first
 * missing component, so it stays hidden when it appears later. */
#include "local-hostview.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util.h"

#define OVL_OPAQUE "trusted.overlay.opaque"

/* Top level and /var: only these names stay (plus symlinks). */
static const char *const root_visible[] = {
	"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "var",
	"proc", "sys", "dev", NULL,   /* mount points of the sandbox's own */
};
static const char *const var_visible[] = {"lib", "cache", NULL};
/* Package managers' state: dpkg and apt, and what maintainer scripts of
 * common packages read back (ucf's hashes, add-shell's shells.state,
 * python's rtupdate state, pam-auth-update's seen list, sgml/xml catalogs). */
static const char *const var_lib_visible[] = {
	"dpkg", "apt", "aptitude", "ucf", "python", "pam", "sgml-base", "xml-core",
	"shells.state", "misc", "man-db", "vim", "dictionaries-common", NULL,
};
static const char *const var_cache_visible[] = {
	"apt", "debconf", "ldconfig", "man", "fontconfig", "dictionaries-common", NULL,
};

static const struct {
	const char *dir;
	const char *const *visible;
} filters[] = {
	{"", root_visible},
	{"var", var_visible},
	{"var/lib", var_lib_visible},
	{"var/cache", var_cache_visible},
};

/* Secrets in visible directories (and, for the record, sockets that lie in
 * hidden ones already). */
static const char *const etc_hidden[] = {
	"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/security/opasswd",
	"/etc/ssl/private", "/etc/sbx", "/etc/redis", "/etc/docker", "/etc/containerd",
	"/etc/letsencrypt", "/etc/krb5.keytab", "/etc/wireguard",
	"/etc/NetworkManager/system-connections", "/etc/ipsec.secrets", "/etc/ppp/chap-secrets",
	"/etc/ppp/pap-secrets", "/etc/openvpn", "/etc/mysql/debian.cnf",
	"/var/cache/debconf/passwords.dat", "/var/cache/debconf/passwords.dat-old",
	"/run/docker.sock", "/var/run/docker.sock", "/run/containerd", "/run/redis",
};

enum { M_NONE, M_DIR, M_HIDDEN, M_OTHER };

/* The mask is planned in memory first: the list of what it holds, in the
 * order it is made.  The plan alone decides the mask, so its digest names
 * it, and a mask already built for the same plan is used again (see
 * local_hostmask_get).  `m` below is the plan. */
enum { E_DIR, E_OPAQUE, E_WHITEOUT };
struct mentry {
	char *rel;
	int kind;
	mode_t mode;
	uid_t uid;
	gid_t gid;
};
struct mplan {
	struct mentry *v;
	size_t n, cap;
};

static struct mentry *plan_find(struct mplan *m, const char *rel)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].rel, rel) == 0)
			return &m->v[i];
	return NULL;
}

static void plan_add(struct mplan *m, const char *rel, int kind, const struct stat *host)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->v = sbx_xrealloc(m->v, m->cap * sizeof(*m->v));
	}
	m->v[m->n++] = (struct mentry){
		.rel = sbx_xstrdup(rel), .kind = kind,
		.mode = host ? host->st_mode & 07777 : 0,
		.uid = host ? host->st_uid : 0, .gid = host ? host->st_gid : 0,
	};
}

static void plan_free(struct mplan *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].rel);
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

/* What the mask holds at `rel`. */
static int mask_state(struct mplan *m, const char *rel)
{
	struct mentry *e = plan_find(m, rel);
	if (!e)
		return M_NONE;
	return e->kind == E_DIR ? M_DIR : M_HIDDEN;
}

/* A directory in the mask with the owner and mode of the host's. */
static int mask_mkdir(struct mplan *m, const char *rel, const struct stat *host, int opaque,
		      struct sbx_err *err)
{
	(void)err;
	struct mentry *e = plan_find(m, rel);
	if (!e) {
		plan_add(m, rel, opaque ? E_OPAQUE : E_DIR, host);
		return 0;
	}
	e->mode = host->st_mode & 07777;
	e->uid = host->st_uid;
	e->gid = host->st_gid;
	if (opaque)
		e->kind = E_OPAQUE;
	return 0;
}

static int mask_whiteout(struct mplan *m, const char *rel, struct sbx_err *err)
{
	(void)err;
	plan_add(m, rel, E_WHITEOUT, NULL);
	return 0;
}

/* Mirror the host directories above `rel` in the mask.  1 when `rel` is
 * hidden already (an ancestor is) or cannot lie below a host directory
 * (an ancestor is not one), 0 when its parent is ready, -1 on error. */
static int mask_parents(struct mplan *m, const char *rel, struct sbx_err *err)
{
	char r[PATH_MAX];
	snprintf(r, sizeof(r), "%s", rel);
	for (char *s = strchr(r, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		int ms = mask_state(m, r);
		if (ms == M_HIDDEN || ms == M_OTHER)
			return 1;
		if (ms == M_NONE) {
			struct stat st;
			SBX_AUTOFREE char *h = sbx_xasprintf("/%s", r);
			if (lstat(h, &st) < 0 || !S_ISDIR(st.st_mode))
				return 1;
			if (mask_mkdir(m, r, &st, 0, err) < 0)
				return -1;
		}
		*s = '/';
	}
	return 0;
}

/* Hide the host's `rel` (no leading slash, no symlink in it): a directory
 * becomes an empty opaque one, anything else (or nothing) a whiteout. */
static int hide_rel(struct mplan *m, const char *rel, struct sbx_err *err)
{
	if (!*rel)
		return 0;   /* never "/" itself */
	int rc = mask_parents(m, rel, err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	struct stat st;
	SBX_AUTOFREE char *h = sbx_xasprintf("/%s", rel);
	switch (mask_state(m, rel)) {
	case M_HIDDEN:
		return 0;
	case M_DIR:
		if (lstat(h, &st) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: stat %s", h);
		return mask_mkdir(m, rel, &st, 1, err);
	default:
		break;
	}
	if (lstat(h, &st) == 0 && S_ISDIR(st.st_mode))
		return mask_mkdir(m, rel, &st, 1, err);
	return mask_whiteout(m, rel, err);
}

/* Hide `abs` as the host resolves it: the real path of its longest
 * existing prefix plus the first missing component (which hides whatever
 * appears there later), and a symlink named by `abs` itself as well. */
static int hide_abs(struct mplan *m, const char *abs, struct sbx_err *err)
{
	if (!abs || abs[0] != '/' || strlen(abs) >= PATH_MAX)
		return 0;
	char p[PATH_MAX], real[PATH_MAX];
	snprintf(p, sizeof(p), "%s", abs);
	const char *missing = NULL;
	while (!realpath(p[0] ? p : "/", real)) {
		if (errno != ENOENT && errno != ENOTDIR)
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: resolve %s", abs);
		char *s = strrchr(p, '/');
		if (!s)
			return 0;
		*s = '\0';
		missing = s + 1;
	}
	if (missing && (!*missing || !strcmp(missing, ".") || !strcmp(missing, "..")))
		missing = NULL;
	char target[PATH_MAX + NAME_MAX + 2];
	snprintf(target, sizeof(target), "%s%s%s", real, missing && strcmp(real, "/") ? "/" : "",
		 missing ? missing : "");
	if (hide_rel(m, target + 1, err) < 0)
		return -1;
	struct stat st;
	if (missing || lstat(abs, &st) < 0 || !S_ISLNK(st.st_mode))
		return 0;
	/* The link itself, in its real parent directory. */
	snprintf(p, sizeof(p), "%s", abs);
	char *s = strrchr(p, '/');
	*s = '\0';
	if (!realpath(p[0] ? p : "/", real))
		return 0;
	snprintf(target, sizeof(target), "%s/%s", strcmp(real, "/") ? real : "", s + 1);
	return hide_rel(m, target + 1, err);
}

static int listed(const char *const *v, const char *name)
{
	for (; *v; v++)
		if (strcmp(*v, name) == 0)
			return 1;
	return 0;
}

/* Hide every entry of the host directory `dir` but the visible ones and
 * symlinks (they resolve inside the sandbox, through the mask). */
static int filter_dir(struct mplan *m, const char *dir, const char *const *visible,
		      struct sbx_err *err)
{
	SBX_AUTOFREE char *h = sbx_xasprintf("/%s", dir);
	struct stat st;
	if (lstat(h, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	int rc = *dir ? mask_parents(m, dir, err) : 0;
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (*dir && mask_state(m, dir) == M_HIDDEN)
		return 0;
	if (*dir && mask_state(m, dir) == M_NONE && mask_mkdir(m, dir, &st, 0, err) < 0)
		return -1;
	DIR *d = opendir(h);
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: opendir %s", h);
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || listed(visible, e->d_name))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			continue;
		SBX_AUTOFREE char *rel = sbx_xasprintf("%s%s%s", dir, *dir ? "/" : "", e->d_name);
		rc = hide_rel(m, rel, err);
	}
	closedir(d);
	return rc;
}

/* The host's SSH private host keys: /etc/ssh/ssh_host_*_key.  The rest of
 * /etc/ssh (client configuration, public keys) is not secret. */
static int hide_ssh_keys(struct mplan *m, struct sbx_err *err)
{
	DIR *d = opendir("/etc/ssh");
	if (!d)
		return 0;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (!sbx_str_starts(e->d_name, "ssh_host_") || n < 4 ||
		    strcmp(e->d_name + n - 4, "_key") != 0)
			continue;
		SBX_AUTOFREE char *p = sbx_xasprintf("/etc/ssh/%s", e->d_name);
		rc = hide_abs(m, p, err);
	}
	closedir(d);
	return rc;
}

/* The unix socket path of a URL, or NULL. */
static char *socket_path(const char *url)
{
	if (!url || !sbx_str_starts(url, "unix://"))
		return NULL;
	char *p = sbx_xstrdup(url + strlen("unix://"));
	char *q = strchr(p, '?');
	if (q)
		*q = '\0';
	return p;
}

/* Plan the mask: everything below reads the host and the configuration,
 * nothing is written. */
static int plan_mask(struct mplan *mask, const struct sbx_profile *cur, struct sbx_err *err)
{
	struct stat st;
	/* Closed by default: the top level and /var keep only what is listed. */
	for (size_t i = 0; i < SBX_ARRAY_LEN(filters); i++)
		if (filter_dir(mask, filters[i].dir, filters[i].visible, err) < 0)
			return -1;
	/* An empty /var/log with the apt/ that apt logs into. */
	if (mask_state(mask, "var/log") == M_HIDDEN && lstat("/var/log/apt", &st) == 0 &&
	    S_ISDIR(st.st_mode) && mask_mkdir(mask, "var/log/apt", &st, 0, err) < 0)
		return -1;

	for (size_t i = 0; i < SBX_ARRAY_LEN(etc_hidden); i++)
		if (hide_abs(mask, etc_hidden[i], err) < 0)
			return -1;
	if (hide_ssh_keys(mask, err) < 0)
		return -1;

	/* Every path any profile names, and the profile in use (which may
	 * carry the environment's overrides). */
	char **paths = NULL;
	size_t n = 0;
	if (sbx_config_paths(&paths, &n, err) < 0) {
		sbx_err_prefix(err, "host mask");
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = hide_abs(mask, paths[i], err);
	sbx_strv_free(paths);
	if (rc < 0 || !cur)
		return rc;
	SBX_AUTOFREE char *rs = socket_path(cur->redis_url);
	SBX_AUTOFREE char *es = socket_path(cur->endpoint);
	/* A backend's own path keys (docker's tls_cert_path) come only from
	 * the file, whose every profile sbx_config_paths has read. */
	const char *own[] = {cur->state_dir, cur->api_key_file, cur->redis_password_file, rs, es};
	for (size_t i = 0; i < SBX_ARRAY_LEN(own); i++)
		if (hide_abs(mask, own[i], err) < 0)
			return -1;
	return 0;
}

/* The plan's name: 128 bits of two FNV-1a hashes (different offsets)
 * over its entries, in order, and the owner and mode of "/" (the mask's
 * own root).  Not a cryptographic digest: every input comes from root
 * (the host's file names, the configuration), none from a sandbox, and
 * OpenSSL's SHA-256 cost 5 million instructions of provider setup per
 * create, half of sbx-create's own work. */
struct h128 {
	uint64_t a, b;
};

static void h128_add(struct h128 *h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = ((const unsigned char *)p)[i];
		h->a = (h->a ^ c) * 1099511628211ull;
		h->b = (h->b ^ c) * 1099511628211ull;
		h->b ^= h->b >> 29;
	}
}

static void plan_digest(const struct mplan *m, const struct stat *root, char out[33])
{
	struct h128 h = {14695981039346656037ull, 0x6a09e667f3bcc909ull};
	char line[64];
	int k = snprintf(line, sizeof(line), "sbx-hostmask-1 %o %u %u\n", (unsigned)(root->st_mode & 07777),
			 (unsigned)root->st_uid, (unsigned)root->st_gid);
	h128_add(&h, line, (size_t)k);
	for (size_t i = 0; i < m->n; i++) {
		k = snprintf(line, sizeof(line), "%d %o %u %u ", m->v[i].kind, (unsigned)m->v[i].mode,
			     (unsigned)m->v[i].uid, (unsigned)m->v[i].gid);
		h128_add(&h, line, (size_t)k);
		h128_add(&h, m->v[i].rel, strlen(m->v[i].rel) + 1);
	}
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
}

/* Make the planned mask at `dir` (which must not exist). */
static int plan_write(const struct mplan *m, const char *dir, const struct stat *root,
		      struct sbx_err *err)
{
	if (mkdir(dir, 0700) < 0 || chown(dir, root->st_uid, root->st_gid) < 0 ||
	    chmod(dir, root->st_mode & 07777) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: mkdir %s", dir);
	for (size_t i = 0; i < m->n; i++) {
		const struct mentry *e = &m->v[i];
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", dir, e->rel);
		if (e->kind == E_WHITEOUT) {
			if (mknod(p, S_IFCHR | 0, makedev(0, 0)) < 0)
				return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: whiteout %s", p);
			continue;
		}
		if (mkdir(p, 0700) < 0 || chown(p, e->uid, e->gid) < 0 || chmod(p, e->mode) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: mkdir %s", p);
		if (e->kind == E_OPAQUE && setxattr(p, OVL_OPAQUE, "y", 1, 0) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: make %s opaque", p);
	}
	return 0;
}

int local_hostmask_get(const char *cache, const struct sbx_profile *cur, char **out,
		       struct sbx_err *err)
{
	*out = NULL;
	struct stat root;
	if (lstat("/", &root) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: stat /");
	struct mplan m = {0};
	if (plan_mask(&m, cur, err) < 0) {
		plan_free(&m);
		return -1;
	}
	char name[33];
	plan_digest(&m, &root, name);
	SBX_AUTOFREE char *dir = sbx_xasprintf("%s/%s", cache, name);
	struct stat st;
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		plan_free(&m);
		*out = sbx_xstrdup(dir);
		return 0;
	}
	if (mkdir(cache, 0700) < 0 && errno != EEXIST) {
		plan_free(&m);
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: mkdir %s", cache);
	}
	/* Built aside and renamed into place: a mask under its name is whole. */
	SBX_AUTOFREE char *tmp = sbx_xasprintf("%s/.tmp-%s-%d", cache, name, (int)getpid());
	struct sbx_err ignore = {0};
	(void)sbx_rm_rf(tmp, &ignore);   /* a crashed build of ours (pid reuse) */
	int rc = plan_write(&m, tmp, &root, err);
	plan_free(&m);
	if (rc == 0 && rename(tmp, dir) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		rc = sbx_fail_errno(err, SBX_INTERNAL, "create", "host mask: rename %s", dir);
	(void)sbx_rm_rf(tmp, &ignore);   /* lost the race, or failed: drop ours */
	if (rc < 0)
		return -1;
	*out = sbx_xstrdup(dir);
	return 0;
}
