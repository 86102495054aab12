/* Signal names (see sig.h). */
#include <signal.h>
#include <stdlib.h>
#include <strings.h>

#include "lib/sig.h"
#include "lib/util.h"

static const struct { int sig; const char *name; } names[] = {
	{ SIGHUP, "HUP" }, { SIGINT, "INT" }, { SIGQUIT, "QUIT" }, { SIGILL, "ILL" },
	{ SIGTRAP, "TRAP" }, { SIGABRT, "ABRT" }, { SIGBUS, "BUS" }, { SIGFPE, "FPE" },
	{ SIGKILL, "KILL" }, { SIGUSR1, "USR1" }, { SIGSEGV, "SEGV" }, { SIGUSR2, "USR2" },
	{ SIGPIPE, "PIPE" }, { SIGALRM, "ALRM" }, { SIGTERM, "TERM" }, { SIGCHLD, "CHLD" },
	{ SIGCONT, "CONT" }, { SIGSTOP, "STOP" }, { SIGTSTP, "TSTP" }, { SIGTTIN, "TTIN" },
	{ SIGTTOU, "TTOU" }, { SIGURG, "URG" }, { SIGXCPU, "XCPU" }, { SIGXFSZ, "XFSZ" },
	{ SIGVTALRM, "VTALRM" }, { SIGPROF, "PROF" }, { SIGWINCH, "WINCH" }, { SIGIO, "IO" },
	{ SIGPWR, "PWR" }, { SIGSYS, "SYS" },
#ifdef SIGSTKFLT
	{ SIGSTKFLT, "STKFLT" },
#endif
};

const char *
sig_name(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].sig == sig)
			return names[i].name;
	return NULL;
}

int
sig_number(const char *s)
{
	char *end;
	long v;

	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcasecmp(names[i].name, s) == 0)
			return names[i].sig;
	v = strtol(s, &end, 10);
	return *s != '\0' && *end == '\0' && v > 0 && v < NSIG ? (int)v : 0;
}
