/* Tests of the ns backend (backends/ns/backend-ns.c) on this host: create, isolation as
 * seen from the host and from inside (entering the sandbox's namespaces), the
 * agent's /health over its socket, survival of the creator, deadline,
 * suspend/resume, destroy, gc, failure cleanup, and create-to-ready time.
 * Private XDG dirs; every sandbox made is destroyed, pass or fail.  TAP lines. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "backends/backend.h"
#include "backends/ns/ns.h"
#include "backends/ns/ns-idmap.h"
#include "lib/util.h"

static char tmpdir[64];
static char marker[128];		/* in host /root, when we may write there */

/* --- sandboxes made here, destroyed at exit whatever happens ---------------- */

static struct sandbox *made[64];
static int nmade;

static struct sandbox *
sb_new(const char *id, int64_t max_s)
{
	struct sandbox *s = xcalloc(1, sizeof *s);

	snprintf(s->id, sizeof s->id, "%s", id);
	s->agent_secret = xstrdup("test-secret-0123456789abcdef");
	s->max_duration_s = max_s;
	s->network = xstrdup("none");
	return s;
}

static void
sb_free(struct sandbox *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < nmade; i++)
		if (made[i] == s)
			made[i] = NULL;
	free(s->name);
	free(s->image);
	free(s->state_reason);
	free(s->limits_note);
	free(s->network);
	free(s->agent_endpoint);
	free(s->agent_secret);
	cJSON_Delete(s->backend_data);
	free(s);
}

static int
sb_create(struct sandbox *s, struct sbx_err *e)
{
	int rc = backend_ns.create(s, e);

	if (rc == 0 && nmade < (int)ARRAY_SIZE(made))
		made[nmade++] = s;
	return rc;
}

static void
rm_tree(const char *path)
{
	struct ns_idmap m;
	struct sbx_err e;

	if (ns_idmap_choose(&m, &e) == 0)
		(void)ns_rmtree(&m, path, &e);
}

static void
cleanup(void)
{
	struct sbx_err e;

	for (int i = 0; i < nmade; i++)
		if (made[i] != NULL && backend_ns.destroy(made[i], &e) < 0)
			diag("cleanup: destroy %s: %s", made[i]->id, e.msg);
	if (marker[0])
		unlink(marker);
	if (tmpdir[0])
		rm_tree(tmpdir);
}

static void
on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* --- helpers ------------------------------------------------------------------ */

static pid_t
sb_pid(const struct sandbox *s)
{
	const cJSON *v = cJSON_GetObjectItem(s->backend_data, "pid");
	return v ? (pid_t)v->valuedouble : -1;
}

static const char *
sb_dir(const struct sandbox *s)
{
	const cJSON *v = cJSON_GetObjectItem(s->backend_data, "dir");
	return v && cJSON_IsString(v) ? v->valuestring : "";
}

/* GET /health on the agent's unix socket: the HTTP status, or -1. */
static int
health(const struct sandbox *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[512];
	const char *req = "GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
	int fd, status = -1;
	ssize_t n, len = 0;

	if (s->agent_endpoint == NULL || strncmp(s->agent_endpoint, "unix:", 5) != 0)
		return -1;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", s->agent_endpoint + 5);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	struct timeval tv = { .tv_sec = 2 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    write_all(fd, req, strlen(req)) == 0) {
		while (len < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
			len += n;
		buf[len] = '\0';
		if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
			status = -1;
	}
	close(fd);
	return status;
}

static int
exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
exists(const char *fmt, ...)
{
	char path[4200];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	return lstat(path, &st) == 0;
}

static int
same_ns(pid_t pid, const char *ns)
{
	char a[64], b[64], la[64] = "", lb[64] = "";

	snprintf(a, sizeof a, "/proc/self/ns/%s", ns);
	snprintf(b, sizeof b, "/proc/%d/ns/%s", (int)pid, ns);
	if (readlink(a, la, sizeof la - 1) < 0 || readlink(b, lb, sizeof lb - 1) < 0)
		return -1;
	return strcmp(la, lb) == 0;
}

static char
proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY)) < 0 || (n = read(fd, buf, sizeof buf - 1)) <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Run fn inside the sandbox's user and mount namespaces as sandbox uid `uid`
 * (what a command the agent runs would be, minus the hardening); returns fn's
 * exit status, or -1 when entering failed. */
static int
in_sandbox(pid_t pid, uid_t uid, int (*fn)(void *), void *arg)
{
	char p[64];
	int st;
	pid_t c;

	if ((c = fork()) < 0)
		return -1;
	if (c == 0) {
		int ufd, mfd;
		snprintf(p, sizeof p, "/proc/%d/ns/user", (int)pid);
		ufd = open(p, O_RDONLY);
		snprintf(p, sizeof p, "/proc/%d/ns/mnt", (int)pid);
		mfd = open(p, O_RDONLY);
		if (ufd < 0 || mfd < 0 || setns(ufd, CLONE_NEWUSER) < 0 || setns(mfd, CLONE_NEWNS) < 0 ||
		    setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 ||
		    (setgroups(0, NULL) < 0 && errno != EPERM) ||	/* denied with one id */
		    /* from the sandbox's 0 to uid: the kernel drops the capabilities */
		    setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0 ||
		    chdir("/") < 0) {
			diag("entering sandbox as %u: %s", (unsigned)uid, strerror(errno));
			_exit(99);
		}
		_exit(fn(arg));
	}
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) != 99 ? WEXITSTATUS(st) : -1;
}

/* 0 when a file can be created at path (then removed unless keep), else errno. */
static int
try_create(void *arg)
{
	int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	return fd < 0 ? (errno & 0x7f) : (close(fd), 0);
}
static int
try_open(void *arg)
{
	int fd = open(arg, O_RDONLY);
	return fd < 0 ? (errno & 0x7f) : (close(fd), 0);
}

static int
cmp_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* --- the tests ------------------------------------------------------------------ */

static void
test_isolation(void)
{
	struct sbx_err e;
	struct sandbox *s = sb_new("sbx-t0main", 0);
	char path[4200], buf[8600];
	FILE *f;
	int64_t t0 = now_ms();
	int rc = sb_create(s, &e);

	if (!check(rc == 0, "create a sandbox")) {
		diag("%s (%s)", e.msg, e.hint);
		sb_free(s);
		return;
	}
	diag("create-to-ready (first, image %s): %lld ms", "maybe built", (long long)(now_ms() - t0));
	if (s->limits_note)
		diag("limits_note: %s", s->limits_note);
	pid_t pid = sb_pid(s);
	const char *dir = sb_dir(s);
	check(s->state == SBX_RUNNING, "state is running");
	check(health(s) == 200, "GET /health through %s answers 200", s->agent_endpoint);
	check(strlen(s->agent_endpoint) < 5 + 108 && exists("%s/run/agent.sock", dir),
	    "the agent socket is at <dir>/run/agent.sock");
	{
		static const char *const nss[] = { "user", "mnt", "pid", "net", "ipc", "uts", "cgroup" };
		int differ = 1;
		for (size_t i = 0; i < ARRAY_SIZE(nss); i++)
			if (same_ns(pid, nss[i]) != 0) {
				differ = 0;
				diag("namespace %s is the host's", nss[i]);
			}
		check(differ, "init's user mnt pid net ipc uts cgroup namespaces all differ from the host's");
	}
	{
		unsigned long in = 9, out = 0, count = 0;
		struct ns_idmap m;
		snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
		f = fopen(path, "r");
		if (f && fscanf(f, "%lu %lu %lu", &in, &out, &count) != 3)
			in = 9;
		if (f)
			fclose(f);
		ns_idmap_choose(&m, &e);
		check(in == 0 && out == m.uid_base && (geteuid() != 0 || (out != 0 && count == 65536)),
		    "uid_map: sandbox 0 -> host %lu (%lu ids; never host root)", out, count);
		diag("id range: %s", m.where);
	}
	/* Alive: sleeping, or running for a moment on a busy machine; not a zombie. */
	char init_st = proc_state(pid);
	check(init_st == 'S' || init_st == 'R', "init is alive (state %c)", init_st);
	snprintf(path, sizeof path, "/proc/%d/root", (int)pid);
	check(exists("%s/workspace", path) && exists("%s/opt/sbxtop/sbxtop-agent", path),
	    "the root has /workspace and /opt/sbxtop/sbxtop-agent");
	if (geteuid() == 0) {
		int fd;
		snprintf(marker, sizeof marker, "/root/sbxtop-marker-%d", (int)getpid());
		if ((fd = open(marker, O_WRONLY | O_CREAT, 0600)) >= 0)
			close(fd);
		check(!exists("%s%s", path, marker), "a marker file in host /root is not visible");
		unlink(marker);
		marker[0] = '\0';
	}
	{
		int only_sandbox = 1;
		DIR *d;
		snprintf(buf, sizeof buf, "%s/home", path);
		if ((d = opendir(buf)) != NULL) {
			struct dirent *de;
			while ((de = readdir(d)) != NULL)
				if (de->d_name[0] != '.' && strcmp(de->d_name, "sandbox") != 0)
					only_sandbox = 0;
			closedir(d);
		}
		check(only_sandbox && !exists("%s/work", path) && !exists("%s/srv/.", path) ? 1 :
		    only_sandbox && !exists("%s/work", path), "no host /home entries, no /work inside");
	}
	check(!exists("%s/etc/shadow", path) && !exists("%s/etc/gshadow", path) &&
	    !exists("%s/etc/ssh/ssh_host_rsa_key", path) && !exists("%s/etc/ssh/ssh_host_ed25519_key", path) &&
	    !exists("%s/etc/machine-id", path), "no shadow, gshadow, ssh host keys or machine-id inside");
	snprintf(buf, sizeof buf, "%s/etc/passwd", path);
	{
		_cleanup_free_ char *pw = read_file(buf, 65536, NULL);
		check(pw && strstr(pw, "\nsandbox:x:1000:1000:") && !strstr(pw, "\nsbx") &&
		    strncmp(pw, "root:", 5) == 0, "/etc/passwd inside: root, sandbox, nobody only");
	}
	snprintf(buf, sizeof buf, "%s/usr/bin/bash", path);
	check(access(buf, X_OK) == 0, "/usr/bin/bash is there inside");
	{
		int nproc = 0;
		DIR *d;
		snprintf(buf, sizeof buf, "%s/proc", path);
		if ((d = opendir(buf)) != NULL) {
			struct dirent *de;
			while ((de = readdir(d)) != NULL)
				nproc += atoi(de->d_name) > 0;
			closedir(d);
		}
		check(nproc >= 1 && nproc <= 3 && exists("%s/proc/1/stat", path),
		    "the sandbox's /proc shows its own processes only (%d)", nproc);
	}
	{
		snprintf(buf, sizeof buf, "%s/run/agent.log", dir);
		_cleanup_free_ char *log = read_file(buf, 1 << 20, NULL);
		check(log && strstr(log, " ready"), "the agent log says ready");
	}
	{
		snprintf(buf, sizeof buf, "%s/workspace/from-host.txt", dir);
		f = fopen(buf, "w");
		if (f) {
			fputs("hello from the host\n", f);
			fclose(f);
		}
		snprintf(buf, sizeof buf, "%s/workspace/from-host.txt", path);
		_cleanup_free_ char *got = read_file(buf, 4096, NULL);
		check(got && strcmp(got, "hello from the host\n") == 0,
		    "a file written into <dir>/workspace appears in /workspace");
	}

	/* From inside: enter the sandbox's user and mount namespaces. */
	check(in_sandbox(pid, 0, try_open, "/etc/shadow") == ENOENT, "inside: /etc/shadow does not exist");
	check(in_sandbox(pid, 0, try_create, "/etc/sbxtop-test") == 0 && !exists("/etc/sbxtop-test"),
	    "inside as root: /etc is writable (copy-up), host /etc unchanged");
	if (geteuid() == 0) {
		int r = in_sandbox(pid, 0, try_create, "/usr/bin/sbxtop-test-newfile");
		check(r == 0 && !exists("/usr/bin/sbxtop-test-newfile") &&
		    exists("%s/ovl/usr/upper/bin/sbxtop-test-newfile", dir),
		    "inside as root: touch /usr/bin/newfile works (idmapped lower); host /usr/bin unchanged (%s)",
		    r > 0 ? strerror(r) : r == 0 ? "ok" : "could not enter");
	} else {
		diag("not root: /usr is read-only inside (no idmapped mounts)");
	}
	{
		struct ns_idmap m;
		ns_idmap_choose(&m, &e);
		if (m.have_user) {
			check(in_sandbox(pid, NS_SANDBOX_UID, try_create, "/workspace/by-sandbox") == 0,
			    "inside as sandbox (1000): /workspace is writable");
			check(in_sandbox(pid, NS_SANDBOX_UID, try_create, "/etc/by-sandbox") == EACCES,
			    "inside as sandbox (1000): /etc is not writable");
			check(in_sandbox(pid, NS_SANDBOX_UID, try_create, "/usr/bin/by-sandbox") == EACCES,
			    "inside as sandbox (1000): /usr/bin is not writable");
		}
	}
	{
		_cleanup_free_ char *c = backend_ns.log_path(s, "console", &e);
		_cleanup_free_ char *a = backend_ns.log_path(s, "agent", &e);
		char *x = backend_ns.log_path(s, "kernel", &e);
		check(c && a && exists("%s", c) && exists("%s", a) && x == NULL && e.code == SBX_EINVAL,
		    "log_path: console and agent exist, others refused");
		free(x);
	}

	/* Suspend and resume. */
	check(backend_ns.suspend(s, &e) == 0 && s->state == SBX_SUSPENDED, "suspend");
	/* Stopped by SIGSTOP ('T'), or frozen by the cgroup freezer (v1 shows frozen
	 * tasks as 'D'; v2 as 'S' with the cgroup's frozen flag). */
	{
		char st = proc_state(pid);
		int frozen = ns_cgroup_frozen(cJSON_GetObjectItem(s->backend_data, "cgroup"));
		check(st == 'T' || frozen == 1, "suspended: init is stopped or frozen (state %c, frozen %d)",
		    st, frozen);
	}
	s->state = SBX_RUNNING;
	check(backend_ns.status(s, &e) == 0 && s->state == SBX_SUSPENDED, "status says suspended");
	check(backend_ns.resume(s, &e) == 0 && s->state == SBX_RUNNING, "resume");
	for (int i = 0; i < 100 && proc_state(pid) == 'T'; i++)
		usleep(2000);
	check(proc_state(pid) != 'T' && health(s) == 200, "resumed: init runs and answers /health");
	check(backend_ns.status(s, &e) == 0 && s->state == SBX_RUNNING, "status says running");

	/* Destroy. */
	char saved_dir[4200];
	snprintf(saved_dir, sizeof saved_dir, "%s", dir);
	check(backend_ns.destroy(s, &e) == 0, "destroy");
	check(!exists("%s", saved_dir), "destroy removed the sandbox's directory");
	check(kill(pid, 0) < 0 && errno == ESRCH, "destroy: the init is gone");
	check(backend_ns.destroy(s, &e) == 0, "destroying it again succeeds");
	check(backend_ns.status(s, &e) == 0 && s->state == SBX_TERMINATED, "status: terminated (%s)",
	    s->state_reason ? s->state_reason : "");
	sb_free(s);
}

static void
test_survives_creator(void)
{
	struct sbx_err e;
	int p[2];
	pid_t c;
	char buf[4096];
	ssize_t n;
	struct sandbox *s;

	if (pipe(p) < 0)
		return;
	if ((c = fork()) == 0) {
		struct sandbox *cs = sb_new("sbx-t1orphan", 0);
		close(p[0]);
		if (backend_ns.create(cs, &e) == 0) {
			char *j = cJSON_PrintUnformatted(cs->backend_data);
			dprintf(p[1], "%s\n%s", cs->agent_endpoint, j);
			free(j);
			_exit(0);
		}
		dprintf(p[1], "ERR %s", e.msg);
		_exit(1);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	buf[n > 0 ? n : 0] = '\0';
	waitpid(c, NULL, 0);
	s = sb_new("sbx-t1orphan", 0);
	char *nl = strchr(buf, '\n');
	if (!check(nl != NULL, "a child process creates a sandbox and exits")) {
		diag("%s", buf);
		sb_free(s);
		return;
	}
	*nl = '\0';
	s->agent_endpoint = xstrdup(buf);
	s->backend_data = cJSON_Parse(nl + 1);
	made[nmade++] = s;
	usleep(20000);
	check(backend_ns.status(s, &e) == 0 && s->state == SBX_RUNNING,
	    "the sandbox survives its creator (running)");
	check(health(s) == 200, "... and its agent answers");
	check(backend_ns.destroy(s, &e) == 0 && !exists("%s", sb_dir(s)), "destroy it from another process");
	sb_free(s);
}

static void
test_deadline(void)
{
	struct sbx_err e;
	struct sandbox *s = sb_new("sbx-t2dead", 2);
	int64_t t0;

	if (!check(sb_create(s, &e) == 0, "create with max_duration_s=2")) {
		diag("%s", e.msg);
		sb_free(s);
		return;
	}
	t0 = now_ms();
	while (now_ms() - t0 < 6000) {
		backend_ns.status(s, &e);
		if (s->state == SBX_TERMINATED)
			break;
		usleep(100000);
	}
	check(s->state == SBX_TERMINATED && now_ms() - t0 >= 1500 && now_ms() - t0 <= 4000,
	    "terminated on its own after %lld ms", (long long)(now_ms() - t0));
	check(s->state_reason && strstr(s->state_reason, "deadline"), "reason: %s",
	    s->state_reason ? s->state_reason : "(none)");
	check(backend_ns.destroy(s, &e) == 0 && !exists("%s", sb_dir(s)), "destroy after the deadline");
	sb_free(s);
}

static void
test_failures(void)
{
	struct sbx_err e;
	char fake[256], path[512], *old = NULL;
	struct sandbox *s;
	FILE *f;

	/* An agent that dies at once: create fails, says why, leaves nothing. */
	snprintf(fake, sizeof fake, "%s/fake-bundle", tmpdir);
	mkdir(fake, 0755);
	snprintf(path, sizeof path, "%s/sbxtop-agent", fake);
	if ((f = fopen(path, "w")) != NULL) {
		fputs("#!/bin/sh\necho boom-from-fake-agent >&2\nexit 3\n", f);
		fclose(f);
	}
	chmod(path, 0755);
	chmod(tmpdir, 0755);
	if (getenv("SBXTOP_AGENT_BUNDLE"))
		old = xstrdup(getenv("SBXTOP_AGENT_BUNDLE"));
	setenv("SBXTOP_AGENT_BUNDLE", fake, 1);
	s = sb_new("sbx-t3fail", 0);
	int rc = sb_create(s, &e);
	check(rc < 0 && e.code == SBX_EAGENT && strstr(e.msg, "boom-from-fake-agent"),
	    "an agent that exits: create fails with its console output (%s)", e.msg);
	snprintf(path, sizeof path, "%s/state/sbxtop/sandboxes/sbx-t3fail", tmpdir);
	check(!exists("%s", path), "... and removes the sandbox's directory");
	setenv("SBXTOP_AGENT_BUNDLE", old, 1);
	free(old);
	sb_free(s);

	s = sb_new("sbx-t3img", 0);
	s->image = xstrdup("relative/dir");
	check(sb_create(s, &e) < 0 && e.code == SBX_EINVAL, "a relative --image is refused");
	sb_free(s);

	s = sb_new("BAD/id", 0);
	check(sb_create(s, &e) < 0 && e.code == SBX_EINVAL, "a bad id is refused");
	sb_free(s);

	{
		char longp[200];
		old = xstrdup(getenv("XDG_STATE_HOME"));
		snprintf(longp, sizeof longp, "%s/%0100d", tmpdir, 0);
		setenv("XDG_STATE_HOME", longp, 1);
		s = sb_new("sbx-t3long", 0);
		check(sb_create(s, &e) < 0 && e.code == SBX_EINVAL && strstr(e.msg, "XDG_STATE_HOME"),
		    "a socket path over 107 bytes is refused, naming XDG_STATE_HOME");
		setenv("XDG_STATE_HOME", old, 1);
		free(old);
		sb_free(s);
	}
}

struct gc_seen {
	int	 n;		/* things reported */
	int	 agent;		/* of them, an agent */
};

static void
gc_found(void *arg, const char *kind, const char *id, const char *what, int live)
{
	struct gc_seen *g = arg;

	g->n++;
	g->agent += strcmp(kind, "agent") == 0 && strcmp(id, "sbx-t4live") == 0 && live;
}

static void
test_gc(void)
{
	struct sbx_err e;
	struct sandbox *live = sb_new("sbx-t4live", 0);
	char path[512], *known[] = { live->id };
	struct gc_seen seen = { 0, 0 };
	struct backend_gc g = { .found = gc_found, .arg = &seen };
	pid_t pid;
	FILE *f;

	if (!check(sb_create(live, &e) == 0, "create a sandbox for gc")) {
		sb_free(live);
		return;
	}
	pid = sb_pid(live);
	/* A leftover: a directory whose init is long gone. */
	snprintf(path, sizeof path, "%s/state/sbxtop/sandboxes/sbx-t4gone", tmpdir);
	mkdir(path, 0700);
	snprintf(path, sizeof path, "%s/state/sbxtop/sandboxes/sbx-t4gone/upper", tmpdir);
	mkdir(path, 0700);
	snprintf(path, sizeof path, "%s/state/sbxtop/sandboxes/sbx-t4gone/backend.json", tmpdir);
	if ((f = fopen(path, "w")) != NULL) {
		fputs("{\"pid\": 999999999, \"starttime\": 1}", f);
		fclose(f);
	}
	int n = backend_ns.gc(&g, &e);
	snprintf(path, sizeof path, "%s/state/sbxtop/sandboxes/sbx-t4gone", tmpdir);
	check(n == 1 && !exists("%s", path), "gc removes a dead sandbox's directory (%d)", n);
	check(exists("%s", sb_dir(live)) && health(live) == 200,
	    "gc leaves a sandbox whose record is not written yet alone (its directory is locked)");
	/* Recorded (the core calls settled then): known, it stays. */
	backend_ns.settled(live);
	g.known = known;
	g.nknown = 1;
	n = backend_ns.gc(&g, &e);
	check(n == 0 && health(live) == 200, "gc leaves a known sandbox alone (%d)", n);
	/* No record names it: an orphan, listed by a dry run, removed by gc. */
	g.known = NULL;
	g.nknown = 0;
	g.dry_run = 1;
	seen.n = seen.agent = 0;
	n = backend_ns.gc(&g, &e);
	check(n == 0 && seen.agent == 1 && health(live) == 200,
	    "a dry run reports an orphan's agent and removes nothing (%d, %d found)", n, seen.n);
	g.dry_run = 0;
	n = backend_ns.gc(&g, &e);
	check(n >= 1 && kill(pid, 0) < 0 && !exists("%s", sb_dir(live)),
	    "gc removes a live sandbox that no record names: its init and directory (%d)", n);
	backend_ns.destroy(live, &e);
	sb_free(live);
}

static void
test_many(void)
{
	struct sbx_err e;
	int64_t t[10];
	int good = 0;

	for (int i = 0; i < 10; i++) {
		char id[32];
		snprintf(id, sizeof id, "sbx-t5n%d", i);
		struct sandbox *s = sb_new(id, 0);
		int64_t t0 = now_ms();
		if (sb_create(s, &e) == 0) {
			t[good] = now_ms() - t0;
			if (health(s) == 200 && backend_ns.destroy(s, &e) == 0 && !exists("%s", sb_dir(s)))
				good++;
		} else {
			diag("create %s: %s", id, e.msg);
		}
		sb_free(s);
	}
	check(good == 10, "10 sandboxes created, answered and destroyed in a row (%d)", good);
	if (good > 0) {
		qsort(t, (size_t)good, sizeof t[0], cmp_int64);
		diag("create-to-ready over %d: p50 %lld ms, max %lld ms, min %lld ms", good,
		    (long long)t[good / 2], (long long)t[good - 1], (long long)t[0]);
	}
}

int
main(void)
{
	char exe[4096], bundle[4200];
	ssize_t n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sbxtest.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	{
		const char *v[][2] = { { "XDG_STATE_HOME", "state" }, { "XDG_DATA_HOME", "data" },
		    { "XDG_RUNTIME_DIR", "run" }, { "XDG_CONFIG_HOME", "config" }, { "XDG_CACHE_HOME", "cache" } };
		for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
			char p[128];
			snprintf(p, sizeof p, "%s/%s", tmpdir, v[i][1]);
			mkdir(p, 0700);
			setenv(v[i][0], p, 1);
		}
	}
	/* The bundle of this build: build/tests/ns-backend -> build/agent-bundle. */
	if (getenv("SBXTOP_AGENT_BUNDLE") == NULL && (n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(bundle, sizeof bundle, "%s/../agent-bundle", exe);
		setenv("SBXTOP_AGENT_BUNDLE", realpath(bundle, exe) ? exe : bundle, 1);
	}
	diag("bundle %s, state %s", getenv("SBXTOP_AGENT_BUNDLE"), getenv("XDG_STATE_HOME"));

	test_isolation();
	test_survives_creator();
	test_deadline();
	test_failures();
	test_gc();
	test_many();

	return tap_end();
}
