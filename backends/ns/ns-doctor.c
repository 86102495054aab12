/* The ns backend's doctor: what this host gives the backend, tried for real
 * where a try is cheap (a user namespace, an overlay mount in one, a cgroup made
 * and removed), each with ok/warn/FAIL and the fix.  Probes that change the
 * process run in forked children, so the caller is never touched. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/seccomp.h>
#include <unistd.h>

#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns.h"
#include "core/paths.h"
#include "lib/util.h"

#define PROBE_MS 5000

/* Run fn in a forked child; its message (empty when it worked) comes back in
 * msg.  Returns 0 when the child said nothing and exited 0. */
static int
probe(int (*fn)(void *arg, char *msg, size_t len), void *arg, char *msg, size_t len)
{
	int p[2], st = 0;
	pid_t pid;
	ssize_t n = 0, r;
	int64_t deadline = now_ms() + PROBE_MS;

	msg[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(msg, len, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(msg, len, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char out[256] = "";
		int rc;

		close(p[0]);
		rc = fn(arg, out, sizeof out);
		if (rc != 0 && out[0] == '\0')
			snprintf(out, sizeof out, "failed");
		(void)write_all(p[1], out, strlen(out));
		_exit(rc != 0);
	}
	close(p[1]);
	while (n < (ssize_t)len - 1 && (r = read(p[0], msg + n, len - 1 - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		n += r;
	}
	msg[n] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			snprintf(msg, len, "timed out");
			return -1;
		}
		usleep(5000);
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && msg[0] == '\0' ? 0 : -1;
}

static int
write_str(const char *path, const char *s)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		return -1;
	return 0;
}

/* In a new user namespace, map ourselves to root as the ns backend's fallback
 * does (one uid, one gid). */
static int
become_root_in_userns(int extra_flags, char *msg, size_t len)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];

	if (unshare(CLONE_NEWUSER | extra_flags) < 0) {
		snprintf(msg, len, "unshare(CLONE_NEWUSER): %s", strerror(errno));
		return -1;
	}
	if (write_str("/proc/self/setgroups", "deny") < 0 && errno != ENOENT) {
		snprintf(msg, len, "setgroups deny: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof map, "0 %d 1", (int)uid);
	if (write_str("/proc/self/uid_map", map) < 0) {
		snprintf(msg, len, "uid_map: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof map, "0 %d 1", (int)gid);
	if (write_str("/proc/self/gid_map", map) < 0) {
		snprintf(msg, len, "gid_map: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int
probe_userns(void *arg, char *msg, size_t len)
{
	return become_root_in_userns(0, msg, len);
}

/* A real overlay mount in a new user and mount namespace, in dir. */
static int
probe_overlay(void *arg, char *msg, size_t len)
{
	const char *dir = arg;
	char opts[1024], merged[512], probe_file[600], upper_file[600];
	_cleanup_close_ int fd = -1;

	if (become_root_in_userns(CLONE_NEWNS, msg, len) < 0)
		return -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		snprintf(msg, len, "make / private: %s", strerror(errno));
		return -1;
	}
	snprintf(opts, sizeof opts, "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work",
	    dir, dir, dir);
	snprintf(merged, sizeof merged, "%s/merged", dir);
	if (mount("overlay", merged, "overlay", 0, opts) < 0) {
		snprintf(msg, len, "mount overlay: %s", strerror(errno));
		return -1;
	}
	/* Writing through the overlay must land in the upper directory. */
	snprintf(probe_file, sizeof probe_file, "%s/probe", merged);
	snprintf(upper_file, sizeof upper_file, "%s/upper/probe", dir);
	fd = open(probe_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(msg, len, "write through the overlay: %s", strerror(errno));
		return -1;
	}
	if (access(upper_file, F_OK) < 0) {
		snprintf(msg, len, "the write did not reach the upper directory");
		return -1;
	}
	return 0;
}

static char *
sysctl_read(const char *path)
{
	char *s = read_file(path, 256, NULL);

	if (s != NULL)
		s[strcspn(s, "\n")] = '\0';
	return s;
}

static void
check_userns(check_fn report, void *arg, int *userns_ok)
{
	_cleanup_free_ char *clone = sysctl_read("/proc/sys/kernel/unprivileged_userns_clone");
	_cleanup_free_ char *maxns = sysctl_read("/proc/sys/user/max_user_namespaces");
	char msg[256], detail[512];

	*userns_ok = probe(probe_userns, NULL, msg, sizeof msg) == 0;
	if (*userns_ok) {
		snprintf(detail, sizeof detail, "a user namespace with this uid mapped to root works "
		    "(max_user_namespaces=%s)", maxns ? maxns : "?");
		report(arg, CHECK_OK, "user namespaces", detail, NULL);
		return;
	}
	snprintf(detail, sizeof detail, "%s (unprivileged_userns_clone=%s, max_user_namespaces=%s)",
	    msg, clone ? clone : "absent", maxns ? maxns : "?");
	if (clone != NULL && strcmp(clone, "0") == 0)
		report(arg, CHECK_FAIL, "user namespaces", detail,
		    "sysctl -w kernel.unprivileged_userns_clone=1 (and put it in /etc/sysctl.d)");
	else if (maxns != NULL && strcmp(maxns, "0") == 0)
		report(arg, CHECK_FAIL, "user namespaces", detail,
		    "sysctl -w user.max_user_namespaces=15000 (and put it in /etc/sysctl.d)");
	else
		report(arg, CHECK_FAIL, "user namespaces", detail,
		    "enable user namespaces in the kernel (CONFIG_USER_NS) and any LSM policy that "
		    "forbids them, or use --backend qemu");
}

static void
check_apparmor(check_fn report, void *arg, int overlay_ok)
{
	_cleanup_free_ char *v =
	    sysctl_read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");

	if (v == NULL || strcmp(v, "0") == 0) {
		report(arg, CHECK_OK, "AppArmor user namespace restriction",
		    v == NULL ? "not present on this kernel" : "off", NULL);
		return;
	}
	if (overlay_ok) {
		report(arg, CHECK_OK, "AppArmor user namespace restriction",
		    "on, but this program may use user namespaces (an AppArmor profile grants it)",
		    NULL);
		return;
	}
	{
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		_cleanup_free_ char *fix = NULL;

		exe[n > 0 ? n : 0] = '\0';
		fix = paths_apparmor_fix(n > 0 ? exe : "sbxtop-core");
		report(arg, CHECK_FAIL, "AppArmor user namespace restriction",
		    "kernel.apparmor_restrict_unprivileged_userns=1: user namespaces made by "
		    "this binary get no capabilities (no AppArmor profile grants it `userns`)", fix);
	}
}

static char *
state_home(void)
{
	const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (x != NULL && *x == '/')
		return xasprintf("%s/sbxtop", x);
	if (home == NULL || *home != '/') {
		struct passwd *pw = getpwuid(getuid());

		home = pw ? pw->pw_dir : "/";
	}
	return xasprintf("%s/.local/state/sbxtop", home);
}

static void
check_overlay(check_fn report, void *arg, int userns_ok, int *overlay_ok)
{
	_cleanup_free_ char *state = state_home();
	_cleanup_free_ char *tmpl = NULL;
	const char *subs[] = { "lower", "upper", "work", "merged" };
	char msg[256], detail[512], path[700];
	size_t i;

	*overlay_ok = 0;
	if (!userns_ok) {
		report(arg, CHECK_FAIL, "overlayfs in a user namespace",
		    "not tried: user namespaces do not work", "fix user namespaces first");
		return;
	}
	/* Probe where the sandboxes' upper directories will live when it exists:
	 * the filesystem matters (overlay needs a real upper). */
	tmpl = access(state, W_OK) == 0 ? xasprintf("%s/doctor-XXXXXX", state)
	    : xstrdup("/tmp/sbxtop-doctor-XXXXXX");
	if (mkdtemp(tmpl) == NULL) {
		snprintf(detail, sizeof detail, "cannot make %s: %s", tmpl, strerror(errno));
		report(arg, CHECK_FAIL, "overlayfs in a user namespace", detail,
		    "make the state directory writable");
		return;
	}
	for (i = 0; i < ARRAY_SIZE(subs); i++) {
		snprintf(path, sizeof path, "%s/%s", tmpl, subs[i]);
		mkdir(path, 0700);
	}
	*overlay_ok = probe(probe_overlay, tmpl, msg, sizeof msg) == 0;
	/* The child's mount went with its namespace: only directories remain. */
	snprintf(path, sizeof path, "%s/upper/probe", tmpl);
	unlink(path);
	snprintf(path, sizeof path, "%s/work/work", tmpl);
	rmdir(path);
	for (i = 0; i < ARRAY_SIZE(subs); i++) {
		snprintf(path, sizeof path, "%s/%s", tmpl, subs[i]);
		rmdir(path);
	}
	rmdir(tmpl);
	if (*overlay_ok) {
		snprintf(detail, sizeof detail, "mounted and written in a user namespace (on %s)",
		    tmpl);
		report(arg, CHECK_OK, "overlayfs in a user namespace", detail, NULL);
	} else {
		snprintf(detail, sizeof detail, "%s", msg);
		report(arg, CHECK_FAIL, "overlayfs in a user namespace", detail,
		    "use Linux 5.11 or later (overlay in user namespaces), or put the state "
		    "directory on ext4/xfs/tmpfs");
	}
}

static void
check_seccomp(check_fn report, void *arg)
{
	const struct scmp_version *v = seccomp_version();
	char detail[256];
	int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	int filter;

	/* PR_SET_SECCOMP with a NULL filter: EFAULT means filter mode exists,
	 * EINVAL that the kernel has none.  Nothing is installed either way. */
	filter = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0) < 0 && errno == EFAULT;
	snprintf(detail, sizeof detail, "libseccomp %u.%u.%u, API level %u, filter mode %s%s",
	    v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0, seccomp_api_get(),
	    filter ? "available" : "missing", mode == 2 ? " (this process is already filtered)" : "");
	if (mode < 0 || !filter)
		report(arg, CHECK_FAIL, "seccomp", detail,
		    "use a kernel built with CONFIG_SECCOMP_FILTER");
	else
		report(arg, CHECK_OK, "seccomp", detail, NULL);
}

/* The part of a cgroup note ("a; b; c") that speaks of what, or all of it. */
static const char *
note_part(const char *note, const char *what)
{
	static char part[512];
	const char *p, *end;

	if (note == NULL)
		return "no reason given";
	for (p = note; p != NULL && *p; p = end ? end + 2 : NULL) {
		end = strstr(p, "; ");
		if (strncmp(p, what, strlen(what)) == 0 ||
		    (strcmp(what, "freezer") == 0 && strncmp(p, "no freezer", 10) == 0) ||
		    strncmp(p, "limits not enforced", 19) == 0) {
			snprintf(part, sizeof part, "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
			return part;
		}
	}
	return note;
}

static void
check_cgroups(check_fn report, void *arg)
{
	struct sbx_limits l = { .memory_mib = 64, .cpus = 1, .pids = 0, .disk_mib = 0 };
	static const char *const what[] = { "memory", "pids", "cpu", "freezer" };
	cJSON *state = NULL;
	_cleanup_free_ char *note = NULL;
	char id[32], detail[1024], name[64];
	struct sbx_err e;
	size_t i;
	int version;

	/* A real cgroup, made and removed: the only sure way to know what is
	 * delegated to this uid. */
	snprintf(id, sizeof id, "doctor-%d", (int)getpid());
	if (ns_cgroup_create(id, &l, &state, &note, &e) < 0) {
		report(arg, CHECK_WARN, "cgroups", e.msg, "see the message");
		return;
	}
	version = state ? cJSON_GetObjectItemCaseSensitive(state, "version")->valueint : 0;
	if (version == 2 && ns_cgroup_where(state) != NULL)
		snprintf(detail, sizeof detail, "cgroup v2: sandboxes' cgroups go in %s",
		    ns_cgroup_where(state));
	else
		snprintf(detail, sizeof detail, "%s", version == 2 ? "cgroup v2" : version == 1 ?
		    "cgroup v1" : "no usable cgroup");
	report(arg, state ? CHECK_OK : CHECK_WARN, "cgroups", state ? detail : note,
	    state ? NULL : "limits and the freezer need a writable cgroup: run as root or "
	    "under systemd-run --user --scope -p Delegate=yes");
	for (i = 0; i < ARRAY_SIZE(what); i++) {
		int has = ns_cgroup_has(state, what[i]);

		snprintf(name, sizeof name, "cgroup %s %s", what[i],
		    strcmp(what[i], "freezer") == 0 ? "(suspend)" : "limit");
		if (has)
			snprintf(detail, sizeof detail, "enforceable by uid %d (cgroup v%d)",
			    (int)geteuid(), version);
		else
			snprintf(detail, sizeof detail, "not enforceable by uid %d: %s",
			    (int)geteuid(), note_part(note, what[i]));
		report(arg, has ? CHECK_OK : CHECK_WARN, name, detail, has ? NULL :
		    strcmp(what[i], "freezer") == 0 ?
		    "suspend falls back to stopping every process; for the freezer run as root or "
		    "with a delegated cgroup v2 (systemd-run --user --scope -p Delegate=yes)" :
		    geteuid() == 0 ? "run sbxtop in a cgroup of its own "
		    "(systemd-run --scope -p Delegate=yes sbxtop ...)" :
		    "run as root, or use a cgroup v2 host with delegation "
		    "(systemd-run --user --scope -p Delegate=yes)");
	}
	if (state != NULL && ns_cgroup_destroy(state, &e) < 0)
		report(arg, CHECK_WARN, "cgroup cleanup", e.msg, "remove it by hand");
	cJSON_Delete(state);
}

/* How the disk limit holds here (ns-disk.c). */
static void
check_disk(check_fn report, void *arg)
{
	int fd = geteuid() == 0 ? open("/dev/loop-control", O_RDWR | O_CLOEXEC) : -1;
	int mkfs = access("/usr/sbin/mke2fs", X_OK) == 0 || access("/sbin/mke2fs", X_OK) == 0;

	if (fd >= 0)
		close(fd);
	if (fd >= 0 && mkfs)
		report(arg, CHECK_OK, "disk limit", "a filesystem of its own per sandbox (ext4 on "
		    "a loop device): writes past --disk get ENOSPC", NULL);
	else if (geteuid() == 0)
		report(arg, CHECK_WARN, "disk limit", mkfs ? "no /dev/loop-control: no file may "
		    "grow past --disk, and the core server suspends a sandbox over it" :
		    "mke2fs not found: no file may grow past --disk, and the core server suspends "
		    "a sandbox over it", mkfs ? "modprobe loop" : "apt-get install e2fsprogs");
	else
		report(arg, CHECK_WARN, "disk limit", "an ordinary user mounts no filesystem: no "
		    "ENOSPC at --disk; no file may grow past it, and the core server suspends a "
		    "sandbox over it", "run sbxtop as root for ENOSPC at the limit");
}

static void
check_egress(check_fn report, void *arg)
{
	const char *h = ns_net_egress_helper();
	char detail[128];

	if (h != NULL && access("/dev/net/tun", R_OK | W_OK) < 0) {
		snprintf(detail, sizeof detail, "%s found, but /dev/net/tun: %s: egress "
		    "unavailable, only --network none", h, strerror(errno));
		report(arg, CHECK_WARN, "egress helper", detail,
		    "chmod 0666 /dev/net/tun (its usual mode on distributions)");
	} else if (h != NULL) {
		snprintf(detail, sizeof detail, "%s found: --network egress works "
		    "(host loopback not reachable)", h);
		report(arg, CHECK_OK, "egress helper", detail, NULL);
	} else
		report(arg, CHECK_WARN, "egress helper",
		    "neither slirp4netns nor pasta is installed: egress unavailable, only "
		    "--network none", "apt-get install slirp4netns (or passt for pasta)");
}

/* 1 when /etc/subuid-style file has a range for this user (by name or uid). */
static int
subid_range(const char *file, const char *user, uid_t uid, char *out, size_t len)
{
	_cleanup_free_ char *s = read_file(file, 1 << 20, NULL);
	char *line, *save = NULL, uidstr[32];

	snprintf(uidstr, sizeof uidstr, "%d", (int)uid);
	if (s == NULL)
		return 0;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c = strchr(line, ':');

		if (c == NULL)
			continue;
		*c = '\0';
		if ((user && strcmp(line, user) == 0) || strcmp(line, uidstr) == 0) {
			snprintf(out, len, "%s:%s", line, c + 1);
			return 1;
		}
	}
	return 0;
}

static void
check_subids(check_fn report, void *arg)
{
	struct passwd *pw = getpwuid(geteuid());
	const char *user = pw ? pw->pw_name : NULL;
	char ru[128] = "", rg[128] = "", detail[512];
	struct stat st;
	int newuid, newgid, hu, hg;

	if (geteuid() == 0) {
		report(arg, CHECK_OK, "subordinate ids",
		    "running as root: sandboxes get a uid range of their own, mapped directly", NULL);
		return;
	}
	/* newuidmap must be setuid root (or carry CAP_SETUID) to map a range. */
	newuid = stat("/usr/bin/newuidmap", &st) == 0 && (st.st_mode & S_ISUID);
	newgid = stat("/usr/bin/newgidmap", &st) == 0 && (st.st_mode & S_ISUID);
	hu = subid_range("/etc/subuid", user, geteuid(), ru, sizeof ru);
	hg = subid_range("/etc/subgid", user, geteuid(), rg, sizeof rg);
	snprintf(detail, sizeof detail, "newuidmap %s, newgidmap %s, /etc/subuid %s, "
	    "/etc/subgid %s", newuid ? "ok" : "missing", newgid ? "ok" : "missing",
	    hu ? ru : "no range", hg ? rg : "no range");
	if (newuid && newgid && hu && hg)
		report(arg, CHECK_OK, "subordinate ids", detail, NULL);
	else
		report(arg, CHECK_WARN, "subordinate ids", detail,
		    "single-uid mapping (no `sandbox` user inside); for a range: apt-get install "
		    "uidmap && usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $USER");
}

/* Writable, or creatable: the nearest existing ancestor is writable. */
static int
dir_usable(const char *path, char *why, size_t len)
{
	_cleanup_free_ char *p = xstrdup(path);
	struct stat st;
	char *slash;

	if (stat(p, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			snprintf(why, len, "%s is not a directory", p);
			return 0;
		}
		if (access(p, W_OK | X_OK) < 0) {
			snprintf(why, len, "%s: %s", p, strerror(errno));
			return 0;
		}
		return 1;
	}
	while ((slash = strrchr(p, '/')) != NULL && slash != p) {
		*slash = '\0';
		if (stat(p, &st) == 0) {
			if (access(p, W_OK | X_OK) < 0) {
				snprintf(why, len, "cannot create %s: %s: %s", path, p, strerror(errno));
				return 0;
			}
			return 1;
		}
	}
	return 1;
}

static void
check_dirs(check_fn report, void *arg)
{
	_cleanup_free_ char *state = state_home();
	_cleanup_free_ char *runtime = NULL;
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char why[512] = "", detail[1024];
	int ok;

	runtime = rt && *rt == '/' ? xasprintf("%s/sbxtop", rt) : NULL;
	ok = dir_usable(state, why, sizeof why);
	if (ok && runtime != NULL)
		ok = dir_usable(runtime, why, sizeof why);
	snprintf(detail, sizeof detail, "state %s, runtime %s%s%s", state,
	    runtime ? runtime : "(XDG_RUNTIME_DIR unset: under the state directory)",
	    ok ? "" : ": ", ok ? "" : why);
	report(arg, ok ? CHECK_OK : CHECK_FAIL, "state directories", detail,
	    ok ? NULL : "make them writable by this user, or set XDG_STATE_HOME and "
	    "XDG_RUNTIME_DIR to directories that are");
}

void
ns_doctor(check_fn report, void *arg)
{
	struct sbx_err e;
	_cleanup_free_ char *bundle = paths_agent_bundle(&e);
	struct ns_idmap m;
	int userns_ok = 0, overlay_ok = 0;

	if (bundle != NULL)
		report(arg, CHECK_OK, "agent bundle", bundle, NULL);
	else
		report(arg, CHECK_FAIL, "agent bundle", e.msg, e.hint);
	if (ns_idmap_choose(&m, &e) == 0)
		report(arg, m.mode == NS_MAP_SINGLE ? CHECK_WARN : CHECK_OK, "sandbox user ids",
		    m.where, m.mode == NS_MAP_SINGLE ?
		    "add a range for your user to /etc/subuid and /etc/subgid and install uidmap" : NULL);
	check_userns(report, arg, &userns_ok);
	check_overlay(report, arg, userns_ok, &overlay_ok);
	check_apparmor(report, arg, overlay_ok);
	check_seccomp(report, arg);
	check_cgroups(report, arg);
	check_egress(report, arg);
	check_disk(report, arg);
	check_subids(report, arg);
	check_dirs(report, arg);
}
