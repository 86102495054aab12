/* What core_create and the front ends call for OCI images: resolve (and pull)
 * a reference, unpack its layers for the backend that runs it, bound what an
 * agent may use by images_allowed, and list, remove and collect what the
 * store holds.
 *
 * A layer is unpacked once per id mapping (the backend's image_ids key), in a
 * child that is root of a user namespace mapped as the backend's sandboxes
 * are (its image_run), so the image's root is the sandbox's root for an
 * ordinary user as for root; the layers/KEY directory belongs to the
 * sandboxes' root, so that child may write it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <fnmatch.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "core/core.h"
#include "core/image/image-int.h"
#include "core/registry.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"

/* --- images_allowed --------------------------------------------------------- */

/* An entry's canonical form: "DOMAIN/REPO:TAG" exact, "DOMAIN/REPO:*" any tag,
 * "DOMAIN/PATH/" and a star: anything below; "*" anything; a path as it is. */
static int
pattern_canon(const char *p, char *out, size_t len)
{
	struct image_ref r;
	char base[600];
	size_t n = strlen(p);

	if (strcmp(p, "*") == 0 || image_is_path(p)) {
		snprintf(out, len, "%s", p);
		return 0;
	}
	if (n >= 2 && p[n - 1] == '*' && (p[n - 2] == ':' || p[n - 2] == '/') && n - 2 < sizeof base) {
		memcpy(base, p, n - 2);
		base[n - 2] = '\0';
		if (image_ref_parse(base, &r, NULL) < 0 || r.digest[0])
			return -1;
		snprintf(out, len, "%s/%s%c*", r.domain, r.repo, p[n - 2]);
		return 0;
	}
	if (image_ref_parse(p, &r, NULL) < 0)
		return -1;
	image_ref_format(&r, out, len);
	return 0;
}

/* ref canonical ("DOMAIN/REPO:TAG" or "...@DIGEST"), or a path. */
static int
allowed_by(const char *list, const char *ref, char *matched, size_t mlen)
{
	_cleanup_free_ char *copy = xstrdup(list ? list : "");
	char *save = NULL;

	for (char *t = strtok_r(copy, ", \t", &save); t != NULL; t = strtok_r(NULL, ", \t", &save)) {
		char pat[700];
		if (pattern_canon(t, pat, sizeof pat) < 0)
			continue;
		if (strcmp(pat, "*") == 0 ? !image_is_path(ref) : image_is_path(pat) ?
		    strcmp(pat, ref) == 0 : fnmatch(pat, ref, FNM_PATHNAME) == 0 ||
		    (pat[strlen(pat) - 1] == '*' && pat[strlen(pat) - 2] == '/' &&
		    strncmp(pat, ref, strlen(pat) - 1) == 0)) {
			if (matched)
				snprintf(matched, mlen, "%s", t);
			return 1;
		}
	}
	return 0;
}

char *
image_canonical(const char *image)
{
	struct image_ref r;
	char out[600];

	if (image == NULL || image[0] == '\0' || image_is_path(image) ||
	    image_ref_parse(image, &r, NULL) < 0)
		return image ? xstrdup(image) : NULL;
	image_ref_format(&r, out, sizeof out);
	return xstrdup(out);
}

/* images_allowed, and the images of the templates the operator named for
 * the REST sessions (NAME=IMAGE). */
static int
agent_may(struct core *c, const char *canon, char *matched, size_t mlen)
{
	_cleanup_free_ char *t = xstrdup(config_str(core_config(c), "templates"));
	char *save = NULL;

	if (allowed_by(config_str(core_config(c), "images_allowed"), canon, matched, mlen))
		return 1;
	for (char *p = strtok_r(t, ", \t", &save); p; p = strtok_r(NULL, ", \t", &save)) {
		char *eq = strchr(p, '=');
		if (eq != NULL && allowed_by(eq + 1, canon, matched, mlen))
			return 1;
	}
	return 0;
}

/* Whether backend b takes image as an OCI reference: one that parses, for a
 * backend with images of its own names (qemu's VM images, lambda's ARNs)
 * only when it has a tag, a digest or a registry path, so `--image default`
 * stays qemu's VM image. */
static int
oci_for(const struct backend *b, const char *image)
{
	struct image_ref r;

	if (image == NULL || image[0] == '\0' || image_is_path(image) ||
	    image_ref_parse(image, &r, NULL) < 0)
		return 0;
	return (b != NULL && b->image_ids != NULL) || strpbrk(image, ":/@") != NULL;
}

char *
core_image_key(const char *backend, const char *image)
{
	return oci_for(backend_find(backend), image) ? image_canonical(image) :
	    image ? xstrdup(image) : NULL;
}

int
core_image_agent_may(struct core *c, const char *ref)
{
	_cleanup_free_ char *canon = image_canonical(ref);

	return canon != NULL && agent_may(c, canon, NULL, 0);
}

static int
is_agent(const struct core_create_opts *o, const char *owner)
{
	if (o->agent)
		return o->agent > 0;
	return owner != NULL && strcmp(owner, "cli") != 0 && strcmp(owner, "console") != 0 &&
	    strcmp(owner, "pool") != 0;
}

/* Plain HTTP to this registry: loopback, or named in image_http. */
static int
plain_http_ok(struct core *c, const char *ref)
{
	struct image_ref r;
	_cleanup_free_ char *copy = xstrdup(config_str(core_config(c), "image_http"));
	char *save = NULL;

	if (image_ref_parse(ref, &r, NULL) < 0)
		return 0;
	for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save))
		if (strcmp(t, r.domain) == 0)
			return 1;
	return 0;
}

/* --- unpacking for a backend ------------------------------------------------ */

struct unpack_job {
	int			 blob_fd, key_fd;
	int			 lower[256];
	int			 nlower;
	char			 tmp[96], final[80];
	const char		*diff_id;
	struct image_ids	 ids;
	struct image_unpack_limits lim;
};

struct unpack_report {
	struct sbx_err			e;
	struct image_unpack_stats	st;
};

/* In the backend's user namespace, as the sandboxes' root. */
static int
unpack_in_ns(void *arg, void *report)
{
	struct unpack_job *j = arg;
	struct unpack_report *rep = report;
	int dest;

	memset(rep, 0, sizeof *rep);
	if (mkdirat(j->key_fd, j->tmp, 0755) < 0 ||
	    (dest = openat(j->key_fd, j->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		sbx_error_errno(&rep->e, SBX_EIO, NULL, "cannot make a layer directory");
		return -1;
	}
	if (image_layer_unpack(j->blob_fd, dest, j->lower, j->nlower, j->diff_id, &j->ids, &j->lim,
	    &rep->st, &rep->e) < 0) {
		close(dest);
		return -1;
	}
	(void)fsync(dest);
	close(dest);
	if (renameat(j->key_fd, j->tmp, j->key_fd, j->final) < 0 && errno != EEXIST &&
	    errno != ENOTEMPTY) {
		sbx_error_errno(&rep->e, SBX_EIO, NULL, "cannot put the layer in place");
		return -1;
	}
	return 0;
}

static int
rm_tree(const char *path, void *arg, struct sbx_err *e)
{
	const struct backend *b = arg;

	if (b != NULL && b->image_rmtree != NULL)
		return b->image_rmtree(path, e);
	return sbx_error(e, SBX_EUNSUPPORTED, NULL, "no backend removes %s", path);
}

/* The layers/KEY directory for b's mapping, made and owned by its root. */
static int
key_dir(struct image_store *st, const struct backend *b, struct backend_image_ids *ids,
    char **path, struct sbx_err *e)
{
	struct stat sb;

	if (b->image_ids(ids, e) < 0)
		return -1;
	*path = xasprintf("%s/layers/%s", image_store_root(st), ids->key);
	if (mkdir(*path, 0711) < 0 && errno != EEXIST)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", *path);
	if (lstat(*path, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot use %s", *path);
	if ((sb.st_uid != ids->owner || sb.st_gid != ids->group) &&
	    chown(*path, ids->owner, ids->group) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot hand %s to the sandboxes' root", *path);
	return 0;
}

/* Unpack every layer of img for backend b that is not there yet; *dirs (may be
 * NULL) gets their paths, top first, NULL-terminated. */
static int
unpack_for(struct core *c, const struct backend *b, struct image_store *st,
    const struct image_info *img, image_progress_fn progress, void *parg, char ***dirs,
    struct sbx_err *e)
{
	struct backend_image_ids ids;
	_cleanup_free_ char *kd = NULL;
	_cleanup_close_ int key_fd = -1;
	char **v = xcalloc(img->nlayers + 1, sizeof *v);
	int rc = -1;
	const struct config *cfg = core_config(c);

	if (dirs)
		*dirs = NULL;
	if (b->image_ids == NULL || b->image_run == NULL) {
		free(v);
		return sbx_error(e, SBX_EUNSUPPORTED, "use --backend ns", "the %s backend does not "
		    "run OCI images", b->name);
	}
	if (key_dir(st, b, &ids, &kd, e) < 0 ||
	    (key_fd = open(kd, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		if (key_fd < 0 && kd != NULL && e->msg[0] == '\0')
			sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", kd);
		free(v);
		return -1;
	}
	for (size_t i = 0; i < img->nlayers; i++) {
		const struct image_layer *L = &img->layers[i];
		char *dir = image_store_layer_path(st, ids.key, L->diff_id);
		struct stat sb;
		v[img->nlayers - 1 - i] = dir;
		if (lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
			continue;
		/* One unpacker per layer: the others wait and find it made. */
		_cleanup_free_ char *lp = xasprintf("%s/.%s.lock", kd, L->diff_id + 7);
		_cleanup_close_ int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lk < 0 || flock(lk, LOCK_EX) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", lp);
			goto out;
		}
		if (lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			(void)unlink(lp);
			continue;
		}
		if (progress != NULL) {
			char what[96];
			snprintf(what, sizeof what, "unpacking layer %zu/%zu", i + 1, img->nlayers);
			(void)progress(i, img->nlayers, what, parg);
		}
		struct unpack_job j;
		struct unpack_report rep;
		struct sbx_err sub;
		_cleanup_free_ char *blob = image_store_blob_path(st, L->digest);
		memset(&j, 0, sizeof j);
		j.key_fd = key_fd;
		j.diff_id = L->diff_id;
		j.ids = (struct image_ids){ ids.count, 1, ids.strip_setid };
		j.lim.max_bytes = config_int(cfg, "image_max_layer") << 20;
		j.lim.max_entries = config_int(cfg, "image_max_entries");
		snprintf(j.tmp, sizeof j.tmp, ".%s.tmp.%d", L->diff_id + 7, (int)getpid());
		snprintf(j.final, sizeof j.final, "%s", L->diff_id + 7);
		if ((j.blob_fd = open(blob, O_RDONLY | O_CLOEXEC)) < 0) {
			sbx_error_errno(e, SBX_EIO, "pull the image again", "cannot read layer %.19s",
			    L->digest);
			goto out;
		}
		/* The layers below it, top first, for hard links into them. */
		for (size_t k = i; k > 0 && j.nlower < (int)ARRAY_SIZE(j.lower); k--)
			if ((j.lower[j.nlower] = open(v[img->nlayers - k], O_PATH | O_DIRECTORY |
			    O_CLOEXEC)) >= 0)
				j.nlower++;
		memset(&rep, 0, sizeof rep);
		int r = b->image_run(NULL, unpack_in_ns, &j, &rep, sizeof rep, &sub);
		close(j.blob_fd);
		while (j.nlower > 0)
			close(j.lower[--j.nlower]);
		if (r < 0) {
			_cleanup_free_ char *tmp = xasprintf("%s/%s", kd, j.tmp);
			struct sbx_err scratch;
			if (rep.e.code != SBX_OK) {
				rep.e.msg[sizeof rep.e.msg - 1] = rep.e.hint[sizeof rep.e.hint - 1] = '\0';
				sbx_error(e, rep.e.code, rep.e.hint[0] ? rep.e.hint : NULL,
				    "%s: layer %zu (%.19s): %s", img->ref ? img->ref : img->id, i + 1,
				    L->digest, rep.e.msg);
			} else {
				*e = sub;
			}
			if (b->image_rmtree(tmp, &scratch) < 0)
				log_warnx("cannot remove %s: %s", tmp, scratch.msg);
			goto out;
		}
		if (rep.st.skipped_devices > 0 || rep.st.stripped_setid > 0 || rep.st.squashed_ids > 0)
			log_info("image %s layer %zu: %lld device nodes left out, %lld setuid/setgid "
			    "bits dropped, %lld files of ids this user cannot map made root's",
			    img->ref ? img->ref : img->id, i + 1, (long long)rep.st.skipped_devices,
			    (long long)rep.st.stripped_setid, (long long)rep.st.squashed_ids);
		(void)unlink(lp);
	}
	rc = 0;
out:
	if (rc == 0 && dirs != NULL)
		*dirs = v;
	else {
		for (size_t i = 0; i < img->nlayers; i++)
			free(v[i]);
		free(v);
	}
	return rc;
}

/* --- a disk for a backend that boots one (qemu) ----------------------------------- */

/* The backend that maps ids for the store (ns): the one with image_run. */
static const struct backend *
ids_backend(void)
{
	for (size_t i = 0; backends[i] != NULL; i++)
		if (backends[i]->image_run != NULL && backends[i]->image_ids != NULL)
			return backends[i];
	return NULL;
}

struct mkfs_job {
	const char	*inject, *work;
	char *const	*lower;		/* the layers, top first */
	char		 size[32];
	int		 work_fd;
};

/* In the ids backend's user namespace, still with the caller's uid: a mount
 * namespace of our own, and in it the image's layers under what the booting
 * backend injects, as one read-only overlay on WORK/mnt.  The paths are opened
 * here, in this mount namespace (overlay refuses another's). */
static int
mkfs_pre(void *arg, void *report)
{
	struct mkfs_job *j = arg;
	struct sbx_err *e = report;
	char opts[4096];
	size_t n;
	int fd;

	memset(e, 0, sizeof *e);
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot make a mount namespace");
	if ((fd = open(j->inject, O_PATH | O_DIRECTORY)) < 0 ||
	    (j->work_fd = open(j->work, O_PATH | O_DIRECTORY)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", fd < 0 ? j->inject : j->work);
	n = (size_t)snprintf(opts, sizeof opts, "lowerdir=/proc/self/fd/%d", fd);
	for (char *const *d = j->lower; *d != NULL && n < sizeof opts; d++) {
		if ((fd = open(*d, O_PATH | O_DIRECTORY)) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", *d);
		n += (size_t)snprintf(opts + n, sizeof opts - n, ":/proc/self/fd/%d", fd);
	}
	if (n < sizeof opts)
		n += (size_t)snprintf(opts + n, sizeof opts - n, ",userxattr");
	char mnt[64];
	snprintf(mnt, sizeof mnt, "/proc/self/fd/%d/mnt", j->work_fd);
	if (n >= sizeof opts || mount("overlay", mnt, "overlay", MS_RDONLY | MS_NODEV | MS_NOSUID,
	    opts) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot mount the image's layers");
	return 0;
}

/* Then as the sandboxes' root: mke2fs -d of the overlay, the ids it records
 * the ones the namespace shows, the image's own. */
static int
mkfs_in_ns(void *arg, void *report)
{
	struct mkfs_job *j = arg;
	struct sbx_err *e = report;
	char mnt[64], out[64], log[64];
	pid_t pid;
	int st;

	snprintf(mnt, sizeof mnt, "/proc/self/fd/%d/mnt", j->work_fd);
	snprintf(out, sizeof out, "/proc/self/fd/%d/disk.ext4", j->work_fd);
	snprintf(log, sizeof log, "/proc/self/fd/%d/mkfs.log", j->work_fd);
	if ((pid = fork()) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "fork");
	if (pid == 0) {
		char *argv[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-L", "sbxtop-root", "-E",
		    "root_owner=0:0", "-d", mnt, out, j->size, NULL };
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char tail[300] = "";
		int fd = open(log, O_RDONLY | O_CLOEXEC);
		ssize_t k = fd >= 0 ? read(fd, tail, sizeof tail - 1) : 0;
		if (fd >= 0)
			close(fd);
		tail[k > 0 ? k : 0] = '\0';
		for (char *p = tail; *p; p++)
			if (*p == '\n' || (unsigned char)*p < ' ')
				*p = ' ';
		return sbx_error(e, SBX_EBACKEND, WIFEXITED(st) && WEXITSTATUS(st) == 127 ?
		    "install e2fsprogs (scripts/deps.sh)" : NULL, "mke2fs of the image failed "
		    "(status %d): %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, tail);
	}
	return 0;
}

/* The walks over an injected tree (nftw's callbacks take no argument): one at
 * a time. */
static pthread_mutex_t walk_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct sha256_ctx	ctx;
	size_t			skip;
	uid_t			uid;
	gid_t			gid;
} walk;

/* What identifies the tree for the disk's name: each entry's path, mode and
 * size, a file's content and a link's target, through sha256 (times differ
 * from one copy of the same files to the next). */
static int
tree_one(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	char line[4200], target[4096];
	int n = snprintf(line, sizeof line, "%s %o %lld\n", path + walk.skip,
	    (unsigned)sb->st_mode, (long long)sb->st_size);

	(void)f;
	if (n > 0)
		sha256_update(&walk.ctx, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1),
		    (const uint8_t *)line);
	if (type == FTW_SL) {
		ssize_t k = readlink(path, target, sizeof target);
		if (k > 0)
			sha256_update(&walk.ctx, (size_t)k, (const uint8_t *)target);
	} else if (S_ISREG(sb->st_mode)) {
		_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		char d[IMAGE_DIGEST_LEN];
		if (fd >= 0 && image_sha256_fd(fd, d, NULL) == 0)
			sha256_update(&walk.ctx, strlen(d), (const uint8_t *)d);
	}
	return 0;
}

static int
chown_one(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	(void)sb;
	(void)type;
	(void)f;
	return lchown(path, walk.uid, walk.gid) < 0 ? -1 : 0;
}

/* The disk of img for backend b (which has image_inject) into *disk (caller
 * frees): made once per image, mapping and injected tree, under
 * disks/KEY/ID-INJECT.ext4. */
static int
disk_for(struct core *c, const struct backend *b, struct image_store *st,
    const struct image_info *img, const cJSON *spec, char **disk, struct sbx_err *e)
{
	const struct backend *ib = ids_backend();
	struct backend_image_ids ids;
	char **dirs = NULL, dg[IMAGE_DIGEST_LEN];
	_cleanup_free_ char *inj = NULL, *kd = NULL, *final = NULL, *work = NULL, *tmp = NULL;
	struct mkfs_job j;
	struct sbx_err sub, scratch;
	int rc = -1;
	int64_t bytes = 0;

	*disk = NULL;
	memset(&j, 0, sizeof j);
	if (ib == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, NULL, "no backend maps the image's ids (ns)");
	if (unpack_for(c, ib, st, img, NULL, NULL, &dirs, e) < 0 || ib->image_ids(&ids, e) < 0)
		goto out;
	if (b->image_inject(spec, &inj, e) < 0)
		goto out;
	pthread_mutex_lock(&walk_mu);
	/* Owned by the sandboxes' root, so the namespace shows it as root's. */
	walk.uid = ids.owner;
	walk.gid = ids.group;
	if (geteuid() == 0 && ids.owner != 0 && nftw(inj, chown_one, 16, FTW_PHYS) < 0) {
		pthread_mutex_unlock(&walk_mu);
		sbx_error_errno(e, SBX_EIO, NULL, "cannot hand %s to the sandboxes' root", inj);
		goto out;
	}
	sha256_init(&walk.ctx);
	walk.skip = strlen(inj);
	(void)nftw(inj, tree_one, 16, FTW_PHYS);
	image_sha256_finish(&walk.ctx, dg);
	pthread_mutex_unlock(&walk_mu);
	kd = xasprintf("%s/disks/%s", image_store_root(st), ids.key);
	final = xasprintf("%s/%.12s-%.12s.ext4", kd, img->id + 7, dg + 7);
	if (access(final, R_OK) == 0) {
		*disk = steal_pointer(&final);
		rc = 0;
		goto out;
	}
	if (mkdir_p(kd, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", kd);
		goto out;
	}
	work = xasprintf("%s/tmp/disk.XXXXXX", image_store_root(st));
	if (mkdtemp(work) == NULL) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", work);
		goto out;
	}
	tmp = xasprintf("%s/mnt", work);
	if (mkdir(tmp, 0755) < 0 || chown(work, ids.owner, ids.group) < 0 ||
	    chown(tmp, ids.owner, ids.group) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot prepare %s", work);
		goto out;
	}
	/* Sparse: room for the files, and a quarter more for what commands write. */
	for (char **d = dirs; *d != NULL; d++) {
		int64_t k = core_tree_bytes(*d, 10000000, NULL);
		bytes += k > 0 ? k : 0;
	}
	bytes += core_tree_bytes(inj, 100000, NULL);
	snprintf(j.size, sizeof j.size, "%lldM", (long long)((bytes + bytes / 4) >> 20) + 512);
	j.inject = inj;
	j.work = work;
	j.lower = dirs;
	memset(&sub, 0, sizeof sub);
	if (ib->image_run(mkfs_pre, mkfs_in_ns, &j, &sub, sizeof sub, e) < 0) {
		if (sub.code != SBX_OK) {
			sub.msg[sizeof sub.msg - 1] = sub.hint[sizeof sub.hint - 1] = '\0';
			sbx_error(e, sub.code, sub.hint[0] ? sub.hint : NULL, "%s: %s", img->ref ?
			    img->ref : img->id, sub.msg);
		}
		goto out;
	}
	{
		_cleanup_free_ char *made = xasprintf("%s/disk.ext4", work);
		if (rename(made, final) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot put the disk at %s", final);
			goto out;
		}
	}
	*disk = steal_pointer(&final);
	rc = 0;
out:
	if (work != NULL && ib != NULL && ib->image_rmtree(work, &scratch) < 0)
		log_warnx("cannot remove %s: %s", work, scratch.msg);
	if (inj != NULL && ib != NULL && ib->image_rmtree(inj, &scratch) < 0)
		log_warnx("cannot remove %s: %s", inj, scratch.msg);
	for (char **d = dirs; d != NULL && *d != NULL; d++)
		free(*d);
	free(dirs);
	return rc;
}

/* The image's config and layers as the backend reads them at create. */
static cJSON *
spec_of(const struct image_info *img, char **dirs)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "layers");

	for (char **d = dirs; d != NULL && *d != NULL; d++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*d));
	a = cJSON_AddArrayToObject(o, "env");
	for (char **p = img->env; p != NULL && *p != NULL; p++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*p));
	if (img->user != NULL && img->user[0] != '\0')
		cJSON_AddStringToObject(o, "user", img->user);
	if (img->workdir != NULL)
		cJSON_AddStringToObject(o, "workdir", img->workdir);
	return o;
}

static struct image_info *
find_or_pull(struct core *c, struct image_store *st, const char *ref, int agent,
    struct sbx_err *e)
{
	struct image_info *img = image_store_find(st, ref, e);
	struct image_pull_opts po = { 0 };

	if (img != NULL || e->code != SBX_ENOTFOUND || image_digest_valid(ref))
		return img;
	/* Not in the store: pulled, as docker run does. */
	log_info("image %s is not in the store: pulling it", ref);
	po.plain_http = plain_http_ok(c, ref);
	(void)agent;
	if (image_pull(st, ref, &po, &img, e) < 0)
		return NULL;
	return img;
}

int
core_image_prepare(struct core *c, const struct core_create_opts *o, struct sandbox *s,
    struct sbx_err *e)
{
	const struct backend *b = backend_find(s->backend);
	struct image_store *st = NULL;
	struct image_info *img = NULL;
	char **dirs = NULL, matched[256];
	int agent = is_agent(o, s->owner), rc = -1;

	if (s->image != NULL && !image_is_path(s->image) && !oci_for(b, s->image)) {
		/* The backend's own image name (a VM image, an ARN): its to take. */
		if (agent && !agent_may(c, s->image, NULL, 0))
			return sbx_error(e, SBX_EDENIED, "leave out image, or use one the operator "
			    "allows (the sbx://images resource lists them)", "image '%.200s' is not "
			    "among the images the operator allows agents (images_allowed)", s->image);
		return 0;
	}
	if (s->image != NULL && !image_is_path(s->image)) {
		char *canon = image_canonical(s->image);
		free(s->image);
		s->image = canon;
	}
	if (s->image == NULL || image_is_path(s->image)) {
		/* A directory of the host's as the root: the operator's to give. */
		if (agent && s->image != NULL && !agent_may(c, s->image, NULL, 0))
			return sbx_error(e, SBX_EDENIED, "leave out image, or use one the operator "
			    "allows (the sbx://images resource lists them)", "image '%.200s' is a "
			    "directory of the host, which the operator has not allowed agents "
			    "(images_allowed)", s->image);
		return 0;
	}
	if (agent && !agent_may(c, s->image, matched, sizeof matched))
		return sbx_error(e, SBX_EDENIED, "leave out image, or use one the operator allows "
		    "(the sbx://images resource lists them)", "image '%.200s' is not among the "
		    "images the operator allows agents (images_allowed)", s->image);
	if (b == NULL || (b->image_ids == NULL && b->image_inject == NULL))
		return sbx_error(e, SBX_EUNSUPPORTED, "use --backend ns or qemu, or leave out --image",
		    "the %s backend does not start sandboxes from OCI images", s->backend);
	if ((st = image_store_open(1, e)) == NULL)
		return -1;
	img = o->image_id != NULL ? image_store_find(st, o->image_id, e) :
	    find_or_pull(c, st, s->image, agent, e);
	if (img == NULL)
		goto out;
	if (b->image_ids == NULL) {
		/* A backend that boots a disk made of the image. */
		char *disk = NULL;
		cJSON *spec = spec_of(img, NULL);
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "layers");
		if (disk_for(c, b, st, img, spec, &disk, e) < 0) {
			cJSON_Delete(spec);
			goto out;
		}
		cJSON_AddStringToObject(spec, "disk", disk);
		free(disk);
		free(s->image_id);
		s->image_id = xstrdup(img->id);
		cJSON_Delete(s->image_spec);
		s->image_spec = spec;
		rc = 0;
		goto out;
	}
	if (unpack_for(c, b, st, img, NULL, NULL, &dirs, e) < 0)
		goto out;
	free(s->image_id);
	s->image_id = xstrdup(img->id);
	cJSON_Delete(s->image_spec);
	s->image_spec = spec_of(img, dirs);
	rc = 0;
out:
	for (char **d = dirs; d != NULL && *d != NULL; d++)
		free(*d);
	free(dirs);
	image_info_free(img);
	image_store_close(st);
	return rc;
}

/* --- front ends --------------------------------------------------------------- */

static int64_t
layers_bytes(const struct image_info *img)
{
	int64_t n = 0;

	for (size_t i = 0; i < img->nlayers; i++)
		n += img->layers[i].size;
	return n;
}

static cJSON *
summary(const struct image_info *img)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "ref", img->ref ? img->ref : img->id);
	cJSON_AddStringToObject(o, "id", img->id);
	cJSON_AddStringToObject(o, "platform", img->platform);
	cJSON_AddNumberToObject(o, "layers", (double)img->nlayers);
	cJSON_AddNumberToObject(o, "size", (double)layers_bytes(img));
	if (img->user && img->user[0])
		cJSON_AddStringToObject(o, "user", img->user);
	if (img->workdir)
		cJSON_AddStringToObject(o, "workdir", img->workdir);
	cJSON_AddNumberToObject(o, "pulled_ms", (double)img->pulled_ms);
	return o;
}

/* Unpack for the default backend, so the first create is quick. */
static int
unpack_default(struct core *c, struct image_store *st, const struct image_info *img,
    image_progress_fn progress, void *arg, cJSON *out, struct sbx_err *e)
{
	const struct backend *b = backend_find(config_str(core_config(c), "backend"));

	if (b == NULL || b->image_ids == NULL)
		return 0;
	if (unpack_for(c, b, st, img, progress, arg, NULL, e) < 0)
		return -1;
	cJSON_AddStringToObject(out, "unpacked_for", b->name);
	return 0;
}

/* img came into the store: *out its summary, its layers unpacked for the
 * default backend (when unpack: an image of this machine's platform), and the
 * event the console shows. */
static int
arrived(struct core *c, struct image_store *st, const struct image_info *img, int unpack,
    image_progress_fn progress, void *arg, cJSON **out, struct sbx_err *e)
{
	*out = summary(img);
	if (unpack && unpack_default(c, st, img, progress, arg, *out, e) < 0) {
		cJSON_Delete(*out);
		*out = NULL;
		return -1;
	}
	core_events_emit(c, "image.pulled", NULL, summary(img));
	return 0;
}

int
core_image_pull(struct core *c, const char *ref, const struct core_image_pull_opts *o,
    cJSON **out, struct sbx_err *e)
{
	struct image_store *st;
	struct image_info *img = NULL;
	struct image_pull_opts po = { o->plain_http || plain_http_ok(c, ref), o->platform,
	    o->progress, o->arg };
	int rc = -1;

	*out = NULL;
	if (o->agent && !core_image_agent_may(c, ref))
		return sbx_error(e, SBX_EDENIED, "pull one the operator allows (images_allowed)",
		    "image '%.200s' is not among the images the operator allows agents", ref);
	if ((st = image_store_open(1, e)) == NULL)
		return -1;
	if (image_pull(st, ref, &po, &img, e) == 0)
		rc = arrived(c, st, img, o->platform == NULL, o->progress, o->arg, out, e);
	image_info_free(img);
	image_store_close(st);
	return rc;
}

int
core_image_import(struct core *c, const char *src, const char *ref, image_progress_fn progress,
    void *arg, cJSON **out, struct sbx_err *e)
{
	struct image_store *st;
	struct image_info *img = NULL;
	int rc = -1;

	*out = NULL;
	if ((st = image_store_open(1, e)) == NULL)
		return -1;
	if (image_import(st, src, ref, progress, arg, &img, e) == 0)
		rc = arrived(c, st, img, 1, progress, arg, out, e);
	image_info_free(img);
	image_store_close(st);
	return rc;
}

/* The image ids live sandboxes use (caller frees). */
static char **
ids_in_use(size_t *n)
{
	struct sbx_err e;
	struct registry *r = registry_load(&e);
	char **v = NULL;

	*n = 0;
	if (r == NULL)
		return NULL;
	v = xcalloc(registry_count(r) + 1, sizeof *v);
	for (size_t i = 0; i < registry_count(r); i++) {
		const struct sandbox *s = registry_at(r, i);
		if (s->image_id != NULL && s->state != SBX_TERMINATED)
			v[(*n)++] = xstrdup(s->image_id);
	}
	registry_free(r);
	return v;
}

static int
in_list(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

int
core_image_list(struct core *c, cJSON **out, struct sbx_err *e)
{
	struct image_store *st;
	struct image_info **imgs = NULL;
	size_t n = 0, nuse = 0;
	char **use = NULL, **keys = NULL;
	cJSON *arr, *seen = cJSON_CreateObject(), *seen_u = cJSON_CreateObject();
	int64_t total_blobs = 0, total_unpacked = 0;
	*out = NULL;
	if ((st = image_store_open(0, e)) == NULL && e->code != SBX_ENOTFOUND) {
		cJSON_Delete(seen);
		cJSON_Delete(seen_u);
		return -1;
	}
	if (st != NULL && image_store_list(st, &imgs, &n, e) < 0) {
		image_store_close(st);
		cJSON_Delete(seen);
		cJSON_Delete(seen_u);
		return -1;
	}
	use = ids_in_use(&nuse);
	keys = st != NULL ? image_store_layer_keys(st) : xcalloc(1, sizeof *keys);
	*out = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*out, "images");
	for (size_t i = 0; i < n; i++) {
		cJSON *o = summary(imgs[i]);
		int64_t unpacked = 0;
		for (size_t l = 0; l < imgs[i]->nlayers; l++) {
			const struct image_layer *L = &imgs[i]->layers[l];
			if (cJSON_GetObjectItemCaseSensitive(seen, L->digest) == NULL) {
				cJSON_AddTrueToObject(seen, L->digest);
				total_blobs += L->size;
			}
			for (char **k = keys; k != NULL && *k != NULL; k++) {
				_cleanup_free_ char *p = image_store_layer_path(st, *k, L->diff_id);
				int64_t b = core_tree_bytes(p, 1000000, NULL);
				if (b < 0)
					continue;
				unpacked += b;
				if (cJSON_GetObjectItemCaseSensitive(seen_u, p) == NULL) {
					cJSON_AddTrueToObject(seen_u, p);
					total_unpacked += b;
				}
			}
		}
		cJSON_AddNumberToObject(o, "unpacked", (double)unpacked);
		cJSON_AddBoolToObject(o, "in_use", in_list(use, nuse, imgs[i]->id));
		cJSON_AddBoolToObject(o, "allowed", agent_may(c, imgs[i]->ref, NULL, 0));
		cJSON_AddItemToArray(arr, o);
	}
	{
		cJSON *t = cJSON_AddObjectToObject(*out, "total");
		cJSON_AddNumberToObject(t, "images", (double)n);
		cJSON_AddNumberToObject(t, "blobs", (double)total_blobs);
		cJSON_AddNumberToObject(t, "unpacked", (double)total_unpacked);
	}
	for (size_t i = 0; i < n; i++)
		image_info_free(imgs[i]);
	free(imgs);
	for (size_t i = 0; i < nuse; i++)
		free(use[i]);
	free(use);
	for (char **k = keys; k != NULL && *k != NULL; k++)
		free(*k);
	free(keys);
	cJSON_Delete(seen);
	cJSON_Delete(seen_u);
	image_store_close(st);
	return 0;
}

int
core_image_rm(struct core *c, const char *ref, cJSON **out, struct sbx_err *e)
{
	struct image_store *st = image_store_open(0, e);
	char **gone = NULL;
	size_t n = 0;
	cJSON *arr;

	(void)c;
	*out = NULL;
	if (st == NULL)
		return -1;
	if (image_store_untag(st, ref, &gone, &n, e) < 0) {
		image_store_close(st);
		return -1;
	}
	*out = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*out, "removed");
	for (size_t i = 0; i < n; i++) {
		cJSON_AddItemToArray(arr, cJSON_CreateString(gone[i]));
		free(gone[i]);
	}
	free(gone);
	image_store_close(st);
	return 0;
}

struct gc_rm {
	const struct backend	*b;
};

static int
gc_rm(const char *path, void *arg, struct sbx_err *e)
{
	struct gc_rm *g = arg;

	return rm_tree(path, (void *)g->b, e);
}

int
core_image_gc(struct core *c, cJSON **out, struct sbx_err *e)
{
	struct image_store *st = image_store_open(0, e);
	struct gc_rm g = { backend_find(config_str(core_config(c), "backend")) };
	size_t nuse = 0;
	char **use;
	int blobs = 0, layers = 0, rc;
	int64_t bytes = 0;

	*out = NULL;
	if (st == NULL && e->code != SBX_ENOTFOUND)
		return -1;
	if (st == NULL) {
		*out = cJSON_CreateObject();
		cJSON_AddNumberToObject(*out, "blobs", 0);
		cJSON_AddNumberToObject(*out, "layers", 0);
		cJSON_AddNumberToObject(*out, "bytes", 0);
		return 0;
	}
	/* Layers of another key are removed by the backend that made them: the
	 * ns backend, whichever is the default. */
	if (g.b == NULL || g.b->image_rmtree == NULL)
		g.b = backend_find("ns");
	use = ids_in_use(&nuse);
	rc = image_store_gc(st, use, nuse, gc_rm, &g, core_tree_bytes, &blobs, &layers, &bytes,
	    e);
	for (size_t i = 0; i < nuse; i++)
		free(use[i]);
	free(use);
	image_store_close(st);
	if (rc < 0)
		return -1;
	*out = cJSON_CreateObject();
	cJSON_AddNumberToObject(*out, "blobs", blobs);
	cJSON_AddNumberToObject(*out, "layers", layers);
	cJSON_AddNumberToObject(*out, "bytes", (double)bytes);
	return 0;
}

int
core_image_allowed(struct core *c, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *tpl = xstrdup(config_str(core_config(c), "templates"));
	_cleanup_free_ char *copy = NULL;
	struct buf all;
	char *ts = NULL;

	/* images_allowed's entries, then the templates' images. */
	buf_init(&all, 1u << 20);
	(void)buf_printf(&all, "%s", config_str(core_config(c), "images_allowed"));
	for (char *p = strtok_r(tpl, ", \t", &ts); p; p = strtok_r(NULL, ", \t", &ts))
		if (strchr(p, '=') != NULL)
			(void)buf_printf(&all, ",%s", strchr(p, '=') + 1);
	if ((copy = buf_steal(&all)) == NULL)
		copy = xstrdup("");
	struct image_store *st = image_store_open(0, e);
	struct image_info **imgs = NULL;
	size_t n = 0;
	char *save = NULL;
	cJSON *arr;

	*out = NULL;
	if ((st == NULL && e->code != SBX_ENOTFOUND) ||
	    (st != NULL && image_store_list(st, &imgs, &n, e) < 0)) {
		image_store_close(st);
		return -1;
	}
	*out = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*out, "images");
	for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
		char pat[700];
		cJSON *o = cJSON_CreateObject();
		int found = 0;
		cJSON_AddStringToObject(o, "pattern", t);
		if (pattern_canon(t, pat, sizeof pat) == 0 && strchr(pat, '*') == NULL &&
		    !image_is_path(pat))
			cJSON_AddStringToObject(o, "ref", pat);
		for (size_t i = 0; i < n && !found; i++) {
			char one[700];
			snprintf(one, sizeof one, "%s", t);
			if (allowed_by(one, imgs[i]->ref, NULL, 0)) {
				cJSON_AddStringToObject(o, "id", imgs[i]->id);
				if (cJSON_GetObjectItemCaseSensitive(o, "ref") == NULL)
					cJSON_AddStringToObject(o, "ref", imgs[i]->ref);
				found = 1;
			}
		}
		cJSON_AddBoolToObject(o, "pulled", found);
		cJSON_AddItemToArray(arr, o);
	}
	for (size_t i = 0; i < n; i++)
		image_info_free(imgs[i]);
	free(imgs);
	image_store_close(st);
	return 0;
}
