/* docker-gate.c - the freeze gate of a Docker sandbox (see docker-gate.h):
 * an flock per container under the profile's state dir, shared for exec
 * starts and exclusive for pauses, nesting within one process.
 *
 * flock(2) has no fairness: followers that take the shared lock in turn
 * would starve a pause for ever.  So a pause first takes a second file,
 * <id>.pending, exclusively, and every shared enter passes through
 * <id>.pending (shared, at once released) before it takes the gate: once
 * a pause waits, no new exec starts, and the ones starting finish. */
#include "docker-gate.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "docker-api.h"
#include "util.h"

#define GATE_SLOTS 4
#define GATE_POLL_MS 10

/* What this process holds: a container id, its gate file, how many enters.
 * An id with fd -1 and depth > 0 is a no-op enter (no state dir, TCP). */
static struct gate_slot {
	char id[72];
	int fd, pending;         /* the gate; <id>.pending while a pause holds it */
	int depth;
} slots[GATE_SLOTS];

static struct gate_slot *slot_of(const char *id)
{
	for (int i = 0; i < GATE_SLOTS; i++)
		if (slots[i].depth > 0 && !strcmp(slots[i].id, id))
			return &slots[i];
	return NULL;
}

static struct gate_slot *free_slot(void)
{
	for (int i = 0; i < GATE_SLOTS; i++)
		if (slots[i].depth == 0)
			return &slots[i];
	return NULL;
}

/* The gate file of `id` (with `suffix`), opened (made) under
 * <state_dir>/docker-gate. */
static int gate_open(const char *dir, const char *id, const char *suffix, struct sbx_err *err)
{
	SBX_AUTOFREE char *gdir = sbx_xasprintf("%s/docker-gate", dir);
	if (sbx_mkdir_p(gdir, 0700, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/%s%s", gdir, id, suffix);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "pause", "the freeze gate %s", path);
	return fd;
}

struct flock_try {
	int fd, op;
};

/* 1 taken, 0 held by another, -1 another error (errno). */
static int flock_try(void *ctx)
{
	const struct flock_try *t = ctx;
	if (flock(t->fd, t->op | LOCK_NB) == 0)
		return 1;
	return errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
}

/* flock with a deadline: 0 taken, -1 (errno EWOULDBLOCK) still held. */
static int flock_wait(int fd, int op, int64_t wait_ms)
{
	struct flock_try t = {fd, op};
	int r = sbx_poll_until(wait_ms, GATE_POLL_MS, flock_try, &t);
	if (r == 0)
		errno = EWOULDBLOCK;
	return r > 0 ? 0 : -1;
}

int docker_gate_enter(struct sbx_backend *b, const char *id, int exclusive, int64_t wait_ms,
		      struct sbx_err *err)
{
	struct gate_slot *s = slot_of(id);
	if (s) {
		s->depth++;
		return 0;
	}
	if (!(s = free_slot()) || strlen(id) >= sizeof(s->id))
		return 0;       /* more containers at once than slots: unordered */
	const char *dir = b->profile ? b->profile->state_dir : NULL;
	int fd = -1, pend = -1;
	if (dir && *dir && !docker_conn_tls(b)) {
		if ((pend = gate_open(dir, id, ".pending", err)) < 0)
			return -1;
		if ((fd = gate_open(dir, id, "", err)) < 0) {
			close(pend);
			return -1;
		}
		int64_t deadline = sbx_mono_ms() + wait_ms;
		int op = exclusive ? LOCK_EX : LOCK_SH;
		int got = flock_wait(pend, op, wait_ms) == 0 &&
			  flock_wait(fd, op, deadline - sbx_mono_ms()) == 0;
		int e = errno;
		if (got && !exclusive) {
			close(pend);    /* a shared enter only passes through */
			pend = -1;
		}
		if (!got) {
			close(fd);
			close(pend);
			errno = e;
			if (e == EWOULDBLOCK)
				return sbx_fail(err, SBX_TIMEOUT, exclusive ? "pause" : "exec",
						exclusive ? "an exec into sandbox %s is still starting after %lld ms; "
							    "not pausing (a pause during an exec's start wedges the engine)"
							  : "sandbox %s is still being paused or committed after %lld ms",
						id, (long long)wait_ms);
			return sbx_fail_errno(err, SBX_INTERNAL, exclusive ? "pause" : "exec",
					      "locking the freeze gate of sandbox %s", id);
		}
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->fd = fd;
	s->pending = pend;
	s->depth = 1;
	return 0;
}

void docker_gate_leave(const char *id)
{
	struct gate_slot *s = slot_of(id);
	if (!s || --s->depth > 0)
		return;
	if (s->fd >= 0)
		close(s->fd);          /* drops the flock */
	if (s->pending >= 0)
		close(s->pending);
	s->fd = s->pending = -1;
	s->id[0] = '\0';
}

void docker_gate_forget(struct sbx_backend *b, const char *id)
{
	const char *dir = b->profile ? b->profile->state_dir : NULL;
	if (!dir || !*dir || strchr(id, '/') || id[0] == '.')
		return;
	SBX_AUTOFREE char *gate = sbx_xasprintf("%s/docker-gate/%s", dir, id);
	SBX_AUTOFREE char *pend = sbx_xasprintf("%s/docker-gate/%s.pending", dir, id);
	unlink(gate);
	unlink(pend);
}
