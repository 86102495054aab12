/* The ns backend's view of a running sandbox for the core: what it uses now
 * (its cgroup and its network namespace) and its writable layers, which the
 * core sizes and diffs (struct backend's usage and layers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
