/* Starting an exec's command: `bash -c COMMAND` (or `/bin/sh -c`) through vfork,
 * or straight from PATH when it is plain words (spawn_plain, make's habit),
 * in its own process group, as the sandbox user unless as_root, in the cwd the
 * request named, with a clean environment plus the request's; and the files an
 * exec writes inside the sandbox (a background job's log, a command's kept output).  The child reports a failure before execve (which
 * stage, which errno) on a close-on-exec pipe, so the request gets a reason. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/exec-int.h"
#include "agent/exec.h"
#include "agent/path.h"
#include "lib/util.h"

enum spawn_stage { STAGE_PRIVS = 1, STAGE_CWD, STAGE_EXEC };

struct spawn_report {
	int	stage;
	int	err;
};

const char *
spawn_shell(void)
{
	if (access("/bin/bash", X_OK) == 0)
		return "/bin/bash";
	if (access("/usr/bin/bash", X_OK) == 0)
		return "/usr/bin/bash";
	return "/bin/sh";
}

/* What a shell does itself rather than run from PATH (bash's builtins and
 * keywords, which take in dash's); true and false run the same either way. */
static const char *const shell_words[] = {
	".", ":", "alias", "bg", "bind", "break", "builtin", "caller", "case", "cd",
	"command", "compgen", "complete", "compopt", "continue", "coproc", "declare",
	"dirs", "disown", "do", "done", "echo", "elif", "else", "enable", "esac", "eval",
	"exec", "exit", "export", "fc", "fg", "fi", "for", "function", "getopts", "hash",
	"help", "history", "if", "in", "jobs", "kill", "let", "local", "logout", "mapfile",
	"popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return",
	"select", "set", "shift", "shopt", "source", "suspend", "test", "then", "time",
	"times", "trap", "type", "typeset", "ulimit", "umask", "unalias", "unset", "until",
	"wait", "while",
};

/* name's file in path's directories, as a shell finds it, or NULL (the shell
 * then says why).  The search stops at a relative directory or an empty one
 * (the cwd), which only the child, in its cwd, can search. */
static char *
path_find(const char *path, const char *name)
{
	struct stat st;

	while (path != NULL && *path == '/') {
		size_t len = strcspn(path, ":");
		char *file = xasprintf("%.*s/%s", (int)len, path, name);
		if (stat(file, &st) == 0 && S_ISREG(st.st_mode) && access(file, X_OK) == 0)
			return file;
		free(file);
		path = path[len] == ':' ? path + len + 1 : NULL;
	}
	return NULL;
}

void
spawn_plain(struct spawn *sp, const char *command)
{
	char link[64], cwd[PATH_MAX], **w;
	size_t nw = 0;
	ssize_t len;

	snprintf(link, sizeof link, "/proc/self/fd/%d", sp->cwd_fd);
	if (env_value(sp->envp, "PWD") == NULL &&
	    (len = readlink(link, cwd, sizeof cwd - 1)) > 0 && cwd[0] == '/') {
		cwd[len] = '\0';
		sp->envp = env_default(sp->envp, "PWD", cwd);
	}
	/* Only with bash, whose lookup is PATH's (busybox's sh runs its own
	 * applets first, whatever PATH holds).  Only letters, digits, _./:,+@%=-
	 * and blanks: nothing a shell would quote, expand, redirect or run in the
	 * background.  A startup file, or a function, named in the environment is
	 * the shell's to read. */
	if (strcmp(sp->argv[0], "bash") != 0 ||
	    command[strspn(command, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_./:,+@%=- \t")] != '\0' || env_value(sp->envp, "BASH_ENV") != NULL ||
	    env_value(sp->envp, "ENV") != NULL)
		return;
	for (char **v = sp->envp; *v != NULL; v++)
		if (strncmp(*v, "BASH_FUNC_", 10) == 0)
			return;
	w = xcalloc(strlen(command) / 2 + 2, sizeof *w);
	for (const char *p = command; *(p += strspn(p, " \t")) != '\0';) {
		size_t wl = strcspn(p, " \t");
		w[nw++] = xstrndup(p, wl);
		p += wl;
	}
	if (nw == 0 || strchr(w[0], '=') != NULL)
		goto shell;
	for (size_t i = 0; i < ARRAY_SIZE(shell_words); i++)
		if (strcmp(w[0], shell_words[i]) == 0)
			goto shell;
	sp->direct = strchr(w[0], '/') != NULL ? xstrdup(w[0]) :
	    path_find(env_value(sp->envp, "PATH"), w[0]);
	if (sp->direct == NULL)
		goto shell;
	sp->words = w;
	return;
shell:
	strv_free(w);
}

void
spawn_plain_free(struct spawn *sp)
{
	free(sp->direct);
	strv_free(sp->words);
	sp->direct = NULL;
	sp->words = NULL;
}

static void __attribute__((noreturn))
child_fail(int stage)
{
	struct spawn_report rep = { stage, errno };

	(void)!write(3, &rep, sizeof rep);
	_exit(127);
}

/* In the vforked child (sharing the agent's memory until execve): only system
 * calls from here on, nothing that allocates or takes a lock.  The order is
 * fixed: own process group and the OOM killer's first choice; move the needed descriptors out of the way, then onto
 * 0-4; close every other descriptor; clean signal state; drop privileges; enter
 * the cwd as the user (so its permissions apply); exec. */
static void __attribute__((noreturn))
child_run(const struct spawn *sp, int report_fd)
{
	int src[5] = { sp->in_fd, sp->out_fd, sp->err_fd, report_fd, sp->cwd_fd };
	int tmp[5];
	sigset_t none;
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	setpgid(0, 0);
	agent_child_oom_expose();
	for (int i = 0; i < 5; i++)
		if ((tmp[i] = fcntl(src[i], F_DUPFD, 10)) < 0)
			_exit(127);
	for (int i = 0; i < 5; i++)
		if (dup2(tmp[i], i) < 0)
			_exit(127);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	if (close_range(5, ~0U, 0) < 0) {
		struct rlimit rl;
		int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ?
		    (int)rl.rlim_cur : 65536;
		for (int fd = 5; fd < max; fd++)
			close(fd);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	if (agent_drop_privs(sp->as_root) < 0)
		child_fail(STAGE_PRIVS);
	if (fchdir(4) < 0)
		child_fail(STAGE_CWD);
	close(4);
	/* Plain words go straight to their file; a file that will not run that
	 * way (a script with no #!, one the user may not run) goes to the shell,
	 * which runs it or says what is wrong as it always would. */
	if (sp->direct != NULL)
		execve(sp->direct, sp->words, sp->envp);
	execve(sp->shell, sp->argv, sp->envp);
	child_fail(STAGE_EXEC);
}

int
spawn_child(struct exec *e, const struct spawn *sp, const char *cwd, char *err,
    size_t errlen, int *client)
{
	int rp[2];
	pid_t pid;
	struct spawn_report rep;
	ssize_t n;

	*client = 0;
	if (pipe2(rp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	children_lock();
	/* vfork: no copy of the agent's page tables, the cheapest way to start a
	 * command; the child only makes system calls until execve or _exit. */
	pid = vfork();
	if (pid == 0)
		child_run(sp, rp[1]);
	if (pid < 0) {
		int saved = errno;
		children_unlock();
		close(rp[0]);
		close(rp[1]);
		snprintf(err, errlen, "cannot fork: %s", strerror(saved));
		return -1;
	}
	/* Also from this side, so the group exists before anyone signals it. */
	setpgid(pid, pid);
	pthread_mutex_lock(&ex_mu);
	e->pid = pid;
	exec_ref_locked(e);		/* the watch's */
	pthread_mutex_unlock(&ex_mu);
	child_watch(pid, exec_reaped, e);
	children_unlock();

	close(rp[1]);
	do
		n = read(rp[0], &rep, sizeof rep);
	while (n < 0 && errno == EINTR);
	close(rp[0]);
	if (n != (ssize_t)sizeof rep)
		return 0;		/* EOF: exec succeeded */
	switch (rep.stage) {
	case STAGE_CWD:
		*client = 2;
		snprintf(err, errlen, "cannot enter cwd %s: %s", cwd, strerror(rep.err));
		break;
	case STAGE_PRIVS:
		snprintf(err, errlen, "cannot switch to the sandbox user: %s", strerror(rep.err));
		break;
	default:
		if (rep.err == E2BIG) {
			*client = 1;
			snprintf(err, errlen, "the command or env is too large for the kernel "
			    "(at most 128 KiB per string); write the script to a file and run that");
			break;
		}
		snprintf(err, errlen, "cannot run %s: %s", sp->shell, strerror(rep.err));
	}
	return -1;
}

char **
spawn_env(int as_root, const cJSON *env)
{
	char **base = agent_child_env(as_root), **out;
	size_t nbase = 0, nreq = 0, n = 0;
	const cJSON *v;

	while (base[nbase] != NULL)
		nbase++;
	cJSON_ArrayForEach(v, env)
		nreq++;
	out = xcalloc(nbase + nreq + 1, sizeof *out);
	for (size_t i = 0; i < nbase; i++) {
		size_t klen = strcspn(base[i], "=");
		int overridden = 0;
		cJSON_ArrayForEach(v, env) {
			if (strlen(v->string) == klen && strncmp(v->string, base[i], klen) == 0)
				overridden = 1;
		}
		if (overridden)
			free(base[i]);
		else
			out[n++] = base[i];
	}
	free(base);
	cJSON_ArrayForEach(v, env)
		out[n++] = xasprintf("%s=%s", v->string, v->valuestring);
	out[n] = NULL;
	return out;
}

/* A file of exec id inside the sandbox, EXEC_LOG_DIR/exec-ID.EXT (ext "log" for
 * a background job's log, "stdout" and "stderr" for the output a command's
 * result keeps), in a directory the agent owns (one a sandbox user made could
 * hold a symlink we would write through).  An older file of the same name (from
 * an earlier agent) is kept: the new one gets a suffix.  The descriptor, with
 * *path set (caller frees) and *fs_bytes (may be NULL) the size of the
 * directory's filesystem, or -1 with err. */
int
spawn_open_file(const char *id, const char *ext, char **path, uint64_t *fs_bytes, char *err,
    size_t errlen)
{
	_cleanup_free_ char *dir_probe = xasprintf(EXEC_LOG_DIR "/exec-%s.%s", id, ext);
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	struct statvfs sv;

	if (path_mkdir_parents(dir_probe) < 0 || (dfd = path_open_parent(dir_probe, &name)) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", EXEC_LOG_DIR, strerror(errno));
		return -1;
	}
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, errlen, "%s is not a directory owned by the agent with mode 0755; "
		    "remove it and retry", EXEC_LOG_DIR);
		return -1;
	}
	if (fs_bytes != NULL)
		*fs_bytes = fstatvfs(dfd, &sv) == 0 ? (uint64_t)sv.f_blocks * sv.f_frsize : 0;
	for (int n = 0; n < 100; n++) {
		_cleanup_free_ char *file = n ? xasprintf("exec-%s.%d.%s", id, n, ext) :
		    xasprintf("exec-%s.%s", id, ext);
		int fd = openat(dfd, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			*path = xasprintf(EXEC_LOG_DIR "/%s", file);
			return fd;
		}
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s/%s: %s", EXEC_LOG_DIR, file,
			    strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "too many old files for exec %s in %s; remove some", id,
	    EXEC_LOG_DIR);
	return -1;
}
