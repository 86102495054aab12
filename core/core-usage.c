/* Live resource use per sandbox: what its backend reads (struct backend's
 * usage: the cgroup, the network namespace) plus the size of its writable
 * layers (walked here, bounded and cached), with CPU % from the previous
 * sample this process kept.  Listings carry it as the record's "usage". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/core-int.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/log.h"
#include "lib/util.h"

#define SAMPLES_MAX	4096
#define ROTATE_MS	500	/* two samples closer than this give no CPU % of their own */
#define DISK_EVERY_MS	15000
#define DISK_ENTRIES	20000	/* per sandbox and walk */
#define DISK_DEPTH	64
#define WATCH_EVERY_MS	2000	/* the disk watcher's walk of a limited sandbox */
#define WATCH_FULL_MS	60000	/* ... even when its filesystem did not grow */
#define WATCH_FILES_PER_MIB 64	/* the entries a limit allows: ext4's 16 KiB an inode */

struct sample {
	const struct core *core;
	char	 id[32];
	int64_t	 t_ms, cpu_ns;		/* the last sample */
	int64_t	 pt_ms, pcpu_ns;	/* the one before: the base of CPU % */
	int64_t	 disk_ms, disk_bytes;
	int	 disk_cut;
	int64_t	 used_ms;
	int64_t	 watch_ms;		/* the disk watcher's last walk */
	int64_t	 suspended_at;		/* what it held when the watcher suspended it */
	int64_t	 fs_bytes, fs_files;	/* its filesystem's use at the last walk */
	int	 held;			/* its backend holds it to its disk limit */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct sample samples[SAMPLES_MAX];

static struct sample *
sample_of(const struct core *c, const char *id, int64_t now)
{
	struct sample *old = &samples[0];

	for (size_t i = 0; i < SAMPLES_MAX; i++) {
		struct sample *s = &samples[i];
		if (s->core == c && strcmp(s->id, id) == 0)
			return s;
		if (s->used_ms < old->used_ms)
			old = s;
	}
	/* A new one takes the slot used longest ago. */
	memset(old, 0, sizeof *old);
	old->core = c;
	snprintf(old->id, sizeof old->id, "%s", id);
	old->t_ms = old->pt_ms = -1;
	old->disk_bytes = -1;
	(void)now;
	return old;
}

/* st_blocks of the tree under dirfd (taken), never through a link: the
 * sandbox owns what is in it.  *left counts entries down; 0 means cut.  System
 * calls only, nothing allocated: the ns backend walks with it in a forked
 * child of this threaded process (ns_layers_bytes), where another thread may
 * have held the allocator's lock at the fork. */
static int64_t
tree_bytes(int dirfd, int depth, long *left)
{
	char buf[2048] __attribute__((aligned(8)));	/* DISK_DEPTH of them at most: 128 KiB */
	int64_t sum = 0;
	ssize_t n;

	while (*left > 0 && (n = getdents64(dirfd, buf, sizeof buf)) > 0) {
		for (ssize_t off = 0; off < n && *left > 0;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			const char *name = de->d_name;
			struct stat st;
			off += de->d_reclen;
			if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
				continue;
			(*left)--;
			if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			sum += (int64_t)st.st_blocks * 512;
			if (S_ISDIR(st.st_mode) && depth < DISK_DEPTH) {
				int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				    O_CLOEXEC);
				if (fd >= 0)
					sum += tree_bytes(fd, depth + 1, left);
			}
		}
	}
	close(dirfd);
	return sum;
}

int64_t
core_tree_bytes(const char *path, long max_entries, int *cut)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	long left = max_entries;
	int64_t n;

	if (fd < 0)
		return -1;
	n = tree_bytes(fd, 0, &left);
	if (cut)
		*cut = left <= 0;
	return n;
}

static int64_t
layers_bytes(const struct backend *b, const struct sandbox *s, long max, int *cut)
{
	struct backend_layer *v = NULL;
	size_t n = 0;
	struct sbx_err e;
	int64_t sum = -1;

	*cut = 0;
	if (b->layers_bytes != NULL)
		return b->layers_bytes(s, core_tree_bytes, max, cut);
	if (b->layers == NULL || b->layers(s, &v, &n, &e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int c = 0;
		int64_t k = core_tree_bytes(v[i].upper, max, &c);
		if (k >= 0)
			sum = (sum < 0 ? 0 : sum) + k;
		*cut |= c;
	}
	backend_layers_free(v, n);
	return sum;
}

static void
add_num(cJSON *o, const char *k, int64_t v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, k, (double)v);
}

void
core_usage_attach(struct core *c, struct sandbox *s)
{
	const struct backend *b = backend_find(s->backend);
	struct sbx_usage u;
	struct sbx_err e;
	struct sample *sm;
	int64_t now = now_ms(), disk = -1;
	double pct = -1;
	int cut = 0, walk;
	cJSON *o;

	if (b == NULL || b->usage == NULL ||
	    (s->state != SBX_RUNNING && s->state != SBX_SUSPENDED))
		return;
	if (b->usage(s, &u, &e) < 0)
		return;
	pthread_mutex_lock(&mu);
	sm = sample_of(c, s->id, now);
	sm->used_ms = now;
	/* A backend that can tell (its own filesystem) needs no walk. */
	walk = u.disk_bytes < 0 && (sm->disk_bytes < 0 || now - sm->disk_ms >= DISK_EVERY_MS);
	pthread_mutex_unlock(&mu);
	/* The walk, outside the lock: another caller may walk too, harmlessly. */
	if (walk)
		disk = layers_bytes(b, s, DISK_ENTRIES, &cut);
	pthread_mutex_lock(&mu);
	if (walk) {
		sm->disk_bytes = disk;
		sm->disk_cut = cut;
		sm->disk_ms = now;
	}
	if (u.disk_bytes < 0) {
		u.disk_bytes = sm->disk_bytes;
		cut = sm->disk_cut;
	}
	if (u.cpu_ns >= 0) {
		if (sm->t_ms >= 0 && now - sm->t_ms >= ROTATE_MS) {
			sm->pt_ms = sm->t_ms;
			sm->pcpu_ns = sm->cpu_ns;
		}
		if (sm->t_ms < 0 || now - sm->t_ms >= ROTATE_MS) {
			sm->t_ms = now;
			sm->cpu_ns = u.cpu_ns;
		}
		if (sm->pt_ms >= 0 && now > sm->pt_ms && u.cpu_ns >= sm->pcpu_ns)
			pct = (double)(u.cpu_ns - sm->pcpu_ns) / 1e4 / (double)(now - sm->pt_ms);
	}
	pthread_mutex_unlock(&mu);

	o = cJSON_CreateObject();
	if (pct >= 0)
		cJSON_AddNumberToObject(o, "cpu_pct", (double)(int64_t)(pct * 10 + 0.5) / 10);
	add_num(o, "cpu_ns", u.cpu_ns);
	add_num(o, "mem_bytes", u.mem_bytes);
	add_num(o, "pids", u.pids);
	add_num(o, "disk_bytes", u.disk_bytes);
	if (u.disk_bytes >= 0 && cut)
		cJSON_AddBoolToObject(o, "disk_partial", 1);
	add_num(o, "net_rx_bytes", u.net_rx);
	add_num(o, "net_tx_bytes", u.net_tx);
	add_num(o, "oom_kills", u.oom_kills);
	core_runs_attach(c, s, o);
	cJSON_Delete(s->usage);
	s->usage = o;
}

/* --- the disk watcher ------------------------------------------------------ */

static int
limited(const struct sandbox *s)
{
	return s->limits.disk_mib > 0 && s->state == SBX_RUNNING;
}

/* Where a backend cannot hold a sandbox to its disk limit (ns as an ordinary
 * user: no filesystem of its own), suspend it once its layers hold more, or
 * more entries than an ext4 filesystem of that size has inodes (a walk that
 * stops there cannot see the rest).  Once per excess: after a resume, so its
 * files can be removed, only growing again suspends it again. */
int
core_disk_tick(struct core *c)
{
	struct sandbox **v;
	struct sbx_err e;
	size_t nv;
	int n = 0;

	if (core_registry_pick(c, limited, &v, &nv, &e) < 0)
		return -1;
	for (size_t i = 0; i < nv; i++) {
		struct sandbox *s = v[i];
		const struct backend *b = backend_find(s->backend);
		int64_t now = now_ms(), limit = s->limits.disk_mib << 20, bytes, last;
		long max = (long)(s->limits.disk_mib * WATCH_FILES_PER_MIB);
		struct sbx_usage u;
		struct sample *sm;
		int cut = 0, rc;

		if (b == NULL || b->usage == NULL || b->layers == NULL)
			continue;
		pthread_mutex_lock(&mu);
		sm = sample_of(c, s->id, now);
		sm->used_ms = now;
		if (sm->held || (sm->watch_ms > 0 && now - sm->watch_ms < WATCH_EVERY_MS)) {
			pthread_mutex_unlock(&mu);
			continue;
		}
		sm->watch_ms = now;
		pthread_mutex_unlock(&mu);
		/* A backend that tells the use at once holds the limit itself. */
		if ((rc = b->usage(s, &u, &e)) < 0 || u.disk_bytes >= 0) {
			pthread_mutex_lock(&mu);
			sm->held = rc == 0;
			pthread_mutex_unlock(&mu);
			continue;
		}
		/* While the filesystem that holds it has the very blocks and inodes in
		 * use that it had at the last walk, nothing grew there (or what grew
		 * matched to the block what went elsewhere): skip the walk, for up to
		 * WATCH_FULL_MS, so 200 idle sandboxes cost a statvfs each. */
		_cleanup_free_ char *dir = paths_sandbox_dir(s->id, &e);
		struct statvfs fs;
		int64_t fsb = -1, fsf = -1;
		if (dir != NULL && statvfs(dir, &fs) == 0) {
			fsb = (int64_t)(fs.f_blocks - fs.f_bfree) * (int64_t)fs.f_frsize;
			fsf = (int64_t)(fs.f_files - fs.f_ffree);
		}
		pthread_mutex_lock(&mu);
		rc = fsb >= 0 && fsb == sm->fs_bytes && fsf == sm->fs_files && sm->disk_bytes >= 0 &&
		    sm->disk_bytes <= limit && !sm->disk_cut && now - sm->disk_ms < WATCH_FULL_MS;
		pthread_mutex_unlock(&mu);
		if (rc)
			continue;
		bytes = layers_bytes(b, s, max, &cut);
		pthread_mutex_lock(&mu);
		sm->fs_bytes = fsb;
		sm->fs_files = fsf;
		sm->disk_bytes = bytes;
		sm->disk_cut = cut;
		sm->disk_ms = now;
		if (bytes <= limit && !cut)
			sm->suspended_at = 0;	/* back under: the next excess counts */
		last = sm->suspended_at;
		pthread_mutex_unlock(&mu);
		if ((bytes <= limit && !cut) || (last > 0 && bytes <= last))
			continue;
		_cleanup_free_ char *why = cut ? xasprintf("disk: more than %ld files and "
		    "directories, the most a %lld MiB limit allows", max,
		    (long long)s->limits.disk_mib) : xasprintf("disk: its files hold %lld MiB, "
		    "over its limit of %lld MiB", (long long)(bytes >> 20),
		    (long long)s->limits.disk_mib);
		if (core_suspend_reason(c, s->id, why, &e) < 0) {
			log_warnx("cannot suspend %s at its disk limit: %s", s->id, e.msg);
			continue;
		}
		log_info("suspended %s: %s", s->id, why);
		pthread_mutex_lock(&mu);
		sm->suspended_at = bytes > 0 ? bytes : 1;
		pthread_mutex_unlock(&mu);
		n++;
	}
	core_list_free(v, nv);
	return n;
}

/* A listing: the records this thread sees, each refreshed from its backend
 * and carrying its usage. */
int
core_list(struct core *c, struct sandbox ***out, size_t *n, struct sbx_err *e)
{
	struct registry *r = registry_load(e);
	struct sandbox **v;

	*out = NULL;
	*n = 0;
	if (r == NULL)
		return -1;
	v = xcalloc(registry_count(r) + 1, sizeof *v);
	for (size_t i = 0; i < registry_count(r); i++)	/* pool members are nobody's */
		if (registry_at(r, i)->pool == NULL && core_sees(registry_at(r, i)))
			v[(*n)++] = sandbox_dup(registry_at(r, i));
	registry_free(r);
	for (size_t i = 0; i < *n; i++) {
		core_reconcile(c, v[i]);
		core_usage_attach(c, v[i]);
	}
	*out = v;
	return 0;
}
