/* volume.h - named volumes: a folder of files owned by one tenant of one
 * keyspace, outliving every sandbox (issue 34).
 *
 * The record lives in Redis under the tenant's hash tag (keys.h):
 * <prefix>:{<tenant>}:vol:<name> holds {name, budget, created_ms}, the
 * tenant's set <prefix>:{<tenant>}:vols names it, and
 * <prefix>:{<tenant>}:vol:<name>:users holds the sandboxes that mount it
 * (a volume with users is never removed: conflict, reason in_use).
 *
 * The files live on the host, in <state_dir>/volumes/<K>/<name>/ where K
 * is the first 32 hex digits of SHA-256(prefix NUL tenant): two keyspaces
 * or tenants never share a folder, and a tenant id of any length still
 * gives a short file name.  volumes/ and volumes/<K>/ are 0700 (a
 * sandbox that is given the volume sees only the volume's own folder,
 * bound in; the host path behind it is never shown).
 *
 * The top folder is owned by uid/gid 1000, the sandbox user, when the
 * creator is root (so that a writable mount needs no --root); files put
 * by sbx-vol are the creator's.
 *
 * Names are 1..128 bytes of [A-Za-z0-9._-], not starting with '.': a name
 * is a file name and a mount's source, so it is kept plain rather than
 * escaped (128: Cube's limit, so that any name Cube takes is one here).
 *
 * put/get move single files in and out without a sandbox, through the
 * confined file operations of sbx-fs (fsconfine.h: no ".." or symlink
 * leads out of the volume's folder, a symlink as the last component is
 * refused, devices and FIFOs are never opened).  A put is atomic
 * (sbx_fsc_write_atomic): a reader sees the old file or the new one, and
 * kill -9 in the middle leaves the old one and no half-named file.
 *
 * Budget: `budget` bytes (0 = none) is checked by every put against the
 * blocks the folder's files hold (a put that would pass it is capacity,
 * and nothing is written).  It is accounted, not enforced by the kernel:
 * two puts racing may both pass, and a sandbox writing a writable mount
 * is not bounded by it. */
#ifndef SBX_VOLUME_H
#define SBX_VOLUME_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "config.h"
#include "err.h"
#include "redis.h"

#define SBX_VOL_NAME_MAX 128
#define SBX_VOL_UID 1000         /* the sandbox user: owns a volume's top folder */

struct sbx_vol {
	char *tenant, *name;
	int64_t budget;          /* bytes; 0 = none */
	int64_t created_ms;
	long long users;         /* sandboxes mounting it now */
	char *dir;               /* its host folder: never shown to a sandbox */
	char *remote;            /* sbx_vol_mounts on a service's backend: its name there */
};

/* 0 when `name` is a valid volume name, else invalid_request. */
int sbx_vol_name_check(const char *name, struct sbx_err *err);
/* <state_dir>/volumes (the profile's, else /var/lib/sbx's). malloc'd. */
char *sbx_vol_root(const struct sbx_profile *p);

/* Make the record (conflict when the name is taken), then its folder,
 * empty: a folder left by a volume of the same name whose removal
 * crashed is cleared first.  A crash between the two leaves a record
 * whose folder is made on first use. */
int sbx_vol_create(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		   const char *name, int64_t budget, struct sbx_vol *out, struct sbx_err *err);
/* Load one record (not_found when there is none). */
int sbx_vol_load(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		 const char *name, struct sbx_vol *out, struct sbx_err *err);
/* Every volume of the tenant, sorted by name. */
int sbx_vol_list(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		 struct sbx_vol **out, size_t *n, struct sbx_err *err);
/* Delete the record unless a sandbox uses it (conflict, reason in_use;
 * the check and the delete are one script), then its files.  Missing:
 * not_found.  A crash after the record went leaves files that the next
 * create of that name clears. */
int sbx_vol_remove(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		   const char *name, struct sbx_err *err);

/* Record that sandbox `id` mounts the volume (not_found when it does not
 * exist: the check and the add are one script), or that it no longer does. */
int sbx_vol_attach(struct sbx_redis *r, const char *tenant, const char *name, const char *id,
		   struct sbx_err *err);
int sbx_vol_detach(struct sbx_redis *r, const char *tenant, const char *name, const char *id,
		   struct sbx_err *err);

/* "NAME:/mnt/path[:ro]" (or ":rw", the default) into its parts: the name
 * checked, the path in the one path rule's spelling and not "/".
 * *name and *path are the caller's. */
int sbx_vol_spec_parse(const char *spec, char **name, char **path, int *ro,
		       struct sbx_err *err);
/* The mounts of a create: each spec's volume loaded from the tenant's
 * records (a volume of another tenant is not found: not_found), two on
 * one path refused.  out[i] points into vols[i] (and into the spec
 * strings parsed, kept in vols[i].name and paths[i]); free with
 * sbx_vols_free(vols, n) and free(paths[i]). */
int sbx_vol_mounts(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_profile *p,
		   const char *tenant, const char *const *specs, size_t n, struct sbx_vol *vols,
		   char **paths, struct sbx_vol_mount *out, struct sbx_err *err);

/* ---- Volumes a service keeps (backend.h volume_make: e2b, cube) ----
 * The record, its users and the tenant check stay in Redis as above; the
 * files are the service's volume named "<16 hex of SHA-256(prefix NUL
 * tenant)>_<name>" (Cube's rule: no '.', at most 128 bytes, so a name of
 * at most 111 without '.'), since a service's volumes are its API key's
 * and two tenants sharing a key must not share one.  sbx_vol_mounts
 * gives such mounts `remote` and no host folder.  Neither service has a
 * call that moves a file into a volume, so put and get go through a
 * sandbox of the profile's template that mounts the volume writable at
 * SBX_VOL_HELPER_DIR for the one copy and is removed after it: not atomic
 * (the service's file write is what it is), not within the budget (no
 * size is known), the files the sandbox user's.  A helper left by a
 * crash in the middle ends at its own 600-second timeout (it is never a
 * user of the record, so it holds no rm back). */
#define SBX_VOL_HELPER_DIR "/mnt/sbx-volume"
/* 1 when `b` keeps volumes itself (volume_make), else 0. */
int sbx_vol_is_remote(const struct sbx_backend *b);
/* The service's name of the tenant's volume `name` (malloc'd), or NULL
 * with invalid_request when the name cannot be one there. */
char *sbx_vol_remote_name(const char *prefix, const char *tenant, const char *name,
			  struct sbx_err *err);
/* After sbx_vol_create / before nothing: make the service's volume (on
 * failure the record is removed again, so nothing is half made). */
int sbx_vol_make_remote(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_profile *p,
			const char *tenant, const char *name, struct sbx_err *err);
/* sbx_vol_remove for such a volume: refused (conflict, in_use) while a
 * sandbox is recorded as mounting it, else the service's volume is
 * dropped first and the record after, so that a drop the service refuses
 * leaves the record (and a retry) in place, and a crash between the two
 * leaves a record whose service volume the next rm finds gone (fine). */
int sbx_vol_remove_remote(struct sbx_redis *r, struct sbx_backend *b,
			  const struct sbx_profile *p, const char *tenant, const char *name,
			  struct sbx_err *err);
/* put and get through a helper sandbox (above). */
int sbx_vol_put_remote(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_vol *v,
		       const char *path, const void *data, size_t len, unsigned mode,
		       struct sbx_err *err);
int sbx_vol_get_remote(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_vol *v,
		       const char *path, size_t max, char **data, size_t *len, unsigned *mode,
		       struct sbx_err *err);
/* The sandboxes recorded as mounting the volume (ids the caller frees
 * with sbx_strv_free). */
int sbx_vol_users(struct sbx_redis *r, const char *tenant, const char *name, char ***ids,
		  size_t *n, struct sbx_err *err);
/* Drop the users whose sandbox backend `b` no longer has (killed or
 * reaped without telling the volume: not_found or terminal from get); a
 * live or paused one stays, so that a remove after it is refused. */
int sbx_vol_prune(struct sbx_redis *r, struct sbx_backend *b, const char *tenant,
		  const char *name, struct sbx_err *err);
/* Sandbox `id` of backend `b` is made: record it as a user of each of
 * the n mounts.  A volume removed since sbx_vol_mounts looked it up
 * fails the create: the sandbox is removed again, the users already
 * recorded dropped, and the attach's error returned. */
int sbx_vol_attach_all(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		       const struct sbx_vol_mount *m, size_t n, const char *id,
		       struct sbx_err *err);

/* The reaper's look at volumes (it never deletes one): every tenant of
 * the keyspace with volumes that sbx knows nothing else of (not in the
 * tenant index, no bound session), as [{"tenant", "volumes": [names]}],
 * appended to `out`.  Returns the number of such tenants, or -1. */
int sbx_vol_orphans(struct sbx_redis *r, json_object *out, struct sbx_err *err);

/* Bytes the folder's files hold on disk (st_blocks), mounts not crossed. */
int sbx_vol_used(const struct sbx_vol *v, int64_t *bytes, struct sbx_err *err);
/* Write `data` as file `path` (absolute inside the volume) atomically,
 * within the budget (capacity, nothing written). */
int sbx_vol_put(const struct sbx_vol *v, const char *path, const void *data, size_t len,
		unsigned mode, struct sbx_err *err);
/* Read file `path` of the volume (more than `max` bytes: too_large).
 * *data is the caller's; *mode gets the file's permission bits. */
int sbx_vol_get(const struct sbx_vol *v, const char *path, size_t max, char **data,
		size_t *len, unsigned *mode, struct sbx_err *err);

/* The record as a document's "volume" object (the host folder is left
 * out: it is nothing a client may rely on). */
void sbx_vol_json(const struct sbx_vol *v, json_object *o);
void sbx_vol_clear(struct sbx_vol *v);
void sbx_vols_free(struct sbx_vol *v, size_t n);

#endif
