/* cliterm.h - the caller's terminal while a program lends it to a
 * sandbox (sbx-exec -t): its size, raw mode put back on every exit path
 * a process can catch, and its resizes as a stream for the backend
 * (struct sbx_tty_size records, backend.h).
 *
 * Raw mode is process-wide state (one terminal, and signal handlers that
 * must find it), so this is one static terminal per process.  Put back:
 * by sbx_term_restore, at exit(3), and on SIGTERM, SIGINT, SIGHUP and
 * SIGQUIT (the handler restores, then dies of the same signal, so the
 * caller sees the status it would have).  SIGKILL cannot be caught: after
 * a kill -9 the terminal stays raw until `stty sane` (or `reset`). */
#ifndef SBX_CLITERM_H
#define SBX_CLITERM_H

#include "err.h"

/* The size of the terminal on fd: 0, or -1 when fd is not a terminal. */
int sbx_term_size(int fd, unsigned *cols, unsigned *rows);
/* "COLSxROWS" (each 1..9999), else a usage error naming `what`. */
int sbx_term_parse_size(const char *s, const char *what, unsigned *cols, unsigned *rows,
			struct sbx_err *err);
/* Put the terminal on fd in raw mode (cfmakeraw: no echo, no line
 * editing, no signals from keys: Ctrl-C is a byte for the other side),
 * after saving its settings for the restore paths above.  Once only. */
int sbx_term_raw(int fd, struct sbx_err *err);
/* Put back what sbx_term_raw saved (a no-op when nothing was saved);
 * safe to call again. */
void sbx_term_restore(void);
/* A non-blocking pipe whose read end gets one struct sbx_tty_size (the
 * terminal on fd's new size) per SIGWINCH; returns the read end (CLOEXEC)
 * or -1 with err. */
int sbx_term_winch_pipe(int fd, struct sbx_err *err);

#endif
