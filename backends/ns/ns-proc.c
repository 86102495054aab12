/* The ns backend's look at host processes: a sandbox's init (by pid and start
 * time, a zombie counting as gone), the wait for it to go, the signal to
 * every process of its pid namespace, and its suspend and resume (the cgroup's
 * freezer, else a stop and a continue of every process). */
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/ns/ns.h"
#include "lib/proc.h"
#include "lib/util.h"

static int
thread_count(pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Our sandbox's init, still there (and not the same pid reused)?  A zombie
 * counts as gone: it is reaped here when it is our child. */
int
ns_init_alive(pid_t pid, unsigned long long starttime, struct proc_stat *out)
{
	struct proc_stat pi;

	/* Records written before the start time was read right hold 0 (the
	 * field before it): for those the pid alone has to do. */
	if (pid <= 0 || proc_stat(pid, &pi) < 0 || (starttime != 0 && pi.starttime != starttime))
		return 0;
	if (pi.state == 'Z' || pi.state == 'X') {
		/* A zombie leader may still have threads on their way out: gone once
		 * reaped (when it is our child) or once it is the last thread. */
		pid_t r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && thread_count(pid) <= 1))
			return 0;
		if (out != NULL)
			*out = pi;
		return 1;
	}
	if (out != NULL)
		*out = pi;
	return 1;
}

/* Wait until pid (started at starttime) is gone: woken by its pidfd when there
 * is one (polling every 5 ms instead made a destroy's wait 5 ms at least). */
int
ns_wait_gone(pid_t pid, unsigned long long starttime, int timeout_ms)
{
	_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int exited = 0;

	for (int64_t end = now_ms() + timeout_ms; ns_init_alive(pid, starttime, NULL);) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		int64_t left = end - now_ms();
		if (left <= 0)
			return -1;
		/* Readable from its exit on, when it is mostly reapable at once
		 * (a sleep first was a quarter of a destroy); then a zombie's last
		 * threads, 1 ms apart. */
		if (pfd >= 0 && !exited)
			exited = poll(&p, 1, (int)(left < 5 ? left : 5)) > 0;
		else
			poll(NULL, 0, pfd < 0 ? 5 : 1);
	}
	return 0;
}

/* Send sig to every process of the pid namespace whose init is pid (found on the
 * host through /proc/N/ns/pid).  init_first orders the init before or after the
 * others.  Returns how many were signalled. */
int
ns_signal_pidns(pid_t pid, int sig, int init_first)
{
	char path[64], want[64], got[64];
	ssize_t n;
	int count = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
	if ((n = readlink(path, want, sizeof want - 1)) < 0)
		return 0;
	want[n] = '\0';
	if (init_first && kill(pid, sig) == 0)
		count++;
	if ((d = opendir("/proc")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			pid_t p = (pid_t)atoi(de->d_name);
			if (p <= 0 || p == pid)
				continue;
			snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)p);
			if ((n = readlink(path, got, sizeof got - 1)) < 0)
				continue;
			got[n] = '\0';
			if (strcmp(got, want) == 0 && kill(p, sig) == 0)
				count++;
		}
		closedir(d);
	}
	if (!init_first && kill(pid, sig) == 0)
		count++;
	return count;
}

int
ns_suspend_resume(struct sandbox *s, int suspend, struct sbx_err *e)
{
	struct ns_data d;
	struct sbx_err ferr;
	int rc = 0;

	if (ns_data_get(s, &d, e) < 0)
		return -1;
	if (!ns_init_alive(d.pid, d.starttime, NULL)) {
		free(d.dir);
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status` to see why", "sandbox %s is not running", s->id);
	}
	sbx_err_clear(&ferr);
	if (d.cgroup != NULL && ns_cgroup_freeze(d.cgroup, suspend, &ferr) == 0) {
		/* The freezer holds them all, init included. */
	} else if (d.cgroup != NULL && ferr.code != SBX_EUNSUPPORTED) {
		*e = ferr;
		rc = -1;
	} else if (suspend) {
		/* No freezer: stop every process of the pid namespace, init last, a few
		 * rounds so a process forked meanwhile is caught too. */
		for (int round = 0; round < 3; round++)
			ns_signal_pidns(d.pid, SIGSTOP, 0);
		for (int64_t end = now_ms() + 1000; now_ms() < end;) {
			struct proc_stat pi;
			if (proc_stat(d.pid, &pi) == 0 && (pi.state == 'T' || pi.state == 't'))
				break;
			poll(NULL, 0, 2);
		}
	} else {
		ns_signal_pidns(d.pid, SIGCONT, 1);
	}
	if (rc == 0)
		s->state = suspend ? SBX_SUSPENDED : SBX_RUNNING;
	free(d.dir);
	return rc;
}
