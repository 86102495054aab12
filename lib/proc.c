/* /proc/PID/stat (see proc.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/proc.h"

int
proc_stat(pid_t pid, struct proc_stat *ps)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: parse after its last
	 * ')'.  Field 3 is the state, field 22 the start time. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0')
		return -1;
	ps->state = p[2];
	p += 3;				/* the space before field 4 */
	for (int field = 4; field <= 22; field++) {
		if ((p = strchr(p, ' ')) == NULL)
			return -1;
		p++;
	}
	ps->starttime = strtoull(p, NULL, 10);
	return 0;
}

unsigned long long
proc_running_since(pid_t pid)
{
	struct proc_stat ps;

	if (proc_stat(pid, &ps) < 0 || ps.state == 'Z' || ps.state == 'X')
		return 0;
	return ps.starttime;
}
