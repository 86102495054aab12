/* sbxtop-agent: the daemon inside every sandbox.  main() parses options, starts the
 * listeners, and runs the main loop: signals, child reaping, and (as PID 1 or with
 * --deadline/--idle) the sandbox's lifetime policy. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/exec.h"
#include "agent/http.h"
#include "agent/path.h"
#include "lib/log.h"
#include "lib/util.h"

#define SECRET_MIN AGENT_SECRET_MIN
#define SHUTDOWN_GRACE_MS 2000

static void
usage(FILE *f)
{
	fputs(
"usage: sbxtop-agent --listen unix:PATH|tcp:HOST:PORT [--listen ...]\n"
"                    [--secret-file FILE] [--workspace DIR] [--root DIR]\n"
"                    [--user NAME|UID[:GID]] [--own-workspace] [--env K=V ...]\n"
"                    [--cwd DIR] [--init] [--deadline S] [--idle S]\n"
"                    [--hooks tcp:HOST:PORT] [--log FILE] [--ready-fd N]\n"
"                    [--seed DEVICE] [--oom-events fd:N|FILE] [--tag TEXT]\n"
"\n"
"The daemon inside every sbxtop sandbox: runs commands, moves files and\n"
"archives, opens tunnels and PTYs, over HTTP (see sbxtop-agent(8)).\n"
"\n"
"  --listen SPEC       serve the API on a unix socket or TCP address (repeatable)\n"
"  --secret-file FILE  the sandbox secret (at least 16 characters); without it the\n"
"                      API answers 503 not_ready until the AWS run hook gives one\n"
"  --workspace DIR     default working directory and base of relative paths\n"
"                      (default /workspace)\n"
"  --root DIR          the sandbox's root: no path ever resolves outside it\n"
"                      (default /)\n"
"  --user NAME|UID[:GID]  run commands as this user unless as_root is asked\n"
"  --own-workspace     give the workspace to that user (an image's User)\n"
"  --env K=V           in every command's environment (repeatable; an image's Env)\n"
"  --cwd DIR           default working directory of commands, instead of the\n"
"                      workspace (an image's WorkingDir)\n"
"  --init              as init: reap orphans, stop everything on TERM (as PID 1\n"
"                      every process, else this agent's descendants)\n"
"  --deadline S        stop the sandbox S seconds after start\n"
"  --idle S            stop the sandbox after S seconds without API requests\n"
"  --hooks SPEC        serve the AWS Lambda MicroVMs lifecycle hooks there\n"
"  --log FILE          log there instead of stderr\n"
"  --ready-fd N        write \"ready\\n\" to fd N once listening, then close it\n"
"  --seed DEVICE       the qemu seed disk, read again by POST /v1/reseed\n"
"  --oom-events SPEC   read the OOM killer's count for the sandbox there (a line\n"
"                      \"oom_kill N\"): a command it ended exits with reason oom\n"
"  --tag TEXT          not used: the host's gc finds the sandbox by it\n"
"  --help, --version\n", f);
}

static int
load_secret(const char *path)
{
	size_t len;
	_cleanup_free_ char *s = read_file(path, 4096, &len);

	if (s == NULL) {
		fprintf(stderr, "sbxtop-agent: cannot read secret file %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
		s[--len] = '\0';
	if (len < SECRET_MIN || strlen(s) != len) {
		fprintf(stderr, "sbxtop-agent: the secret in %s must be at least %d characters\n",
		    path, SECRET_MIN);
		return -1;
	}
	agent_set_secret(s);
	return 0;
}

/* NAME, UID, NAME:GROUP or UID:GID (an image's User), as the sandbox's
 * /etc/passwd and /etc/group say; a number need not be in them. */
static int
set_user(const char *spec)
{
	_cleanup_free_ char *name = xstrdup(spec);
	char *grp = strchr(name, ':'), *end;
	struct passwd *pw;
	unsigned long id;

	if (grp != NULL)
		*grp++ = '\0';
	id = strtoul(name, &end, 10);
	pw = *name != '\0' && *end == '\0' ? getpwuid((uid_t)id) : getpwnam(name);
	if (pw == NULL && (*name == '\0' || *end != '\0')) {
		fprintf(stderr, "sbxtop-agent: no user '%s' in this sandbox's /etc/passwd\n", name);
		return -1;
	}
	if (geteuid() != 0) {
		log_warnx("not root: commands run as uid %d whatever --user says", (int)geteuid());
		return 0;
	}
	agent.have_user = 1;
	agent.uid = pw ? pw->pw_uid : (uid_t)id;
	agent.gid = pw ? pw->pw_gid : (gid_t)id;
	agent.user = xstrdup(pw ? pw->pw_name : name);
	agent.home = xstrdup(pw && pw->pw_dir[0] ? pw->pw_dir : "/");
	if (grp != NULL && *grp != '\0') {
		struct group *gr;
		id = strtoul(grp, &end, 10);
		if (*end == '\0')
			agent.gid = (gid_t)id;
		else if ((gr = getgrnam(grp)) != NULL)
			agent.gid = gr->gr_gid;
		else {
			fprintf(stderr, "sbxtop-agent: no group '%s' in this sandbox's /etc/group\n", grp);
			return -1;
		}
	}
	return 0;
}

static int64_t
parse_seconds(const char *opt, const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0 || v > 365LL * 86400) {
		fprintf(stderr, "sbxtop-agent: %s takes seconds from 0 to 31536000, got '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

/* As init: every process of the sandbox.  As PID 1 that is kill(-1); as the
 * child of another init (a VM's own, say) only our descendants, found by their
 * parents in /proc (orphans come to us: we are their subreaper). */
static void
signal_sandbox(int sig)
{
	pid_t *pid = NULL, *ppid = NULL;
	size_t n = 0, cap = 0;
	unsigned char *mine;
	struct dirent *de;
	DIR *d;

	if (getpid() == 1) {
		kill(-1, sig);
		return;
	}
	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[300], buf[512], *p;
		long long pp;
		int fd;
		ssize_t k;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		k = read(fd, buf, sizeof buf - 1);
		close(fd);
		/* "pid (comm) state ppid": comm may hold spaces and parentheses. */
		if (k <= 0 || (buf[k] = '\0', p = strrchr(buf, ')')) == NULL ||
		    sscanf(p + 1, " %*c %lld", &pp) != 1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			pid = xrealloc(pid, cap * sizeof *pid);
			ppid = xrealloc(ppid, cap * sizeof *ppid);
		}
		pid[n] = (pid_t)atoi(de->d_name);
		ppid[n++] = (pid_t)pp;
	}
	closedir(d);
	/* Mark descendants until nothing changes (the list is in no tree order). */
	mine = xcalloc(n ? n : 1, 1);
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (mine[i])
				continue;
			int up = ppid[i] == getpid();
			for (size_t j = 0; j < n && !up; j++)
				up = mine[j] && pid[j] == ppid[i];
			if (up)
				mine[i] = 1, changed = 1;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (mine[i])
			kill(pid[i], sig);
	free(mine);
	free(pid);
	free(ppid);
}

/* Stop every process, then return: TERM, a grace, then KILL. */
static void
stop_everything(void)
{
	exec_signal_all(SIGTERM);
	if (agent.init)
		signal_sandbox(SIGTERM);
	for (int64_t end = now_ms() + SHUTDOWN_GRACE_MS; now_ms() < end;) {
		children_reap();
		if (exec_count_running(0) == 0 && (!agent.init || waitpid(-1, NULL, WNOHANG) < 0))
			break;
		poll(NULL, 0, 20);
	}
	exec_signal_all(SIGKILL);
	if (agent.init)
		signal_sandbox(SIGKILL);
	children_reap();
}

/* The main loop: returns the exit status. */
static int
main_loop(int sfd)
{
	for (;;) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		int64_t now;

		if (poll(&p, 1, 1000) > 0) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (si.ssi_signo == SIGCHLD)
					continue;
				log_info("signal %d: stopping", (int)si.ssi_signo);
				events_emit("agent.stopping", cJSON_CreateObject());
				return 0;
			}
			children_reap();
		}
		now = now_ms();
		if (agent.deadline_s && now - agent.started_ms >= agent.deadline_s * 1000) {
			log_info("deadline of %llds reached: stopping", (long long)agent.deadline_s);
			return 0;
		}
		if (agent.idle_s && exec_count_running(0) == 0 &&
		    now - agent_last_activity_ms() >= agent.idle_s * 1000) {
			log_info("idle for %llds: stopping", (long long)agent.idle_s);
			return 0;
		}
	}
}

/* The background log directory, made at start by the agent (the sandbox's
 * root), before any command of the sandbox's user runs: a user who could make
 * it first could hold every background exec hostage, or plant links in it.  As
 * the sandbox's init (or on a root of its own), one left by someone else, from an
 * image or a snapshot, is moved aside. */
static void
bg_log_dir_prepare(void)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int pfd = -1;
	struct stat st;
	char aside[64], hex[9];

	if (path_mkdir_parents(EXEC_LOG_DIR) < 0 ||
	    (pfd = path_open_parent(EXEC_LOG_DIR, &name)) < 0) {
		log_warn("cannot prepare %s", EXEC_LOG_DIR);
		return;
	}
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022))
			return;
		if (!agent.init && strcmp(agent.root, "/") == 0) {
			log_warnx("%s is not the agent's (uid %u, mode %o): background execs will "
			    "fail until it is removed", EXEC_LOG_DIR, (unsigned)st.st_uid,
			    (unsigned)(st.st_mode & 07777));
			return;
		}
		random_hex(hex, 4);
		snprintf(aside, sizeof aside, "%s.stale-%s", name, hex);
		if (renameat(pfd, name, pfd, aside) < 0) {
			log_warn("cannot move %s aside", EXEC_LOG_DIR);
			return;
		}
		log_warnx("%s was not the agent's (uid %u, mode %o): moved to %s.stale-%s",
		    EXEC_LOG_DIR, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
		    EXEC_LOG_DIR, hex);
	}
	if (mkdirat_exact(pfd, name, 0755) < 0 && errno != EEXIST)
		log_warn("cannot create %s", EXEC_LOG_DIR);
}

int
main(int argc, char **argv)
{
	enum { O_SECRET = 256, O_WORKSPACE, O_ROOT, O_USER, O_INIT, O_DEADLINE, O_IDLE,
	    O_HOOKS, O_LOG, O_READY, O_HELP, O_VERSION, O_SEED, O_OOM, O_ENV, O_CWD, O_OWN,
	    O_TAG };
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "secret-file", required_argument, NULL, O_SECRET },
		{ "workspace", required_argument, NULL, O_WORKSPACE },
		{ "root", required_argument, NULL, O_ROOT },
		{ "user", required_argument, NULL, O_USER },
		{ "init", no_argument, NULL, O_INIT },
		{ "deadline", required_argument, NULL, O_DEADLINE },
		{ "idle", required_argument, NULL, O_IDLE },
		{ "hooks", required_argument, NULL, O_HOOKS },
		{ "log", required_argument, NULL, O_LOG },
		{ "ready-fd", required_argument, NULL, O_READY },
		{ "seed", required_argument, NULL, O_SEED },
		{ "oom-events", required_argument, NULL, O_OOM },
		{ "tag", required_argument, NULL, O_TAG },
		{ "env", required_argument, NULL, O_ENV },
		{ "cwd", required_argument, NULL, O_CWD },
		{ "own-workspace", no_argument, NULL, O_OWN },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	const char *listen[8], *hooks = NULL, *secret_file = NULL, *user = NULL, *logpath = NULL;
	const char *oom_spec = NULL;
	int nlisten = 0, ready_fd = -1, c, sfd, status, own_ws = 0;
	sigset_t mask;

	agent.started_ms = now_ms();
	/* One malloc arena for every thread: a request's thread would otherwise
	 * map and set up an arena of its own on the agent's first requests (a
	 * third of a new agent's first answer), and each arena is memory an idle
	 * agent keeps. */
	mallopt(M_ARENA_MAX, 1);
	while ((c = getopt_long(argc, argv, "l:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (nlisten == (int)ARRAY_SIZE(listen)) {
				fprintf(stderr, "sbxtop-agent: at most %zu --listen\n", ARRAY_SIZE(listen));
				return 2;
			}
			listen[nlisten++] = optarg;
			break;
		case O_SECRET:		secret_file = optarg; break;
		case O_WORKSPACE:	agent.workspace = optarg; break;
		case O_ROOT:		agent.root = optarg; break;
		case O_USER:		user = optarg; break;
		case O_INIT:		agent.init = 1; break;
		case O_DEADLINE:	agent.deadline_s = parse_seconds("--deadline", optarg); break;
		case O_IDLE:		agent.idle_s = parse_seconds("--idle", optarg); break;
		case O_HOOKS:		hooks = optarg; break;
		case O_LOG:		logpath = optarg; break;
		case O_READY:		ready_fd = atoi(optarg); break;
		case O_SEED:		agent.seed_device = optarg; break;
		case O_OOM:		oom_spec = optarg; break;
		case O_TAG:		break;	/* for the host's gc to find us by */
		case O_ENV: {
			char *eq = strchr(optarg, '=');
			if (eq == NULL || eq == optarg) {
				fprintf(stderr, "sbxtop-agent: --env takes NAME=VALUE, got '%s'\n", optarg);
				return 2;
			}
			*eq = '\0';
			agent_set_base_env(optarg, eq + 1);
			*eq = '=';
			break;
		}
		case O_CWD:		agent.cwd = optarg; break;
		case O_OWN:		own_ws = 1; break;
		case 'h': case O_HELP:	usage(stdout); return 0;
		case O_VERSION:		printf("sbxtop-agent %s\n", SBX_VERSION); return 0;
		default:		usage(stderr); return 2;
		}
	}
	if (optind < argc || (nlisten == 0 && hooks == NULL)) {
		fprintf(stderr, "sbxtop-agent: %s\n", optind < argc ?
		    "unexpected argument" : "give at least one --listen");
		usage(stderr);
		return 2;
	}
	if (log_open("sbxtop-agent", logpath) < 0) {
		fprintf(stderr, "sbxtop-agent: cannot open log %s: %s\n", logpath, strerror(errno));
		return 1;
	}
	if (getpid() != 1)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (oom_spec != NULL && agent_oom_open(oom_spec) < 0)
		return 1;
	agent.secret_file = secret_file;
	if (secret_file != NULL && load_secret(secret_file) < 0)
		return 1;
	if (user != NULL && set_user(user) < 0)
		return 1;
	/* The image's user works in the workspace (a fresh, empty directory). */
	if (own_ws && agent.have_user && agent.workspace != NULL &&
	    chown(agent.workspace, agent.uid, agent.gid) < 0)
		log_warn("cannot give %s to uid %d", agent.workspace, (int)agent.uid);
	if (path_root_open() < 0) {
		fprintf(stderr, "sbxtop-agent: cannot open the root %s: %s\n", agent.root,
		    strerror(errno));
		return 1;
	}
	bg_log_dir_prepare();

	/* Signals are taken by the main loop alone: block them before any thread. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* Dispositions we were started with (a shell's `&` leaves INT and QUIT
	 * ignored) would pass on to every command: start from the defaults. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	if ((sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		perror("sbxtop-agent: signalfd");
		return 1;
	}

	/* The hooks listener first, so the AWS ready hook can answer 503 (retry)
	 * while the API listeners are still coming up. */
	if (hooks != NULL && http_listen(hooks, 1) < 0)
		return 1;
	for (int i = 0; i < nlisten; i++)
		if (http_listen(listen[i], 0) < 0)
			return 1;
	agent.api_up = 1;
	sudo_listen();
	events_emit("agent.started", NULL);
	log_info("sbxtop-agent %s ready (pid %d)", SBX_VERSION, (int)getpid());
	if (ready_fd >= 0) {
		(void)write_all(ready_fd, "ready\n", 6);
		close(ready_fd);
	}

	status = main_loop(sfd);
	stop_everything();
	exec_keep_clear();
	events_shutdown();
	http_stop_all();
	close(sfd);
	log_info("stopped");
	return status;
}
