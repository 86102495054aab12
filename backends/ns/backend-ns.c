/* The ns backend: a sandbox is a tree of processes in new user, mount, pid, net,
 * ipc, uts and cgroup namespaces, whose PID 1 is sbxtop-agent --init, with an
 * overlay root (ns-rootfs.c), its ids mapped by ns-idmap.c, and hardening,
 * cgroups and networking from ns-harden.c, ns-cgroup.c and ns-net.c (backends/ns/ns.h).
 *
 * Host side, each sandbox has a directory $XDG_STATE_HOME/sbxtop/sandboxes/<id>
 * (0700): upper/ work/ (the root overlay), ovl/<dir>/{upper,work} (the overlays of
 * the host's /usr and friends), workspace/ (/workspace inside), run/ (/run/sbxtop
 * inside: agent.sock, agent.log), root/ (where the root is assembled), console.log
 * (the agent's stdout and stderr), backend.json (for gc); with a disk limit, as
 * root, all of it on a filesystem of its own (ns-disk.c).
 *
 * A sandbox does not depend on the process that created it: the agent enforces
 * the deadline as init, and every other call here works from the directory and
 * the host pid + start time recorded in backend_data. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "lib/fault.h"
#include "lib/log.h"
#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns-rootfs.h"
#include "backends/ns/ns.h"
#include "core/paths.h"
#include "lib/proc.h"
#include "lib/util.h"

#define AGENT_PIDS_RESERVE 64	/* pids above the limit, for the agent's threads */
#define NS_DEFAULT_DEADLINE_S	(4 * 3600)
/* Generous: a child that fails says so at once (an error report, or EOF on the
 * pipes), so this only bounds a slow start, and many namespaces made at once on
 * a busy machine wait on the kernel (network namespaces, RCU) for seconds. */
#define NS_READY_TIMEOUT_MS	30000
#define NS_GONE_TIMEOUT_MS	5000
#define AGENT_IN_SANDBOX	"/opt/sbxtop/sbxtop-agent"
#define SOCK_SUFFIX		"/run/agent.sock"
#define GO_IMAGE_IDMAPPED	0x1
#define GO_HOST_IDMAPPED	0x2

/* Where a create's (or a destroy's) time goes, logged at debug level
 * (`--log-level debug`). */
struct stamps {
	double		 t0, last;
	char		 line[480];
	size_t		 k;
};

static void
stamp(struct stamps *st, const char *what)
{
	struct timespec t;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &t);
	ms = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
	if (what != NULL && st->k < sizeof st->line)
		st->k += (size_t)snprintf(st->line + st->k, sizeof st->line - st->k, "%s%s %.2f",
		    st->k ? ", " : "", what, ms - st->last);
	else if (what == NULL)
		st->t0 = ms;
	st->last = ms;
}

static void *
closer_main(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

/* Close fd, from a thread of its own when later (what the close ends may take
 * a while); at once when no thread can be had. */
static void
close_later(int fd, int later)
{
	pthread_attr_t at;
	pthread_t t;
	int rc = -1;

	if (later && pthread_attr_init(&at) == 0) {
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&at, 64 * 1024);
		rc = pthread_create(&t, &at, closer_main, (void *)(intptr_t)fd);
		pthread_attr_destroy(&at);
	}
	if (rc != 0)
		close(fd);
}

/* Stop everything a sandbox has on the host and remove its directory. */
static int
teardown(const char *dir, pid_t pid, unsigned long long starttime, pid_t egress,
    const cJSON *cgroup, struct sbx_err *e)
{
	struct ns_idmap map;
	struct sbx_err scratch;
	struct stamps ts = { .k = 0 };
	int rc, hold, detached;

	stamp(&ts, NULL);
	if (ns_init_alive(pid, starttime, NULL)) {
		/* A frozen v1 cgroup holds even SIGKILL back: thaw first. */
		if (cgroup != NULL)
			(void)ns_cgroup_freeze(cgroup, 0, &scratch);
		/* Killing a pid namespace's init kills every process in it. */
		kill(pid, SIGKILL);
		if (ns_wait_gone(pid, starttime, NS_GONE_TIMEOUT_MS) < 0)
			return sbx_error(e, SBX_ETIMEOUT, "try again; check `ps` for process %d",
			    "the sandbox's init (pid %d) did not die within %d ms", (int)pid,
			    NS_GONE_TIMEOUT_MS);
	}
	stamp(&ts, "kill");
	if (fault_point("destroy.ns.killed", e) < 0)
		return -1;
	if (egress > 0)
		ns_net_egress_stop(egress);
	if (cgroup != NULL && ns_cgroup_destroy(cgroup, e) < 0)
		return -1;
	stamp(&ts, "cgroup");
	if (fault_point("destroy.ns.cgroup", e) < 0 || ns_idmap_choose(&map, e) < 0)
		return -1;
	/* The disk's filesystem is let go in the background: the last step of
	 * its unmount (ext4 writing itself out, the loop device cleared) was
	 * 3-16 ms of each destroy.  A descriptor holds the detached mount until a
	 * thread closes it; the directory goes now. */
	hold = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if ((detached = ns_disk_detach(dir)) < 0) {
		if (hold >= 0)
			close(hold);
		return sbx_error_errno(e, SBX_EIO, "try again", "cannot unmount %s", dir);
	}
	if (hold >= 0)
		close_later(hold, detached);
	stamp(&ts, "disk");
	if (fault_point("destroy.ns.unmounted", e) < 0)
		return -1;
	rc = ns_rmtree(&map, dir, e);
	stamp(&ts, "files");
	log_debug("ns destroy %s (ms): %s; total %.2f", dir, ts.line, ts.last - ts.t0);
	return rc;
}

static void
append_note(char **note, const char *text)
{
	char *n;

	if (text == NULL || text[0] == '\0')
		return;
	n = *note ? xasprintf("%s; %s", *note, text) : xstrdup(text);
	free(*note);
	*note = n;
}

/* --- create --------------------------------------------------------------------- */

/* Everything the child needs, prepared before clone(): the child allocates
 * nothing. */
struct launch {
	struct ns_rootfs	 rfs;
	struct ns_idmap		 map;
	struct sbx_limits	 limits;
	int			 pids_in_cgroup;
	int			 sync_fd;	/* child's end; error reports go here */
	int			 secret_fd;	/* read end: the agent reads the secret */
	int			 ready_fd;	/* write end: the agent writes "ready" */
	int			 console_fd;
	int			 oom_fd;	/* the cgroup's OOM-kill count, for the agent */
	int			 tasks_fd[4];	/* cgroup v1: the init moves itself */
	int			 ntasks;
	struct ns_bpf		 bpf;		/* the seccomp filter, built here */
	int			 parent_fd;	/* a pidfd of the creating process */
	int			 parent_ends[2];	/* the creator's ends, closed in the child */
	sigset_t		 mask;		/* the creator's, set again for the agent */
	char			**argv;		/* the agent's, made before the clone */
};

/* What runs in the child calls _exit on a stack ASan does not know (ns-clone.c),
 * where its no-return bookkeeping would misread the stack: not instrumented. */
#define CHILD_CODE __attribute__((no_sanitize_address))

/* The child dies with the thread that made it until it runs the agent, so a
 * creator that dies (kill -9 of a core in a burst of creates) leaves no
 * child waiting for a word that never comes, holding other creates'
 * descriptors (each child has copies of every fd open at its clone until it
 * execs).  Armed again after every change of ids, which clears it; a creator
 * gone before it was armed shows in the pidfd. */
static void CHILD_CODE
child_die_with_parent(const struct launch *L)
{
	struct pollfd p = { .fd = L->parent_fd, .events = POLLIN };

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || (p.fd >= 0 && poll(&p, 1, 0) != 0))
		_exit(1);
}

static void CHILD_CODE
child_fail(struct launch *L, struct sbx_err *e)
{
	(void)send(L->sync_fd, e, sizeof *e, MSG_NOSIGNAL);
	_exit(1);
}

static void __attribute__((noreturn)) CHILD_CODE
child_main(struct launch *L)
{
	static char *const envp[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	struct sbx_err e;
	char go[2] = { 0, 0 }, cbuf[CMSG_SPACE(sizeof(int) * (NS_MAX_HOST_DIRS + 1))];
	struct iovec iov = { .iov_base = go, .iov_len = sizeof go };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	    .msg_controllen = sizeof cbuf };
	struct cmsghdr *cm;
	int null_fd;

	memset(&e, 0, sizeof e);
	close(L->parent_ends[0]);
	close(L->parent_ends[1]);
	child_die_with_parent(L);
	/* cgroup v1: into our cgroups by ourselves ("s"; "w": the parent does),
	 * while the parent writes our id maps (the write may wait for an RCU
	 * grace period: a millisecond or more; the fds carry the creator's
	 * right to write them). */
	if (L->ntasks > 0)
		(void)send(L->sync_fd, ns_cgroup_self_attach(L->tasks_fd, L->ntasks) == 0 ?
		    "s" : "w", 1, MSG_NOSIGNAL);
	/* Wait until the parent has written our id maps; without a go (the parent failed or died), leave. */
	if (recvmsg(L->sync_fd, &mh, MSG_CMSG_CLOEXEC) != 2 || go[0] != 'g')
		_exit(1);
	/* go[1] says which lowers come as idmapped trees, in this order. */
	if ((cm = CMSG_FIRSTHDR(&mh)) != NULL && cm->cmsg_type == SCM_RIGHTS) {
		int *fds = (int *)CMSG_DATA(cm), k = 0;
		int nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if ((go[1] & GO_IMAGE_IDMAPPED) && k < nfds) {
			L->rfs.image_fd = fds[k++];
			L->rfs.image_idmapped = 1;
		}
		if ((go[1] & GO_HOST_IDMAPPED) && nfds - k == L->rfs.nhost) {
			for (int i = 0; i < L->rfs.nhost; i++)
				L->rfs.host_fds[i] = fds[k++];
			L->rfs.host_idmapped = 1;
		}
	}
	/* Open the host paths while we still have the creator's uid (which may
	 * search the 0700 directories above ours), in our own mount namespace. */
	if (ns_rootfs_open(&L->rfs, &e) < 0)
		child_fail(L, &e);

	/* The order of privilege steps (bubblewrap's, the Firecracker jailer's):
	 * become the sandbox's root; mounts and pivot_root (ns_rootfs_enter); a
	 * cgroup namespace rooted at the cgroup the parent has moved us into; stdio;
	 * loopback up; rlimits; drop capabilities; no_new_privs; seccomp; close
	 * every other fd on exec; exec the agent with a clean environment. */
	/* Raw system calls, not glibc's setresgid/setresuid/setgroups: those
	 * change the ids of every thread of the process, so they signal each
	 * thread glibc knows of and wait for its answer (__nptl_setxid), and
	 * glibc's list here is the core server's, whose threads are not ours.
	 * The same holds for every call until execve: system calls only, on this
	 * stack and this copy of the launch, nothing that allocates or locks, for
	 * this process runs in the core server's memory (ns-clone.c). */
	if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0) {
		sbx_error_errno(&e, SBX_EBACKEND, NULL, "cannot become root of the sandbox's user namespace");
		child_fail(L, &e);
	}
	if (L->map.mode != NS_MAP_SINGLE && syscall(SYS_setgroups, 0, NULL) < 0) {
		sbx_error_errno(&e, SBX_EBACKEND, NULL, "setgroups");
		child_fail(L, &e);
	}
	child_die_with_parent(L);
	if (ns_rootfs_enter(&L->rfs, &e) < 0)
		child_fail(L, &e);
	/* The parent moves us into our cgroup while we mount (a first write of
	 * a pid can wait for an RCU grace period: 5-20 ms here), unless we moved
	 * ourselves (v1, above); the cgroup namespace and all else wait for its
	 * word that we are in. */
	if (recv(L->sync_fd, go, 1, 0) != 1 || go[0] != 'a')
		_exit(1);
	if (unshare(CLONE_NEWCGROUP) < 0) {
		sbx_error_errno(&e, SBX_EBACKEND, "run `sbxtop doctor`", "cannot make a cgroup namespace");
		child_fail(L, &e);
	}
	if ((null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 || dup2(null_fd, 0) < 0 ||
	    dup2(L->console_fd, 1) < 0 || dup2(L->console_fd, 2) < 0) {
		sbx_error_errno(&e, SBX_EBACKEND, NULL, "cannot set up the agent's stdio");
		child_fail(L, &e);
	}
	if (ns_net_loopback_up(&e) < 0 || ns_rlimits_apply(&L->limits, L->pids_in_cgroup, &e) < 0 ||
	    ns_caps_drop(&e) < 0)
		child_fail(L, &e);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		sbx_error_errno(&e, SBX_EBACKEND, NULL, "PR_SET_NO_NEW_PRIVS");
		child_fail(L, &e);
	}
	if (ns_seccomp_load(&L->bpf, &e) < 0)
		child_fail(L, &e);
	/* Only the secret and ready pipes (and the OOM count) cross exec; the host fds (O_PATH
	 * directories, the sync socket, the console) close. */
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0 ||
	    fcntl(L->secret_fd, F_SETFD, 0) < 0 || fcntl(L->ready_fd, F_SETFD, 0) < 0 ||
	    (L->oom_fd >= 0 && fcntl(L->oom_fd, F_SETFD, 0) < 0)) {
		sbx_error_errno(&e, SBX_EBACKEND, NULL, "cannot prepare fds for exec");
		child_fail(L, &e);
	}
	/* The agent outlives its creator: from here a creator that dies leaves
	 * a sandbox gc finds by its --tag. */
	(void)prctl(PR_SET_PDEATHSIG, 0);
	/* The core's handlers are not for this process (it shares the core's
	 * memory until the exec): a signal that comes now is left to its default,
	 * then the creator's mask is set again (ns-clone.c held every signal). */
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
		    sa.sa_handler != SIG_IGN) {
			sa.sa_handler = SIG_DFL;
			(void)sigaction(sig, &sa, NULL);
		}
	}
	(void)sigprocmask(SIG_SETMASK, &L->mask, NULL);
	execve(L->argv[0], L->argv, envp);
	sbx_error_errno(&e, SBX_EBACKEND, "check the agent bundle (`make agent-bundle`)",
	    "cannot exec %s in the sandbox", AGENT_IN_SANDBOX);
	child_fail(L, &e);
	_exit(1);
}

/* ns_clone_start's entry: the child, in the creator's memory until its exec. */
static int CHILD_CODE
child_entry(void *arg)
{
	child_main(arg);
}

static int
send_go(int sock, int flags, const int *fds, int nfds)
{
	char go[2] = { 'g', (char)flags }, cbuf[CMSG_SPACE(sizeof(int) * (NS_MAX_HOST_DIRS + 1))];
	struct iovec iov = { .iov_base = go, .iov_len = sizeof go };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(cbuf, 0, sizeof cbuf);
	if (nfds > 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == 2 ? 0 : -1;
}

/* Wait for the child's verdict (an error report, or EOF at exec) and then for
 * the agent's "ready". */
static int
wait_ready(int sync_fd, int ready_fd, const char *dir, struct sbx_err *e)
{
	int64_t end = now_ms() + NS_READY_TIMEOUT_MS;
	struct sbx_err cerr;
	char buf[16], tail1[200], tail2[200], path[4200];
	ssize_t n;

	if (poll_in_until(sync_fd, end) <= 0)
		goto timeout;
	n = recv(sync_fd, &cerr, sizeof cerr, MSG_DONTWAIT);
	if (n == (ssize_t)sizeof cerr) {
		cerr.msg[sizeof cerr.msg - 1] = cerr.hint[sizeof cerr.hint - 1] = '\0';
		return sbx_error(e, cerr.code, cerr.hint[0] ? cerr.hint : NULL, "sandbox setup: %s",
		    cerr.msg);
	}
	for (;;) {
		int rc = poll_in_until(ready_fd, end);
		if (rc == 0)
			goto timeout;
		if (rc < 0)
			return sbx_error_errno(e, SBX_EINTERNAL, NULL, "poll");
		n = read(ready_fd, buf, sizeof buf - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n >= 5 && memcmp(buf, "ready", 5) == 0)
			return 0;
		break;		/* EOF: the agent died before it was ready */
	}
	snprintf(path, sizeof path, "%s/console.log", dir);
	ns_log_tail(path, tail1, sizeof tail1);
	snprintf(path, sizeof path, "%s/run/agent.log", dir);
	ns_log_tail(path, tail2, sizeof tail2);
	return sbx_error(e, SBX_EAGENT, "see the console and agent logs named above",
	    "the agent exited before it was ready; console: %s; agent log: %s",
	    tail1[0] ? tail1 : "(empty)", tail2[0] ? tail2 : "(empty)");
timeout:
	snprintf(path, sizeof path, "%s/console.log", dir);
	ns_log_tail(path, tail1, sizeof tail1);
	return sbx_error(e, SBX_ETIMEOUT, "run `sbxtop doctor`",
	    "the agent was not ready within %d ms; console: %s", NS_READY_TIMEOUT_MS,
	    tail1[0] ? tail1 : "(empty)");
}

static int
write_backend_json(const char *dir, const cJSON *bd, struct sbx_err *e)
{
	_cleanup_free_ char *text = cJSON_PrintUnformatted(bd);
	_cleanup_free_ char *tmp = xasprintf("%s/backend.json.tmp", dir);
	_cleanup_free_ char *path = xasprintf("%s/backend.json", dir);
	_cleanup_close_ int fd = -1;

	if (text == NULL)
		fatal("out of memory");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", path);
	return 0;
}

/* Keep an fd the child keeps away from 0-2 (which become its stdio). */
static int
above_stdio(int fd)
{
	int nfd;

	if (fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return nfd;
}


/* Create s; with src, its writable trees start as copies of src's. */
static int
ns_create_from(struct sandbox *s, const struct sandbox *src, struct sbx_err *e)
{
	struct launch L, Lc;
	struct ns_clone launcher = { .stack = NULL };
	_cleanup_free_ char *root = NULL, *dir = NULL, *bundle = NULL, *image = NULL,
	    *note = NULL, *cg_note = NULL, *disk_note = NULL;
	_cleanup_close_ int lock_fd = -1, userns_fd = -1;
	char label[NS_LABEL_LEN + 1];
	int sec[2] = { -1, -1 }, rdy[2] = { -1, -1 }, sp[2] = { -1, -1 };
	int send_fds[NS_MAX_HOST_DIRS + 1], nsend = 0, made_dir = 0, rc = -1;
	int idmap_image = 0, idmap_host = 0, selfmove = 0, own_disk;
	char secret_arg[32], ready_arg[16], deadline_arg[24], idle_arg[24], loader[64] = "", oom_arg[16];
	char tag_arg[64];
	static const char *const agent_loaders[] = { "ld-linux-x86-64.so.2",
	    "ld-linux-aarch64.so.1" };
	cJSON *cgroup = NULL, *bd = NULL;
	pid_t pid = -1, egress = 0;
	struct proc_stat pi = { 0 };
	struct sbx_err scratch;
	int64_t deadline = s->max_duration_s > 0 ? s->max_duration_s : NS_DEFAULT_DEADLINE_S;
	int argc = 0;
	struct stamps ts = { .k = 0 };

	stamp(&ts, NULL);

	memset(&L, 0, sizeof L);
	L.rfs.dir_fd = L.rfs.image_fd = L.rfs.bundle_fd = L.console_fd = L.oom_fd = -1;
	L.sync_fd = L.secret_fd = L.ready_fd = L.parent_fd = -1;
	for (int i = 0; i < NS_MAX_HOST_DIRS; i++)
		L.rfs.host_fds[i] = -1;

	/* Validate. */
	if (!sandbox_id_valid(s->id))
		return sbx_error(e, SBX_EINVAL, "ids are lower-case letters, digits and '-'",
		    "invalid sandbox id '%s'", s->id);
	if (s->network != NULL && strcmp(s->network, "none") != 0 && strcmp(s->network, "egress") != 0 &&
	    strcmp(s->network, "rules") != 0)
		return sbx_error(e, SBX_EINVAL, "use --network none, egress or rules",
		    "unknown network policy '%s'", s->network);
	if (s->agent_secret == NULL || strlen(s->agent_secret) < 16 || strchr(s->agent_secret, '\n'))
		return sbx_error(e, SBX_EINTERNAL, NULL, "the sandbox has no usable agent secret");
	if (s->image != NULL && s->image_spec == NULL) {
		struct stat st;
		if (s->image[0] != '/' || stat(s->image, &st) < 0 || !S_ISDIR(st.st_mode))
			return sbx_error(e, SBX_EINVAL, "give --image an absolute path to a root "
			    "filesystem directory, or an image's reference (`sbxtop image ls`)",
			    "image '%s' is not an absolute path to a directory", s->image);
	}

	if ((bundle = paths_agent_bundle(e)) == NULL || ns_idmap_choose(&L.map, e) < 0)
		return -1;
	if ((root = ns_sandboxes_dir(e)) == NULL)
		return -1;
	dir = xasprintf("%s/%s", root, s->id);
	if (strlen(dir) + strlen(SOCK_SUFFIX) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return sbx_error(e, SBX_EINVAL, "set XDG_STATE_HOME to a shorter path",
		    "the agent socket %s%s would be longer than a unix socket path may be (107 bytes); "
		    "XDG_STATE_HOME is too deep", dir, SOCK_SUFFIX);

	/* The sandbox's directory, locked while we build it (gc leaves it alone). */
	if (mkdir_p(root, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", root);
	if (ns_dir_make_locked(dir, &lock_fd, &made_dir, e) < 0) {
		if (!made_dir)
			return -1;
		goto out;
	}
	if (fault_point("create.ns.dir", e) < 0)
		goto out;
	if ((own_disk = ns_disk_setup(dir, &s->limits, L.map.uid_base, L.map.gid_base, &lock_fd,
	    &disk_note, e)) < 0 || fault_point("create.ns.disk", e) < 0)
		goto out;
	stamp(&ts, "disk");
	{
		const char *names[NS_MAX_HOST_DIRS];
		L.rfs.nhost = s->image == NULL ? ns_host_dirs(names) : 0;
		for (int i = 0; i < L.rfs.nhost; i++)
			L.rfs.host_names[i] = names[i];
	}
	{
		/* A disk the core server made ready has them (2): only what a
		 * sandbox of an image lacks goes. */
		_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		uid_t u = L.map.mode == NS_MAP_ROOT ? L.map.uid_base : (uid_t)-1;
		char what[64] = ".";
		if (dfd >= 0 && own_disk == 2 && L.rfs.nhost == 0)
			ns_layout_unhost(dfd);
		if (dfd < 0 || ns_layout_make(dfd, L.rfs.host_names, L.rfs.nhost, u,
		    L.map.gid_base, own_disk == 2, what) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s/%s", dir, what);
			goto out;
		}
	}

	stamp(&ts, "dirs");
	if (fault_point("create.ns.dirs", e) < 0 ||
	    (src != NULL && ns_fork_copy(src, dir, &L.map, e) < 0))
		goto out;
	if (src != NULL)
		stamp(&ts, "copy");

	/* The image: an OCI image's layers, the cached default, or the caller's
	 * directory. */
	if (s->image_spec != NULL) {
		if (ns_oci_layers(s->image_spec, &L.rfs, e) < 0)
			goto out;
	} else if (s->image == NULL) {
		if (ns_image_ensure(L.map.uid_base, L.map.gid_base, &image, e) < 0)
			goto out;
	} else {
		struct stat st;
		image = xstrdup(s->image);
		/* A host-root-owned rootfs seen through an idmapped mount, so its root
		 * is the sandbox's root. */
		idmap_image = L.map.mode == NS_MAP_ROOT && stat(image, &st) == 0 && st.st_uid == 0;
	}
	idmap_host = L.map.mode == NS_MAP_ROOT && L.rfs.nhost > 0;
	L.rfs.dir_path = dir;
	L.rfs.image_path = image;
	L.rfs.bundle_path = bundle;
	{
		_cleanup_free_ char *p = xasprintf("%s/console.log", dir);
		L.console_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (L.console_fd < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", p);
			goto out;
		}
		L.console_fd = above_stdio(L.console_fd);
	}
	L.rfs.have_user = L.map.have_user && s->image_spec == NULL;
	L.rfs.memory_mib = s->limits.memory_mib;
	ns_hostname(s, L.rfs.hostname, sizeof L.rfs.hostname);

	stamp(&ts, "image");
	/* The secret travels through a pipe, never a file in the sandbox: it is in
	 * the pipe before the child exists, and only the agent reads it. */
	if (pipe2(sec, O_CLOEXEC) < 0 || pipe2(rdy, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot make pipes");
		goto out;
	}
	sec[0] = above_stdio(sec[0]);
	rdy[1] = above_stdio(rdy[1]);
	sp[1] = above_stdio(sp[1]);
	if (write_all(sec[1], s->agent_secret, strlen(s->agent_secret)) < 0 ||
	    write_all(sec[1], "\n", 1) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot pass the secret");
		goto out;
	}
	close(sec[1]);
	sec[1] = -1;
	/* The agent reopens it through /proc/self/fd, which checks the pipe's
	 * owner: make that the sandbox's root. */
	if (L.map.mode == NS_MAP_ROOT && fchown(sec[0], L.map.uid_base, L.map.gid_base) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot hand the secret pipe over");
		goto out;
	}
	L.secret_fd = sec[0];
	L.ready_fd = rdy[1];
	L.sync_fd = sp[1];

	snprintf(secret_arg, sizeof secret_arg, "/proc/self/fd/%d", sec[0]);
	snprintf(ready_arg, sizeof ready_arg, "%d", rdy[1]);
	snprintf(deadline_arg, sizeof deadline_arg, "%lld", (long long)deadline);
	snprintf(idle_arg, sizeof idle_arg, "%lld", (long long)s->idle_s);
	/* The bundle's loader straight away, not through its sh wrapper (a shell
	 * and a dirname less for every sandbox); the wrapper where there is none. */
	for (size_t i = 0; i < ARRAY_SIZE(agent_loaders) && loader[0] == '\0'; i++) {
		_cleanup_free_ char *lp = xasprintf("%s/lib/%s", bundle, agent_loaders[i]),
		    *bp = xasprintf("%s/bin/sbxtop-agent", bundle);
		if (access(lp, X_OK) == 0 && access(bp, R_OK) == 0)
			snprintf(loader, sizeof loader, "/opt/sbxtop/lib/%s", agent_loaders[i]);
	}
	L.argv = xcalloc(32 + ns_oci_argc(s->image_spec), sizeof *L.argv);
	if (loader[0] != '\0') {
		L.argv[argc++] = loader;
		L.argv[argc++] = "--library-path";
		L.argv[argc++] = "/opt/sbxtop/lib";
		L.argv[argc++] = "/opt/sbxtop/bin/sbxtop-agent";
	} else {
		L.argv[argc++] = AGENT_IN_SANDBOX;
	}
	L.argv[argc++] = "--init";
	L.argv[argc++] = "--listen";
	L.argv[argc++] = "unix:/run/sbxtop/agent.sock";
	L.argv[argc++] = "--secret-file";
	L.argv[argc++] = secret_arg;
	L.argv[argc++] = "--workspace";
	L.argv[argc++] = "/workspace";
	if (s->image_spec != NULL)
		ns_oci_args(s->image_spec, &L.map, L.argv, &argc);
	else if (L.map.have_user) {
		L.argv[argc++] = "--user";
		L.argv[argc++] = "sandbox";
	}
	L.argv[argc++] = "--deadline";
	L.argv[argc++] = deadline_arg;
	if (s->idle_s > 0) {
		L.argv[argc++] = "--idle";
		L.argv[argc++] = idle_arg;
	}
	L.argv[argc++] = "--log";
	L.argv[argc++] = "/run/sbxtop/agent.log";
	L.argv[argc++] = "--ready-fd";
	L.argv[argc++] = ready_arg;
	/* What gc finds the sandbox by should its creator die before it is
	 * recorded (ns-sweep.c). */
	if (ns_label_of(s, label, e) < 0)
		goto out;
	snprintf(tag_arg, sizeof tag_arg, "%s@%s", s->id, label);
	L.argv[argc++] = "--tag";
	L.argv[argc++] = tag_arg;
	L.argv[argc] = NULL;

	/* The agent must outlive a fork bomb, or nobody can stop it: the cgroup's
	 * pids.max leaves the agent a reserve above the sandbox's limit, and
	 * RLIMIT_NPROC, counted per uid, holds the sandbox user's processes (and,
	 * apart, root's) to the limit itself.  NPROC is only fair when the sandbox
	 * has uids of its own; with the single-uid mapping it would count the
	 * caller's host processes too, so there the cgroup alone enforces it. */
	{
		struct sbx_limits cl = s->limits;
		if (cl.pids > 0)
			cl.pids += AGENT_PIDS_RESERVE;
		stamp(&ts, "pipes");
		if (ns_cgroup_create(s->id, &cl, &cgroup, &cg_note, e) < 0 ||
		    fault_point("create.ns.cgroup", e) < 0)
			goto out;
		stamp(&ts, "cgroup");
	}
	L.limits = s->limits;
	if ((L.oom_fd = above_stdio(ns_cgroup_oom_fd(cgroup))) >= 0) {
		snprintf(oom_arg, sizeof oom_arg, "fd:%d", L.oom_fd);
		L.argv[argc++] = "--oom-events";
		L.argv[argc++] = oom_arg;	/* L was zeroed: argv stays NULL-terminated */
	}
	L.limits.disk_mib = own_disk ? 0 : L.limits.disk_mib;	/* else RLIMIT_FSIZE */
	L.pids_in_cgroup = ns_cgroup_has(cgroup, "pids") && L.map.mode == NS_MAP_SINGLE;

	/* The cgroup namespace is made by the child itself, after the parent has
	 * moved it into its cgroup (so that cgroup is its root). */
	if (ns_seccomp_build(&L.bpf, e) < 0)
		goto out;
	stamp(&ts, "seccomp");
	if ((L.ntasks = ns_cgroup_self_fds(cgroup, L.tasks_fd, 4)) < 0)
		L.ntasks = 0;
	L.parent_fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	L.parent_ends[0] = sp[0];
	L.parent_ends[1] = rdy[0];
	pthread_sigmask(SIG_SETMASK, NULL, &L.mask);
	/* The child's own copy: what it changes (the fds it opens) stays its own,
	 * and what this side changes from here on is not the child's. */
	Lc = L;
	pid = ns_clone_start(&launcher, child_entry, &Lc, CLONE_NEWUSER | CLONE_NEWNS |
	    CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD);
	if (pid < 0) {
		sbx_error_errno(e, SBX_EBACKEND, "run `sbxtop doctor` to check user namespaces",
		    "cannot create the sandbox's namespaces");
		goto out;
	}
	close(sp[1]);
	sp[1] = -1;
	close(rdy[1]);
	rdy[1] = -1;
	close(sec[0]);
	sec[0] = -1;
	for (selfmove = L.ntasks > 0; L.ntasks > 0;)
		close(L.tasks_fd[--L.ntasks]);	/* the child's now */

	stamp(&ts, "clone");
	if (fault_point("create.ns.clone", e) < 0)
		goto out;
	ns_oom_protect(pid);
	if (ns_idmap_write(&L.map, pid, e) < 0 || fault_point("create.ns.idmap", e) < 0)
		goto out;
	stamp(&ts, "idmap");
	if (s->network != NULL && strcmp(s->network, "egress") == 0 &&
	    (ns_net_egress_start(pid, &egress, e) < 0 || fault_point("create.ns.egress", e) < 0))
		goto out;
	if (idmap_image || idmap_host) {
		char p[64];
		int fd = -1;
		snprintf(p, sizeof p, "/proc/%d/ns/user", (int)pid);
		if ((userns_fd = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
			sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot open %s", p);
			goto out;
		}
		if (idmap_image && (fd = ns_idmapped_tree(userns_fd, image, &scratch)) < 0) {
			append_note(&note, "the image's files owned by host root are read-only inside "
			    "(idmapped mounts refused)");
			idmap_image = idmap_host = 0;
		} else if (idmap_image) {
			send_fds[nsend++] = fd;
		}
		for (int i = 0; idmap_host && i < L.rfs.nhost; i++) {
			_cleanup_free_ char *hp = xasprintf("/%s", L.rfs.host_names[i]);
			if ((fd = ns_idmapped_tree(userns_fd, hp, &scratch)) < 0) {
				_cleanup_free_ char *n = xasprintf("host /%s is read-only inside (%s)",
				    L.rfs.host_names[i], scratch.msg);
				append_note(&note, n);
				/* All or none: the child takes the fds in order. */
				while (nsend > (idmap_image ? 1 : 0))
					close(send_fds[--nsend]);
				idmap_host = 0;
				break;
			}
			send_fds[nsend++] = fd;
		}
	} else if (L.map.mode != NS_MAP_ROOT && L.rfs.nhost > 0) {
		append_note(&note, "host /usr is read-only inside (its files belong to host root)");
	}
	if (send_go(sp[0], (idmap_image ? GO_IMAGE_IDMAPPED : 0) | (idmap_host ? GO_HOST_IDMAPPED : 0),
	    send_fds, nsend) < 0) {
		sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot start the sandbox's init");
		goto out;
	}
	while (nsend > 0)
		close(send_fds[--nsend]);
	stamp(&ts, "egress+idmapped");
	if (fault_point("create.ns.go", e) < 0)
		goto out;
	{
		/* The child's word on its own move; its error report (or its end)
		 * instead is for wait_ready. */
		char m = 'w', a;
		struct pollfd pw = { .fd = sp[0], .events = POLLIN };
		if (selfmove && (poll(&pw, 1, NS_READY_TIMEOUT_MS) != 1 ||
		    recv(sp[0], &m, 1, MSG_PEEK | MSG_TRUNC) != 1 || recv(sp[0], &m, 1, 0) != 1))
			m = 0;
		int attached = cgroup == NULL || m == 's' || (m != 0 && ns_cgroup_attach(cgroup, pid, e) == 0);
		if (m == 0)
			goto ready;
		a = attached ? 'a' : 'x';
		if (send(sp[0], &a, 1, MSG_NOSIGNAL) != 1 && attached) {
			sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot start the sandbox's init");
			goto out;
		}
		if (!attached)
			goto out;
	}
	stamp(&ts, "attach (child mounting)");
ready:
	if (wait_ready(sp[0], rdy[0], dir, e) < 0 || fault_point("create.ns.ready", e) < 0)
		goto out;
	stamp(&ts, "child+agent ready");
	if (proc_stat(pid, &pi) < 0) {
		sbx_error(e, SBX_EAGENT, NULL, "the sandbox's init vanished after it was ready");
		goto out;
	}

	if (L.map.mode == NS_MAP_SINGLE)
		append_note(&note, "no separate sandbox user: commands run as the sandbox's root "
		    "(no /etc/subuid range or no newuidmap)");
	append_note(&note, cg_note);
	append_note(&note, disk_note);
	bd = cJSON_CreateObject();
	cJSON_AddStringToObject(bd, "dir", dir);
	cJSON_AddNumberToObject(bd, "pid", pid);
	cJSON_AddNumberToObject(bd, "starttime", (double)pi.starttime);
	cJSON_AddItemToObject(bd, "cgroup", cgroup ? cJSON_Duplicate(cgroup, 1) : cJSON_CreateNull());
	cJSON_AddNumberToObject(bd, "egress_pid", egress);
	cJSON_AddNumberToObject(bd, "uid_base", L.map.uid_base);
	cJSON_AddStringToObject(bd, "label", label);
	if (write_backend_json(dir, bd, e) < 0 || fault_point("create.ns.written", e) < 0)
		goto out;
	free(s->agent_endpoint);
	s->agent_endpoint = xasprintf("unix:%s%s", dir, SOCK_SUFFIX);
	cJSON_Delete(s->backend_data);
	s->backend_data = steal_pointer(&bd);
	free(s->limits_note);
	s->limits_note = steal_pointer(&note);
	free(s->state_reason);
	s->state_reason = NULL;
	s->state = SBX_RUNNING;
	stamp(&ts, "record");
	log_debug("ns create %s (ms): %s; total %.2f", s->id, ts.line, ts.last - ts.t0);
	/* Its lock stays until the core has recorded it (ns_settled). */
	ns_hold_put(s->id, steal_fd(&lock_fd));
	rc = 0;
out:
	if (rc < 0) {
		/* A create that fails half-way removes everything it made. */
		if (pid > 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	/* The child has exec'd the agent (it is ready) or is gone. */
	ns_clone_finish(&launcher);
	if (rc < 0) {
		if (egress > 0)
			ns_net_egress_stop(egress);
		if (cgroup != NULL)
			(void)ns_cgroup_destroy(cgroup, &scratch);
		if (made_dir)
			(void)teardown(dir, 0, 0, 0, NULL, &scratch);
	}
	while (nsend > 0)
		close(send_fds[--nsend]);
	for (int i = 0; i < 2; i++) {
		if (sec[i] >= 0) close(sec[i]);
		if (rdy[i] >= 0) close(rdy[i]);
		if (sp[i] >= 0) close(sp[i]);
	}
	for (int i = 0; i < L.rfs.nhost; i++)
		if (L.rfs.host_fds[i] >= 0)
			close(L.rfs.host_fds[i]);
	if (L.rfs.dir_fd >= 0) close(L.rfs.dir_fd);
	if (L.rfs.image_fd >= 0) close(L.rfs.image_fd);
	if (L.rfs.bundle_fd >= 0) close(L.rfs.bundle_fd);
	if (L.console_fd >= 0) close(L.console_fd);
	if (L.oom_fd >= 0) close(L.oom_fd);
	if (L.parent_fd >= 0) close(L.parent_fd);
	ns_bpf_free(&L.bpf);
	ns_oci_free(&L.rfs);
	free(L.argv);
	cJSON_Delete(cgroup);
	cJSON_Delete(bd);
	return rc;
}

static int ns_create(struct sandbox *s, struct sbx_err *e) { return ns_create_from(s, NULL, e); }

static int ns_fork(const struct sandbox *src, struct sandbox *s, struct sbx_err *e)
{ return ns_create_from(s, src, e); }

/* --- the other verbs ---------------------------------------------------------------- */

static int
ns_status(struct sandbox *s, struct sbx_err *e)
{
	struct ns_data d;
	struct proc_stat pi;

	if (ns_data_get(s, &d, e) < 0)
		return -1;
	if (ns_init_alive(d.pid, d.starttime, &pi)) {
		enum sbx_state was = s->state;
		s->state = pi.state == 'T' || pi.state == 't' ||
		    (d.cgroup != NULL && ns_cgroup_frozen(d.cgroup) == 1) ? SBX_SUSPENDED : SBX_RUNNING;
		if (s->state == SBX_SUSPENDED && ns_fork_unhold(s, d.dir) == 1)
			s->state = SBX_RUNNING;
		/* An OOM kill is said while it runs; why it was suspended ("idle")
		 * holds while it stays so. */
		char *oom = ns_cgroup_oom_note(d.cgroup, &s->limits);
		if (oom != NULL || s->state != was) {
			free(s->state_reason);
			s->state_reason = oom;
		}
	} else if (s->state != SBX_TERMINATED || s->state_reason == NULL) {
		_cleanup_free_ char *oom = ns_cgroup_oom_note(d.cgroup, &s->limits);
		s->state = SBX_TERMINATED;
		free(s->state_reason);
		s->state_reason = ns_exit_reason(d.dir);
		if (oom != NULL) {
			char *r = xasprintf("%s (%s)", oom, s->state_reason);
			free(s->state_reason);
			s->state_reason = r;
		}
	}
	free(d.dir);
	return 0;
}

static int ns_suspend(struct sandbox *s, struct sbx_err *e) { return ns_suspend_resume(s, 1, e); }
static int ns_resume(struct sandbox *s, struct sbx_err *e) { return ns_suspend_resume(s, 0, e); }

static int
ns_destroy(struct sandbox *s, struct sbx_err *e)
{
	struct ns_data d;
	int rc;

	if (ns_data_get(s, &d, e) < 0)
		return -1;
	s->state = SBX_STOPPING;
	rc = teardown(d.dir, d.pid, d.starttime, d.egress_pid, d.cgroup, e);
	free(d.dir);
	if (rc == 0) {
		s->state = SBX_TERMINATED;
		free(s->state_reason);
		s->state_reason = xstrdup("destroyed");
	}
	return rc;
}

static char *
ns_log_path(const struct sandbox *s, const char *which, struct sbx_err *e)
{
	struct ns_data d;
	char *p;

	if (strcmp(which, "console") != 0 && strcmp(which, "agent") != 0) {
		sbx_error(e, SBX_EINVAL, "ask for the \"console\" or the \"agent\" log",
		    "no log '%s' for the ns backend", which);
		return NULL;
	}
	if (ns_data_get(s, &d, e) < 0)
		return NULL;
	p = xasprintf("%s/%s", d.dir, strcmp(which, "console") == 0 ? "console.log" : "run/agent.log");
	free(d.dir);
	return p;
}

static int
ns_gc(const struct backend_gc *g, struct sbx_err *e)
{
	int removed, unsettled;

	if ((removed = ns_sweep(g, &unsettled, e)) < 0)
		return -1;
	/* Set-aside images go once no sandbox may still have one below it. */
	if (g->caches && !g->dry_run && g->nknown == 0 && !unsettled)
		removed += ns_image_gc() + ns_disk_gc();
	return removed;
}

/* The init of s, once it ended on its own (its deadline), is a zombie until we
 * wait for it.  Matched by pid and start time, and waitpid takes only our own
 * children: other children (helpers a backend waits for itself) are left
 * alone. */
static void
ns_reap(const struct sandbox *s)
{
	const cJSON *bd = s->backend_data;
	double pid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(bd, "pid"));
	double st = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(bd, "starttime"));
	struct proc_stat pi;

	if (!(pid > 1) || !(st > 0) || proc_stat((pid_t)pid, &pi) < 0 || pi.state != 'Z' ||
	    pi.starttime != (unsigned long long)st)
		return;
	if (waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid)
		log_info("reaped the init of sandbox %s (pid %d)", s->id, (int)pid);
}

/* rules: loopback only, as none, plus the proxy's listener (ns-net.c). */
static int
ns_net_listen(const struct sandbox *s, int port, int *fd, pid_t *init, struct sbx_err *e)
{
	struct ns_data d;
	int rc = -1;

	if (ns_data_get(s, &d, e) < 0)
		return -1;
	if (d.pid <= 1 || !ns_init_alive(d.pid, d.starttime, NULL))
		sbx_error(e, SBX_ESTATE, NULL, "sandbox %s is not running", s->id);
	else if ((rc = ns_net_listen_in(d.pid, port, fd, e)) == 0)
		*init = d.pid;
	free(d.dir);
	return rc;
}

const struct backend backend_ns = {
	.name = "ns",
	.description = "Linux namespaces, overlay root, seccomp, cgroups (no root, no KVM)",
	.create = ns_create,
	.fork = ns_fork,
	.suspend = ns_suspend,
	.resume = ns_resume,
	.destroy = ns_destroy,
	.status = ns_status,
	.log_path = ns_log_path,
	.doctor = ns_doctor,
	.gc = ns_gc,
	.reap = ns_reap,
	.keep_ready = ns_disk_keep_ready,
	.settled = ns_settled,
	.net_listen = ns_net_listen,
	.usage = ns_usage,
	.layers = ns_layers,
	.layers_bytes = ns_layers_bytes,
	.layers_userns = ns_layers_userns,
	.image_ids = ns_image_ids,
	.image_run = ns_image_run,
	.image_rmtree = ns_image_rmtree,
	.warm_pool = 1,
	.claimed = ns_claimed,
	.record_once = 1,
	.host_bound = 1,
};
