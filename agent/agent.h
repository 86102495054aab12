/* sbxtop-agent: process-wide state shared by the route modules. */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <stdint.h>
#include <sys/types.h>

struct agent_config {
	const char	*workspace;	/* default cwd and base of relative paths */
	const char	*cwd;		/* --cwd: default cwd of commands instead (an
					 * image's WorkingDir), or NULL */
	const char	*root;		/* the sandbox's root as the agent sees it ("/") */
	int		 have_user;	/* drop to uid/gid unless as_root */
	uid_t		 uid;
	gid_t		 gid;
	const char	*user;
	const char	*home;
	int		 init;		/* running as PID 1 */
	int64_t		 deadline_s;	/* --deadline: seconds from start, 0 none */
	int64_t		 idle_s;	/* --idle: seconds without API traffic, 0 none */
	int64_t		 started_ms;	/* monotonic; restarted by a reseed after a restore */
	const char	*secret_file;	/* --secret-file, or NULL */
	const char	*seed_device;	/* --seed: the qemu seed disk, or NULL */
	int64_t		 restored_ms;	/* the last restore a reseed applied (wall clock) */
	_Atomic int	 api_up;	/* every --listen is serving (the AWS ready hook) */
	int		 oom_fd;	/* --oom-events: the sandbox's OOM-kill count, or -1 */
};

/* Shortest sandbox secret accepted (--secret-file, the AWS run hook). */
#define AGENT_SECRET_MIN 16

extern struct agent_config agent;

/* The per-sandbox secret: unknown (NULL) until --secret-file, the AWS run hook or a
 * reseed; NULL forgets it (the old one is wiped). */
void agent_set_secret(const char *secret);
/* 1 when s matches (constant time), 0 when it does not, -1 when no secret is known. */
int agent_check_secret(const char *s);
int agent_ready(void);
/* Note API traffic, for the idle policy. */
void agent_touch(void);
int64_t agent_last_activity_ms(void);

/* Environment for a child: a clean base (PATH, HOME, USER, LANG, TERM) plus the
 * environment given at start (the AWS run hook's env) — never the agent's own. */
char **agent_child_env(int as_root);
void agent_set_base_env(const char *key, const char *value);

/* In a freshly forked or vforked child: drop to the sandbox user unless as_root
 * (or when no user is configured).  0, or -1 with errno. */
int agent_drop_privs(int as_root);

/* The identity a file call acts with.  The agent is the sandbox's root; a call
 * that is not as_root (a write, an upload, a delete) is the sandbox user's, so
 * that what it opens, makes and follows it does with the user's permissions,
 * and a link the user planted leads it nowhere the user could not go itself.
 * agent_act_as makes this thread's file system identity the user's (setfsuid,
 * setfsgid, no supplementary groups: Linux keeps credentials per thread, and
 * these system calls change only the caller's) until agent_act_end; nothing
 * changes with as_root or without a user.  0, or -1 with errno when the
 * identity cannot be taken (then nothing may be done for the call). */
struct agent_act {
	int	 on;
	uid_t	 fsuid;		/* what to go back to */
	gid_t	 fsgid;
	int	 ngroups;	/* -1: the groups were left as they were */
	gid_t	 groups[64];
};
int agent_act_as(int as_root, struct agent_act *a);
void agent_act_end(struct agent_act *a);
#define _cleanup_act_ __attribute__((cleanup(agent_act_end)))

/* In a freshly forked or vforked child: raise its oom_score_adj to 1000, so
 * that at the memory limit the OOM killer takes a command before the agent
 * (always allowed; the kernel keeps a vfork child's apart from its parent's).
 * A command may lower it again, never below the agent's own. */
void agent_child_oom_expose(void);

/* --oom-events SPEC ("fd:N" or a file): where the kill count of the OOM killer
 * for this sandbox is read, a line "oom_kill N" (the memory cgroup's
 * memory.events or memory.oom_control, given by the ns launcher as an fd; a
 * VM's /proc/vmstat).  0, or -1 with a message on stderr. */
int agent_oom_open(const char *spec);
/* The count now, or -1 when unknown. */
int64_t agent_oom_kills(void);

/* Child reaping happens in one place (the main loop's SIGCHLD handling), so PID 1
 * can reap orphans without stealing the exit status of a process a module waits
 * for.  Fork with children_lock() held and register the pid before unlocking;
 * fn runs on the main thread and must be quick (record, signal a condition). */
typedef void (*child_exit_fn)(pid_t pid, int status, void *arg);
void children_lock(void);
void children_unlock(void);
void child_watch(pid_t pid, child_exit_fn fn, void *arg);
/* Reap every exited child (main loop only). */
void children_reap(void);

void strv_free(char **v);
/* The value of key in an environment (KEY=VALUE strings), or NULL. */
const char *env_value(char *const *envp, const char *key);
/* envp (allocated, NULL-terminated) with key=value added unless key is there:
 * the array, perhaps moved. */
char **env_default(char **envp, const char *key, const char *value);

/* As the sandbox's init with a separate user: serve sudo (agent/sudo.c). */
void sudo_listen(void);

#endif
