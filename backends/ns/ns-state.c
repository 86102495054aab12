/* The ns backend's view of a running sandbox for the core: what it uses now
 * (its cgroup and its network namespace) and its writable layers, which the
 * core sizes and diffs (struct backend's usage and layers); the hostname
 * a claimed pool member takes; and what its logs say when it ended. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns-rootfs.h"
#include "backends/ns/ns.h"
#include "core/paths.h"
#include "lib/proc.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define NS_CLONE_STACK	(64 * 1024)
#define LAYERS_WALK_MS	60000	/* a walk in a child that did not answer by then is killed */

int
ns_usage(const struct sandbox *s, struct sbx_usage *u, struct sbx_err *e)
{
	struct ns_data d;

	u->cpu_ns = u->mem_bytes = u->pids = u->disk_bytes = -1;
	u->net_rx = u->net_tx = u->oom_kills = -1;
	if (ns_data_get(s, &d, e) < 0)
		return -1;
	/* The core asks only after status found the init alive (one /proc read
	 * less per sandbox and listing). */
	if (d.pid > 0) {
		(void)ns_cgroup_usage(d.cgroup, u);
		ns_net_bytes(d.pid, u);
	}
	/* Its own filesystem says at once (the core walks the layers otherwise). */
	u->disk_bytes = ns_disk_used(d.dir);
	free(d.dir);
	return 0;
}

static void
layer_add(struct backend_layer **v, size_t *n, const char *mount, char *upper, char *lower)
{
	*v = xrealloc(*v, (*n + 1) * sizeof **v);
	(*v)[*n].mount = xstrdup(mount);
	(*v)[*n].upper = upper;
	(*v)[*n].lower = lower;
	(*n)++;
}

/* The root's upper layer over its image, each host directory's over the
 * host's, and /workspace, which starts empty. */
int
ns_layers(const struct sandbox *s, struct backend_layer **out, size_t *n, struct sbx_err *e)
{
	struct ns_data d;
	const char *names[NS_MAX_HOST_DIRS];
	char *lower;
	int nhost;

	*out = NULL;
	*n = 0;
	if (ns_data_get(s, &d, e) < 0)
		return -1;
	if (s->image != NULL) {
		lower = xstrdup(s->image);
	} else {
		_cleanup_free_ char *data = paths_dir(PATHS_DATA, e);
		lower = data ? xasprintf("%s/images/host", data) : NULL;
	}
	layer_add(out, n, "/", xasprintf("%s/upper", d.dir), lower);
	nhost = s->image == NULL ? ns_host_dirs(names) : 0;
	for (int i = 0; i < nhost; i++) {
		char m[96];
		snprintf(m, sizeof m, "/%s", names[i]);
		layer_add(out, n, m, xasprintf("%s/ovl/%s/upper", d.dir, ns_host_layer(names[i])),
		    xstrdup(m));
	}
	layer_add(out, n, "/workspace", xasprintf("%s/workspace", d.dir), NULL);
	free(d.dir);
	return 0;
}

struct walked {
	int64_t	 sum;
	int	 cut;
};

static struct walked
walk_layers(const struct backend_layer *v, size_t n, tree_walk_fn walk, long max)
{
	struct walked r = { -1, 0 };

	for (size_t i = 0; i < n; i++) {
		int c = 0;
		int64_t k = walk(v[i].upper, max, &c);
		if (k >= 0)
			r.sum = (r.sum < 0 ? 0 : r.sum) + k;
		r.cut |= c;
	}
	return r;
}

/* With a subordinate range, the sandbox's users make directories the caller
 * may not enter (a 0700 directory of uid 1000 inside): read as the caller,
 * what is in them is missed, and a sandbox could hide its files from the disk
 * watcher and the diff there.  A forked child that joins the sandbox's user
 * namespace (which the caller owns) has CAP_DAC_READ_SEARCH over every file
 * of the sandbox's ids and reads them all; the paths are the host's still. */
int
ns_layers_userns(const struct sandbox *s)
{
	struct ns_idmap m;
	struct ns_data d;
	struct sbx_err e;
	char path[64];
	int fd = -1;

	if (ns_data_get(s, &d, &e) < 0)
		return -1;
	if (ns_idmap_choose(&m, &e) == 0 && m.mode == NS_MAP_HELPER &&
	    ns_init_alive(d.pid, d.starttime, NULL)) {
		snprintf(path, sizeof path, "/proc/%d/ns/user", (int)d.pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	free(d.dir);
	return fd;
}

int64_t
ns_layers_bytes(const struct sandbox *s, tree_walk_fn walk, long max, int *cut)
{
	struct backend_layer *v = NULL;
	struct walked r = { -1, 0 };
	struct sbx_err e;
	size_t n = 0;
	int nsfd, p[2], st;
	pid_t pid = -1;

	*cut = 0;
	if (ns_layers(s, &v, &n, &e) < 0)
		return -1;
	if ((nsfd = ns_layers_userns(s)) < 0) {
		r = walk_layers(v, n, walk, max);
	} else if (pipe2(p, O_CLOEXEC) == 0) {
		/* The child makes system calls only (walk allocates nothing) and
		 * keeps no descriptor but its two: a copy of a lock another thread
		 * holds (the registry's) would keep it locked for the walk. */
		if ((pid = fork()) == 0) {
			close_except(p[1], nsfd);
			if (setns(nsfd, CLONE_NEWUSER) < 0)
				_exit(1);
			r = walk_layers(v, n, walk, max);
			(void)!write(p[1], &r, sizeof r);
			_exit(0);
		}
		close(p[1]);
		if (pid > 0 && (poll_in_until(p[0], now_ms() + LAYERS_WALK_MS) <= 0 ||
		    read(p[0], &r, sizeof r) != (ssize_t)sizeof r)) {
			kill(pid, SIGKILL);
			r.sum = -1;
			r.cut = 0;
		}
		close(p[0]);
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (nsfd >= 0)
		close(nsfd);
	backend_layers_free(v, n);
	*cut = r.cut;
	return r.sum;
}

void
ns_hostname(const struct sandbox *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->id);
	if (s->name != NULL && s->name[0] != '\0' && strlen(s->name) < len &&
	    strspn(s->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") ==
	    strlen(s->name))
		snprintf(buf, len, "%s", s->name);
}

struct uts_set {
	int	 userfd, utsfd;
	char	 name[65];
};

/* The child, sharing our memory until it exits (CLONE_VM | CLONE_VFORK):
 * into the sandbox's user namespace, where it may change the UTS one's. */
static int
uts_set_child(void *arg)
{
	const struct uts_set *u = arg;

	if (setns(u->userfd, CLONE_NEWUSER) < 0 || setns(u->utsfd, CLONE_NEWUTS) < 0)
		_exit(1);
	_exit(sethostname(u->name, strlen(u->name)) < 0 ? 2 : 0);
}

static int
uts_set_here(const struct uts_set *u)
{
	int own = open("/proc/thread-self/ns/uts", O_RDONLY | O_CLOEXEC), rc = -1;

	if (own < 0)
		return -1;
	if (setns(u->utsfd, CLONE_NEWUTS) == 0) {
		rc = sethostname(u->name, strlen(u->name));
		if (setns(own, CLONE_NEWUTS) < 0)
			fatal("cannot return to this thread's own UTS namespace");
	}
	close(own);
	return rc;
}

int
ns_claimed(const struct sandbox *s, struct sbx_err *e)
{
	static const char *const what[] = { "", "cannot join its namespaces",
	    "sethostname refused" };
	struct uts_set u = { -1, -1, "" };
	struct ns_data d;
	char path[64];
	void *stack = NULL;
	pid_t child = -1;
	int st = -1, rc = -1;

	if (ns_data_get(s, &d, e) < 0)
		return -1;
	ns_hostname(s, u.name, sizeof u.name);
	if (!ns_init_alive(d.pid, d.starttime, NULL)) {
		sbx_error(e, SBX_ESTATE, NULL, "sandbox %s is not running", s->id);
		goto out;
	}
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)d.pid);
	u.userfd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof path, "/proc/%d/ns/uts", (int)d.pid);
	u.utsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (u.userfd < 0 || u.utsfd < 0) {
		sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot open the namespaces of %s", s->id);
		goto out;
	}
	/* Root may change it from this thread (a UTS namespace is per thread),
	 * and comes back. */
	if (geteuid() == 0 && uts_set_here(&u) == 0) {
		rc = 0;
		goto out;
	}
	/* Else a process of its own (a user namespace is joined only by a
	 * process of one thread), without a copy of this one's memory. */
	stack = xmalloc(NS_CLONE_STACK);
	child = clone(uts_set_child, (char *)stack + NS_CLONE_STACK, CLONE_VM | CLONE_VFORK |
	    SIGCHLD, &u);
	if (child < 0) {
		sbx_error_errno(e, SBX_EBACKEND, NULL, "clone");
		goto out;
	}
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		sbx_error(e, SBX_EBACKEND, NULL, "the hostname of %s: %s", s->id,
		    WIFEXITED(st) && WEXITSTATUS(st) < 3 ? what[WEXITSTATUS(st)] : "the child died");
		goto out;
	}
	rc = 0;
out:
	if (u.userfd >= 0)
		close(u.userfd);
	if (u.utsfd >= 0)
		close(u.utsfd);
	free(stack);
	free(d.dir);
	return rc;
}

/* The last `max` bytes of a log the sandbox writes (run/agent.log is its own
 * to replace: opened as open_regular_nofollow does, never a link or a FIFO),
 * newlines turned into " | ", every other control escaped. */
void
ns_log_tail(const char *path, char *out, size_t max)
{
	/* The last quarter of out's worth, as it always read. */
	tail_text(path, out, max / 4);
}

/* Why the agent stopped, from the last line of its log that says. */
char *
ns_exit_reason(const char *dir)
{
	_cleanup_free_ char *path = xasprintf("%s/run/agent.log", dir);
	char tail[8192], *line, *best = NULL, *save = NULL;

	ns_log_tail(path, tail, sizeof tail);
	for (line = strtok_r(tail, "|", &save); line != NULL; line = strtok_r(NULL, "|", &save))
		if (strstr(line, "deadline") || strstr(line, "idle") || strstr(line, "signal"))
			best = line;
	if (best == NULL)
		return xstrdup("init exited");
	/* "TIME prog level: message" -> "message" */
	char *msg = strstr(best, ": ");
	return xstrdup(msg != NULL ? msg + 2 : best);
}
