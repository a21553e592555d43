/* cliterm.c - the caller's terminal while a sandbox has it (contract in
 * cliterm.h).
 *
 * The signal handlers only make system calls (tcsetattr, ioctl, write,
 * sigaction, kill): async-signal-safe.  The saved settings are written
 * before the handlers are installed and never again, so a handler never
 * sees them half-written. */
#include "cliterm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "backend.h"
#include "cliopt.h"

static struct termios saved;
static volatile sig_atomic_t saved_fd = -1;
static int winch_fd = -1, winch_w = -1;

static const int fatal_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

int sbx_term_size(int fd, unsigned *cols, unsigned *rows)
{
	struct winsize ws;
	if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return -1;
	*cols = ws.ws_col ? ws.ws_col : 80;
	*rows = ws.ws_row ? ws.ws_row : 24;
	return 0;
}

int sbx_term_parse_size(const char *s, const char *what, unsigned *cols, unsigned *rows,
			struct sbx_err *err)
{
	unsigned c, r;
	char tail;
	if (sscanf(s, "%ux%u%c", &c, &r, &tail) != 2 || !c || !r || c > 9999 || r > 9999)
		return sbx_usage_err(err, "%s must be COLSxROWS (e.g. 80x24), got '%s'", what, s);
	*cols = c;
	*rows = r;
	return 0;
}

void sbx_term_restore(void)
{
	int fd = saved_fd;
	if (fd >= 0)
		tcsetattr(fd, TCSANOW, &saved);
}

/* Put the terminal back, then die of `sig` as if we had no handler. */
static void on_fatal(int sig)
{
	int e = errno;
	sbx_term_restore();
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	kill(getpid(), sig);
	errno = e;
}

int sbx_term_raw(int fd, struct sbx_err *err)
{
	if (saved_fd >= 0)
		return 0;
	if (tcgetattr(fd, &saved) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "terminal", "tcgetattr");
	struct termios raw = saved;
	cfmakeraw(&raw);
	saved_fd = fd;
	atexit(sbx_term_restore);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction sa = {.sa_handler = on_fatal};
		sigemptyset(&sa.sa_mask);
		struct sigaction old;
		/* A signal the caller ignores (nohup) stays ignored. */
		if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(fatal_signals[i], &sa, NULL);
	}
	if (tcsetattr(fd, TCSADRAIN, &raw) < 0) {
		saved_fd = -1;
		return sbx_fail_errno(err, SBX_INTERNAL, "terminal", "raw mode");
	}
	return 0;
}

static void on_winch(int sig)
{
	(void)sig;
	int e = errno;
	struct winsize ws;
	if (ioctl(winch_fd, TIOCGWINSZ, &ws) == 0) {
		struct sbx_tty_size sz = {.cols = ws.ws_col, .rows = ws.ws_row};
		/* Atomic (smaller than PIPE_BUF); a full pipe drops this
		 * one, the reader has newer ones waiting. */
		(void)!write(winch_w, &sz, sizeof(sz));
	}
	errno = e;
}

int sbx_term_winch_pipe(int fd, struct sbx_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "terminal", "pipe");
	winch_fd = fd;
	winch_w = p[1];
	struct sigaction sa = {.sa_handler = on_winch, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, NULL);
	return p[0];
}
