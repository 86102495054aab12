/* Process-wide agent state: the secret, activity time, child environment and
 * privileges, and the one place children are reaped. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "lib/log.h"
#include "lib/util.h"

struct agent_config agent = { .workspace = "/workspace", .root = "/", .oom_fd = -1 };

static pthread_mutex_t secret_lock = PTHREAD_MUTEX_INITIALIZER;
static char *secret;
static _Atomic int64_t last_activity;

void
agent_set_secret(const char *s)
{
	pthread_mutex_lock(&secret_lock);
	if (secret != NULL)
		explicit_bzero(secret, strlen(secret));
	free(secret);
	secret = s ? xstrdup(s) : NULL;
	pthread_mutex_unlock(&secret_lock);
}

int
agent_check_secret(const char *s)
{
	int rc;

	pthread_mutex_lock(&secret_lock);
	rc = secret == NULL ? -1 : ct_streq(s, secret);
	pthread_mutex_unlock(&secret_lock);
	return rc;
}

int
agent_ready(void)
{
	int rc;

	pthread_mutex_lock(&secret_lock);
	rc = secret != NULL;
	pthread_mutex_unlock(&secret_lock);
	return rc;
}

void agent_touch(void) { last_activity = now_ms(); }

int64_t
agent_last_activity_ms(void)
{
	return last_activity ? last_activity : agent.started_ms;
}

/* Environment given at start (the AWS run hook's env), applied to every child. */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static char **base_env;
static size_t nbase_env;

void
agent_set_base_env(const char *key, const char *value)
{
	size_t klen = strlen(key);

	pthread_mutex_lock(&env_lock);
	for (size_t i = 0; i < nbase_env; i++) {
		if (strncmp(base_env[i], key, klen) == 0 && base_env[i][klen] == '=') {
			free(base_env[i]);
			base_env[i] = xasprintf("%s=%s", key, value);
			pthread_mutex_unlock(&env_lock);
			return;
		}
	}
	base_env = xrealloc(base_env, (nbase_env + 2) * sizeof *base_env);
	base_env[nbase_env++] = xasprintf("%s=%s", key, value);
	base_env[nbase_env] = NULL;
	pthread_mutex_unlock(&env_lock);
}

/* Set key=value in env (n entries, room for one more), replacing an entry with
 * the same key. */
static void
env_put(char **env, size_t *n, char *kv)
{
	size_t klen = strcspn(kv, "=");

	for (size_t i = 0; i < *n; i++) {
		if (strncmp(env[i], kv, klen + 1) == 0) {
			free(env[i]);
			env[i] = kv;
			return;
		}
	}
	env[(*n)++] = kv;
}

char **
agent_child_env(int as_root)
{
	int user = agent.have_user && !as_root;
	const char *home = user ? (agent.home ? agent.home : "/home/sandbox") : "/root";
	const char *name = user ? (agent.user ? agent.user : "sandbox") : "root";
	char **env;
	size_t n = 0;

	pthread_mutex_lock(&env_lock);
	env = xcalloc(nbase_env + 8, sizeof *env);
	env_put(env, &n, xstrdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
	env_put(env, &n, xasprintf("HOME=%s", home));
	env_put(env, &n, xasprintf("USER=%s", name));
	env_put(env, &n, xasprintf("LOGNAME=%s", name));
	env_put(env, &n, xstrdup("LANG=C.UTF-8"));
	env_put(env, &n, xstrdup("TERM=xterm-256color"));
	/* The environment given at start (the run hook's) overrides the defaults. */
	for (size_t i = 0; i < nbase_env; i++)
		env_put(env, &n, xstrdup(base_env[i]));
	env[n] = NULL;
	pthread_mutex_unlock(&env_lock);
	return env;
}

void
strv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

const char *
env_value(char *const *envp, const char *key)
{
	size_t n = strlen(key);

	for (; *envp != NULL; envp++)
		if (strncmp(*envp, key, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

char **
env_default(char **envp, const char *key, const char *value)
{
	size_t n = 0;

	if (env_value(envp, key) != NULL)
		return envp;
	while (envp[n] != NULL)
		n++;
	envp = xrealloc(envp, (n + 2) * sizeof *envp);
	envp[n] = xasprintf("%s=%s", key, value);
	envp[n + 1] = NULL;
	return envp;
}

int
agent_drop_privs(int as_root)
{
	if (!agent.have_user || as_root)
		return 0;
	/* Raw system calls: this may run in a vfork child, where glibc's set*id
	 * wrappers would try to signal the parent's other threads. */
	if (syscall(SYS_setgroups, 0, NULL) < 0 && errno != EPERM)
		return -1;
	if (syscall(SYS_setresgid, agent.gid, agent.gid, agent.gid) < 0 ||
	    syscall(SYS_setresuid, agent.uid, agent.uid, agent.uid) < 0)
		return -1;
	return 0;
}

int
agent_act_as(int as_root, struct agent_act *a)
{
	memset(a, 0, sizeof *a);
	a->ngroups = -1;
	if (!agent.have_user || as_root)
		return 0;
	/* Raw system calls: glibc's setgroups would change every thread's. */
	int n = getgroups((int)ARRAY_SIZE(a->groups), a->groups);
	if (n < 0)
		return -1;
	if (syscall(SYS_setgroups, 0, NULL) == 0)
		a->ngroups = n;
	else if (errno != EPERM)	/* a user namespace that denies setgroups */
		return -1;
	a->fsgid = (gid_t)syscall(SYS_setfsgid, agent.gid);
	a->fsuid = (uid_t)syscall(SYS_setfsuid, agent.uid);
	a->on = 1;
	/* setfsuid says nothing of a failure: ask again what it is now. */
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != agent.uid ||
	    (gid_t)syscall(SYS_setfsgid, (gid_t)-1) != agent.gid) {
		agent_act_end(a);
		errno = EPERM;
		return -1;
	}
	return 0;
}

void
agent_act_end(struct agent_act *a)
{
	if (!a->on)
		return;
	syscall(SYS_setfsuid, a->fsuid);
	syscall(SYS_setfsgid, a->fsgid);
	if (a->ngroups >= 0)
		syscall(SYS_setgroups, (size_t)a->ngroups, a->groups);
	a->on = 0;
}

int
agent_oom_open(const char *spec)
{
	char *end;

	if (strncmp(spec, "fd:", 3) == 0) {
		long n = strtol(spec + 3, &end, 10);
		if (spec[3] == '\0' || *end != '\0' || n < 3 || n > 65535 ||
		    fcntl((int)n, F_SETFD, FD_CLOEXEC) < 0) {
			fprintf(stderr, "sbxtop-agent: --oom-events %s: not an open descriptor\n", spec);
			return -1;
		}
		agent.oom_fd = (int)n;
	} else if ((agent.oom_fd = open(spec, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "sbxtop-agent: --oom-events %s: %s\n", spec, strerror(errno));
		return -1;
	}
	return 0;
}

int64_t
agent_oom_kills(void)
{
	char buf[8192], *p;
	ssize_t n;

	if (agent.oom_fd < 0 || (n = pread(agent.oom_fd, buf, sizeof buf - 1, 0)) <= 0)
		return -1;
	buf[n] = '\0';
	/* "oom_kill N" on a line of its own (not "oom_kill_disable"). */
	for (p = buf; p != NULL; p = (p = strchr(p, '\n')) ? p + 1 : NULL)
		if (strncmp(p, "oom_kill ", 9) == 0)
			return strtoll(p + 9, NULL, 10);
	return -1;
}

void
agent_child_oom_expose(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		(void)!write(fd, "1000", 4);
		close(fd);
	}
}

/* Children: a small table of watched pids, guarded by one lock. */
struct watch {
	pid_t		 pid;
	child_exit_fn	 fn;
	void		*arg;
};

static pthread_mutex_t child_mu = PTHREAD_MUTEX_INITIALIZER;
static struct watch *watches;
static size_t nwatches, capwatches;

void children_lock(void) { pthread_mutex_lock(&child_mu); }
void children_unlock(void) { pthread_mutex_unlock(&child_mu); }

void
child_watch(pid_t pid, child_exit_fn fn, void *arg)
{
	if (nwatches == capwatches) {
		capwatches = capwatches ? capwatches * 2 : 16;
		watches = xrealloc(watches, capwatches * sizeof *watches);
	}
	watches[nwatches++] = (struct watch){ pid, fn, arg };
}

void
children_reap(void)
{
	pid_t pid;
	int status;

	children_lock();
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (size_t i = 0; i < nwatches; i++) {
			if (watches[i].pid != pid)
				continue;
			struct watch w = watches[i];
			watches[i] = watches[--nwatches];
			w.fn(pid, status, w.arg);
			break;
		}
		/* Anything else is an orphan we adopted as init: reaped, forgotten. */
	}
	children_unlock();
}
