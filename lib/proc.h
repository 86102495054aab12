/* One reader of /proc/PID/stat for every part that asks after a process: its
 * state and its start time, which with the pid names one process even after
 * the pid is reused. */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <sys/types.h>

struct proc_stat {
	char			state;		/* 'R', 'S', ..., 'Z' (zombie), 'X' (dead) */
	unsigned long long	starttime;	/* clock ticks after boot */
};

/* 0 with *ps filled, -1 when there is no such process. */
int proc_stat(pid_t pid, struct proc_stat *ps);
/* The start time of pid while it runs; 0 when it is gone or a zombie (it
 * runs nothing, whoever reaps it). */
unsigned long long proc_running_since(pid_t pid);

#endif
