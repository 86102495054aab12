/* The ns backend's gc: what sandboxes of this state directory left on the host,
 * found from what runs as well as from what is written, since a create whose
 * process died before the record was written leaves a sandbox that nothing
 * written names.  Every resource a create makes carries the sandbox's id where
 * a sweep can see it, at no cost to the create:
 *
 *   directory   STATE/sandboxes/ID, made (and locked) first, unlocked once
 *               the core has recorded the sandbox (ns_settled)
 *   cgroup      sbxtop-ID (v2) or sbxtop/ID (v1) below our own cgroup
 *   loop        a loop device whose backing file was ID/.disk
 *   mount       the disk limit's filesystem, mounted on ID
 *   agent       the sandbox's init, sbxtop-agent --tag ID@LABEL, where LABEL
 *               names this state directory (two users or two state
 *               directories never take each other's)
 *
 * One rule per kind, in one table: a new kind of resource is one entry (and
 * its name in the enum before it).  A sandbox whose directory is locked is
 * being made and is left alone; any other that the registry does not hold as
 * live is reported, and (unless a dry run) removed once the registry, read
 * again, still does not: what runs first, the directory last.  An agent's
 * cgroup is found through the agent too, wherever it was made (a delegated
 * cgroup v2 subtree gives each command a scope of its own). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/nsfs.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/util.h"

#define SWEEP_GONE_MS	5000	/* an init killed, until it is gone */

/* What one sandbox id holds on the host. */
struct orphan {
	char			 id[32];
	int			 lock;		/* its directory, locked by us; -1 */
	int			 busy;		/* locked by a create that still runs */
	int			 unlabeled;	/* a launcher's, with no label of ours */
	int			 failed;	/* a removal failed: not counted */
	unsigned		 kinds;		/* a bit per rule that found something */
	char			*dir;		/* STATE/sandboxes/ID, when it exists */
	pid_t			 pid;		/* its init, 0: none runs */
	unsigned long long	 start;
	cJSON			*cgroup;	/* as ns_cgroup_create describes one */
	char			**mounts;
	size_t			 nmounts;
	char			**loops;
	size_t			 nloops;
	struct found {			/* reported once every finder ran */
		int	 rule;
		char	*what;
	}			*found;
	size_t			 nfound;
};

struct sweep {
	const struct backend_gc	*g;
	char			*root;		/* STATE/sandboxes */
	char			 label[NS_LABEL_LEN + 1];
	struct orphan		*v;
	size_t			 n;
};

/* The rules' places in rules[] (the agent's finder adds its cgroup). */
enum { RULE_DIRECTORY, RULE_CGROUP, RULE_LOOP, RULE_MOUNT, RULE_AGENT, RULE_N };

struct sweep_rule {
	const char	*kind;
	int		 live;		/* it runs or holds a kernel object */
	int		 quick;		/* cheap enough for a listing's count */
	void		(*find)(struct sweep *w, int rule);
	int		(*remove)(struct orphan *o, struct sbx_err *e);
};

static const struct sweep_rule rules[RULE_N];

/* --- the label ---------------------------------------------------------------- */

static char label_given[NS_LABEL_LEN + 1];

int
ns_label_valid(const char *label)
{
	return label != NULL && strlen(label) == NS_LABEL_LEN &&
	    strspn(label, "0123456789abcdef") == NS_LABEL_LEN;
}

int
ns_label_use(const char *label)
{
	if (!ns_label_valid(label))
		return -1;
	memcpy(label_given, label, NS_LABEL_LEN + 1);
	return 0;
}

/* The state directory's, kept for the directory it was made for (a create
 * asks each time: a real path and /etc/machine-id read once). */
static struct {
	pthread_mutex_t	 mu;
	char		*dir;
	char		 label[NS_LABEL_LEN + 1];
} label_kept = { .mu = PTHREAD_MUTEX_INITIALIZER };

int
ns_label(char out[NS_LABEL_LEN + 1], struct sbx_err *e)
{
	_cleanup_free_ char *dir = NULL;
	int rc = 0;

	if (label_given[0] != '\0') {
		memcpy(out, label_given, NS_LABEL_LEN + 1);
		return 0;
	}
	if ((dir = ns_sandboxes_dir(e)) == NULL)
		return -1;
	pthread_mutex_lock(&label_kept.mu);
	if (label_kept.dir == NULL || strcmp(label_kept.dir, dir) != 0) {
		if ((rc = paths_state_label(label_kept.label, e)) == 0) {
			free(label_kept.dir);
			label_kept.dir = steal_pointer(&dir);
		}
	}
	if (rc == 0)
		memcpy(out, label_kept.label, NS_LABEL_LEN + 1);
	pthread_mutex_unlock(&label_kept.mu);
	return rc;
}

/* --- the create's lock ---------------------------------------------------------- */

/* Each create's lock on its sandbox's directory, held past create until the
 * core has recorded the sandbox (ns_settled): gc takes an unlocked directory
 * that no record names for one whose create died, and must not take one
 * whose record is about to be written. */
static struct {
	pthread_mutex_t	 mu;
	struct held_lock { char id[32]; int fd; } *v;
	size_t		 n;
} held = { .mu = PTHREAD_MUTEX_INITIALIZER };

void
ns_hold_put(const char *id, int fd)
{
	pthread_mutex_lock(&held.mu);
	held.v = xrealloc(held.v, (held.n + 1) * sizeof *held.v);
	snprintf(held.v[held.n].id, sizeof held.v[0].id, "%s", id);
	held.v[held.n++].fd = fd;
	pthread_mutex_unlock(&held.mu);
}

void
ns_settled(const struct sandbox *s)
{
	pthread_mutex_lock(&held.mu);
	for (size_t i = 0; i < held.n; i++)
		if (strcmp(held.v[i].id, s->id) == 0) {
			close(held.v[i].fd);
			held.v[i] = held.v[--held.n];
			break;
		}
	if (held.n == 0) {
		free(held.v);
		held.v = NULL;
	}
	pthread_mutex_unlock(&held.mu);
}

int
ns_dir_make_locked(const char *dir, int *lock_fd, int *made, struct sbx_err *e)
{
	*made = 0;
	for (int tries = 0; tries < 3; tries++) {
		struct stat st;
		if (mkdir(dir, 0700) < 0)
			return sbx_error_errno(e, errno == EEXIST ? SBX_EINVAL : SBX_EIO,
			    errno == EEXIST ? "pick another id" : NULL, "cannot create %s", dir);
		*made = 1;
		if ((*lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 &&
		    flock(*lock_fd, LOCK_EX) == 0 && fstat(*lock_fd, &st) == 0 && st.st_nlink > 0)
			return 0;
		/* A sweep took it for a dead create's in the moment before the lock
		 * (and removed it): made again. */
		if (*lock_fd >= 0)
			close(steal_fd(lock_fd));
	}
	return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", dir);
}

int
ns_label_of(const struct sandbox *s, char out[NS_LABEL_LEN + 1], struct sbx_err *e)
{
	const char *given = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    s->backend_data, "label"));

	if (!ns_label_valid(given))
		return ns_label(out, e);
	memcpy(out, given, NS_LABEL_LEN + 1);
	return 0;
}

/* --- what belongs to whom ------------------------------------------------------- */

static int
is_known(const struct sweep *w, const char *id)
{
	for (size_t i = 0; i < w->g->nknown; i++)
		if (strcmp(w->g->known[i], id) == 0)
			return 1;
	return 0;
}

/* Whose id is: ours if its directory is here (IF_HERE), ours whatever
 * (OURS: a process or a mount of ours names it), or another client's of
 * this host (FOREIGN: its directory's label), left alone by every rule. */
enum whose { IF_HERE, OURS, FOREIGN };

/* The orphan of id, made as whose says.  Its directory is locked on the way:
 * held by a create, it is busy. */
static struct orphan *
orphan_of(struct sweep *w, const char *id, enum whose force)
{
	_cleanup_free_ char *dir = NULL;
	struct orphan *o;
	struct stat st;

	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->v[i].id, id) == 0)
			return &w->v[i];
	if (!sandbox_id_valid(id) || is_known(w, id))
		return NULL;
	dir = xasprintf("%s/%s", w->root, id);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		if (force == IF_HERE)
			return NULL;
		free(dir);
		dir = NULL;
	}
	w->v = xrealloc(w->v, (w->n + 1) * sizeof *w->v);
	o = &w->v[w->n++];
	memset(o, 0, sizeof *o);
	snprintf(o->id, sizeof o->id, "%s", id);
	o->lock = -1;
	if (force == FOREIGN) {
		o->busy = 1;
	} else if (dir != NULL) {
		o->dir = steal_pointer(&dir);
		if ((o->lock = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
		    flock(o->lock, LOCK_EX | LOCK_NB) < 0)
			o->busy = 1;
	}
	return o;
}

static void
report(struct orphan *o, int rule, const char *what)
{
	if (o == NULL || o->busy)
		return;
	o->kinds |= 1u << rule;
	o->found = xrealloc(o->found, (o->nfound + 1) * sizeof *o->found);
	o->found[o->nfound].rule = rule;
	o->found[o->nfound++].what = xstrdup(what);
}

/* pid's command line names this state directory's sandbox: its id (in id). */
static int
agent_tag(const struct sweep *w, pid_t pid, char *id, size_t len)
{
	char path[64];
	_cleanup_free_ char *cl = NULL;
	size_t n = 0;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if ((cl = read_file(path, 8192, &n)) == NULL)
		return 0;
	return ns_tag_of(cl, n, w->label, id, len);
}

/* pid is the init of a pid namespace, in a user namespace of ours: one of our
 * sandboxes' agents, not a process that only says so. */
static int
our_init(pid_t pid)
{
	char path[64];
	_cleanup_free_ char *status = NULL;
	_cleanup_close_ int ns = -1;
	const char *p;
	uid_t owner;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((status = read_file(path, 1 << 16, NULL)) == NULL ||
	    (p = strstr(status, "\nNSpid:")) == NULL)
		return 0;
	p += strcspn(p + 1, "\n") + 1;		/* the end of that line */
	while (p[-1] == ' ' || p[-1] == '\t')
		p--;
	if (p[-1] != '1' || (p[-2] != '\t' && p[-2] != ' '))
		return 0;
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
	if ((ns = open(path, O_RDONLY | O_CLOEXEC)) < 0 || ioctl(ns, NS_GET_OWNER_UID, &owner) < 0)
		return 0;
	return owner == geteuid();
}

/* --- the rules: find ------------------------------------------------------------ */

/* Directories: every id below STATE/sandboxes that is not another backend's;
 * what backend.json says of its init and cgroup, when it got that far. */
static void
find_dirs(struct sweep *w, int rule)
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir(w->root)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		_cleanup_free_ char *json = NULL, *text = NULL;
		struct orphan *o;
		const cJSON *bk, *pid, *st, *cg, *lb;
		cJSON *bd;

		if (de->d_name[0] == '.' || !sandbox_id_valid(de->d_name))
			continue;
		json = xasprintf("%s/%s/backend.json", w->root, de->d_name);
		text = read_file(json, 65536, NULL);
		bd = text ? cJSON_Parse(text) : NULL;
		/* Another backend's (qemu names itself): its own gc's; another
		 * client's of this host (a label not ours): theirs. */
		bk = cJSON_GetObjectItemCaseSensitive(bd, "backend");
		lb = cJSON_GetObjectItemCaseSensitive(bd, "label");
		if ((cJSON_IsString(bk) && strcmp(bk->valuestring, "ns") != 0) ||
		    (cJSON_IsString(lb) && strcmp(lb->valuestring, w->label) != 0)) {
			(void)orphan_of(w, de->d_name, FOREIGN);	/* none of ours */
			cJSON_Delete(bd);
			continue;
		}
		if ((o = orphan_of(w, de->d_name, IF_HERE)) == NULL || o->busy) {
			cJSON_Delete(bd);
			continue;
		}
		o->unlabeled = !cJSON_IsString(lb) && label_given[0] != '\0';
		pid = cJSON_GetObjectItemCaseSensitive(bd, "pid");
		st = cJSON_GetObjectItemCaseSensitive(bd, "starttime");
		cg = cJSON_GetObjectItemCaseSensitive(bd, "cgroup");
		if (cJSON_IsNumber(pid) && cJSON_IsNumber(st) && pid->valuedouble > 1 &&
		    ns_init_alive((pid_t)pid->valuedouble, (unsigned long long)st->valuedouble, NULL)) {
			o->pid = (pid_t)pid->valuedouble;
			o->start = (unsigned long long)st->valuedouble;
		}
		if (cJSON_IsObject(cg))
			o->cgroup = cJSON_Duplicate(cg, 1);
		cJSON_Delete(bd);
		report(o, rule, o->dir);
	}
	closedir(d);
}

/* cgroups named after an id; one without our directory is ours only when a
 * process of ours runs in it. */
static void
find_cgroups(struct sweep *w, int rule)
{
	cJSON *all = ns_cgroup_list(), *st;

	cJSON_ArrayForEach(st, all) {
		struct orphan *o = orphan_of(w, st->string, IF_HERE);
		const cJSON *p;
		char id[32];
		pid_t pid;

		if (o == NULL && !is_known(w, st->string) && (pid = ns_cgroup_first_pid(st)) > 0 &&
		    agent_tag(w, pid, id, sizeof id) && strcmp(id, st->string) == 0)
			o = orphan_of(w, st->string, OURS);
		if (o == NULL || o->busy)
			continue;
		cJSON_Delete(o->cgroup);
		o->cgroup = cJSON_Duplicate(st, 1);
		p = cJSON_GetObjectItemCaseSensitive(st, "path");
		if (!cJSON_IsString(p))
			p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "paths"), 0);
		report(o, rule, cJSON_IsString(p) ? p->valuestring : st->string);
	}
	cJSON_Delete(all);
}

/* The id a path below STATE/sandboxes is in (in id), or 0. */
static int
id_below(const struct sweep *w, const char *path, char *id, size_t len)
{
	size_t n = strlen(w->root), k;

	if (strncmp(path, w->root, n) != 0 || path[n] != '/')
		return 0;
	path += n + 1;
	k = strcspn(path, "/ ");
	if (k == 0 || k >= len)
		return 0;
	memcpy(id, path, k);
	id[k] = '\0';
	return sandbox_id_valid(id);
}

/* Loop devices whose file was a sandbox's .disk (autoclear frees them with
 * their last mount; one still held shows here). */
static void
find_loops(struct sweep *w, int rule)
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir("/sys/block")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		_cleanup_free_ char *bf = NULL, *file = NULL, *what = NULL;
		struct orphan *o;
		char id[32];

		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		bf = xasprintf("/sys/block/%s/loop/backing_file", de->d_name);
		if ((file = read_file(bf, 8192, NULL)) == NULL)
			continue;
		file[strcspn(file, "\n")] = '\0';
		if (!id_below(w, file, id, sizeof id) || (o = orphan_of(w, id, OURS)) == NULL || o->busy)
			continue;
		o->loops = xrealloc(o->loops, (o->nloops + 1) * sizeof *o->loops);
		o->loops[o->nloops++] = xasprintf("/dev/%s", de->d_name);
		what = xasprintf("/dev/%s (%s)", de->d_name, file);
		report(o, rule, what);
	}
	closedir(d);
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void
unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Mounts on or below a sandbox's directory (the disk limit's filesystem). */
static void
find_mounts(struct sweep *w, int rule)
{
	_cleanup_free_ char *mi = read_file("/proc/self/mountinfo", 16 << 20, NULL);
	char *line, *save = NULL;

	for (line = mi ? strtok_r(mi, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *p = line, id[32];
		struct orphan *o;
		int k;

		for (k = 0; k < 5 && p != NULL; k++) {
			f[k] = p;
			if ((p = strchr(p, ' ')) != NULL)
				*p++ = '\0';
		}
		if (k < 5)
			continue;
		unescape(f[4]);
		if (!id_below(w, f[4], id, sizeof id) || (o = orphan_of(w, id, OURS)) == NULL || o->busy)
			continue;
		o->mounts = xrealloc(o->mounts, (o->nmounts + 1) * sizeof *o->mounts);
		o->mounts[o->nmounts++] = xstrdup(f[4]);
		report(o, rule, f[4]);
	}
}

/* The cgroup agent o's init is in, where ours were not looked for (a
 * delegated v2 subtree gives each command a scope of its own; v1's
 * controllers each have their parent): what the listing missed is added. */
static void
agent_cgroup(struct orphan *o)
{
	cJSON *cg = ns_cgroup_of_pid(o->pid, o->id);
	cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(cg, o->id), *it;
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(st, "path");
	cJSON *have = cJSON_GetObjectItemCaseSensitive(o->cgroup, "paths");

	cJSON_Delete(cg);
	if (st == NULL)
		return;
	if (o->cgroup == NULL || (cJSON_IsString(p) && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
	    o->cgroup, "path")))) {
		const cJSON *any = cJSON_IsString(p) ? p :
		    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "paths"), 0);
		if (cJSON_IsString(any))
			report(o, RULE_CGROUP, any->valuestring);
		cJSON_Delete(o->cgroup);
		o->cgroup = st;
		return;
	}
	/* v1: each controller's path the listing did not have. */
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(st, "paths"))
		if (have != NULL && cJSON_IsString(it) &&
		    cJSON_GetObjectItemCaseSensitive(have, it->string) == NULL) {
			report(o, RULE_CGROUP, it->valuestring);
			cJSON_AddStringToObject(have, it->string, it->valuestring);
		}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "freezer")) &&
	    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o->cgroup, "freezer"))) {
		cJSON_DeleteItemFromObjectCaseSensitive(o->cgroup, "freezer");
		cJSON_AddTrueToObject(o->cgroup, "freezer");
	}
	cJSON_Delete(st);
}

/* Our sandboxes' inits, by their --tag; found by the directory's backend.json
 * too when the create got that far. */
static void
find_agents(struct sweep *w, int rule)
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir("/proc")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			pid_t pid = (pid_t)atoi(de->d_name);
			struct proc_stat ps;
			struct orphan *o;
			char id[32];

			if (pid <= 1 || !agent_tag(w, pid, id, sizeof id) || !our_init(pid) ||
			    (o = orphan_of(w, id, OURS)) == NULL || o->busy || o->pid == pid ||
			    proc_stat(pid, &ps) < 0)
				continue;
			o->pid = pid;
			o->start = ps.starttime;
		}
		closedir(d);
	}
	for (size_t i = 0; i < w->n; i++) {
		struct orphan *o = &w->v[i];
		char what[48];
		if (o->pid <= 0 || o->busy)
			continue;
		snprintf(what, sizeof what, "pid %d", (int)o->pid);
		report(o, rule, what);
		agent_cgroup(o);
	}
}

/* --- the rules: remove ---------------------------------------------------------- */

static int
rm_agent(struct orphan *o, struct sbx_err *e)
{
	struct sbx_err scratch;

	/* A frozen v1 cgroup holds even SIGKILL back. */
	if (o->cgroup != NULL)
		(void)ns_cgroup_freeze(o->cgroup, 0, &scratch);
	/* Killing a pid namespace's init kills every process in it; its egress
	 * helper and network proxy end with it. */
	if (ns_init_alive(o->pid, o->start, NULL))
		kill(o->pid, SIGKILL);
	if (ns_wait_gone(o->pid, o->start, SWEEP_GONE_MS) < 0)
		return sbx_error(e, SBX_ETIMEOUT, "try again; check `ps` for process %d",
		    "the init of %s (pid %d) did not die within %d ms", o->id, (int)o->pid,
		    SWEEP_GONE_MS);
	return 0;
}

static int
rm_mounts(struct orphan *o, struct sbx_err *e)
{
	/* The deepest first. */
	for (size_t i = o->nmounts; i-- > 0;)
		if (umount2(o->mounts[i], MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL &&
		    errno != ENOENT)
			return sbx_error_errno(e, SBX_EIO, "try again", "cannot unmount %s",
			    o->mounts[i]);
	return 0;
}

static int
rm_loops(struct orphan *o, struct sbx_err *e)
{
	for (size_t i = 0; i < o->nloops; i++) {
		_cleanup_close_ int fd = open(o->loops[i], O_RDONLY | O_CLOEXEC);
		/* Still in use elsewhere: it goes with its last user (autoclear). */
		if (fd >= 0 && ioctl(fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO && errno != EBUSY)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot free %s", o->loops[i]);
	}
	return 0;
}

static int
rm_cgroup(struct orphan *o, struct sbx_err *e)
{
	return ns_cgroup_destroy(o->cgroup, e);
}

static int
rm_dir(struct orphan *o, struct sbx_err *e)
{
	struct ns_idmap map;

	if (ns_idmap_choose(&map, e) < 0)
		return -1;
	if (ns_disk_detach(o->dir) < 0)
		return sbx_error_errno(e, SBX_EIO, "try again", "cannot unmount %s", o->dir);
	return ns_rmtree(&map, o->dir, e);
}

/* Found in this order (each finder may lean on the ones before), removed in
 * the reverse: what runs first, the directory last. */
static const struct sweep_rule rules[RULE_N] = {
	[RULE_DIRECTORY] = { "directory",	0, 1, find_dirs,	rm_dir },
	[RULE_CGROUP] = { "cgroup",	1, 1, find_cgroups,	rm_cgroup },
	[RULE_LOOP] = { "loop",	1, 0, find_loops,	rm_loops },
	[RULE_MOUNT] = { "mount",	1, 0, find_mounts,	rm_mounts },
	[RULE_AGENT] = { "agent",	1, 0, find_agents,	rm_agent },
};

/* --- the sweep ------------------------------------------------------------------ */

static void
orphan_free(struct orphan *o)
{
	if (o->lock >= 0)
		close(o->lock);
	free(o->dir);
	cJSON_Delete(o->cgroup);
	for (size_t i = 0; i < o->nmounts; i++)
		free(o->mounts[i]);
	free(o->mounts);
	for (size_t i = 0; i < o->nloops; i++)
		free(o->loops[i]);
	free(o->loops);
	for (size_t i = 0; i < o->nfound; i++)
		free(o->found[i].what);
	free(o->found);
}

int
ns_sweep(const struct backend_gc *g, int *unsettled, struct sbx_err *e)
{
	struct sweep w = { .g = g };
	int removed = 0;

	*unsettled = 0;
	if ((w.root = ns_sandboxes_dir(e)) == NULL || ns_label(w.label, e) < 0) {
		free(w.root);
		return -1;
	}
	for (size_t r = 0; r < ARRAY_SIZE(rules); r++)
		if (!g->quick || rules[r].quick)
			rules[r].find(&w, (int)r);
	/* A launcher's directory with no label (its create died before it wrote
	 * one, or an older one's) in whose cgroup a process that is not ours
	 * runs: another client's to judge. */
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i].unlabeled && w.v[i].pid == 0 && w.v[i].cgroup != NULL &&
		    ns_cgroup_first_pid(w.v[i].cgroup) > 0)
			w.v[i].busy = 1;
	for (size_t i = 0; i < w.n; i++) {
		struct orphan *o = &w.v[i];
		struct sbx_err sub;

		for (size_t k = 0; !o->busy && g->found != NULL && k < o->nfound; k++)
			g->found(g->arg, rules[o->found[k].rule].kind, o->id, o->found[k].what,
			    rules[o->found[k].rule].live);
		if (o->busy || g->dry_run || o->kinds == 0 ||
		    (g->recorded != NULL && g->recorded(g->arg, o->id))) {
			*unsettled |= o->busy || (g->dry_run && o->kinds != 0);
			continue;
		}
		for (size_t r = ARRAY_SIZE(rules); r-- > 0 && !o->failed;)
			if ((o->kinds & (1u << r)) && rules[r].remove(o, &sub) < 0) {
				log_warnx("gc: %s: %s", o->id, sub.msg);
				o->failed = 1;
			}
		*unsettled |= o->failed;
		removed += !o->failed;
	}
	for (size_t i = 0; i < w.n; i++)
		orphan_free(&w.v[i]);
	free(w.v);
	free(w.root);
	return removed;
}
