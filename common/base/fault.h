/* fault.h - the one test hook: named points where a test freezes or kills
 * a program.
 *
 * A program passes named points ("resolve:before-bind", "local:recorded",
 * "image:snapshot-copied") on the way through a critical sequence.  When
 * the environment names a point, the process acts on itself right there:
 *
 *   SBX_FAULT=point[,point...]  SIGKILL: the crash tests (what the next run
 *                               or the reaper must repair);
 *   SBX_STOP=point[,point...]   SIGSTOP: the race and fencing tests change
 *                               the world at exactly that step (kill an
 *                               init, let a lock expire), then SIGCONT.
 *
 *   SBX_FAULT=point             (sbx_fault_on) at a point where a test
 *                               makes the program see a broken world
 *                               instead of dying: the paging points of
 *                               pager.h.
 *
 * A stop point is never placed while a process-local lock is held.
 * Without either variable a point costs two getenv calls. */
#ifndef SBX_FAULT_H
#define SBX_FAULT_H

void sbx_fault(const char *point);
/* 1 when SBX_FAULT names `point` (nothing is raised), else 0. */
int sbx_fault_on(const char *point);

#endif
