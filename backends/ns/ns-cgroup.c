/* The ns backend's cgroup: memory, pids and CPU limits and the freezer, on a
 * cgroup v2 host (under our own delegated cgroup) or a v1 host (one directory per
 * controller).  What this host does not let us enforce is said in a note, with
 * the reason and the way to get it, never silently dropped.
 *
 * Where the sandbox's cgroup goes:
 *   v2: <our own cgroup>/sbxtop-<id>
 *   v1: /sys/fs/cgroup/<controller><our own cgroup in it>/sbxtop/<id>
 * Both sit below the cgroup we were started in, so whatever limits the host put on
 * us also bound the sandbox. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "backends/ns/ns.h"
#include "lib/util.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CG_DEFAULT_PIDS	4096	/* always set: a fork bomb stays inside */
#define CG_CPU_PERIOD	100000	/* microseconds */
#define CG_WAIT_MS	2000	/* freezing, and tasks draining before rmdir */

static const char *const cg_ctrls[] = { "memory", "pids", "cpu", "freezer" };

static const char delegate_fix[] =
    "run as root or use a cgroup v2 host with delegation "
    "(systemd-run --user --scope -p Delegate=yes sbxtop ...)";

/* --- small file chores ---------------------------------------------------- */

static int
cg_write(const char *dir, const char *file, const char *val)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	/* cgroup files take one write per value: no short-write loop. */
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		return -1;
	return 0;
}

/* The first line of dir/file, trailing newline cut; NULL with errno. */
static char *
cg_read(const char *dir, const char *file)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	char *s = read_file(path, 1 << 16, NULL);

	if (s != NULL)
		s[strcspn(s, "\n")] = '\0';
	return s;
}

static int
cg_exists(const char *dir, const char *file)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);

	return access(path, F_OK) == 0;
}

/* 1 when the space-separated list holds word. */
static int
word_in(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while (p != NULL && *p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '\0' || p[n] == '\n'))
			return 1;
		p = strchr(p, ' ');
	}
	return 0;
}

static void __attribute__((format(printf, 2, 3)))
note_add(struct buf *note, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (note->len > 0)
		buf_append_some(note, "; ", 2);
	buf_append_some(note, line, strlen(line));
}

/* Our own cgroup for a v1 controller ("memory"), or for v2 when ctrl is NULL,
 * from /proc/self/cgroup: "/" or "/a/b".  Caller frees; NULL when absent. */
static char *
own_cgroup(const char *ctrl)
{
	_cleanup_free_ char *s = read_file("/proc/self/cgroup", 1 << 16, NULL);
	char *line, *save = NULL;

	if (s == NULL)
		return NULL;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2, *list, *tok, *save2 = NULL;

		if (c1 == NULL || (c2 = strchr(c1 + 1, ':')) == NULL)
			continue;
		*c2 = '\0';
		list = c1 + 1;
		if (ctrl == NULL) {
			if (strcmp(line, "0:") == 0 || (line[0] == '0' && *list == '\0'))
				return xstrdup(c2 + 1);
			continue;
		}
		for (tok = strtok_r(list, ",", &save2); tok; tok = strtok_r(NULL, ",", &save2))
			if (strcmp(tok, ctrl) == 0)
				return xstrdup(c2 + 1);
	}
	return NULL;
}

static int
is_fs(const char *path, long magic)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && (long)sf.f_type == magic;
}

/* 2 for a unified hierarchy at /sys/fs/cgroup, 1 for v1 controllers there (a
 * hybrid host's "unified" directory holds no controllers we use), 0 for none. */
static int
cg_version(void)
{
	if (is_fs(CG_ROOT, CGROUP2_SUPER_MAGIC) && cg_exists(CG_ROOT, "cgroup.controllers"))
		return 2;
	for (size_t i = 0; i < ARRAY_SIZE(cg_ctrls); i++) {
		_cleanup_free_ char *m = xasprintf(CG_ROOT "/%s", cg_ctrls[i]);

		if (is_fs(m, CGROUP_SUPER_MAGIC))
			return 1;
	}
	return 0;
}

static void
state_flag(cJSON *state, const char *what, int on)
{
	cJSON_DeleteItemFromObjectCaseSensitive(state, what);
	cJSON_AddBoolToObject(state, what, on);
}

static int64_t
pids_wanted(const struct sbx_limits *l)
{
	return l != NULL && l->pids > 0 ? l->pids : CG_DEFAULT_PIDS;
}

/* --- cgroup v2 ------------------------------------------------------------ */

/* The "no internal processes" rule: a cgroup with processes in it hands no
 * domain controller (memory) to its children, and enabling a threaded one
 * (pids, cpu) makes it a thread root, below which no cgroup takes a process
 * (EOPNOTSUPP).  So before enabling anything in our cgroup (the root is
 * exempt): when this process is the only one in it, it moves to a leaf of its
 * own; when others share it, nothing is enabled and *shared says so.  0, or -1
 * with errno when the move failed. */
static int
v2_vacate(const char *base, const char *own, int *shared)
{
	_cleanup_free_ char *path = xasprintf("%s/cgroup.procs", base);
	_cleanup_free_ char *procs = NULL, *leaf = NULL;
	char mypid[32];

	if (strcmp(own, "/") == 0)
		return 0;
	if ((procs = read_file(path, 1 << 20, NULL)) == NULL)
		return -1;
	snprintf(mypid, sizeof mypid, "%d\n", (int)getpid());
	if (procs[0] == '\0')
		return 0;
	if (strcmp(procs, mypid) != 0) {
		*shared = 1;
		return 0;
	}
	leaf = xasprintf("%s/sbxtop-self", base);
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		return -1;
	mypid[strcspn(mypid, "\n")] = '\0';
	return cg_write(leaf, "cgroup.procs", mypid);
}

/* *shared is set when a controller could not be enabled because other
 * processes share our cgroup (the fix is then a cgroup of our own). */
static cJSON *
v2_create(const char *id, const struct sbx_limits *l, struct buf *note, int *shared)
{
	_cleanup_free_ char *own = own_cgroup(NULL);
	_cleanup_free_ char *base = NULL, *dir = NULL, *avail = NULL, *enabled = NULL;
	const char *ctrls[] = { "memory", "pids", "cpu" };
	int usable[3] = { 0, 0, 0 };
	char why[3][320];
	cJSON *state;
	char val[64];
	size_t i;

	if (own == NULL) {
		note_add(note, "limits not enforced: no cgroup v2 entry in /proc/self/cgroup");
		return NULL;
	}
	/* A previous run moved us into our own leaf: its parent is ours. */
	{
		size_t n = strlen(own), k = strlen("/sbxtop-self");

		if (n >= k && strcmp(own + n - k, "/sbxtop-self") == 0)
			own[n - k] = '\0';
		if (own[0] == '\0')
			strcpy(own, "/");
	}
	base = xasprintf(CG_ROOT "%s", strcmp(own, "/") == 0 ? "" : own);
	avail = cg_read(base, "cgroup.controllers");
	enabled = cg_read(base, "cgroup.subtree_control");
	if (v2_vacate(base, own, shared) < 0)
		log_warn("cgroup: cannot move into a leaf of %s", base);
	if (*shared && enabled != NULL && enabled[0] != '\0') {
		note_add(note, "limits not enforced and no freezer: %s has processes and "
		    "controllers enabled below it (%s): no cgroup below it can take the sandbox",
		    base, enabled);
		return NULL;
	}
	for (i = 0; i < ARRAY_SIZE(ctrls); i++) {
		_cleanup_free_ char *plus = xasprintf("+%s", ctrls[i]);
		/* Said below, where it matters. */
		snprintf(why[i], sizeof why[i], "the %s controller is not delegated to %s", ctrls[i], base);
		if (avail == NULL || !word_in(avail, ctrls[i]))
			continue;
		if (enabled != NULL && word_in(enabled, ctrls[i]))
			usable[i] = 1;
		else if (*shared)
			/* Root in a login session, say: writable, but not ours alone. */
			snprintf(why[i], sizeof why[i], "the %s controller cannot be enabled below %s: "
			    "other processes share that cgroup (cgroup v2 gives controllers only to "
			    "the children of a cgroup without processes)", ctrls[i], base);
		else if (cg_write(base, "cgroup.subtree_control", plus) == 0)
			usable[i] = 1;
	}

	dir = xasprintf("%s/sbxtop-%s", base, id);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		/* RLIMIT_NPROC still holds pids (ns_rlimits_apply, no cgroup). */
		note_add(note, "limits not enforced and no freezer: cannot create a cgroup in %s "
		    "(cgroup v2 not delegated to uid %d: %s): memory and cpu are not limited, "
		    "pids only by RLIMIT_NPROC (which counts every process of uid %d), and "
		    "suspend stops the processes", base, (int)geteuid(), strerror(errno),
		    (int)geteuid());
		return NULL;
	}
	state = cJSON_CreateObject();
	cJSON_AddNumberToObject(state, "version", 2);
	cJSON_AddStringToObject(state, "path", dir);
	cJSON_AddStringToObject(state, "base", base);

	/* memory */
	if (usable[0] && cg_exists(dir, "memory.max")) {
		if (l != NULL && l->memory_mib > 0) {
			snprintf(val, sizeof val, "%lld", (long long)l->memory_mib << 20);
			if (cg_write(dir, "memory.max", val) < 0)
				note_add(note, "memory limit not enforced: memory.max: %s", strerror(errno));
			else {
				state_flag(state, "memory", 1);
				/* Swap would let the sandbox go past its limit. */
				if (cg_exists(dir, "memory.swap.max"))
					(void)cg_write(dir, "memory.swap.max", "0");
			}
		}
	} else if (l != NULL && l->memory_mib > 0)
		note_add(note, "memory limit not enforced: %s", why[0]);

	/* pids: always, a default when none was asked */
	snprintf(val, sizeof val, "%lld", (long long)pids_wanted(l));
	if (usable[1] && cg_write(dir, "pids.max", val) == 0)
		state_flag(state, "pids", 1);
	else
		note_add(note, "pids limit not enforced by a cgroup (RLIMIT_NPROC instead): %s", why[1]);

	/* cpu */
	if (l != NULL && l->cpus > 0) {
		long long quota = (long long)(l->cpus * CG_CPU_PERIOD);

		if (quota < 1000)
			quota = 1000;
		snprintf(val, sizeof val, "%lld %d", quota, CG_CPU_PERIOD);
		if (usable[2] && cg_write(dir, "cpu.max", val) == 0)
			state_flag(state, "cpu", 1);
		else
			note_add(note, "cpu limit not enforced: %s", why[2]);
	}

	/* the freezer is part of every non-root v2 cgroup (Linux 5.2 and later) */
	state_flag(state, "freezer", cg_exists(dir, "cgroup.freeze"));
	return state;
}

/* --- cgroup v1 ------------------------------------------------------------ */

/* The directory for ctrl, made; NULL with the reason in the note. */
static char *
v1_make(const char *id, const char *ctrl, const char *limit_what, struct buf *note)
{
	_cleanup_free_ char *mnt = xasprintf(CG_ROOT "/%s", ctrl);
	_cleanup_free_ char *own = NULL, *parent = NULL;
	char *dir;

	if (!is_fs(mnt, CGROUP_SUPER_MAGIC)) {
		if (limit_what != NULL)
			note_add(note, "%s: no cgroup v1 %s hierarchy at %s", limit_what, ctrl, mnt);
		return NULL;
	}
	own = own_cgroup(ctrl);
	parent = xasprintf("%s%s/sbxtop", mnt, own == NULL || strcmp(own, "/") == 0 ? "" : own);
	dir = xasprintf("%s/%s", parent, id);
	/* Another sandbox may be removing the shared parent: try twice. */
	for (int tries = 0; tries < 2; tries++) {
		if ((mkdir(parent, 0755) == 0 || errno == EEXIST) &&
		    (mkdir(dir, 0755) == 0 || errno == EEXIST))
			return dir;
		if (errno != ENOENT)
			break;
	}
	if (limit_what != NULL)
		note_add(note, "%s: cgroup v1 %s controller not writable by uid %d (%s)",
		    limit_what, ctrl, (int)geteuid(), strerror(errno));
	free(dir);
	return NULL;
}

static cJSON *
v1_create(const char *id, const struct sbx_limits *l, struct buf *note)
{
	cJSON *state = cJSON_CreateObject(), *paths = cJSON_CreateObject();
	char *dir, val[64];
	int any = 0;

	cJSON_AddNumberToObject(state, "version", 1);
	cJSON_AddItemToObject(state, "paths", paths);

	/* memory */
	if ((dir = v1_make(id, "memory", l && l->memory_mib > 0 ? "memory limit not enforced" : NULL,
	    note)) != NULL) {
		cJSON_AddStringToObject(paths, "memory", dir);
		any = 1;
		if (l != NULL && l->memory_mib > 0) {
			snprintf(val, sizeof val, "%lld", (long long)l->memory_mib << 20);
			if (cg_write(dir, "memory.limit_in_bytes", val) < 0)
				note_add(note, "memory limit not enforced: memory.limit_in_bytes: %s",
				    strerror(errno));
			else {
				state_flag(state, "memory", 1);
				/* memory+swap: set after the memory limit, which it must not
				 * be below; absent when the kernel does not account swap. */
				if (cg_exists(dir, "memory.memsw.limit_in_bytes") &&
				    cg_write(dir, "memory.memsw.limit_in_bytes", val) < 0)
					note_add(note, "swap not limited: memory.memsw.limit_in_bytes: %s",
					    strerror(errno));
			}
		}
		free(dir);
	}

	/* pids: always */
	if ((dir = v1_make(id, "pids", "pids limit not enforced by a cgroup (RLIMIT_NPROC instead)",
	    note)) != NULL) {
		cJSON_AddStringToObject(paths, "pids", dir);
		any = 1;
		snprintf(val, sizeof val, "%lld", (long long)pids_wanted(l));
		if (cg_write(dir, "pids.max", val) == 0)
			state_flag(state, "pids", 1);
		else
			note_add(note, "pids limit not enforced: pids.max: %s", strerror(errno));
		free(dir);
	}

	/* cpu */
	if (l != NULL && l->cpus > 0 && (dir = v1_make(id, "cpu", "cpu limit not enforced", note)) != NULL) {
		long long quota = (long long)(l->cpus * CG_CPU_PERIOD);

		cJSON_AddStringToObject(paths, "cpu", dir);
		any = 1;
		if (quota < 1000)
			quota = 1000;
		snprintf(val, sizeof val, "%lld", quota);
		if (cg_write(dir, "cpu.cfs_period_us", "100000") == 0 &&
		    cg_write(dir, "cpu.cfs_quota_us", val) == 0)
			state_flag(state, "cpu", 1);
		else
			note_add(note, "cpu limit not enforced: cpu.cfs_quota_us: %s", strerror(errno));
		free(dir);
	}

	/* freezer: made even with no limit asked, suspend uses it */
	if ((dir = v1_make(id, "freezer", "no freezer (suspend stops the processes instead)",
	    note)) != NULL) {
		cJSON_AddStringToObject(paths, "freezer", dir);
		any = 1;
		state_flag(state, "freezer", cg_exists(dir, "freezer.state"));
		free(dir);
	}

	if (!any) {
		cJSON_Delete(state);
		return NULL;
	}
	return state;
}

/* --- the interface ------------------------------------------------------- */

int
ns_cgroup_create(const char *id, const struct sbx_limits *l, cJSON **state,
    char **note, struct sbx_err *e)
{
	struct buf nb;
	int version, shared = 0;

	*state = NULL;
	*note = NULL;
	if (id == NULL || *id == '\0' || strchr(id, '/') != NULL || strcmp(id, "..") == 0 ||
	    strcmp(id, ".") == 0)
		return sbx_error(e, SBX_EINVAL, NULL, "cgroup: bad sandbox id");
	buf_init(&nb, 4096);
	version = cg_version();
	if (version == 2)
		*state = v2_create(id, l, &nb, &shared);
	else if (version == 1)
		*state = v1_create(id, l, &nb);
	else
		note_add(&nb, "limits not enforced and no freezer: no cgroup filesystem at "
		    CG_ROOT);
	/* The way out, once, after the reasons. */
	if (nb.len > 0 && shared)
		note_add(&nb, "to enforce them: run sbxtop in a cgroup of its own (%s)",
		    geteuid() == 0 ? "systemd-run --scope -p Delegate=yes sbxtop ..." :
		    "systemd-run --user --scope -p Delegate=yes sbxtop ...");
	else if (nb.len > 0 && version != 0)
		note_add(&nb, "to enforce them: %s", delegate_fix);
	if (nb.len > 0)
		*note = buf_steal(&nb);
	buf_free(&nb);
	return 0;
}

int
ns_cgroup_has(const cJSON *state, const char *what)
{
	return state != NULL && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(state, what));
}

static int
st_version(const cJSON *state)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(state, "version");

	return cJSON_IsNumber(v) ? v->valueint : 0;
}

static const char *
st_path(const cJSON *state, const char *ctrl)
{
	const cJSON *p;

	if (state == NULL)
		return NULL;
	if (st_version(state) == 2)
		p = cJSON_GetObjectItemCaseSensitive(state, "path");
	else
		p = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(state, "paths"), ctrl);
	return cJSON_IsString(p) ? p->valuestring : NULL;
}

int
ns_cgroup_attach(const cJSON *state, pid_t pid, struct sbx_err *e)
{
	char val[32];
	size_t i;

	if (state == NULL)
		return 0;
	snprintf(val, sizeof val, "%d", (int)pid);
	if (st_version(state) == 2) {
		const char *dir = st_path(state, NULL);

		if (dir == NULL || cg_write(dir, "cgroup.procs", val) < 0)
			return sbx_error_errno(e, SBX_EBACKEND, NULL,
			    "cgroup: cannot move %d into %s", (int)pid, dir ? dir : "(none)");
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(cg_ctrls); i++) {
		const char *dir = st_path(state, cg_ctrls[i]);

		if (dir != NULL && cg_write(dir, "cgroup.procs", val) < 0)
			return sbx_error_errno(e, SBX_EBACKEND, NULL,
			    "cgroup: cannot move %d into %s", (int)pid, dir);
	}
	return 0;
}

int
ns_cgroup_self_fds(const cJSON *state, int *fds, int max)
{
	int n = 0;

	if (state == NULL || st_version(state) == 2)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(cg_ctrls); i++) {
		const char *dir = st_path(state, cg_ctrls[i]);
		_cleanup_free_ char *p = NULL;

		if (dir == NULL)
			continue;
		p = xasprintf("%s/tasks", dir);
		if (n == max || (fds[n] = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
			while (n > 0)
				close(fds[--n]);
			return -1;
		}
		n++;
	}
	return n;
}

int
ns_cgroup_self_attach(const int *fds, int n)
{
	int ok = 1;

	for (int i = 0; i < n; i++)
		ok &= write(fds[i], "0", 1) == 1;
	return ok ? 0 : -1;
}

int
ns_cgroup_frozen(const cJSON *state)
{
	_cleanup_free_ char *s = NULL;
	const char *dir;

	if (!ns_cgroup_has(state, "freezer"))
		return -1;
	if (st_version(state) == 2) {
		_cleanup_free_ char *path = NULL;
		char *p;

		dir = st_path(state, NULL);
		if (dir == NULL)
			return -1;
		path = xasprintf("%s/cgroup.events", dir);
		if ((s = read_file(path, 1 << 16, NULL)) == NULL ||
		    (p = strstr(s, "frozen ")) == NULL)
			return -1;
		return p[7] == '1';
	}
	dir = st_path(state, "freezer");
	if (dir == NULL || (s = cg_read(dir, "freezer.state")) == NULL)
		return -1;
	if (strcmp(s, "FROZEN") == 0)
		return 1;
	return strcmp(s, "THAWED") == 0 ? 0 : -1;	/* FREEZING: not yet */
}

int
ns_cgroup_freeze(const cJSON *state, int frozen, struct sbx_err *e)
{
	int v1 = st_version(state) == 1;
	const char *dir = st_path(state, v1 ? "freezer" : NULL);
	int64_t deadline;

	if (!ns_cgroup_has(state, "freezer") || dir == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "suspend by stopping the processes instead",
		    "cgroup: this sandbox has no freezer");
	deadline = now_ms() + CG_WAIT_MS;
	for (;;) {
		/* v1 may stop in FREEZING when a task is busy in the kernel: writing
		 * FROZEN again retries. */
		if (cg_write(dir, v1 ? "freezer.state" : "cgroup.freeze",
		    v1 ? (frozen ? "FROZEN" : "THAWED") : (frozen ? "1" : "0")) < 0)
			return sbx_error_errno(e, SBX_EBACKEND, NULL, "cgroup: %s %s",
			    frozen ? "freeze" : "thaw", dir);
		if (ns_cgroup_frozen(state) == (frozen ? 1 : 0))
			return 0;
		if (now_ms() > deadline)
			return sbx_error(e, SBX_ETIMEOUT, "try again",
			    "cgroup: %s did not %s in %d ms", dir, frozen ? "freeze" : "thaw",
			    CG_WAIT_MS);
		usleep(10000);
	}
}

/* rmdir, retrying while the last tasks drain (a killed process leaves its cgroup
 * a moment after its parent has reaped it). */
static int
cg_rmdir(const char *dir, struct sbx_err *e)
{
	int64_t deadline = now_ms() + CG_WAIT_MS;

	while (rmdir(dir) < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || now_ms() > deadline)
			return sbx_error_errno(e, SBX_EBACKEND,
			    "stop every process of the sandbox first", "cgroup: rmdir %s", dir);
		usleep(10000);
	}
	return 0;
}

int
ns_cgroup_destroy(const cJSON *state, struct sbx_err *e)
{
	int rc = 0;
	size_t i;

	if (state == NULL)
		return 0;
	if (st_version(state) == 2) {
		const char *dir = st_path(state, NULL);

		/* A frozen cgroup keeps its dying tasks: thaw first. */
		if (dir != NULL && ns_cgroup_has(state, "freezer"))
			(void)cg_write(dir, "cgroup.freeze", "0");
		if (dir == NULL || cg_rmdir(dir, e) < 0)
			return dir != NULL ? -1 : 0;
		/* The leaf v2_enable moved a creating process into: gone with the
		 * last of them (a one-shot create, sbxtop-launch, doctor), it would
		 * stay behind empty.  rmdir fails while a live process is in it. */
		{
			_cleanup_free_ char *self = xstrdup(dir);
			char *slash = strrchr(self, '/');
			if (slash != NULL) {
				strcpy(slash + 1, "sbxtop-self");
				(void)rmdir(self);
			}
		}
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(cg_ctrls); i++) {
		const char *dir = st_path(state, cg_ctrls[i]);

		if (dir == NULL)
			continue;
		if (strcmp(cg_ctrls[i], "freezer") == 0)
			(void)cg_write(dir, "freezer.state", "THAWED");
		if (cg_rmdir(dir, e) < 0)
			rc = -1;	/* go on: remove what can be removed */
	}
	return rc;
}

/* The file whose "oom_kill N" line counts the OOM killer's kills in the
 * sandbox (caller frees), or NULL. */
static char *
oom_file(const cJSON *state)
{
	const char *dir;

	if (state == NULL)
		return NULL;
	if (st_version(state) == 2)
		return (dir = st_path(state, NULL)) ? xasprintf("%s/memory.events", dir) : NULL;
	return (dir = st_path(state, "memory")) ? xasprintf("%s/memory.oom_control", dir) : NULL;
}

long long
ns_cgroup_oom_kills(const cJSON *state)
{
	_cleanup_free_ char *path = oom_file(state);
	_cleanup_free_ char *text = path ? read_file(path, 1 << 16, NULL) : NULL;
	const char *p;

	/* "oom_kill N" on a line of its own (not "oom_kill_disable"). */
	for (p = text; p != NULL && (p = strstr(p, "oom_kill ")) != NULL; p++)
		if (p == text || p[-1] == '\n')
			return strtoll(p + 9, NULL, 10);
	return 0;
}

int
ns_cgroup_oom_fd(const cJSON *state)
{
	_cleanup_free_ char *path = oom_file(state);

	return path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
}

char *
ns_cgroup_oom_note(const cJSON *state, const struct sbx_limits *l)
{
	long long n = ns_cgroup_oom_kills(state);

	if (n <= 0)
		return NULL;
	return xasprintf("out of memory: the kernel's OOM killer ended %lld process%s at the "
	    "memory limit of %lld MiB", n, n == 1 ? "" : "es",
	    (long long)(l != NULL ? l->memory_mib : 0));
}

const char *
ns_cgroup_where(const cJSON *state)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(state, "base");

	return cJSON_IsString(b) ? b->valuestring : NULL;
}

/* --- finding them again (gc) ----------------------------------------------- */

/* The v2 cgroup sandboxes' cgroups are made in (v2_create's base). */
static char *
v2_base(void)
{
	_cleanup_free_ char *own = own_cgroup(NULL);
	size_t n, k = strlen("/sbxtop-self");

	if (own == NULL)
		return NULL;
	n = strlen(own);
	if (n >= k && strcmp(own + n - k, "/sbxtop-self") == 0)
		own[n - k] = '\0';
	return xasprintf(CG_ROOT "%s", own[0] == '\0' || strcmp(own, "/") == 0 ? "" : own);
}

/* The state object (as ns_cgroup_create makes it) of id's cgroup in out,
 * made when missing. */
static cJSON *
list_entry(cJSON *out, const char *id, int version)
{
	cJSON *st = cJSON_GetObjectItemCaseSensitive(out, id);

	if (st == NULL) {
		st = cJSON_AddObjectToObject(out, id);
		cJSON_AddNumberToObject(st, "version", version);
		if (version == 1)
			cJSON_AddObjectToObject(st, "paths");
	}
	return st;
}

cJSON *
ns_cgroup_list(void)
{
	cJSON *out = cJSON_CreateObject();
	int version = cg_version();
	struct dirent *de;
	DIR *d;

	if (version == 2) {
		_cleanup_free_ char *base = v2_base();
		if (base == NULL || (d = opendir(base)) == NULL)
			return out;
		while ((de = readdir(d)) != NULL) {
			_cleanup_free_ char *dir = NULL;
			cJSON *st;
			if (strncmp(de->d_name, "sbxtop-", 7) != 0 || !sandbox_id_valid(de->d_name + 7))
				continue;
			dir = xasprintf("%s/%s", base, de->d_name);
			st = list_entry(out, de->d_name + 7, 2);
			cJSON_AddStringToObject(st, "path", dir);
			state_flag(st, "freezer", cg_exists(dir, "cgroup.freeze"));
		}
		closedir(d);
		return out;
	}
	for (size_t i = 0; version == 1 && i < ARRAY_SIZE(cg_ctrls); i++) {
		_cleanup_free_ char *own = own_cgroup(cg_ctrls[i]), *parent = NULL;
		parent = xasprintf(CG_ROOT "/%s%s/sbxtop", cg_ctrls[i],
		    own == NULL || strcmp(own, "/") == 0 ? "" : own);
		if ((d = opendir(parent)) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			_cleanup_free_ char *dir = NULL;
			cJSON *st;
			if (!sandbox_id_valid(de->d_name))
				continue;
			dir = xasprintf("%s/%s", parent, de->d_name);
			st = list_entry(out, de->d_name, 1);
			cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(st, "paths"),
			    cg_ctrls[i], dir);
			if (strcmp(cg_ctrls[i], "freezer") == 0)
				state_flag(st, "freezer", cg_exists(dir, "freezer.state"));
		}
		closedir(d);
	}
	return out;
}

/* 1 when the comma-separated list holds word. */
static int
in_commas(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p != NULL && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

cJSON *
ns_cgroup_of_pid(pid_t pid, const char *id)
{
	char path[64], *line, *save = NULL;
	_cleanup_free_ char *text = NULL, *v2 = xasprintf("/sbxtop-%s", id),
	    *v1 = xasprintf("/sbxtop/%s", id);
	cJSON *out = cJSON_CreateObject(), *st = NULL;

	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	if ((text = read_file(path, 1 << 16, NULL)) == NULL)
		return out;
	/* "N:controllers:/path": v2's is "0::/path". */
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *p;
		size_t n;
		if (c2 == NULL)
			continue;
		*c2 = '\0';
		p = c2 + 1;
		n = strlen(p);
		if (strcmp(line, "0:") == 0 && n > strlen(v2) && strcmp(p + n - strlen(v2), v2) == 0) {
			_cleanup_free_ char *dir = xasprintf(CG_ROOT "%s", p);
			st = list_entry(out, id, 2);
			cJSON_AddStringToObject(st, "path", dir);
			state_flag(st, "freezer", cg_exists(dir, "cgroup.freeze"));
		}
		for (size_t i = 0; i < ARRAY_SIZE(cg_ctrls) && n > strlen(v1) &&
		    strcmp(p + n - strlen(v1), v1) == 0; i++)
			if (in_commas(c1 + 1, cg_ctrls[i])) {
				_cleanup_free_ char *dir = xasprintf(CG_ROOT "/%s%s", cg_ctrls[i], p);
				st = list_entry(out, id, 1);
				cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(st, "paths"),
				    cg_ctrls[i], dir);
				if (strcmp(cg_ctrls[i], "freezer") == 0)
					state_flag(st, "freezer", cg_exists(dir, "freezer.state"));
			}
	}
	return out;
}

pid_t
ns_cgroup_first_pid(const cJSON *state)
{
	for (size_t i = 0; i < ARRAY_SIZE(cg_ctrls); i++) {
		const char *dir = st_path(state, st_version(state) == 2 ? NULL : cg_ctrls[i]);
		_cleanup_free_ char *procs = dir ? cg_read(dir, "cgroup.procs") : NULL;

		if (procs != NULL && procs[0] != '\0')
			return (pid_t)atoi(procs);
		if (st_version(state) == 2)
			break;
	}
	return 0;
}

/* --- what the sandbox uses -------------------------------------------------- */

/* The number after "key " in a "key value" per line file (cpu.stat,
 * memory.events, memory.oom_control); -1 when missing. */
static int64_t
cg_keyed(const char *dir, const char *file, const char *key)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	_cleanup_free_ char *s = read_file(path, 1 << 16, NULL);
	size_t kl = strlen(key);

	for (char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
			return strtoll(p + kl + 1, NULL, 10);
	return -1;
}

static int64_t
cg_num(const char *dir, const char *file)
{
	_cleanup_free_ char *s = dir ? cg_read(dir, file) : NULL;
	char *end;
	long long v;

	if (s == NULL)
		return -1;
	v = strtoll(s, &end, 10);
	return end != s && v >= 0 ? v : -1;
}

/* CPU time of the processes listed in dir/cgroup.procs, with what each has
 * reaped (the agent as init reaps every command, so its children's times
 * count): for a v1 host whose cpu controller keeps no usage. */
static int64_t
procs_cpu_ns(const char *dir)
{
	_cleanup_free_ char *path = xasprintf("%s/cgroup.procs", dir);
	_cleanup_free_ char *list = read_file(path, 1 << 20, NULL);
	long hz = sysconf(_SC_CLK_TCK);
	int64_t ticks = 0;

	if (list == NULL || hz <= 0)
		return -1;
	for (char *p = list, *nl; *p; p = nl + 1) {
		char sp[64];
		_cleanup_free_ char *st = NULL;
		char *rp;
		unsigned long long f[4];

		nl = p + strcspn(p, "\n");
		snprintf(sp, sizeof sp, "/proc/%d/stat", atoi(p));
		/* After the name's last ')': fields 3.. ; utime is the 14th. */
		if ((st = read_file(sp, 4096, NULL)) != NULL && (rp = strrchr(st, ')')) != NULL &&
		    sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
		    &f[0], &f[1], &f[2], &f[3]) == 4)
			ticks += (int64_t)(f[0] + f[1] + f[2] + f[3]);
		if (*nl == '\0')
			break;
	}
	return ticks * (1000000000 / hz);
}

int
ns_cgroup_usage(const cJSON *state, struct sbx_usage *u)
{
	const char *dir;

	if (state == NULL)
		return -1;
	if (st_version(state) == 2) {
		int64_t us;

		if ((dir = st_path(state, NULL)) == NULL)
			return -1;
		u->mem_bytes = cg_num(dir, "memory.current");
		u->pids = cg_num(dir, "pids.current");
		us = cg_keyed(dir, "cpu.stat", "usage_usec");
		u->cpu_ns = us >= 0 ? us * 1000 : -1;
		u->oom_kills = cg_keyed(dir, "memory.events", "oom_kill");
		return 0;
	}
	u->mem_bytes = cg_num(st_path(state, "memory"), "memory.usage_in_bytes");
	u->pids = cg_num(st_path(state, "pids"), "pids.current");
	if ((dir = st_path(state, "memory")) != NULL)
		u->oom_kills = cg_keyed(dir, "memory.oom_control", "oom_kill");
	/* cpuacct where it shares the cpu hierarchy; else the processes' times. */
	if ((u->cpu_ns = cg_num(st_path(state, "cpu"), "cpuacct.usage")) < 0) {
		dir = st_path(state, "pids");
		if (dir == NULL)
			dir = st_path(state, "memory");
		u->cpu_ns = dir ? procs_cpu_ns(dir) : -1;
	}
	return 0;
}
