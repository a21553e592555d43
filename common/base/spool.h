/* spool.h - a bounded file of NDJSON lines that one process appends to and
 * another takes whole: how a helper without Redis (the egress broker, a
 * detached process's supervisor sbx-procd) hands its audit records to a
 * program that has Redis (audit.h, "Spool").  The writer's calls (spool.c)
 * are libc only, so a static helper links them; the takers' are
 * spool-take.c's.
 *
 * In a folder DIR:
 *   DIR/audit.spool   lines appended by the writer (O_APPEND), never more
 *                     than the writer's bound in bytes
 *   DIR/audit.taken   the lines a taker moved aside (rename) and has not
 *                     finished writing; the next taker writes them first
 *   DIR/audit.lock    flock: the writer's append and the taker's rename
 *                     exclude each other, so no line lands in a file the
 *                     taker already read
 *   DIR/audit.spare   an empty file: a finished audit.taken, emptied and
 *                     then renamed, which the writer renames to
 *                     audit.spool when there is none (on a journal-less
 *                     ext4 a new inode steps over every recently deleted
 *                     one: a spool made and deleted per process cost more
 *                     the more processes had run, docs/local.md)
 * A taker holds audit.taken's own flock while it works on it, so two
 * takers (sbx-exec and the reaper) never write the same lines twice.  A
 * taker that dies between its write and emptying audit.taken leaves it:
 * the next one writes those lines again (at least once, never lost); one
 * that dies after leaves it empty (nothing to write again).  Both
 * files together hold at most twice the writer's bound. */
#ifndef SBX_SPOOL_H
#define SBX_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define SBX_SPOOL_FILE "audit.spool"
#define SBX_SPOOL_TAKEN "audit.taken"
#define SBX_SPOOL_LOCK "audit.lock"
#define SBX_SPOOL_SPARE "audit.spare"
#define SBX_SPOOL_CONF "audit.json"

/* DIR/audit.json, what a broker reads at its start: {required,
 * spool_max} for a profile's audit_maxlen (512 bytes a record, 4 KiB to
 * 16 MiB) and audit mode; maxlen 0 removes it (nothing recorded).  Local's
 * and docker's create (spool-take.c). */
int sbx_spool_conf_write(const char *dir, int64_t maxlen, int required, struct sbx_err *err);

/* The bound a writer keeps the spool under: DIR/audit.json's spool_max;
 * 0 when the file is absent or says none (audit off: write nothing). */
int64_t sbx_spool_conf_max(const char *dir);

/* flock(LOCK_EX) on DIR/audit.lock: the writer's append and a taker's
 * rename exclude each other.  The held fd, -1 (errno). */
int sbx_spool_lock(const char *dir);

/* Append the longest run of whole lines of lines[0..len) that leaves
 * DIR/audit.spool at most `max` bytes.  Returns the bytes appended (0:
 * none fit), -1 the file could not be written (errno).  *size: the file's
 * size after the call (0 when it is not there). */
long sbx_spool_append(const char *dir, const char *lines, size_t len, int64_t max, int64_t *size);
/* The spool's size now (0 when absent). */
int64_t sbx_spool_size(const char *dir);

/* ---- the takers' side (spool-take.c) ---- */

/* Take the lines: audit.taken when a taker left one, else audit.spool
 * renamed to it.  *text (malloc'd, NUL-terminated; NULL with *len 0 when
 * there is nothing) and *lockfd (held until sbx_spool_done or close).
 * 0 taken or nothing; -1 with err.  `max` bounds what is read. */
int sbx_spool_take(const char *dir, int64_t max, char **text, size_t *len, int *lockfd,
		   struct sbx_err *err);
/* The taken lines are written: unlink audit.taken and release the lock. */
void sbx_spool_done(const char *dir, int lockfd);

#endif
