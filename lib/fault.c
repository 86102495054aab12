/* Fault injection for tests (see fault.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fault.h"

enum fault_action { FAULT_KILL, FAULT_FAIL };

static struct {
	pthread_once_t	 once;
	int		 on;		/* a point or a trace is asked for */
	char		 point[96];
	long		 nth;
	enum fault_action action;
	char		 trace[512];
	long		 hits;		/* of point, so far */
} fault = { .once = PTHREAD_ONCE_INIT };

static void
fault_read_env(void)
{
	const char *spec = getenv("SBXTOP_FAULT"), *tr = getenv("SBXTOP_FAULT_TRACE");
	char buf[sizeof fault.point + 32], *tok, *save = NULL;

	fault.nth = 1;
	if (tr != NULL && tr[0] == '/' && strlen(tr) < sizeof fault.trace) {
		memcpy(fault.trace, tr, strlen(tr) + 1);
		fault.on = 1;
	}
	if (spec == NULL || spec[0] == '\0' || strlen(spec) >= sizeof buf)
		return;
	memcpy(buf, spec, strlen(spec) + 1);
	if ((tok = strtok_r(buf, ":", &save)) == NULL || strlen(tok) >= sizeof fault.point)
		return;
	memcpy(fault.point, tok, strlen(tok) + 1);
	while ((tok = strtok_r(NULL, ":", &save)) != NULL) {
		if (strspn(tok, "0123456789") == strlen(tok))
			fault.nth = atol(tok) > 0 ? atol(tok) : 1;
		else if (strcmp(tok, "fail") == 0)
			fault.action = FAULT_FAIL;
		else if (strcmp(tok, "kill") == 0)
			fault.action = FAULT_KILL;
	}
	fault.on = 1;
}

void
fault_init(void)
{
	pthread_once(&fault.once, fault_read_env);
}

static void
fault_trace(const char *name)
{
	char line[128];
	int fd, n;

	/* O_APPEND: each line whole, whichever process or thread writes it. */
	if ((fd = open(fault.trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
		return;
	n = snprintf(line, sizeof line, "%s\n", name);
	if (n > 0 && (size_t)n < sizeof line)
		(void)!write(fd, line, (size_t)n);
	close(fd);
}

int
fault_point(const char *name, struct sbx_err *e)
{
	fault_init();
	if (!fault.on)
		return 0;
	if (fault.trace[0] != '\0')
		fault_trace(name);
	if (fault.point[0] == '\0' || strcmp(fault.point, name) != 0 ||
	    __atomic_add_fetch(&fault.hits, 1, __ATOMIC_SEQ_CST) != fault.nth)
		return 0;
	if (fault.action == FAULT_KILL) {
		kill(getpid(), SIGKILL);
		_exit(137);	/* not reached */
	}
	errno = EIO;
	return sbx_error(e, SBX_EIO, "unset SBXTOP_FAULT (a test's fault injection)",
	    "%s: a fault injected here (SBXTOP_FAULT)", name);
}
