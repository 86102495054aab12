/* Unit tests for the ns backend's hardening, limits, network and doctor
 * (backends/ns/ns-*.c).  Each piece runs in a forked child that applies it and then
 * tries what it must stop: mounts, keyrings, bpf, namespaces after the seccomp
 * filter; CAP_SYS_ADMIN after the capability drop; a fork bomb and a memory hog
 * in the cgroup; the host's loopback through the egress helper.  Children report
 * "<0|1> what" lines on a pipe; the parent turns them into TAP lines.  Everything
 * started is killed and every cgroup removed, also when a check fails. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/keyctl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "backends/ns/ns.h"
#include "lib/util.h"

/* --- children that report ------------------------------------------------ */

static int report_fd = -1;

/* In a child: one result line for the parent. */
static void __attribute__((format(printf, 2, 3)))
rep(int cond, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof line, "%d ", cond ? 1 : 0);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	(void)write_all(report_fd, line, n);
}

/* Run fn in a forked child and turn its report lines into checks.  The child
 * must not die by a signal or exit non-zero unless it says so first. */
static void
run_child(const char *what, void (*fn)(void *), void *arg)
{
	int p[2], st;
	pid_t pid;
	FILE *f;
	char line[600];
	int lines = 0;

	if (pipe(p) < 0) {
		check(0, "%s: pipe", what);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line) < 2)
			continue;
		check(line[0] == '1', "%s: %s", what, line + 2);
		lines++;
	}
	fclose(f);
	waitpid(pid, &st, 0);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0 && lines > 0,
	    "%s: child finished cleanly (%d results, status %#x)", what, lines, st);
}

/* --- seccomp --------------------------------------------------------------- */

static int
errno_of(long rc)
{
	return rc < 0 ? errno : 0;
}

static void *
thread_fn(void *arg)
{
	return arg;
}

/* A grandchild's fate: exit code, or 128 + signal. */
static int
fate(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* The fate of a child that calls getpid through the 32-bit x86 entry point. */
static int
int80_fate(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* The kernel's own action for a fault, not a sanitizer's handler
		 * (which exits 1): the raw call, since ASan may keep its own. */
		struct { void (*h)(int); unsigned long flags, restorer, mask; } dfl = { SIG_DFL, 0, 0, 0 };
		long r = 20;	/* getpid on i386 */

		syscall(SYS_rt_sigaction, SIGSEGV, &dfl, NULL, sizeof dfl.mask);
		__asm__ volatile("int $0x80" : "+a"(r) : : "memory");
		_exit(0);
	}
	return fate(pid);
}

static void
seccomp_child(void *arg)
{
	struct sbx_err e;
	char dir[] = "/tmp/sbx-seccomp-XXXXXX", file[64], buf[8];
	int fd, err, ia32;
	long rc;
	pid_t pid;
	pthread_t th;
	void *ret = NULL;

	if (mkdtemp(dir) == NULL) {
		rep(0, "mkdtemp");
		return;
	}
	ia32 = int80_fate();
	rep(ia32 == 0 || ia32 == 128 + SIGSEGV, "before the filter, a 32-bit syscall runs or "
	    "faults (fate %d)", ia32);
	rep(ns_seccomp_apply(&e) < 0, "the filter is refused without no_new_privs");
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	rc = ns_seccomp_apply(&e);
	rep(rc == 0, "ns_seccomp_apply after no_new_privs (%s)", rc ? e.msg : "");
	if (rc != 0)
		goto out;

	err = errno_of(mount("none", dir, "tmpfs", 0, NULL));
	rep(err == EPERM, "mount(tmpfs) -> EPERM (got %s)", strerror(err));
	err = errno_of(umount2("/proc", MNT_DETACH));
	rep(err == EPERM, "umount2 -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_fsopen, "tmpfs", 0));
	rep(err == EPERM, "fsopen -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
	rep(err == EPERM, "keyctl -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_add_key, "user", "x", "y", 1, KEY_SPEC_SESSION_KEYRING));
	rep(err == EPERM, "add_key -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_bpf, 0, NULL, 0));
	rep(err == EPERM, "bpf -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	rep(err == EPERM, "perf_event_open -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_userfaultfd, 0));
	rep(err == EPERM, "userfaultfd -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_io_uring_setup, 1, NULL));
	rep(err == EPERM, "io_uring_setup -> EPERM (got %s)", strerror(err));
	err = errno_of(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0));
	rep(err == EPERM, "open_by_handle_at -> EPERM (got %s)", strerror(err));
	err = errno_of(unshare(CLONE_NEWUSER));
	rep(err == EPERM, "unshare(CLONE_NEWUSER) -> EPERM (got %s)", strerror(err));
	err = errno_of(unshare(CLONE_NEWNS | CLONE_FS));
	rep(err == EPERM, "unshare(CLONE_NEWNS|CLONE_FS) -> EPERM (got %s)", strerror(err));
	err = errno_of(unshare(CLONE_FILES));
	rep(err == 0, "unshare(CLONE_FILES), no namespace, still works (got %s)", strerror(err));
	fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	err = errno_of(setns(fd, 0));
	rep(fd >= 0 && err == EPERM, "setns(own netns) -> EPERM (got %s)", strerror(err));
	close(fd);
	err = errno_of(syscall(SYS_clone3, NULL, 0));
	rep(err == ENOSYS, "clone3 -> ENOSYS (got %s)", strerror(err));
	rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (rc == 0)
		_exit(0);
	err = rc < 0 ? errno : 0;
	if (rc > 0)
		waitpid((pid_t)rc, NULL, 0);
	rep(err == EPERM, "clone(CLONE_NEWUSER) -> EPERM (got %s)", strerror(err));
	err = errno_of(personality(ADDR_NO_RANDOMIZE));
	rep(err == EPERM, "personality(ADDR_NO_RANDOMIZE) -> EPERM (got %s)", strerror(err));
	rc = personality(0xffffffff);
	rep(rc >= 0, "personality query still works (%ld)", rc);
	{
		static const unsigned long ok_p[] = { PER_LINUX32, UNAME26, UNAME26 | PER_LINUX32,
		    PER_LINUX };
		static const unsigned long bad_p[] = { READ_IMPLIES_EXEC, PER_BSD,
		    UNAME26 | ADDR_NO_RANDOMIZE, 0x80000000ul, 0xfffffffeul, 0x7fffffff };

		for (size_t i = 0; i < ARRAY_SIZE(ok_p); i++)
			rep(personality(ok_p[i]) >= 0, "personality(%#lx) allowed", ok_p[i]);
		for (size_t i = 0; i < ARRAY_SIZE(bad_p); i++) {
			err = errno_of(personality(bad_p[i]));
			rep(err == EPERM, "personality(%#lx) -> EPERM (got %s)", bad_p[i],
			    strerror(err));
		}
	}

	/* ptrace is allowed (documented in backends/ns/ns-harden.c). */
	pid = fork();
	if (pid == 0)
		_exit(ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : 1);
	rep(fate(pid) == 0, "ptrace(PTRACE_TRACEME) is allowed");

	/* Ordinary life goes on. */
	snprintf(file, sizeof file, "%s/f", dir);
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rep(fd >= 0 && write(fd, "hi", 2) == 2 && pread(fd, buf, 2, 0) == 2 &&
	    memcmp(buf, "hi", 2) == 0, "open/write/read a file");
	if (fd >= 0)
		close(fd);
	unlink(file);
	pid = fork();
	if (pid == 0)
		_exit(7);
	rep(pid > 0 && fate(pid) == 7, "fork and wait");
	pid = fork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(99);
	}
	rep(pid > 0 && fate(pid) == 0, "fork and exec /bin/true");
	rep(pthread_create(&th, NULL, thread_fn, (void *)1) == 0 && pthread_join(th, &ret) == 0 &&
	    ret == (void *)1, "pthread_create (clone3 ENOSYS, libc falls back to clone)");

	/* Another ABI: the 32-bit x86 entry point kills the process (a kernel built
	 * or booted without 32-bit syscalls faults it with SIGSEGV before any filter). */
	rc = int80_fate();
	if (ia32 == 0)
		rep(rc == 128 + SIGSYS, "a 32-bit syscall (int 0x80) is killed by SIGSYS (fate %ld)",
		    rc);
	else
		rep(rc == 128 + SIGSEGV, "a 32-bit syscall (int 0x80) faults as it did before the "
		    "filter: this kernel runs none (fate %ld)", rc);
	/* x32 numbers on the x86-64 entry point: not the native ABI either. */
	pid = fork();
	if (pid == 0) {
		long r = syscall(0x40000000L | SYS_getpid);

		_exit(r >= 0 ? 0 : 1);
	}
	rc = fate(pid);
	rep(rc != 0, "an x32 syscall is refused (fate %ld)", rc);
out:
	rmdir(dir);
}

/* --- capabilities ---------------------------------------------------------- */

static int
write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = -1;

	if (fd >= 0) {
		rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
		close(fd);
	}
	return rc;
}

/* Map ourselves to root in a new user namespace (plus extra flags). */
static int
userns_root(int flags)
{
	uid_t uid = geteuid();	/* before: unmapped ids read as 65534 after */
	gid_t gid = getegid();
	char map[64];

	if (unshare(CLONE_NEWUSER | flags) < 0)
		return -1;
	write_str("/proc/self/setgroups", "deny");
	snprintf(map, sizeof map, "0 %d 1", (int)uid);
	if (write_str("/proc/self/uid_map", map) < 0)
		return -1;
	snprintf(map, sizeof map, "0 %d 1", (int)gid);
	return write_str("/proc/self/gid_map", map);
}

static unsigned long long
cap_field(const char *status, const char *name)
{
	const char *p = strstr(status, name);

	return p ? strtoull(p + strlen(name) + 1, NULL, 16) : ~0ULL;
}

#define BIT(n) (1ULL << (n))

static void
caps_child(void *arg)
{
	char dir[] = "/tmp/sbx-caps-XXXXXX", out[4096];
	_cleanup_free_ char *st = NULL;
	struct sbx_err e;
	int p[2], rc;
	ssize_t n;
	pid_t pid;

	if (mkdtemp(dir) == NULL || userns_root(CLONE_NEWNS) < 0) {
		rep(0, "user+mount namespace: %s", strerror(errno));
		return;
	}
	/* Control: as root of our own namespaces, a mount works. */
	rc = mount("none", dir, "tmpfs", 0, NULL);
	rep(rc == 0, "before the drop, root in the user namespace can mount (%s)",
	    rc ? strerror(errno) : "ok");
	if (rc == 0)
		umount2(dir, MNT_DETACH);

	rc = ns_caps_drop(&e);
	rep(rc == 0, "ns_caps_drop (%s)", rc ? e.msg : "ok");
	st = read_file("/proc/self/status", 1 << 16, NULL);
	rep(st != NULL, "read /proc/self/status");
	if (st != NULL) {
		unsigned long long eff = cap_field(st, "CapEff:"), bnd = cap_field(st, "CapBnd:");
		unsigned long long inh = cap_field(st, "CapInh:"), amb = cap_field(st, "CapAmb:");
		unsigned long long prm = cap_field(st, "CapPrm:");

		rep(!(eff & BIT(21)) && !(bnd & BIT(21)) && !(prm & BIT(21)),
		    "CAP_SYS_ADMIN gone from CapEff %llx, CapPrm %llx, CapBnd %llx", eff, prm, bnd);
		rep((eff & BIT(0)) && (bnd & BIT(0)), "CAP_CHOWN kept in CapEff and CapBnd");
		rep(!(bnd & BIT(12)) && !(bnd & BIT(16)) && !(bnd & BIT(19)) && !(bnd & BIT(25)),
		    "NET_ADMIN, SYS_MODULE, SYS_PTRACE, SYS_TIME not in CapBnd");
		rep(eff == 0xa80425fbULL && bnd == eff && prm == eff,
		    "exactly Docker's default set (%llx)", eff);
		rep(inh == 0 && amb == 0, "inheritable %llx and ambient %llx empty", inh, amb);
	}
	rc = mount("none", dir, "tmpfs", 0, NULL);
	rep(rc < 0 && errno == EPERM, "after the drop, mount fails with EPERM (%s)",
	    rc ? strerror(errno) : "it mounted");
	if (rc == 0)
		umount2(dir, MNT_DETACH);

	/* An exec as root gets its bounding set, no more. */
	if (pipe(p) < 0) {
		rep(0, "pipe");
		return;
	}
	if ((pid = fork()) == 0) {
		dup2(p[1], 1);
		execl("/bin/grep", "grep", "^CapEff", "/proc/self/status", (char *)NULL);
		_exit(99);
	}
	close(p[1]);
	n = read(p[0], out, sizeof out - 1);
	out[n > 0 ? n : 0] = '\0';
	close(p[0]);
	waitpid(pid, NULL, 0);
	{
		unsigned long long eff = cap_field(out, "CapEff:");

		rep(eff != ~0ULL && !(eff & BIT(21)) && (eff & BIT(0)),
		    "after exec: CapEff %llx, no CAP_SYS_ADMIN, CAP_CHOWN kept", eff);
	}
	rmdir(dir);
}

/* --- rlimits --------------------------------------------------------------- */

static void
rlimits_child(void *arg)
{
	struct sbx_limits l = { .pids = 8 };
	struct rlimit rl, hard;
	struct sbx_err e;
	pid_t kids[32];
	int n = 0, rc, err = 0;
	uid_t uid = 61000 + (getpid() % 1000);

	getrlimit(RLIMIT_NOFILE, &hard);
	/* RLIMIT_NPROC does not bind host root: be an unused uid, as the sandbox's
	 * root is on the host. */
	if (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0) {
		rep(0, "become uid %d: %s", (int)uid, strerror(errno));
		return;
	}
	rc = ns_rlimits_apply(&l, 0, &e);
	rep(rc == 0, "ns_rlimits_apply (%s)", rc ? e.msg : "ok");
	getrlimit(RLIMIT_NOFILE, &rl);
	rep(rl.rlim_cur == rl.rlim_max && rl.rlim_cur == (hard.rlim_max < 65536 ?
	    hard.rlim_max : 65536), "RLIMIT_NOFILE %llu", (unsigned long long)rl.rlim_cur);
	getrlimit(RLIMIT_CORE, &rl);
	rep(rl.rlim_cur == 0 && rl.rlim_max == 0, "RLIMIT_CORE 0");
	getrlimit(RLIMIT_NPROC, &rl);
	rep(rl.rlim_cur == 8, "RLIMIT_NPROC = pids (%llu)", (unsigned long long)rl.rlim_cur);
	while (n < (int)ARRAY_SIZE(kids)) {
		pid_t pid = fork();

		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid < 0) {
			err = errno;
			break;
		}
		kids[n++] = pid;
	}
	rep(n + 1 <= 8 && err == EAGAIN, "forks stop at the limit: %d forks, then %s", n,
	    strerror(err));
	while (n > 0) {
		kill(kids[--n], SIGKILL);
		waitpid(kids[n], NULL, 0);
	}
}

/* --- cgroups --------------------------------------------------------------- */

/* A child that waits for "go" on a pipe, so it can be attached first. */
struct kid {
	pid_t	pid;
	int	go;	/* write end */
	int	out;	/* read end of what it reports */
};

static struct kid
kid_start(void (*fn)(int out, void *arg), void *arg)
{
	struct kid k = { -1, -1, -1 };
	int g[2], o[2];
	char c;

	if (pipe(g) < 0 || pipe(o) < 0)
		return k;
	fflush(stdout);
	k.pid = fork();
	if (k.pid == 0) {
		close(g[1]);
		close(o[0]);
		setpgid(0, 0);
		if (read(g[0], &c, 1) != 1)
			_exit(1);
		fn(o[1], arg);
		_exit(0);
	}
	close(g[0]);
	close(o[1]);
	setpgid(k.pid, k.pid);
	k.go = g[1];
	k.out = o[0];
	return k;
}

static void
kid_go(struct kid *k)
{
	(void)write_all(k->go, "g", 1);
}

/* Kill the kid's whole process group and reap everything that comes to us
 * (this process is a subreaper, so the group's orphans do). */
static void
kid_kill(struct kid *k)
{
	if (k->pid <= 0)
		return;
	kill(-k->pid, SIGKILL);
	kill(k->pid, SIGKILL);
	waitpid(k->pid, NULL, 0);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	close(k->go);
	close(k->out);
	k->pid = -1;
}

/* Read with a deadline; -1 on timeout. */
static ssize_t
read_timeout(int fd, void *buf, size_t len, int ms)
{
	struct pollfd pfd = { fd, POLLIN, 0 };

	if (poll(&pfd, 1, ms) <= 0)
		return -1;
	return read(fd, buf, len);
}

static void
forkbomb(int out, void *arg)
{
	int64_t end = now_ms() + 5000;
	int n = 0, err = 0;
	char msg[64];

	while (now_ms() < end && n < 10000) {
		pid_t pid = fork();

		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid < 0) {
			err = errno;
			break;
		}
		n++;
	}
	snprintf(msg, sizeof msg, "%d %d", n, err);
	(void)write_all(out, msg, strlen(msg) + 1);
	pause();
}

static void
memhog(int out, void *arg)
{
	size_t total = 256u << 20, chunk = 1u << 20, done;
	char *p = malloc(total);

	if (p == NULL)
		_exit(3);
	for (done = 0; done < total; done += chunk)
		memset(p + done, 0x5a, chunk);
	(void)write_all(out, "survived", 8);
	_exit(0);
}

static volatile unsigned long *counter;

static void
spinner(int out, void *arg)
{
	for (;;)
		(*counter)++;
}

static const char *
cg_dir(const cJSON *state, const char *ctrl)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(state, "version");
	const cJSON *p;

	if (v != NULL && v->valueint == 2)
		p = cJSON_GetObjectItemCaseSensitive(state, "path");
	else
		p = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(state, "paths"), ctrl);
	return cJSON_IsString(p) ? p->valuestring : NULL;
}

static char *
cg_file(const cJSON *state, const char *ctrl, const char *file)
{
	const char *dir = cg_dir(state, ctrl);
	_cleanup_free_ char *path = NULL;
	char *s;

	if (dir == NULL)
		return NULL;
	path = xasprintf("%s/%s", dir, file);
	s = read_file(path, 1 << 16, NULL);
	if (s != NULL)
		s[strcspn(s, "\n")] = '\0';
	return s;
}

static int
cg_v2(const cJSON *state)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(state, "version");

	return v != NULL && v->valueint == 2;
}

/* Wait until the cgroup of ctrl holds no process. */
static int
cg_drained(const cJSON *state, const char *ctrl)
{
	int64_t end = now_ms() + 3000;

	while (now_ms() < end) {
		_cleanup_free_ char *procs = cg_file(state, ctrl, "cgroup.procs");

		if (procs == NULL || procs[0] == '\0')
			return 1;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(10000);
	}
	return 0;
}

static void
unpriv_cgroup_child(void *arg)
{
	struct sbx_limits l = { .memory_mib = 64, .pids = 50 };
	_cleanup_free_ char *note = NULL;
	cJSON *state = NULL;
	struct sbx_err e;

	if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
		rep(0, "become nobody: %s", strerror(errno));
		return;
	}
	rep(ns_cgroup_create("sbx-unpriv-test", &l, &state, &note, &e) == 0,
	    "create as uid 65534 is not an error");
	rep(note != NULL && strstr(note, "memory limit not enforced") != NULL &&
	    strstr(note, "65534") != NULL && strstr(note, "Delegate=yes") != NULL,
	    "the note says which limit, why and the fix: %s", note ? note : "(none)");
	rep(!ns_cgroup_has(state, "memory"), "memory is not claimed as enforced");
	if (state != NULL)
		ns_cgroup_destroy(state, &e);
	cJSON_Delete(state);
}

static void
test_cgroups(void)
{
	struct sbx_limits l = { .memory_mib = 64, .pids = 50, .cpus = 0.5 };
	_cleanup_free_ char *note = NULL;
	cJSON *state = NULL;
	struct sbx_err e;
	struct kid k;
	char id[32], buf[64], *v;
	const char *ctrls[] = { "memory", "pids", "cpu", "freezer" };
	int rc, st;

	if (geteuid() != 0)
		skip("as uid 0 only: the unprivileged note (the host is not root here)");
	else
		run_child("cgroup as nobody", unpriv_cgroup_child, NULL);

	snprintf(id, sizeof id, "sbx-t%d", (int)getpid());
	rc = ns_cgroup_create(id, &l, &state, &note, &e);
	check(rc == 0, "ns_cgroup_create %s (%s)", id, rc ? e.msg : "ok");
	if (note != NULL)
		diag("note: %s", note);
	if (state == NULL) {
		check(note != NULL && strstr(note, "not enforced") != NULL,
		    "no cgroup, and the note says why");
		skip("cgroup limits: %s", note ? note : "no cgroup");
		return;
	}
	{
		char *js = cJSON_PrintUnformatted(state);

		diag("state: %s", js);
		free(js);
	}

	/* cpu */
	if (!ns_cgroup_has(state, "cpu")) {
		check(note != NULL && strstr(note, "cpu") != NULL, "the note says why cpu is not enforced");
		skip("cpu quota: cpu not enforced here");
	} else {
		v = cg_file(state, "cpu", cg_v2(state) ? "cpu.max" : "cpu.cfs_quota_us");
		check(v != NULL && strcmp(v, cg_v2(state) ? "50000 100000" : "50000") == 0,
		    "cpu quota holds half a cpu (%s)", v ? v : "?");
		free(v);
	}

	/* pids */
	if (!ns_cgroup_has(state, "pids")) {
		check(note != NULL && strstr(note, "pids") != NULL, "the note says why pids is not enforced");
		skip("fork bomb: pids not enforced here");
	} else {
		v = cg_file(state, "pids", "pids.max");
		check(v != NULL && strcmp(v, "50") == 0, "pids.max holds 50 (%s)", v ? v : "?");
		free(v);
		k = kid_start(forkbomb, NULL);
		rc = ns_cgroup_attach(state, k.pid, &e);
		check(rc == 0, "attach the fork bomb (%s)", rc ? e.msg : "ok");
		kid_go(&k);
		memset(buf, 0, sizeof buf);
		if (read_timeout(k.out, buf, sizeof buf - 1, 10000) > 0) {
			int n = 0, err = 0;

			sscanf(buf, "%d %d", &n, &err);
			check(n + 1 <= 50 && n >= 40 && err == EAGAIN,
			    "the fork bomb stops at the pids limit: %d forks + itself <= 50, then %s",
			    n, strerror(err));
		} else
			check(0, "the fork bomb reported");
		kid_kill(&k);
		check(cg_drained(state, "pids"), "the cgroup drains after the kill");
	}

	/* memory */
	if (!ns_cgroup_has(state, "memory")) {
		check(note != NULL && strstr(note, "memory") != NULL,
		    "the note says why memory is not enforced");
		skip("memory hog: memory not enforced here");
	} else {
		v = cg_file(state, "memory", cg_v2(state) ? "memory.max" : "memory.limit_in_bytes");
		check(v != NULL && strcmp(v, "67108864") == 0, "memory limit holds 64 MiB (%s)",
		    v ? v : "?");
		free(v);
		k = kid_start(memhog, NULL);
		rc = ns_cgroup_attach(state, k.pid, &e);
		check(rc == 0, "attach the memory hog (%s)", rc ? e.msg : "ok");
		kid_go(&k);
		{
			int64_t end = now_ms() + 20000;
			pid_t w;

			while ((w = waitpid(k.pid, &st, WNOHANG)) == 0 && now_ms() < end)
				usleep(10000);
			if (w == 0) {
				kill(k.pid, SIGKILL);
				waitpid(k.pid, &st, 0);
			}
			check(w == k.pid && ((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) ||
			    (WIFEXITED(st) && WEXITSTATUS(st) == 3)),
			    "a 256 MiB hog in a 64 MiB cgroup is OOM-killed or refused (status %#x)", st);
			k.pid = -1;
			close(k.go);
			close(k.out);
		}
		{
			/* v2: "oom_kill N" in memory.events; v1: in memory.oom_control. */
			const char *dir = cg_dir(state, "memory");
			_cleanup_free_ char *path = xasprintf("%s/%s", dir,
			    cg_v2(state) ? "memory.events" : "memory.oom_control");
			_cleanup_free_ char *ev = read_file(path, 1 << 16, NULL);
			const char *p = ev ? strstr(ev, "oom_kill ") : NULL;
			long kills = p ? atol(p + 9) : -1;

			check(kills > 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 3),
			    "the cgroup counted the OOM kill (oom_kill %ld)", kills);
		}
		{
			char *p = malloc(64u << 20);

			check(p != NULL && memset(p, 1, 64u << 20) == p,
			    "the host (this test) still allocates 64 MiB");
			free(p);
		}
		check(cg_drained(state, "memory"), "the memory cgroup drains");
	}

	/* freezer */
	if (!ns_cgroup_has(state, "freezer")) {
		check(ns_cgroup_freeze(state, 1, &e) < 0 && e.code == SBX_EUNSUPPORTED,
		    "no freezer: freeze says unsupported");
		skip("freeze/thaw: no freezer here");
	} else {
		unsigned long c1, c2, c3;

		counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		k = kid_start(spinner, NULL);
		ns_cgroup_attach(state, k.pid, &e);
		kid_go(&k);
		usleep(100000);
		check(ns_cgroup_frozen(state) == 0, "not frozen at first");
		rc = ns_cgroup_freeze(state, 1, &e);
		check(rc == 0 && ns_cgroup_frozen(state) == 1, "freeze (%s)", rc ? e.msg : "ok");
		c1 = *counter;
		usleep(200000);
		c2 = *counter;
		check(c1 == c2, "a frozen process makes no progress (%lu -> %lu)", c1, c2);
		rc = ns_cgroup_freeze(state, 0, &e);
		check(rc == 0 && ns_cgroup_frozen(state) == 0, "thaw (%s)", rc ? e.msg : "ok");
		usleep(100000);
		c3 = *counter;
		check(c3 > c2, "a thawed process runs again (%lu -> %lu)", c2, c3);
		/* Killing a frozen cgroup's process works once thawed by destroy;
		 * here it is thawed already. */
		kid_kill(&k);
		munmap((void *)counter, 4096);
		cg_drained(state, "freezer");
	}

	rc = ns_cgroup_destroy(state, &e);
	check(rc == 0, "ns_cgroup_destroy (%s)", rc ? e.msg : "ok");
	for (size_t i = 0; i < ARRAY_SIZE(ctrls); i++) {
		const char *dir = cg_dir(state, ctrls[i]);
		struct stat sb;

		if (dir != NULL)
			check(stat(dir, &sb) < 0 && errno == ENOENT, "%s removed", dir);
	}
	cJSON_Delete(state);
}

/* --- network --------------------------------------------------------------- */

struct net_args {
	int	go;	/* read end: the parent's go, carrying the port */
	int	ready;	/* write end: the child says it is in its namespaces */
	int	control;	/* slirp4netns without --disable-host-loopback */
};

static int
connect_timeout(const char *ip, int port, int ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct pollfd pfd;
	int fd, err = 0;
	socklen_t len = sizeof err;

	inet_pton(AF_INET, ip, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(fd);
		return 0;
	}
	if (errno != EINPROGRESS) {
		err = errno;
		close(fd);
		return err;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, ms) <= 0) {
		close(fd);
		return ETIMEDOUT;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	close(fd);
	return err;
}

static void
net_child(void *arg)
{
	struct net_args *a = arg;
	struct sbx_err e;
	struct ifreq ifr;
	int port = 0, fd, rc, err;
	char addr[INET_ADDRSTRLEN] = "";

	if (userns_root(CLONE_NEWNET) < 0) {
		rep(0, "user+net namespace: %s", strerror(errno));
		return;
	}
	rc = ns_net_loopback_up(&e);
	rep(rc == 0, "ns_net_loopback_up (%s)", rc ? e.msg : "ok");
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	rep(ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP), "lo is up");
	(void)write_all(a->ready, "r", 1);
	if (read(a->go, &port, sizeof port) != sizeof port || port <= 0) {
		rep(0, "no go from the parent (egress did not start)");
		close(fd);
		return;
	}
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "tap0");
	if (ioctl(fd, SIOCGIFADDR, &ifr) == 0)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr, addr,
		    sizeof addr);
	rep(strcmp(addr, "10.0.2.100") == 0, "tap0 exists with 10.0.2.100 (%s)",
	    addr[0] ? addr : strerror(errno));
	/* The host's 127.0.0.1:port has a listener: neither its slirp alias nor the
	 * sandbox's own loopback may reach it. */
	err = connect_timeout("10.0.2.2", port, 3000);
	if (a->control) {
		/* Proves the check below can fail: this is the hole the flag closes. */
		rep(err == 0, "control: without --disable-host-loopback, 10.0.2.2:%d reaches the "
		    "host's loopback (%s)", port, err ? strerror(err) : "connected");
		close(fd);
		return;
	}
	rep(err != 0, "host loopback via 10.0.2.2:%d is not reachable (%s)", port,
	    err ? strerror(err) : "CONNECTED");
	err = connect_timeout("127.0.0.1", port, 3000);
	rep(err != 0, "127.0.0.1:%d inside is not the host's (%s)", port,
	    err ? strerror(err) : "CONNECTED");
	close(fd);
}

/* The control's helper: slirp4netns as the test's own child, loopback open. */
static pid_t
control_slirp(pid_t pid)
{
	int r[2];
	pid_t h;
	char c, rfd[32], target[32];

	if (pipe(r) < 0)
		return -1;
	h = fork();
	if (h == 0) {
		int null = open("/dev/null", O_WRONLY);

		close(r[0]);
		dup2(null, 1);
		dup2(null, 2);
		snprintf(rfd, sizeof rfd, "--ready-fd=%d", r[1]);
		snprintf(target, sizeof target, "%d", (int)pid);
		execlp("slirp4netns", "slirp4netns", "--configure", rfd, target, "tap0",
		    (char *)NULL);
		_exit(127);
	}
	close(r[1]);
	if (read_timeout(r[0], &c, 1, 5000) != 1) {
		kill(h, SIGKILL);
		waitpid(h, NULL, 0);
		h = -1;
	}
	close(r[0]);
	return h;
}

static int
proc_alive(pid_t pid)
{
	char path[64], *s, *p;
	int alive;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((s = read_file(path, 4096, NULL)) == NULL)
		return 0;
	p = strrchr(s, ')');
	alive = p != NULL && p[1] && p[2] != 'Z' && p[2] != 'X';
	free(s);
	return alive;
}

static void
test_egress(int control)
{
	struct net_args a = { .control = control };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	struct sbx_err e;
	int go[2], ready[2], srv, port, rc, st, lines = 0;
	pid_t pid, helper = -1;
	char c, line[600];
	int rp[2];
	FILE *f;

	if (ns_net_egress_helper() == NULL) {
		struct sbx_err e2;

		check(ns_net_egress_start(getpid(), &helper, &e2) < 0 &&
		    e2.code == SBX_EUNSUPPORTED && e2.hint[0], "no helper: unsupported, with a hint");
		skip("egress: neither slirp4netns nor pasta installed");
		return;
	}
	if (access("/dev/net/tun", R_OK | W_OK) < 0) {
		struct sbx_err e2;

		check(ns_net_egress_start(getpid(), &helper, &e2) < 0 &&
		    e2.code == SBX_EUNSUPPORTED && strstr(e2.hint, "/dev/net/tun") != NULL,
		    "no /dev/net/tun access: unsupported, with a hint");
		skip("egress: /dev/net/tun is not accessible to uid %d", (int)geteuid());
		return;
	}
	diag("egress helper: %s", ns_net_egress_helper());
	srv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (srv < 0 || bind(srv, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(srv, 8) < 0 ||
	    getsockname(srv, (struct sockaddr *)&sa, &sl) < 0) {
		check(0, "host server on 127.0.0.1");
		return;
	}
	port = ntohs(sa.sin_port);
	/* Control: the listener is there for the host itself. */
	check(connect_timeout("127.0.0.1", port, 1000) == 0, "the host reaches its server on :%d", port);

	if (pipe(go) < 0 || pipe(ready) < 0 || pipe(rp) < 0) {
		check(0, "pipes");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(ready[0]);
		close(rp[0]);
		close(srv);
		report_fd = rp[1];
		a.go = go[0];
		a.ready = ready[1];
		net_child(&a);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	close(rp[1]);
	if (read_timeout(ready[0], &c, 1, 5000) == 1) {
		char logp[] = "/tmp/sbx-egress-log-XXXXXX";
		int lfd = mkstemp(logp);

		if (lfd >= 0)
			close(lfd);
		if (control) {
			helper = control_slirp(pid);
			rc = helper > 0 ? 0 : -1;
			check(rc == 0, "control: plain slirp4netns started");
		} else {
			rc = ns_net_egress_start_logged(pid, logp, &helper, &e);
			check(rc == 0 && helper > 0, "ns_net_egress_start (%s)",
			    rc ? e.msg : "ok");
		}
		if (rc == 0)
			(void)write_all(go[1], &port, sizeof port);
		else {
			_cleanup_free_ char *log = read_file(logp, 1 << 16, NULL);

			diag("helper log: %s", log ? log : "(none)");
		}
		unlink(logp);
	} else
		check(0, "the namespace child got ready");
	close(go[1]);
	f = fdopen(rp[0], "r");
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line) >= 2) {
			check(line[0] == '1', "egress: %s", line + 2);
			lines++;
		}
	}
	fclose(f);
	close(ready[0]);
	waitpid(pid, &st, 0);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0 && lines > 0,
	    "egress: child finished cleanly (%d results)", lines);
	if (helper > 0 && control) {
		kill(helper, SIGKILL);
		waitpid(helper, NULL, 0);
	} else if (helper > 0) {
		/* The sandbox's init is gone: its helper follows by itself. */
		int64_t end = now_ms() + 3000;

		while (proc_alive(helper) && now_ms() < end) {
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
			usleep(10000);
		}
		check(!proc_alive(helper), "the helper exits with the sandbox");
		ns_net_egress_stop(helper);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	close(srv);
}

/* egress_stop kills a helper whose sandbox still lives. */
static void
test_egress_stop(void)
{
	struct sbx_err e;
	int ready[2], hold[2], rc;
	pid_t pid, helper = -1;
	char c;
	int64_t end;

	if (ns_net_egress_helper() == NULL || access("/dev/net/tun", R_OK | W_OK) < 0) {
		skip("egress stop: no helper or no /dev/net/tun");
		return;
	}
	if (pipe(ready) < 0 || pipe(hold) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		if (userns_root(CLONE_NEWNET) < 0)
			_exit(1);
		(void)write_all(ready[1], "r", 1);
		(void)read(hold[0], &c, 1);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	if (read_timeout(ready[0], &c, 1, 5000) != 1) {
		check(0, "egress stop: namespace child ready");
		goto out;
	}
	rc = ns_net_egress_start(pid, &helper, &e);
	check(rc == 0, "egress stop: start (%s)", rc ? e.msg : "ok");
	if (rc == 0) {
		check(proc_alive(helper), "egress stop: helper running while the sandbox lives");
		ns_net_egress_stop(helper);
		end = now_ms() + 2000;
		while (proc_alive(helper) && now_ms() < end) {
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
			usleep(10000);
		}
		check(!proc_alive(helper), "egress stop: ns_net_egress_stop ends it");
	}
out:
	close(hold[1]);
	close(ready[0]);
	waitpid(pid, NULL, 0);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* --- doctor ---------------------------------------------------------------- */

struct doc {
	int	n, bad;
	int	userns_ok, seccomp_ok, overlay_ok;
};

static void
doc_report(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	struct doc *d = arg;
	const char *name = level == CHECK_OK ? "ok" : level == CHECK_WARN ? "warn" :
	    level == CHECK_FAIL ? "FAIL" : NULL;

	d->n++;
	diag("doctor: %-4s %s: %s%s%s", name ? name : "??", what ? what : "(null)",
	    detail ? detail : "(null)", fix ? " -- fix: " : "", fix ? fix : "");
	if (name == NULL || what == NULL || what[0] == '\0' || detail == NULL ||
	    (level != CHECK_OK && (fix == NULL || fix[0] == '\0')))
		d->bad++;
	if (what != NULL && level == CHECK_OK) {
		if (strcmp(what, "user namespaces") == 0)
			d->userns_ok = 1;
		if (strcmp(what, "seccomp") == 0)
			d->seccomp_ok = 1;
		if (strcmp(what, "overlayfs in a user namespace") == 0)
			d->overlay_ok = 1;
	}
}

static void
test_doctor(void)
{
	struct doc d = { 0 };

	ns_doctor(doc_report, &d);
	check(d.n >= 8, "doctor: %d checks reported", d.n);
	check(d.bad == 0, "doctor: every report has a level, a what, a detail, and a fix "
	    "unless ok (%d bad)", d.bad);
	check(d.seccomp_ok, "doctor: seccomp ok on this kernel");
	if (geteuid() == 0) {
		check(d.userns_ok, "doctor: user namespaces ok (as root)");
		check(d.overlay_ok, "doctor: overlay in a user namespace ok (as root)");
	} else
		skip("doctor: userns/overlay expectations only as root");
}

int
main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Orphans of the fork bombs and the egress helpers come back to us. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	run_child("seccomp", seccomp_child, NULL);
	run_child("caps", caps_child, NULL);
	if (geteuid() == 0)
		run_child("rlimits", rlimits_child, NULL);
	else
		skip("rlimits: RLIMIT_NPROC test switches uid, needs root");
	test_cgroups();
	test_egress(1);
	test_egress(0);
	test_egress_stop();
	test_doctor();

	return tap_end();
}
