/* keyspace.h - which Redis keyspace owns a sandbox or a snapshot.
 *
 * A keyspace is one Redis database under one key prefix: the place where
 * sessions are bound and skills recorded.  Two profiles may share a
 * backend (one state dir, one dockerd) and still keep their bindings in
 * different keyspaces; a reaper must judge only what its own keyspace
 * owns.  Each keyspace therefore has an id: 16 random hex digits, made once
 * (SET NX) and kept in the keyspace itself under <prefix>:keyspace.  It is
 * not secret and says nothing about the Redis URL.
 *
 * Every sandbox created for a tenant carries it in its metadata
 * (sbx.keyspace), every skill snapshot in its name (suffix -k<id>). */
#ifndef SBX_KEYSPACE_H
#define SBX_KEYSPACE_H

#include "err.h"
#include "metadata.h"
#include "redis.h"

#define SBX_KEYSPACE_LEN 16

/* The keyspace id of `r` into out (SBX_KEYSPACE_LEN + 1), made when absent.
 * One round trip (two the very first time); -1 on a Redis error, or
 * internal when the stored value is not an id (someone else's key). */
int sbx_keyspace_id(struct sbx_redis *r, char *out, struct sbx_err *err);

/* Read it without making it: 1 found, 0 absent (out = ""), -1 error.  The
 * reaper reads: a keyspace without an id either never made anything or
 * lost its data, and the reaper must not mint one that disowns the past. */
int sbx_keyspace_read(struct sbx_redis *r, char *out, struct sbx_err *err);

/* Whether s is a keyspace id (SBX_KEYSPACE_LEN lowercase hex digits). */
int sbx_keyspace_valid(const char *s);

/* Give a keyspace that has no id the id `id` (sbx-reap --adopt-keyspace:
 * its Redis lost its data, and the admin names the id its sandboxes
 * carry).  SET NX then GET: 0 when the keyspace's id is now `id`; conflict
 * when it has another (someone minted one first: nothing is overwritten);
 * invalid_request when `id` is not an id. */
int sbx_keyspace_adopt(struct sbx_redis *r, const char *id, struct sbx_err *err);

#endif
