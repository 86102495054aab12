/* The ns backend's view of a running sandbox for the core: what it uses now
 * (its cgroup and its network namespace) and its writable layers, which the
 * core sizes and diffs (struct backend's usage and layers). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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
#include "lib/util.h"

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
 * may not enter (a 0700 directory of uid 1000 inside): walked as the caller,
 * what is in them would not count, and a sandbox could hide its files from
 * the disk watcher there.  A forked child that joins the sandbox's user
 * namespace (which the caller owns) has CAP_DAC_READ_SEARCH over every file
 * of the sandbox's ids and reads them all; the paths are the host's still. */
int64_t
ns_layers_bytes(const struct sandbox *s, tree_walk_fn walk, long max, int *cut)
{
	struct backend_layer *v = NULL;
	struct walked r = { -1, 0 };
	struct ns_idmap m;
	struct ns_data d;
	struct sbx_err e;
	size_t n = 0;

	*cut = 0;
	if (ns_layers(s, &v, &n, &e) < 0)
		return -1;
	if (ns_data_get(s, &d, &e) == 0) {
		if (ns_idmap_choose(&m, &e) < 0 || m.mode != NS_MAP_HELPER ||
		    !ns_init_alive(d.pid, d.starttime, NULL)) {
			r = walk_layers(v, n, walk, max);
		} else {
			char path[64];
			int p[2], nsfd, st;
			pid_t pid = -1;
			snprintf(path, sizeof path, "/proc/%d/ns/user", (int)d.pid);
			if ((nsfd = open(path, O_RDONLY | O_CLOEXEC)) >= 0 && pipe2(p, O_CLOEXEC) == 0) {
				if ((pid = fork()) == 0) {
					close(p[0]);
					if (setns(nsfd, CLONE_NEWUSER) < 0)
						_exit(1);
					r = walk_layers(v, n, walk, max);
					(void)!write(p[1], &r, sizeof r);
					_exit(0);
				}
				close(p[1]);
				if (pid > 0 && read(p[0], &r, sizeof r) != (ssize_t)sizeof r)
					r.sum = -1;
				close(p[0]);
				while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
					;
			}
			if (nsfd >= 0)
				close(nsfd);
		}
		free(d.dir);
	}
	for (size_t i = 0; i < n; i++) {
		free(v[i].mount);
		free(v[i].upper);
		free(v[i].lower);
	}
	free(v);
	*cut = r.cut;
	return r.sum;
}
