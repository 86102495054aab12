/* The ns backend's user id mapping: which host ids the sandbox's ids become, how
 * the maps are written, and how a sandbox's files are removed afterwards even
 * when subordinate uids own them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <pwd.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/ns/ns-idmap.h"
#include "lib/util.h"

static const char *const tool_dirs[] = { "/usr/bin", "/bin", "/usr/sbin", "/sbin",
    "/usr/local/bin" };

/* Find a setuid helper in the usual system directories (never $PATH: the
 * helper is trusted with our ids). */
static int
find_tool(const char *name, char *out, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(tool_dirs); i++) {
		snprintf(out, len, "%s/%s", tool_dirs[i], name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	return -1;
}

/* The first range for user (name or number) in /etc/subuid or /etc/subgid. */
static int
sub_range(const char *file, const char *name, unsigned long id, unsigned long *start,
    unsigned long *count)
{
	FILE *f = fopen(file, "re");
	char line[512], num[32];
	int found = 0;

	if (f == NULL)
		return 0;
	snprintf(num, sizeof num, "%lu", id);
	while (!found && fgets(line, sizeof line, f) != NULL) {
		char *who = strtok(line, ":\n"), *s = strtok(NULL, ":\n"), *c = strtok(NULL, ":\n");
		if (who == NULL || s == NULL || c == NULL)
			continue;
		if (strcmp(who, num) != 0 && (name == NULL || strcmp(who, name) != 0))
			continue;
		*start = strtoul(s, NULL, 10);
		*count = strtoul(c, NULL, 10);
		found = *count > 0;
	}
	fclose(f);
	return found;
}

int
ns_idmap_choose(struct ns_idmap *m, struct sbx_err *e)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	struct passwd *pw = getpwuid(uid);
	const char *name = pw != NULL ? pw->pw_name : NULL;
	unsigned long us = 0, uc = 0, gs = 0, gc = 0;
	char tool[64];

	memset(m, 0, sizeof *m);
	if (uid == 0) {
		/* As root the sandbox's root must still not be host root: map all of
		 * 0..65535 to root's subordinate range, or a fixed high range. */
		m->mode = NS_MAP_ROOT;
		m->count = NS_RANGE_COUNT;
		if (sub_range("/etc/subuid", name, 0, &us, &uc) && uc >= NS_RANGE_COUNT &&
		    sub_range("/etc/subgid", name, 0, &gs, &gc) && gc >= NS_RANGE_COUNT) {
			m->uid_base = (uid_t)us;
			m->gid_base = (gid_t)gs;
			snprintf(m->where, sizeof m->where, "root's range in /etc/subuid and /etc/subgid");
		} else {
			m->uid_base = NS_ROOT_RANGE_START;
			m->gid_base = NS_ROOT_RANGE_START;
			snprintf(m->where, sizeof m->where, "the fixed range %u-%u (no entry for root in /etc/subuid)",
			    NS_ROOT_RANGE_START, NS_ROOT_RANGE_START + NS_RANGE_COUNT - 1);
		}
		m->have_user = 1;
		return 0;
	}
	m->uid_base = uid;
	m->gid_base = gid;
	if (sub_range("/etc/subuid", name, uid, &us, &uc) &&
	    sub_range("/etc/subgid", name, uid, &gs, &gc) &&
	    uc > NS_SANDBOX_UID && gc > NS_SANDBOX_UID &&
	    find_tool("newuidmap", tool, sizeof tool) == 0 &&
	    find_tool("newgidmap", tool, sizeof tool) == 0) {
		m->mode = NS_MAP_HELPER;
		m->sub_uid = (uid_t)us;
		m->sub_gid = (gid_t)gs;
		/* Inside 0 is the caller, 1.. the range. */
		m->count = 1 + (unsigned)(uc < gc ? uc : gc);
		if (m->count > NS_RANGE_COUNT)
			m->count = NS_RANGE_COUNT;
		m->have_user = 1;
		snprintf(m->where, sizeof m->where, "your range in /etc/subuid through newuidmap");
		return 0;
	}
	m->mode = NS_MAP_SINGLE;
	m->count = 1;
	m->have_user = 0;
	snprintf(m->where, sizeof m->where, "your uid alone (no /etc/subuid range or no newuidmap)");
	(void)e;
	return 0;
}

uid_t
ns_idmap_host_uid(const struct ns_idmap *m, uid_t in)
{
	if (in >= m->count)
		return (uid_t)-1;
	if (m->mode == NS_MAP_HELPER && in > 0)
		return m->sub_uid + in - 1;
	return m->uid_base + in;
}

gid_t
ns_idmap_host_gid(const struct ns_idmap *m, gid_t in)
{
	if (in >= m->count)
		return (gid_t)-1;
	if (m->mode == NS_MAP_HELPER && in > 0)
		return m->sub_gid + in - 1;
	return m->gid_base + in;
}

static int
write_proc(pid_t pid, const char *file, const char *text, struct sbx_err *e)
{
	char path[64];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, "run `sbxtop doctor` to check user namespaces",
		    "cannot write %s", path);
	return 0;
}

/* Run newuidmap or newgidmap: PID 0 ID 1  1 SUB COUNT-1 (inside 0 is us). */
static int
run_helper(const char *name, pid_t pid, unsigned long id, unsigned long sub, unsigned count,
    struct sbx_err *e)
{
	char tool[64], a1[24], a2[24], a3[24], a4[24];
	char *argv[] = { tool, a1, "0", a2, "1", "1", a3, a4, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	pid_t child;
	int st, rc;

	if (find_tool(name, tool, sizeof tool) < 0)
		return sbx_error(e, SBX_EUNSUPPORTED, "install the uidmap package", "%s not found", name);
	snprintf(a1, sizeof a1, "%d", (int)pid);
	snprintf(a2, sizeof a2, "%lu", id);
	snprintf(a3, sizeof a3, "%lu", sub);
	snprintf(a4, sizeof a4, "%u", count - 1);
	if ((rc = posix_spawn(&child, tool, NULL, NULL, argv, envp)) != 0) {
		errno = rc;
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot run %s", tool);
	}
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sbx_error(e, SBX_EBACKEND, "check your ranges in /etc/subuid and /etc/subgid",
		    "%s %d failed (status %d)", name, (int)pid, st);
	return 0;
}

int
ns_idmap_write(const struct ns_idmap *m, pid_t pid, struct sbx_err *e)
{
	char map[96];

	switch (m->mode) {
	case NS_MAP_ROOT:
		snprintf(map, sizeof map, "0 %u %u\n", (unsigned)m->uid_base, m->count);
		if (write_proc(pid, "uid_map", map, e) < 0)
			return -1;
		snprintf(map, sizeof map, "0 %u %u\n", (unsigned)m->gid_base, m->count);
		return write_proc(pid, "gid_map", map, e);
	case NS_MAP_HELPER:
		if (run_helper("newuidmap", pid, m->uid_base, m->sub_uid, m->count, e) < 0)
			return -1;
		return run_helper("newgidmap", pid, m->gid_base, m->sub_gid, m->count, e);
	case NS_MAP_SINGLE:
		/* An unprivileged map of one id needs setgroups denied first. */
		if (write_proc(pid, "setgroups", "deny", e) < 0)
			return -1;
		snprintf(map, sizeof map, "0 %u 1\n", (unsigned)m->uid_base);
		if (write_proc(pid, "uid_map", map, e) < 0)
			return -1;
		snprintf(map, sizeof map, "0 %u 1\n", (unsigned)m->gid_base);
		return write_proc(pid, "gid_map", map, e);
	}
	return sbx_error(e, SBX_EINTERNAL, NULL, "bad id map mode");
}

/* Remove name under dfd, depth first, never crossing into another filesystem
 * (nothing should be mounted there on the host; if something is, leave it). */
static int
rm_at(int dfd, const char *name, dev_t dev, int depth)
{
	struct stat st;
	int fd, rc = 0;
	DIR *d;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (st.st_dev != dev) {
		errno = EBUSY;
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
	if (depth > 256) {
		errno = ELOOP;
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(dfd, name, 0700, 0) == 0)
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if ((st.st_mode & 0300) != 0300 && geteuid() != 0)
		(void)fchmod(fd, 0700);
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	for (int pass = 0; pass < 2; pass++) {
		struct dirent *de;
		rewinddir(d);
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (rm_at(dirfd(d), de->d_name, dev, depth + 1) < 0)
				rc = -1;
		}
		if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
			rc = 0;
			break;
		}
		if (errno != ENOTEMPTY)
			rc = -1;
	}
	closedir(d);
	return rc;
}

static int
rmtree_here(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	return rm_at(AT_FDCWD, path, st.st_dev, 0);
}

int
ns_idmap_run(const struct ns_idmap *m, int (*fn)(void *arg, void *report), void *arg,
    void *report, size_t rlen, int *status, const char *what, struct sbx_err *e)
{
	return ns_idmap_run2(m, NULL, fn, arg, report, rlen, status, what, e);
}

int
ns_idmap_run2(const struct ns_idmap *m, int (*pre)(void *arg, void *report),
    int (*fn)(void *arg, void *report), void *arg, void *report, size_t rlen, int *status,
    const char *what, struct sbx_err *e)
{
	int p2c[2], c2p[2];
	pid_t pid;
	char c = 0;

	*status = 0;
	if (pipe2(p2c, O_CLOEXEC) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "pipe");
	if (pipe2(c2p, O_CLOEXEC) < 0) {
		close(p2c[0]);
		close(p2c[1]);
		return sbx_error_errno(e, SBX_EIO, NULL, "pipe");
	}
	if ((pid = fork()) < 0) {
		close(p2c[0]); close(p2c[1]); close(c2p[0]); close(c2p[1]);
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "fork");
	}
	if (pid == 0) {
		/* Raw system calls for the ids, as in the launcher's child: the
		 * caller may be the threaded core server. */
		close(p2c[1]);
		close(c2p[0]);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(2);
		(void)!write(c2p[1], &c, 1);
		if (read(p2c[0], &c, 1) != 1 || c != 'g')
			_exit(3);
		/* Still the creator's uid (which may search the directories above
		 * the ones pre opens), with every capability in the new namespace. */
		if (pre != NULL && pre(arg, report) != 0) {
			(void)!write(c2p[1], report, rlen);
			_exit(5);
		}
		/* One id mapped: setgroups is denied there, and there is no group to drop. */
		if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0 ||
		    (m->mode != NS_MAP_SINGLE && syscall(SYS_setgroups, 0, NULL) < 0))
			_exit(4);
		/* The report comes back either way (what a success found, too). */
		int r = fn(arg, report);
		(void)!write(c2p[1], report, rlen);
		_exit(r == 0 ? 0 : 5);
	}
	close(p2c[0]);
	close(c2p[1]);
	if (read(c2p[0], &c, 1) != 1) {
		sbx_error(e, SBX_EBACKEND, "run `sbxtop doctor` to check user namespaces",
		    "cannot make a user namespace to %s", what);
		c = 'x';
	} else {
		c = ns_idmap_write(m, pid, e) == 0 ? 'g' : 'x';
	}
	(void)!write(p2c[1], &c, 1);
	close(p2c[1]);
	if (c != 'g' || read(c2p[0], report, rlen) != (ssize_t)rlen)
		memset(report, 0, rlen);
	close(c2p[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (c != 'g')
		return -1;
	return WIFEXITED(*status) && WEXITSTATUS(*status) == 0 ? 0 : 1;
}

static int
rmtree_in_ns(void *path, void *err)
{
	if (rmtree_here(path) == 0)
		return 0;
	*(int *)err = errno;
	return -1;
}

int
ns_rmtree(const struct ns_idmap *m, const char *path, struct sbx_err *e)
{
	_cleanup_free_ char *what = NULL;
	int st, err = 0, r;

	if (rmtree_here(path) == 0)
		return 0;
	/* With a subordinate range the sandbox's users own files that we may
	 * neither enter nor unlink (a 0700 home of uid 1000 inside), and the last
	 * error seen is then the parent's ENOTEMPTY, not the EACCES that caused it:
	 * whatever failed, go on from a user namespace with the same mapping. */
	if (m->mode != NS_MAP_HELPER)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot remove %s", path);

	/* Files made by subordinate uids: remove them as the sandbox's root, from a
	 * user namespace with the same mapping (where our root may touch them). */
	what = xasprintf("remove %s", path);
	if ((r = ns_idmap_run(m, rmtree_in_ns, (void *)path, &err, sizeof err, &st, what, e)) <= 0)
		return r;
	return sbx_error(e, SBX_EIO, "remove it by hand with `podman unshare rm -rf` or as root",
	    "cannot remove %s from the sandbox's user namespace (status %d%s%s)", path, st,
	    err ? ": " : "", err ? strerror(err) : "");
}

int
ns_idmapped_tree(int userns_fd, const char *path, struct sbx_err *e)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY,
	    .userns_fd = (uint64_t)userns_fd };
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);

	if (fd < 0)
		return sbx_error_errno(e, SBX_EUNSUPPORTED, NULL, "open_tree %s", path);
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
		sbx_error_errno(e, SBX_EUNSUPPORTED, NULL, "idmapped mount of %s", path);
		close(fd);
		return -1;
	}
	return fd;
}
