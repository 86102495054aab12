/* Building VM images for the qemu backend (see qemu-image.h).
 *
 * Everything is made without root and without loop mounts: the initramfs is a
 * newc cpio archive written here (so its files belong to root and /dev/console
 * exists whoever builds it), and the root filesystem is a staging directory
 * turned into ext4 by `mke2fs -d`.  The kernel is Debian's cloud kernel by
 * default: its package is fetched once with `apt-get download` into
 * $XDG_CACHE_HOME/sbxtop/kernel (or $SBXTOP_KERNEL_CACHE) and unpacked with
 * `dpkg-deb -x`, never installed; its virtio modules (found with their
 * dependencies from each module's own "depends=" record) go into the
 * initramfs. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/qemu/qemu-image.h"
#include "lib/log.h"
#include "core/paths.h"
#include "backends/qemu/qemu.h"
#include "lib/buf.h"
#include "lib/util.h"

#define BUSYBOX			"/bin/busybox"
#define SEED_MAGIC		"SBXTOP-SEED"
#define DEFAULT_SIZE_MIB	1024
#define MAX_SIZE_MIB		(1024 * 1024)
#define KERNEL_META		"linux-image-cloud-amd64"
#define FETCH_TIMEOUT_MS	(10 * 60 * 1000)
#define TOOL_TIMEOUT_MS		(5 * 60 * 1000)
#define DEBOOTSTRAP_TIMEOUT_MS	(60 * 60 * 1000)
#define MAX_MODULES		32

/* The modules the guest needs, loaded in dependency order by the initramfs:
 * virtio-mmio transport (microvm has no PCI), the disks and the network. */
static const char *const wanted_modules[] = { "virtio_mmio", "virtio_blk", "virtio_net" };

/* The initramfs's /init: load the modules, find the ext4 root among the virtio
 * disks (the other one is the sandbox's seed), switch to it. */
static const char initrd_init[] =
"#!/bin/busybox sh\n"
"# sbxtop initramfs: virtio modules, then the root disk, then its init.\n"
"B=/bin/busybox\n"
"$B mount -t proc proc /proc\n"
"$B mount -t sysfs sys /sys\n"
"$B mount -t devtmpfs dev /dev\n"
"exec </dev/console >/dev/console 2>&1\n"
"for m in $($B cat /lib/modules/order); do\n"
"\t$B insmod /lib/modules/$m.ko || echo \"sbxtop-initrd: cannot load $m\"\n"
"done\n"
"i=0\n"
"while [ $i -lt 200 ]; do\n"
"\tfor d in /dev/vd?; do\n"
"\t\t[ -b \"$d\" ] && $B mount -t ext4 \"$d\" /newroot 2>/dev/null && break 2\n"
"\tdone\n"
"\t$B sleep 0.05; i=$((i + 1))\n"
"done\n"
"# A VM image's init, or an OCI image's (on a disk sbxtop made of its layers).\n"
"init=\n"
"for p in /sbin/sbxtop-init /opt/sbxtop/init; do\n"
"\t[ -z \"$init\" ] && [ -x \"/newroot$p\" ] && init=$p\n"
"done\n"
"if [ -z \"$init\" ]; then\n"
"\techo \"sbxtop-initrd: no root disk with /sbin/sbxtop-init or /opt/sbxtop/init found\"\n"
"\t$B ls -l /dev/vd* 2>&1\n"
"\t$B poweroff -f\n"
"fi\n"
"$B umount /proc /sys /dev\n"
"exec $B switch_root /newroot \"$init\"\n";

/* The guest's init on the root disk: mounts, network, the seed disk (secret and
 * settings from the host, read by root only: unlike the kernel command line it
 * is not visible to every process), then the agent as PID 1. */
static const char guest_init[] =
"#!/opt/sbxtop/busybox sh\n"
"# sbxtop guest init: mounts, network, the host's seed, then sbxtop-agent.\n"
"B=/opt/sbxtop/busybox\n"
"export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
"umask 022\n"
"$B mount -t proc proc /proc\n"
"$B mount -t sysfs sys /sys\n"
"$B mount -t devtmpfs dev /dev\n"
"$B mkdir -p /dev/pts /dev/shm\n"
"$B mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts\n"
"[ -e /dev/ptmx ] || $B ln -s pts/ptmx /dev/ptmx\n"
"$B mount -t tmpfs -o mode=1777 tmpfs /dev/shm\n"
"$B mount -t tmpfs -o mode=1777 tmpfs /tmp\n"
"$B mount -t tmpfs -o mode=0755 tmpfs /run\n"
"$B mkdir -p -m 0700 /run/sbxtop\n"
"deadline=14400; idle=0; hn=sandbox; seed=\n"
"for d in /dev/vd?; do\n"
"\t[ \"$($B head -c 11 \"$d\" 2>/dev/null)\" = " SEED_MAGIC " ] || continue\n"
"\tseed=$d\n"
"\tumask 077\n"
"\t$B head -c 4096 \"$d\" | $B tr -d '\\000' > /run/sbxtop/seed\n"
"\twhile IFS='=' read -r k v; do\n"
"\t\tcase \"$k\" in\n"
"\t\tsecret) printf '%s\\n' \"$v\" > /run/sbxtop/secret ;;\n"
"\t\tdeadline) deadline=$v ;;\n"
"\t\tidle) idle=$v ;;\n"
"\t\thostname) hn=$v ;;\n"
"\t\tesac\n"
"\tdone < /run/sbxtop/seed\n"
"\t$B rm -f /run/sbxtop/seed\n"
"\tumask 022\n"
"done\n"
"[ -s /run/sbxtop/secret ] || { echo 'sbxtop-init: no seed disk'; $B poweroff -f; }\n"
"$B hostname \"$hn\"\n"
"$B ip link set lo up\n"
"$B ip link set eth0 up\n"
"$B ip addr add 10.0.2.15/24 dev eth0\n"
"$B ip route add default via 10.0.2.2\n"
"$B mkdir -p /workspace\n"
"$B chown 1000:1000 /workspace 2>/dev/null\n"
"set -- --init --listen tcp:0.0.0.0:8080 --secret-file /run/sbxtop/secret \\\n"
"\t--workspace /workspace --deadline \"$deadline\"\n"
"[ \"$idle\" != 0 ] && set -- \"$@\" --idle \"$idle\"\n"
"# The seed is read again after a snapshot restore (POST /v1/reseed).\n"
"set -- \"$@\" --seed \"$seed\"\n"
"# The guest's own kernel: its OOM-kill count is this VM's (reason oom).\n"
"[ -r /proc/vmstat ] && set -- \"$@\" --oom-events /proc/vmstat\n"
"$B grep -q '^sandbox:' /etc/passwd 2>/dev/null && set -- \"$@\" --user sandbox\n"
"# An OCI image's Env, User and WorkingDir: one argument a line.\n"
"if [ -r /opt/sbxtop/image-args ]; then\n"
"\twhile IFS= read -r a; do set -- \"$@\" \"$a\"; done < /opt/sbxtop/image-args\n"
"fi\n"
"echo \"sbxtop-init: starting the agent\"\n"
"exec $B sh /opt/sbxtop/sbxtop-agent \"$@\"\n";

/* --- names and places ---------------------------------------------------------- */

int
image_name_valid(const char *name)
{
	/* Beside the VM images: the OCI store, the ns default image, and the
	 * ns disk templates. */
	static const char *const taken[] = { "oci", "host", "disks" };
	size_t n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(taken); i++)
		if (strcmp(name, taken[i]) == 0)
			return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return 0;
	return 1;
}

static char *
images_root(struct sbx_err *e)
{
	_cleanup_free_ char *data = paths_dir(PATHS_DATA, e);

	return data != NULL ? xasprintf("%s/images", data) : NULL;
}

char *
image_dir(const char *name, struct sbx_err *e)
{
	static const char *const parts[] = { "vmlinuz", "initrd", "rootfs.ext4", "image.json" };
	_cleanup_free_ char *root = NULL;
	char *dir;

	if (name == NULL)
		name = IMAGE_DEFAULT_NAME;
	if (!image_name_valid(name)) {
		sbx_error(e, SBX_EINVAL, "image names are letters, digits, '.', '_' and '-'",
		    "invalid image name '%s'", name);
		return NULL;
	}
	if ((root = images_root(e)) == NULL)
		return NULL;
	dir = xasprintf("%s/%s", root, name);
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, parts[i]);
		if (access(p, R_OK) < 0) {
			if (i == 0)
				sbx_error(e, SBX_ENOTFOUND, strcmp(name, IMAGE_DEFAULT_NAME) == 0 ?
				    "build it with `sbxtop image build`" : "see `sbxtop image ls`; build one with `sbxtop image build NAME`",
				    "no image '%s'", name);
			else
				sbx_error(e, SBX_EINVAL, "rebuild it with `sbxtop image build`",
				    "image '%s' is broken: %s is missing", name, parts[i]);
			free(dir);
			return NULL;
		}
	}
	return dir;
}

/* --- small file chores ------------------------------------------------------------ */

static int
write_text(const char *path, const char *text, mode_t mode, struct sbx_err *e)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || fchmod(fd, mode) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", path);
	return 0;
}

static int
copy_file(const char *from, const char *to, mode_t mode, struct sbx_err *e)
{
	char *argv[] = { "cp", "-L", "--", (char *)from, (char *)to, NULL };

	if (qemu_run(argv, NULL, TOOL_TIMEOUT_MS, NULL, e) < 0 || chmod(to, mode) < 0)
		return e->code ? -1 : sbx_error_errno(e, SBX_EIO, NULL, "cannot chmod %s", to);
	return 0;
}

static int
mkdirs(const char *base, const char *const *rel, size_t n, mode_t mode, struct sbx_err *e)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", base, rel[i]);
		if (mkdir_p(p, mode) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", p);
	}
	return 0;
}

/* --- the agent bundle (found as the ns backend finds it) --------------------------- */

/* --- the kernel ------------------------------------------------------------------- */

struct kernel {
	char	*vmlinuz;	/* path */
	char	*moddir;	/* lib/modules/VERSION, or NULL */
	char	*version;
	char	*source;	/* what it came from, for image.json */
};

static void
kernel_free(struct kernel *k)
{
	free(k->vmlinuz);
	free(k->moddir);
	free(k->version);
	free(k->source);
}

/* In an extracted kernel package tree: boot/vmlinuz-V and lib/modules/V. */
static int
kernel_from_tree(const char *tree, struct kernel *k, struct sbx_err *e)
{
	_cleanup_free_ char *boot = xasprintf("%s/boot", tree);
	DIR *d = opendir(boot);
	struct dirent *de;

	if (d == NULL)
		return sbx_error_errno(e, SBX_EINVAL, "give --kernel a vmlinuz file, a linux-image .deb or its extracted tree",
		    "%s has no boot/ directory", tree);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "vmlinuz-", 8) == 0 && k->vmlinuz == NULL) {
			k->vmlinuz = xasprintf("%s/%s", boot, de->d_name);
			k->version = xstrdup(de->d_name + 8);
		}
	closedir(d);
	if (k->vmlinuz == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "no boot/vmlinuz-* in %s", tree);
	k->moddir = xasprintf("%s/lib/modules/%s", tree, k->version);
	if (access(k->moddir, F_OK) < 0) {
		free(k->moddir);
		k->moddir = xasprintf("%s/usr/lib/modules/%s", tree, k->version);
		if (access(k->moddir, F_OK) < 0) {
			free(k->moddir);
			k->moddir = NULL;
		}
	}
	return 0;
}

static int
deb_extract(const char *deb, const char *into, struct sbx_err *e)
{
	char *argv[] = { "dpkg-deb", "-x", (char *)deb, (char *)into, NULL };

	if (mkdir_p(into, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", into);
	return qemu_run(argv, NULL, TOOL_TIMEOUT_MS, NULL, e);
}

/* The cached linux-image-V-cloud-amd64 package, fetched when missing. */
static char *
kernel_deb_cached(struct sbx_err *e)
{
	const char *env = getenv("SBXTOP_KERNEL_CACHE");
	_cleanup_free_ char *cache = NULL, *meta = NULL, *deps = NULL;
	char *found = NULL;
	struct dirent *de;
	DIR *d;

	if (env != NULL && env[0] == '/')
		cache = xstrdup(env);
	else if ((cache = paths_file(PATHS_CACHE, "kernel", 0, e)) == NULL)
		return NULL;
	if (mkdir_p(cache, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", cache);
		return NULL;
	}
	for (int round = 0; round < 3 && found == NULL; round++) {
		if ((d = opendir(cache)) == NULL) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", cache);
			return NULL;
		}
		while ((de = readdir(d)) != NULL) {
			const char *n = de->d_name;
			size_t len = strlen(n);
			if (strncmp(n, "linux-image-", 12) == 0 && len > 4 &&
			    strcmp(n + len - 4, ".deb") == 0 && strncmp(n, KERNEL_META "_", strlen(KERNEL_META) + 1) != 0) {
				free(found);
				found = xasprintf("%s/%s", cache, n);
			} else if (strncmp(n, KERNEL_META "_", strlen(KERNEL_META) + 1) == 0) {
				free(meta);
				meta = xasprintf("%s/%s", cache, n);
			}
		}
		closedir(d);
		if (found != NULL)
			break;
		if (round == 0 && meta == NULL) {
			/* The meta package names the current kernel package. */
			char *argv[] = { "apt-get", "download", "-q", KERNEL_META, NULL };
			if (qemu_run(argv, cache, FETCH_TIMEOUT_MS, NULL, e) < 0) {
				snprintf(e->hint, sizeof e->hint, "check the network and apt sources, or give --kernel PATH");
				return NULL;
			}
		} else if (meta != NULL) {
			char *argv[] = { "dpkg-deb", "-f", meta, "Depends", NULL };
			char pkg[128];
			if (qemu_run(argv, NULL, TOOL_TIMEOUT_MS, &deps, e) < 0)
				return NULL;
			if (sscanf(deps, " %127[a-z0-9.+-]", pkg) != 1 || strncmp(pkg, "linux-image-", 12) != 0) {
				sbx_error(e, SBX_EBACKEND, "give --kernel PATH", "%s depends on no linux-image package", meta);
				return NULL;
			}
			char *argv2[] = { "apt-get", "download", "-q", pkg, NULL };
			if (qemu_run(argv2, cache, FETCH_TIMEOUT_MS, NULL, e) < 0) {
				snprintf(e->hint, sizeof e->hint, "check the network and apt sources, or give --kernel PATH");
				return NULL;
			}
		}
	}
	if (found == NULL)
		sbx_error(e, SBX_EBACKEND, "give --kernel PATH", "no kernel package in %s after apt-get download", cache);
	return found;
}

static int
kernel_get(const char *arg, const char *work, struct kernel *k, struct sbx_err *e)
{
	struct stat st;
	_cleanup_free_ char *deb = NULL, *tree = xasprintf("%s/kernel", work);
	size_t len;

	memset(k, 0, sizeof *k);
	if (arg == NULL) {
		if ((deb = kernel_deb_cached(e)) == NULL)
			return -1;
		k->source = xasprintf("debian package %s", strrchr(deb, '/') + 1);
	} else if (stat(arg, &st) < 0) {
		return sbx_error_errno(e, SBX_EINVAL, "give --kernel a vmlinuz file, a linux-image .deb or its extracted tree",
		    "--kernel %s", arg);
	} else if (S_ISDIR(st.st_mode)) {
		k->source = xasprintf("extracted tree %s", arg);
		return kernel_from_tree(arg, k, e);
	} else if ((len = strlen(arg)) > 4 && strcmp(arg + len - 4, ".deb") == 0) {
		deb = xstrdup(arg);
		k->source = xasprintf("package %s", arg);
	} else {
		/* A bare kernel: whatever it needs must be built in. */
		k->vmlinuz = xstrdup(arg);
		k->version = xstrdup("unknown");
		k->source = xasprintf("file %s", arg);
		return 0;
	}
	if (deb_extract(deb, tree, e) < 0)
		return -1;
	return kernel_from_tree(tree, k, e);
}

/* --- modules ------------------------------------------------------------------------ */

struct modset {
	char	*names[MAX_MODULES];
	char	*paths[MAX_MODULES];
	int	 n;
};

static const char *find_root;
static const char *find_name;
static char *find_hit;

static int
find_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *base = path + ftw->base;
	size_t n = strlen(find_name);

	(void)st;
	if (type != FTW_F || strncmp(base, find_name, n) != 0 || strcmp(base + n, ".ko") != 0)
		return 0;
	find_hit = xstrdup(path);
	return 1;
}

/* Path of module name (as "virtio_blk" or "virtio-blk") under dir, or NULL. */
static char *
module_path(const char *dir, const char *name)
{
	char alt[128];

	find_root = dir;
	find_hit = NULL;
	snprintf(alt, sizeof alt, "%s", name);
	find_name = alt;
	nftw(dir, find_one, 16, FTW_PHYS);
	if (find_hit == NULL) {
		for (char *p = alt; *p; p++)
			if (*p == '_')
				*p = '-';
		nftw(dir, find_one, 16, FTW_PHYS);
	}
	return find_hit;
}

/* Add name after its dependencies (read from the module's .modinfo strings). */
static int
module_add(struct modset *m, const char *dir, const char *name, int depth, struct sbx_err *e)
{
	_cleanup_free_ char *path = NULL, *data = NULL;
	size_t len = 0;

	for (int i = 0; i < m->n; i++)
		if (strcmp(m->names[i], name) == 0)
			return 0;
	if (depth > 8 || m->n >= MAX_MODULES)
		return sbx_error(e, SBX_EINVAL, NULL, "module dependencies of %s go too deep", name);
	if ((path = module_path(dir, name)) == NULL)
		return 0;	/* built into the kernel */
	if ((data = read_file(path, 64 << 20, &len)) == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", path);
	for (size_t i = 0; i + 8 < len; i++) {
		if (data[i] != '\0' || memcmp(data + i + 1, "depends=", 8) != 0)
			continue;
		_cleanup_free_ char *deps = xstrdup(data + i + 9);
		char *save = NULL;
		for (char *d = strtok_r(deps, ",", &save); d != NULL; d = strtok_r(NULL, ",", &save))
			if (module_add(m, dir, d, depth + 1, e) < 0)
				return -1;
		break;
	}
	m->names[m->n] = xstrdup(name);
	m->paths[m->n++] = steal_pointer(&path);
	return 0;
}

/* --- the initramfs (newc cpio) -------------------------------------------------------- */

struct cpio {
	FILE		*f;
	unsigned	 ino;
};

static void
cpio_entry(struct cpio *c, const char *name, unsigned mode, unsigned rmaj, unsigned rmin,
    const void *data, size_t size)
{
	static const char zeros[4];
	size_t namesize = strlen(name) + 1;

	fprintf(c->f, "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
	    ++c->ino, mode, 0u, 0u, (mode & 0170000) == 0040000 ? 2u : 1u, 0u, size,
	    0u, 0u, rmaj, rmin, namesize, 0u);
	fwrite(name, 1, namesize, c->f);
	fwrite(zeros, 1, (4 - (110 + namesize) % 4) % 4, c->f);
	if (size > 0) {
		fwrite(data, 1, size, c->f);
		fwrite(zeros, 1, (4 - size % 4) % 4, c->f);
	}
}

static int
cpio_file(struct cpio *c, const char *name, unsigned mode, const char *from, struct sbx_err *e)
{
	size_t len = 0;
	_cleanup_free_ char *data = read_file(from, 256 << 20, &len);

	if (data == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", from);
	cpio_entry(c, name, 0100000 | mode, 0, 0, data, len);
	return 0;
}

static int
make_initrd(const char *out, const struct modset *m, struct sbx_err *e)
{
	static const char *const dirs[] = { "bin", "dev", "proc", "sys", "newroot", "lib", "lib/modules" };
	struct cpio c = { NULL, 0 };
	char order[MAX_MODULES * 64] = "";
	int rc = -1;

	if ((c.f = fopen(out, "we")) == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", out);
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		cpio_entry(&c, dirs[i], 0040755, 0, 0, NULL, 0);
	cpio_entry(&c, "dev/console", 0020600, 5, 1, NULL, 0);
	cpio_entry(&c, "init", 0100755, 0, 0, initrd_init, strlen(initrd_init));
	if (cpio_file(&c, "bin/busybox", 0755, BUSYBOX, e) < 0)
		goto out;
	for (int i = 0; i < m->n; i++) {
		_cleanup_free_ char *name = xasprintf("lib/modules/%s.ko", m->names[i]);
		if (cpio_file(&c, name, 0644, m->paths[i], e) < 0)
			goto out;
		strncat(order, m->names[i], sizeof order - strlen(order) - 2);
		strcat(order, "\n");
	}
	cpio_entry(&c, "lib/modules/order", 0100644, 0, 0, order, strlen(order));
	cpio_entry(&c, "TRAILER!!!", 0, 0, 0, NULL, 0);
	rc = 0;
out:
	if (fclose(c.f) != 0 && rc == 0)
		rc = sbx_error_errno(e, SBX_EIO, "is the disk full?", "cannot write %s", out);
	return rc;
}

/* --- the root filesystem ----------------------------------------------------------------- */

static int
stage_busybox_root(const char *root, struct sbx_err *e)
{
	static const char *const dirs[] = { "bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc",
	    "sys", "dev", "tmp", "run", "root", "workspace", "var/tmp", "home" };
	_cleanup_free_ char *list = NULL, *bb = xasprintf("%s/bin/busybox", root);
	char *argv[] = { BUSYBOX, "--list-full", NULL }, *save = NULL;

	if (mkdirs(root, dirs, ARRAY_SIZE(dirs), 0755, e) < 0 || copy_file(BUSYBOX, bb, 0755, e) < 0)
		return -1;
	if (qemu_run(argv, NULL, TOOL_TIMEOUT_MS, &list, e) < 0)
		return -1;
	for (char *l = strtok_r(list, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		_cleanup_free_ char *p = xasprintf("%s/%s", root, l);
		if (strstr(l, "..") != NULL || strcmp(l, "bin/busybox") == 0 || strcmp(l, "linuxrc") == 0)
			continue;
		if (symlink("/bin/busybox", p) < 0 && errno != EEXIST)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", p);
	}
	struct { const char *name, *text; } etc[] = {
		{ "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"
		    "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n"
		    "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" },
		{ "etc/group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n" },
		{ "etc/hosts", "127.0.0.1 localhost\n" },
		{ "etc/resolv.conf", "nameserver 10.0.2.3\n" },
		{ "etc/os-release", "NAME=\"sbxtop busybox\"\nID=sbxtop-busybox\n" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(etc); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", root, etc[i].name);
		if (write_text(p, etc[i].text, 0644, e) < 0)
			return -1;
	}
	_cleanup_free_ char *tmp = xasprintf("%s/tmp", root);
	chmod(tmp, 01777);
	return 0;
}

static int stage_fixup(const char *root, struct sbx_err *e);

static int
stage_from(const char *root, const char *from, struct sbx_err *e)
{
	struct stat st;

	if (stat(from, &st) < 0)
		return sbx_error_errno(e, SBX_EINVAL, "give --from a root filesystem directory or tarball",
		    "--from %s", from);
	if (S_ISDIR(st.st_mode)) {
		_cleanup_free_ char *src = xasprintf("%s/.", from);
		char *argv[] = { "cp", "-a", "--", src, (char *)root, NULL };
		if (qemu_run(argv, NULL, TOOL_TIMEOUT_MS, NULL, e) < 0)
			return -1;
	} else {
		char *argv[] = { "tar", "-xf", (char *)from, "-C", (char *)root, "--exclude=./dev/*", NULL };
		if (qemu_run(argv, NULL, TOOL_TIMEOUT_MS, NULL, e) < 0)
			return -1;
	}
	return stage_fixup(root, e);
}

/* What every distribution root needs here: the mount points the guest init
 * uses, and a "sandbox" user (the agent runs commands as it when it exists). */
static int
stage_fixup(const char *root, struct sbx_err *e)
{
	static const char *const dirs[] = { "proc", "sys", "dev", "tmp", "run", "workspace", "etc", "sbin" };

	if (mkdirs(root, dirs, ARRAY_SIZE(dirs), 0755, e) < 0)
		return -1;
	_cleanup_free_ char *pw = xasprintf("%s/etc/passwd", root);
	_cleanup_free_ char *text = read_file(pw, 1 << 20, NULL);
	if (text == NULL || (strncmp(text, "sandbox:", 8) != 0 && strstr(text, "\nsandbox:") == NULL)) {
		_cleanup_free_ char *gr = xasprintf("%s/etc/group", root);
		FILE *f = fopen(pw, "ae");
		if (f != NULL) {
			fputs("sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n", f);
			fclose(f);
		}
		if ((f = fopen(gr, "ae")) != NULL) {
			fputs("sandbox:x:1000:\n", f);
			fclose(f);
		}
	}
	return 0;
}

/* A Debian (or Ubuntu) root made by debootstrap --variant=minbase, with the
 * packages asked for.  debootstrap creates device nodes and chroots: it needs
 * root. */
static int
stage_debootstrap(const char *root, const char *suite, const char *packages, struct sbx_err *e)
{
	const char *mirror = getenv("SBXTOP_DEBIAN_MIRROR");
	_cleanup_free_ char *inc = NULL;
	char *argv[8];
	int argc = 0;

	if (geteuid() != 0)
		return sbx_error(e, SBX_EUNSUPPORTED, "run `sbxtop image build --debootstrap` as root, or "
		    "debootstrap a directory yourself and give it to --from",
		    "debootstrap needs root (it makes device nodes and chroots)");
	if (strspn(suite, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(suite) || suite[0] == '-' ||
	    strlen(suite) > 32)
		return sbx_error(e, SBX_EINVAL, "give a suite name such as bookworm", "--debootstrap: '%s' is "
		    "not a suite name", suite);
	if (packages != NULL && (packages[0] == '\0' || packages[0] == '-' ||
	    strspn(packages, "abcdefghijklmnopqrstuvwxyz0123456789.+-,") != strlen(packages)))
		return sbx_error(e, SBX_EINVAL, "give Debian package names separated by commas",
		    "--packages: '%s' is not a list of package names", packages);
	argv[argc++] = "debootstrap";
	argv[argc++] = "--variant=minbase";
	if (packages != NULL) {
		inc = xasprintf("--include=%s", packages);
		argv[argc++] = inc;
	}
	argv[argc++] = (char *)suite;
	argv[argc++] = (char *)root;
	argv[argc++] = (char *)(mirror != NULL && *mirror ? mirror : "http://deb.debian.org/debian");
	argv[argc] = NULL;
	if (qemu_run(argv, NULL, DEBOOTSTRAP_TIMEOUT_MS, NULL, e) < 0) {
		if (e->hint[0] == '\0')
			snprintf(e->hint, sizeof e->hint, "check the suite, the package names and the "
			    "network (SBXTOP_DEBIAN_MIRROR sets the mirror)");
		return -1;
	}
	/* What the guest's network needs, as in the busybox image. */
	_cleanup_free_ char *resolv = xasprintf("%s/etc/resolv.conf", root);
	unlink(resolv);
	if (write_text(resolv, "nameserver 10.0.2.3\n", 0644, e) < 0)
		return -1;
	return stage_fixup(root, e);
}

/* The agent bundle, busybox for the init, and the init: in every image. */
static int
stage_inject(const char *root, const char *bundle, struct sbx_err *e)
{
	_cleanup_free_ char *opt = xasprintf("%s/opt/sbxtop", root);
	_cleanup_free_ char *bb = xasprintf("%s/busybox", opt);
	_cleanup_free_ char *init = xasprintf("%s/sbin/sbxtop-init", root);
	_cleanup_free_ char *src = xasprintf("%s/.", bundle);
	char *argv[] = { "cp", "-a", "--", src, opt, NULL };

	if (mkdir_p(opt, 0755) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", opt);
	if (qemu_run(argv, NULL, TOOL_TIMEOUT_MS, NULL, e) < 0 || copy_file(BUSYBOX, bb, 0755, e) < 0)
		return -1;
	unlink(init);
	return write_text(init, guest_init, 0755, e);
}

int
qemu_image_inject(const cJSON *spec, char **dir, struct sbx_err *e)
{
	/* The init goes to /opt/sbxtop/init, not /sbin: an image's /sbin may be a
	 * link (merged /usr), which a directory above it would hide. */
	static const struct { const char *path; mode_t mode; } dirs[] = {
		{ "proc", 0555 }, { "sys", 0555 }, { "dev", 0755 }, { "tmp", 01777 }, { "run", 0755 },
		{ "workspace", 0755 }, { "etc", 0755 }, { "opt", 0755 },
	};
	_cleanup_free_ char *bundle = paths_agent_bundle(e), *cache = NULL, *root = NULL;
	const cJSON *v;
	struct buf args;
	int rc = -1;

	*dir = NULL;
	if (bundle == NULL || (cache = paths_ensure(PATHS_CACHE, e)) == NULL)
		return -1;
	if (access(BUSYBOX, X_OK) < 0)
		return sbx_error(e, SBX_EUNSUPPORTED, "install busybox-static (scripts/deps.sh)",
		    "no %s: the guest's init needs a static busybox", BUSYBOX);
	root = xasprintf("%s/qemu-inject.XXXXXX", cache);
	if (mkdtemp(root) == NULL || chmod(root, 0755) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", root);
	buf_init(&args, 1u << 20);
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", root, dirs[i].path);
		if (mkdir_exact(p, dirs[i].mode) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", p);
			goto out;
		}
	}
	{
		_cleanup_free_ char *opt = xasprintf("%s/opt/sbxtop", root);
		_cleanup_free_ char *bb = xasprintf("%s/busybox", opt);
		_cleanup_free_ char *init = xasprintf("%s/init", opt);
		_cleanup_free_ char *src = xasprintf("%s/.", bundle);
		_cleanup_free_ char *resolv = xasprintf("%s/etc/resolv.conf", root);
		_cleanup_free_ char *ap = xasprintf("%s/image-args", opt);
		char *argv[] = { "cp", "-a", "--", src, opt, NULL };
		if (mkdir_exact(opt, 0755) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", opt);
			goto out;
		}
		if (qemu_run(argv, NULL, TOOL_TIMEOUT_MS, NULL, e) < 0 ||
		    copy_file(BUSYBOX, bb, 0755, e) < 0 || write_text(init, guest_init, 0755, e) < 0 ||
		    write_text(resolv, "nameserver 10.0.2.3\n", 0644, e) < 0)
			goto out;
		/* One argument a line: values with a newline cannot be said so. */
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(spec, "env"))
			if (cJSON_IsString(v) && strchr(v->valuestring, '\n') == NULL)
				(void)buf_printf(&args, "--env\n%s\n", v->valuestring);
		if ((v = cJSON_GetObjectItemCaseSensitive(spec, "user")) != NULL &&
		    cJSON_IsString(v) && v->valuestring[0] && !strchr(v->valuestring, '\n'))
			(void)buf_printf(&args, "--user\n%s\n--own-workspace\n", v->valuestring);
		if ((v = cJSON_GetObjectItemCaseSensitive(spec, "workdir")) != NULL &&
		    cJSON_IsString(v) && !strchr(v->valuestring, '\n'))
			(void)buf_printf(&args, "--cwd\n%s\n", v->valuestring);
		if (write_text(ap, args.data ? args.data : "", 0644, e) < 0)
			goto out;
	}
	*dir = steal_pointer(&root);
	rc = 0;
out:
	buf_free(&args);
	if (root != NULL) {
		struct sbx_err scratch;
		(void)qemu_rmtree(root, &scratch);
	}
	return rc;
}

static int
make_ext4(const char *root, const char *img, int64_t size_mib, struct sbx_err *e)
{
	_cleanup_free_ char *out = NULL;
	char size[32];
	char *argv[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-L", "sbxtop-root", "-E", "root_owner=0:0",
	    "-d", (char *)root, (char *)img, size, NULL };

	snprintf(size, sizeof size, "%lldM", (long long)size_mib);
	if (qemu_run_status(argv, NULL, TOOL_TIMEOUT_MS, &out, NULL, e) < 0) {
		/* mke2fs says so in words only ("Could not allocate block", "No space
		 * left", "Filesystem too small"). */
		if (out != NULL && (strstr(out, "allocate") != NULL || strstr(out, "space") != NULL ||
		    strstr(out, "too small") != NULL)) {
			e->reason = SBX_R_NO_SPACE;
			snprintf(e->hint, sizeof e->hint, "give a larger --size (MiB)");
		}
		return -1;
	}
	return 0;
}

/* --- build, list, remove ------------------------------------------------------------------- */

int
image_build(const struct image_build_opts *o, cJSON **info, struct sbx_err *e)
{
	const char *name = o->name != NULL ? o->name : IMAGE_DEFAULT_NAME;
	int64_t size = o->size_mib > 0 ? o->size_mib : DEFAULT_SIZE_MIB;
	_cleanup_free_ char *root = NULL, *work = NULL, *dest = NULL, *old = NULL, *bundle = NULL,
	    *stage = NULL, *path = NULL, *text = NULL, *mke2fs = NULL;
	struct kernel k;
	struct modset mods = { .n = 0 };
	struct sbx_err scratch;
	cJSON *j = NULL, *arr;
	int rc = -1;
	int64_t t0 = now_ms();

	memset(&k, 0, sizeof k);
	if (info != NULL)
		*info = NULL;
	if (!image_name_valid(name))
		return sbx_error(e, SBX_EINVAL, "image names are 1 to 64 letters, digits, '.', '_' and '-'",
		    "invalid image name '%s'", name);
	if (o->size_mib < 0 || o->size_mib > MAX_SIZE_MIB)
		return sbx_error(e, SBX_EINVAL, NULL, "--size must be 1 to %d MiB", MAX_SIZE_MIB);
	if (o->debootstrap != NULL && o->from != NULL)
		return sbx_error(e, SBX_EINVAL, "give one of them", "--debootstrap and --from both give the "
		    "root filesystem");
	if (o->packages != NULL && o->debootstrap == NULL)
		return sbx_error(e, SBX_EINVAL, "add --debootstrap SUITE", "--packages installs into a "
		    "debootstrap root only");
	if (o->debootstrap != NULL) {
		_cleanup_free_ char *db = qemu_which("debootstrap");
		if (db == NULL)
			return sbx_error(e, SBX_EUNSUPPORTED, "install debootstrap (scripts/deps.sh)",
			    "debootstrap is not installed");
	}
	if (access(BUSYBOX, X_OK) < 0)
		return sbx_error(e, SBX_EUNSUPPORTED, "install busybox-static (scripts/deps.sh)",
		    "no %s: the image needs a static busybox", BUSYBOX);
	if ((mke2fs = qemu_which("mke2fs")) == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "install e2fsprogs (scripts/deps.sh)", "mke2fs is not installed");
	if ((bundle = paths_agent_bundle(e)) == NULL || (root = images_root(e)) == NULL)
		return -1;
	if (mkdir_p(root, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", root);
	dest = xasprintf("%s/%s", root, name);
	work = xasprintf("%s/.build-%s-%d", root, name, (int)getpid());
	old = xasprintf("%s/.old-%s-%d", root, name, (int)getpid());
	if (mkdir(work, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", work);

	/* The kernel and its modules. */
	if (kernel_get(o->kernel, work, &k, e) < 0)
		goto out;
	path = xasprintf("%s/vmlinuz", work);
	if (copy_file(k.vmlinuz, path, 0644, e) < 0)
		goto out;
	if (k.moddir != NULL)
		for (size_t i = 0; i < ARRAY_SIZE(wanted_modules); i++)
			if (module_add(&mods, k.moddir, wanted_modules[i], 0, e) < 0)
				goto out;
	free(path);
	path = xasprintf("%s/initrd", work);
	if (make_initrd(path, &mods, e) < 0)
		goto out;

	/* The root filesystem. */
	stage = xasprintf("%s/root", work);
	if (mkdir(stage, 0755) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", stage);
		goto out;
	}
	if ((o->debootstrap != NULL ? stage_debootstrap(stage, o->debootstrap, o->packages, e) :
	    o->from == NULL ? stage_busybox_root(stage, e) : stage_from(stage, o->from, e)) < 0 ||
	    stage_inject(stage, bundle, e) < 0)
		goto out;
	free(path);
	path = xasprintf("%s/rootfs.ext4", work);
	if (make_ext4(stage, path, size, e) < 0)
		goto out;
	if (qemu_rmtree(stage, e) < 0)
		goto out;
	if (k.moddir != NULL || (o->kernel != NULL && strstr(k.source, "package") != NULL)) {
		_cleanup_free_ char *kt = xasprintf("%s/kernel", work);
		if (qemu_rmtree(kt, e) < 0)
			goto out;
	}

	/* What was built and how. */
	j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "format", 1);
	cJSON_AddStringToObject(j, "name", name);
	cJSON_AddNumberToObject(j, "built_at", (double)wall_ms());
	cJSON_AddStringToObject(j, "arch", "x86_64");
	cJSON_AddStringToObject(j, "kernel_version", k.version);
	cJSON_AddStringToObject(j, "kernel_source", k.source);
	arr = cJSON_AddArrayToObject(j, "initrd_modules");
	for (int i = 0; i < mods.n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(mods.names[i]));
	if (o->debootstrap != NULL) {
		_cleanup_free_ char *f = xasprintf("debootstrap:%s", o->debootstrap);
		cJSON_AddStringToObject(j, "rootfs_from", f);
		if (o->packages != NULL)
			cJSON_AddStringToObject(j, "packages", o->packages);
	} else {
		cJSON_AddStringToObject(j, "rootfs_from", o->from != NULL ? o->from : "busybox");
	}
	cJSON_AddStringToObject(j, "busybox", BUSYBOX);
	cJSON_AddStringToObject(j, "agent_bundle", bundle);
	cJSON_AddNumberToObject(j, "size_mib", (double)size);
	cJSON_AddStringToObject(j, "init", "/sbin/sbxtop-init");
	cJSON_AddNumberToObject(j, "build_ms", (double)(now_ms() - t0));
	text = cJSON_Print(j);
	free(path);
	path = xasprintf("%s/image.json", work);
	if (write_text(path, text, 0644, e) < 0)
		goto out;

	/* In place: an old image of that name is replaced whole. */
	if (rename(dest, old) < 0 && errno != ENOENT) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot move the old %s aside", dest);
		goto out;
	}
	if (rename(work, dest) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot put the image at %s", dest);
		(void)rename(old, dest);
		goto out;
	}
	(void)qemu_rmtree(old, &scratch);
	cJSON_AddStringToObject(j, "dir", dest);
	if (info != NULL)
		*info = steal_pointer(&j);
	rc = 0;
out:
	if (rc < 0)
		(void)qemu_rmtree(work, &scratch);
	for (int i = 0; i < mods.n; i++) {
		free(mods.names[i]);
		free(mods.paths[i]);
	}
	kernel_free(&k);
	cJSON_Delete(j);
	return rc;
}

cJSON *
qemu_store_list(const char *root, const char *meta,
    char *(*dir_of)(const char *name, struct sbx_err *e))
{
	cJSON *arr = cJSON_CreateArray();
	struct dirent *de;
	DIR *d;

	if ((d = opendir(root)) == NULL)
		return arr;
	while ((de = readdir(d)) != NULL) {
		struct sbx_err sub;
		_cleanup_free_ char *dir = NULL, *p = NULL, *text = NULL, *full = NULL;
		cJSON *o = NULL;
		if (de->d_name[0] == '.' || !image_name_valid(de->d_name))
			continue;
		if ((dir = dir_of(de->d_name, &sub)) != NULL) {
			p = xasprintf("%s/%s", dir, meta);
			if ((text = read_file(p, 1 << 20, NULL)) != NULL)
				o = cJSON_Parse(text);
		}
		if (o == NULL || !cJSON_IsObject(o)) {
			cJSON_Delete(o);
			o = cJSON_CreateObject();
			if (dir == NULL)
				cJSON_AddStringToObject(o, "error", sub.msg);
			else {
				_cleanup_free_ char *why = xasprintf("unreadable %s", meta);
				cJSON_AddStringToObject(o, "error", why);
			}
		}
		cJSON_DeleteItemFromObjectCaseSensitive(o, "name");
		cJSON_AddStringToObject(o, "name", de->d_name);
		cJSON_DeleteItemFromObjectCaseSensitive(o, "dir");
		full = xasprintf("%s/%s", root, de->d_name);
		cJSON_AddStringToObject(o, "dir", full);
		cJSON_AddItemToArray(arr, o);
	}
	closedir(d);
	return arr;
}

int
image_store_rm(const char *root, const char *kind, const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *dir = NULL;
	char hint[64];
	struct stat st;

	if (name == NULL || !image_name_valid(name))
		return sbx_error(e, SBX_EINVAL, NULL, "invalid %s name '%s'", kind, name ? name : "");
	dir = xasprintf("%s/%s", root, name);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(hint, sizeof hint, "see `sbxtop %s ls`", kind);
		return sbx_error(e, SBX_ENOTFOUND, hint, "no %s '%s'", kind, name);
	}
	return qemu_rmtree(dir, e);
}

cJSON *
image_list(struct sbx_err *e)
{
	_cleanup_free_ char *root = images_root(e);

	return root ? qemu_store_list(root, "image.json", image_dir) : NULL;
}

int
image_rm(const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *root = images_root(e);

	return root ? image_store_rm(root, "image", name, e) : -1;
}
