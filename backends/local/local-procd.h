/* local-procd.h - the contract between the library's side of detached
 * processes (local-proc.c, local-proc-start.c, local-proc-output.c: the
 * vtable's proc_* entries) and sbx-procd (backends/local/sbx-procd.c, the
 * supervisor of one detached process).  libc only: sbx-procd includes it.
 *
 * Each detached process has a record directory on the host, under the
 * sandbox's directory, which nothing inside the sandbox can reach:
 *
 *   <state>/local/sandboxes/<id>/procs/
 *       .lock           flock(LOCK_EX) held by proc_start (tags, pid dirs)
 *       .new-<hex>/     a process being started; sbx-procd renames it
 *       .free-<hex>/    a spare folder: an exited record that was pruned,
 *                       which a start renames to .new-<hex>
 *                       and reuses (its proc.json, state and .state
 *                       inodes; out, err and the FIFOs are removed)
 *       <pid>/          the process whose pid in the sandbox is <pid>
 *           proc.json     what was asked (the library, before the fork):
 *                         argv, env names (never values), cwd, tag,
 *                         as_root, keep_stdin, timeout_ms, started_at
 *           state         sbx-procd's, "key value" lines, replaced whole
 *                         (.state written, then swapped with it by
 *                         RENAME_EXCHANGE): the LOCAL_PROC_K_* keys below,
 *                         err_start last; a reader that finds it empty
 *                         or without err_start (opened before a swap,
 *                         emptied by the next write) reads it again
 *           .state        the state before the last write (the next one)
 *           out, err      the output, each made at its stream's first
 *                         byte (none: nothing written); bounded (see out_max): when a file
 *                         passes it, the oldest half is punched out
 *                         (fallocate PUNCH_HOLE, the size and so every
 *                         offset stay), and `*_start` names the first
 *                         byte still kept; the state is written before
 *                         the punch
 *           stdin         a FIFO, the process's stdin (keep_stdin only);
 *                         sbx-procd holds a write end so it sees no EOF
 *           stdin.closed  made by proc_input(close), then SIGUSR1 to
 *                         sbx-procd, which lets its write end go
 *           winsize       a terminal's (tty only): a FIFO of struct
 *                         {uint16 cols, rows} records, applied by sbx-procd
 *                         to the pty's master (TIOCSWINSZ)
 *           attach        a terminal's (tty only): an empty file that the
 *                         one attached caller holds flock(LOCK_EX) on
 *
 * sbx-procd is exec'd (fexecve of <libexec>/sbx/sbx-procd, found like
 * sbx-init) by the grandchild the library forks, right after that
 * grandchild forked the process into the sandbox; so the process is its
 * child, and it is the only one that reaps it.  Or (flag "f") while the
 * sandbox's fork server forks the process: the library sent the request
 * and launched it at once, and it reads the server's reply itself.  It lives in the sandbox's
 * top cgroup (not `work`, so a pause does not freeze it, and remove's
 * cgroup.kill ends it), with
 *
 *   argv  {"sbx-procd", NAME, HOSTPID, TIMEOUT_MS, OUT_MAX, FLAGS, NULL}
 *         NAME the .new-<hex> dir, HOSTPID the process (our pid
 *         namespace), FLAGS "s" (fd 7 is the stdin keeper), "k" (fd 8 is
 *         the cgroup.kill of the process's own cgroup, for its timeout),
 *         "t" (a terminal: fd 5 is a socket on which the pty's master
 *         arrives, SCM_RIGHTS, sent by the process before its execve;
 *         the `stdin` FIFO's bytes go to the master, `winsize` sets its
 *         size; stderr stays the library's pipe), or "-"; nothing secret
 *   envp  {NULL}
 *         "f" (fd 9 is the start's connection to the fork server, the
 *         request sent, its reply unread; HOSTPID is 0: the reply's pidfd
 *         names the process.  The wait status comes there too, not from
 *         waitpid; the supervisor adopts it once the record is renamed),
 *         "X" with "f" (a test's fault point, procd:before-reply: it kills
 *         itself before it reads the reply)
 *   fds   0-2 /dev/null, 3 the status pipe, 4 the procs/ dir, 5 stdout
 *         and 6 stderr (read ends), 7, 8 and 9 as FLAGS say (else /dev/null)
 *
 * With "f" its first line on fd 3 is "F <stage> <errno>\n" once it read
 * the reply (the stages of local-forkd-proto.h: 0 it runs, EXEC its
 * execve failed and it exits 127, REFUSED nothing was forked and the
 * library takes the old path, any other the start failed); it exits
 * after any but 0 and EXEC, with no record renamed.  Then, and without
 * "f" first, it writes "P <pid> <hostpid> <starttime>\n" once the record
 * is renamed to <pid>, and closes fd 3 when it exits (after the final
 * state); the library waits for those lines only. */
#ifndef SBX_LOCAL_PROCD_H
#define SBX_LOCAL_PROCD_H

#define LOCAL_PROC_FD_STATUS 3
#define LOCAL_PROC_FD_DIR    4
#define LOCAL_PROC_FD_OUT    5
#define LOCAL_PROC_FD_ERR    6
#define LOCAL_PROC_FD_STDIN  7
#define LOCAL_PROC_FD_KILL   8
#define LOCAL_PROC_FD_FORKD  9

/* Default bound of each output file (bytes kept). */
#define LOCAL_PROC_OUT_MAX (8 << 20)

#define LOCAL_PROC_WINSIZE "winsize"
#define LOCAL_PROC_ATTACH  "attach"

/* Keys of the state file. */
#define LOCAL_PROC_K_PID        "pid"         /* in the sandbox */
#define LOCAL_PROC_K_HOST_PID   "host_pid"
#define LOCAL_PROC_K_HOST_START "host_start"  /* field 22 of its /proc stat */
#define LOCAL_PROC_K_SUP_PID    "sup_pid"     /* sbx-procd */
#define LOCAL_PROC_K_SUP_START  "sup_start"
#define LOCAL_PROC_K_RUNNING    "running"     /* 1 until reaped */
#define LOCAL_PROC_K_EXIT       "exit_code"   /* -1 when signalled */
#define LOCAL_PROC_K_SIGNAL     "signal"
#define LOCAL_PROC_K_TIMED_OUT  "timed_out"
#define LOCAL_PROC_K_ENDED_AT   "ended_at"    /* unix ms */
#define LOCAL_PROC_K_OUT_START  "out_start"
#define LOCAL_PROC_K_ERR_START  "err_start"

#endif
