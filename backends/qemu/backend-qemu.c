/* The qemu backend: a sandbox is a microVM, `qemu-system-x86_64 -M microvm` with
 * its own kernel, booted from an image of backends/qemu/qemu-image.h (KVM when the probe in
 * qemu-kvm.c says it works, TCG otherwise), whose PID 1 is sbxtop-agent.
 *
 * Host side, each sandbox has a directory $XDG_STATE_HOME/sbxtop/sandboxes/<id>
 * (0700): base.ext4 (a hard link to the image's rootfs, so rebuilding or
 * removing the image never pulls the disk from under a running VM), disk.qcow2
 * (the copy-on-write overlay the guest writes), seed.img (a small read-only
 * disk with the secret and settings: only the guest's root can read it, unlike
 * the kernel command line; it needs no driver beyond virtio_blk, which the root
 * disk needs anyway), console.log (the serial console, where the agent logs),
 * qmp.sock, qemu.pid, qemu.err and backend.json (for gc).
 *
 * The agent is reached through QEMU's user-mode network: a host forward from a
 * random 127.0.0.1 port to the guest's 8080.  Network "none" is restrict=on:
 * the guest reaches nothing but that forward.  QEMU runs detached (-daemonize,
 * its own session), and a detached watchdog process kills it at the deadline
 * even with no sbxtop alive; the agent enforces the deadline inside too. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/agentc.h"
#include "backends/backend.h"
#include "backends/qemu/qemu-image.h"
#include "lib/log.h"
#include "core/paths.h"
#include "backends/qemu/qemu.h"
#include "backends/qemu/qemu-snapshot.h"
#include "lib/util.h"

#define QEMU_BIN		"qemu-system-x86_64"
#define QEMU_DEFAULT_DEADLINE_S	(4 * 3600)
#define QEMU_DEFAULT_MEM_MIB	512
#define QEMU_MIN_MEM_MIB	128
#define QEMU_BOOT_TIMEOUT_TCG_S	180
#define QEMU_BOOT_TIMEOUT_KVM_S	30
#define QEMU_START_TIMEOUT_MS	30000
#define QEMU_GONE_TIMEOUT_MS	5000
#define QMP_TIMEOUT_MS		3000
#define SEED_SIZE		4096
#define GUEST_AGENT_PORT	8080

/* --- paths and records ------------------------------------------------------- */

static int
valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n >= sizeof(((struct sandbox *)0)->id) || id[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)id[i]) && !isdigit((unsigned char)id[i]) && id[i] != '-')
			return 0;
	return 1;
}

struct qdata {
	char			*dir;
	pid_t			 pid;
	unsigned long long	 starttime;
	pid_t			 wd_pid;
	unsigned long long	 wd_starttime;
	int			 orphan;	/* found by find_orphan */
};

static double
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* A create whose process died (a core server killed mid-boot) recorded no
 * pid, yet its QEMU may run on: find it by the pid file QEMU wrote, and take it
 * only if that process's command line names this sandbox's QMP socket (a pid
 * reused since is not ours).  Its start time is read now. */
static void
find_orphan(struct qdata *d)
{
	_cleanup_free_ char *pf = xasprintf("%s/qemu.pid", d->dir), *txt = read_file(pf, 64, NULL);
	_cleanup_free_ char *cl = NULL, *qmp = xasprintf("%s/qmp.sock", d->dir);
	size_t len = 0;
	long pid;

	if (txt == NULL || (pid = strtol(txt, NULL, 10)) <= 0 || pid > INT32_MAX)
		return;
	_cleanup_free_ char *cp = xasprintf("/proc/%ld/cmdline", pid);
	if ((cl = read_file(cp, 65536, &len)) == NULL)
		return;
	for (size_t i = 0; i + 1 < len; i++)	/* one string, to search */
		if (cl[i] == '\0')
			cl[i] = ' ';
	if (strstr(cl, qmp) == NULL)
		return;
	d->pid = (pid_t)pid;
	d->starttime = qemu_proc_starttime(d->pid);
	d->orphan = d->starttime != 0;
}

static int
qdata_get(const struct sandbox *s, struct qdata *d, struct sbx_err *e)
{
	const cJSON *bd = s->backend_data, *v;

	memset(d, 0, sizeof *d);
	if ((v = cJSON_GetObjectItemCaseSensitive(bd, "dir")) != NULL && cJSON_IsString(v)) {
		d->dir = xstrdup(v->valuestring);
	} else {
		if (!valid_id(s->id))
			return sbx_error(e, SBX_EINVAL, NULL, "invalid sandbox id '%s'", s->id);
		if ((d->dir = paths_sandbox_dir(s->id, e)) == NULL)
			return -1;
	}
	d->pid = (pid_t)num(bd, "pid");
	d->starttime = (unsigned long long)num(bd, "starttime");
	d->wd_pid = (pid_t)num(bd, "watchdog_pid");
	d->wd_starttime = (unsigned long long)num(bd, "watchdog_starttime");
	if (d->pid <= 0)
		find_orphan(d);
	return 0;
}

static int
alive(pid_t pid, unsigned long long starttime)
{
	return pid > 0 && starttime != 0 && qemu_proc_starttime(pid) == starttime;
}

static void
kill_verified(pid_t pid, unsigned long long starttime, int sig)
{
	if (alive(pid, starttime))
		kill(pid, sig);
}

static int
wait_gone(pid_t pid, unsigned long long starttime, int timeout_ms)
{
	for (int64_t end = now_ms() + timeout_ms; alive(pid, starttime);) {
		if (now_ms() >= end)
			return -1;
		/* Reaped here when it happens to be our child. */
		(void)waitpid(pid, NULL, WNOHANG);
		poll(NULL, 0, 10);
	}
	return 0;
}

static int
write_file_mode(const char *path, const void *data, size_t len, struct sbx_err *e)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || write_all(fd, data, len) < 0)
		return sbx_error_errno(e, SBX_EIO, "is the disk full?", "cannot write %s", path);
	return 0;
}

/* --- the watchdog ---------------------------------------------------------------- */

/* A detached process (own session, no fds of ours) that SIGKILLs QEMU at the
 * deadline (wall clock, ms) and exits as soon as QEMU is gone.  Its pid and
 * start time go in *wd, *wd_start. */
static int
spawn_watchdog(pid_t qpid, unsigned long long qstart, int64_t deadline_ms, pid_t *wd,
    unsigned long long *wd_start, struct sbx_err *e)
{
	int p[2];
	pid_t mid, got = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "pipe");
	if ((mid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return sbx_error_errno(e, SBX_EIO, NULL, "fork");
	}
	if (mid == 0) {
		pid_t w;
		setsid();
		if ((w = fork()) != 0) {
			(void)write(p[1], &w, sizeof w);
			_exit(0);
		}
		int pfd = (int)syscall(SYS_pidfd_open, qpid, 0);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		prctl(PR_SET_NAME, "sbxtop-watchdog");
		for (int fd = 3; fd < 1024; fd++)
			if (fd != pfd)
				close(fd);
		for (;;) {
			int64_t left = deadline_ms - wall_ms();
			if (!alive(qpid, qstart))
				_exit(0);
			if (left <= 0) {
				kill_verified(qpid, qstart, SIGKILL);
				_exit(0);
			}
			/* Wake at least once a minute: the wall clock may jump. */
			struct pollfd pp = { .fd = pfd, .events = POLLIN };
			if (pfd >= 0)
				(void)poll(&pp, 1, (int)(left < 60000 ? left : 60000));
			else
				(void)poll(NULL, 0, (int)(left < 1000 ? left : 1000));
		}
	}
	close(p[1]);
	if (read(p[0], &got, sizeof got) != (ssize_t)sizeof got)
		got = 0;
	close(p[0]);
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	if (got <= 0)
		return sbx_error(e, SBX_EBACKEND, NULL, "cannot start the deadline watchdog");
	*wd = got;
	for (int i = 0; i < 100 && (*wd_start = qemu_proc_starttime(got)) == 0; i++)
		poll(NULL, 0, 1);
	return 0;
}

/* --- create ------------------------------------------------------------------------ */

/* A free 127.0.0.1 port, as the kernel picks one.  QEMU binds it a moment later;
 * a lost race shows as a QEMU start error, and create tries another port. */
static int
pick_port(struct sbx_err *e)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot find a free port on 127.0.0.1");
	return ntohs(a.sin_port);
}

/* GET /health over the forward answers 200?  (The forward accepts before the
 * guest listens, so only an HTTP answer counts.) */
static int
health_ok(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	    .sin_port = htons((uint16_t)port) };
	static const char req[] = "GET /health HTTP/1.0\r\nHost: sbxtop-agent\r\n\r\n";
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[32];
	size_t got = 0;
	int64_t end = now_ms() + 2000;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    write_all(fd, req, sizeof req - 1) < 0)
		return 0;
	while (got < 12) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - now_ms());
		ssize_t n;
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return 0;
		if ((n = read(fd, buf + got, sizeof buf - 1 - got)) <= 0)
			return 0;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return strncmp(buf, "HTTP/1.", 7) == 0 && strncmp(buf + 9, "200", 3) == 0;
}

static int
boot_timeout_s(const struct qemu_accel *a)
{
	const char *v = getenv("SBXTOP_QEMU_BOOT_TIMEOUT");
	int t = v != NULL ? atoi(v) : 0;

	return t > 0 ? t : a->kvm ? QEMU_BOOT_TIMEOUT_KVM_S : QEMU_BOOT_TIMEOUT_TCG_S;
}

struct launch {
	const char	*dir;
	const char	*imgdir;
	const struct qemu_accel *accel;
	int64_t		 mem_mib;
	int		 cpus;
	int		 restrict_net;
	int		 port;
	const char	*incoming;	/* NULL: boot; a migration URI to resume from */
};

/* Start QEMU daemonized; 0 with *pid once it runs, -1 with e (qemu.err's last
 * line) when it refused.  *port_busy says the forward's port was taken. */
static int
start_qemu(const struct launch *L, pid_t *pid, int *port_busy, struct sbx_err *e)
{
	_cleanup_free_ char *kernel = xasprintf("%s/vmlinuz", L->dir);
	_cleanup_free_ char *initrd = xasprintf("%s/initrd", L->dir);
	_cleanup_free_ char *serial = xasprintf("file:%s/console.log", L->dir);
	_cleanup_free_ char *root = xasprintf("id=root,file=%s/disk.qcow2,format=qcow2,if=none,discard=unmap",
	    L->dir);
	_cleanup_free_ char *seed = xasprintf("id=seed,file=%s/seed.img,format=raw,if=none,readonly=on", L->dir);
	_cleanup_free_ char *net = xasprintf("user,id=n0,restrict=%s,hostfwd=tcp:127.0.0.1:%d-:%d",
	    L->restrict_net ? "on" : "off", L->port, GUEST_AGENT_PORT);
	_cleanup_free_ char *qmp = xasprintf("unix:%s/qmp.sock,server=on,wait=off", L->dir);
	_cleanup_free_ char *pidf = xasprintf("%s/qemu.pid", L->dir);
	_cleanup_free_ char *errf = xasprintf("%s/qemu.err", L->dir);
	_cleanup_free_ char *text = NULL;
	char mem[32], smp[16];
	char *argv[64];
	int argc = 0, status = 0;
	pid_t child;

	*port_busy = 0;
	snprintf(mem, sizeof mem, "%lld", (long long)L->mem_mib);
	snprintf(smp, sizeof smp, "%d", L->cpus);
	argv[argc++] = QEMU_BIN;
	argv[argc++] = "-M";
	argv[argc++] = "microvm";
	argv[argc++] = "-accel";
	argv[argc++] = L->accel->kvm ? "kvm" : "tcg";
	if (L->accel->kvm) {
		argv[argc++] = "-cpu";
		argv[argc++] = "host";
	} else {
		/* Without a TSC or PIT reference the kernel's early timer setup can
		 * stall for minutes under plain TCG on a busy host; instruction
		 * counting gives it a steady clock (and a boot of seconds). */
		argv[argc++] = "-icount";
		argv[argc++] = "shift=auto";
	}
	argv[argc++] = "-m";
	argv[argc++] = mem;
	argv[argc++] = "-smp";
	argv[argc++] = smp;
	argv[argc++] = "-nodefaults";
	argv[argc++] = "-no-user-config";
	argv[argc++] = "-display";
	argv[argc++] = "none";
	argv[argc++] = "-no-reboot";
	argv[argc++] = "-kernel";
	argv[argc++] = kernel;
	argv[argc++] = "-initrd";
	argv[argc++] = initrd;
	argv[argc++] = "-append";
	argv[argc++] = "console=ttyS0 panic=-1 quiet";
	argv[argc++] = "-serial";
	argv[argc++] = serial;
	argv[argc++] = "-drive";
	argv[argc++] = root;
	argv[argc++] = "-device";
	argv[argc++] = "virtio-blk-device,drive=root";
	argv[argc++] = "-drive";
	argv[argc++] = seed;
	argv[argc++] = "-device";
	argv[argc++] = "virtio-blk-device,drive=seed";
	argv[argc++] = "-netdev";
	argv[argc++] = net;
	argv[argc++] = "-device";
	argv[argc++] = "virtio-net-device,netdev=n0";
	argv[argc++] = "-qmp";
	argv[argc++] = qmp;
	argv[argc++] = "-pidfile";
	argv[argc++] = pidf;
	argv[argc++] = "-daemonize";
	if (L->incoming != NULL) {
		/* The same machine as the snapshot's, its memory read from the
		 * stream; the VM stays paused (it was paused when saved). */
		argv[argc++] = "-incoming";
		argv[argc++] = (char *)L->incoming;
	}
	argv[argc] = NULL;

	_cleanup_free_ char *prog = qemu_which(QEMU_BIN);
	if (prog == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "install qemu-system-x86 (scripts/deps.sh)",
		    "%s is not installed", QEMU_BIN);
	if ((child = fork()) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "fork");
	if (child == 0) {
		int null = open("/dev/null", O_RDWR);
		int err = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (null < 0 || err < 0 || dup2(null, 0) < 0 || dup2(err, 1) < 0 || dup2(err, 2) < 0)
			_exit(127);
		syscall(SYS_close_range, 3, ~0U, 0);
		/* Its own session: no terminal signal from the creator reaches it. */
		setsid();
		execv(prog, argv);
		_exit(127);
	}
	/* -daemonize: the first process exits once the VM is set up (or failed). */
	for (int64_t end = now_ms() + QEMU_START_TIMEOUT_MS;;) {
		pid_t r = waitpid(child, &status, WNOHANG);
		if (r == child)
			break;
		if (r < 0 && errno != EINTR)
			return sbx_error_errno(e, SBX_EINTERNAL, NULL, "waitpid");
		if (now_ms() >= end) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return sbx_error(e, SBX_ETIMEOUT, NULL, "QEMU did not start within %d s",
			    QEMU_START_TIMEOUT_MS / 1000);
		}
		poll(NULL, 0, 10);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char tail[300];
		qemu_file_tail(errf, tail, sizeof tail);
		*port_busy = strstr(tail, "host forwarding") != NULL;
		return sbx_error(e, SBX_EBACKEND, "see qemu's message; `sbxtop doctor --backend qemu`",
		    "QEMU refused to start: %s", tail[0] ? tail : "(no message)");
	}
	if ((text = read_file(pidf, 64, NULL)) == NULL || (*pid = (pid_t)atoi(text)) <= 0) {
		/* QEMU removes its pid file as it exits: the VM already failed
		 * (a broken snapshot's memory, say, fails right after the fork). */
		char tail[300];
		qemu_file_tail(errf, tail, sizeof tail);
		return sbx_error(e, SBX_EBACKEND, L->incoming ? "the snapshot may be broken: take it again" :
		    "see qemu's message; `sbxtop doctor --backend qemu`", "QEMU %s right after starting: %s",
		    L->incoming ? "could not load the snapshot: it exited" : "exited",
		    tail[0] ? tail : "(no message)");
	}
	return 0;
}

/* The seed disk: the secret and settings.  restored_ms > 0 tells the agent's
 * reseed that the VM was just restored from a snapshot (so it takes the
 * deadline, idle policy, hostname and wall clock too).  Written in place at its
 * full size: QEMU may have it open, and the guest must never see it short. */
static int
write_seed(const char *dir, const struct sandbox *s, int64_t deadline, int64_t restored_ms,
    struct sbx_err *e)
{
	_cleanup_free_ char *path = xasprintf("%s/seed.img", dir);
	_cleanup_close_ int fd = -1;
	char buf[SEED_SIZE];
	int n;

	memset(buf, 0, sizeof buf);
	n = snprintf(buf, sizeof buf, "SBXTOP-SEED\nsecret=%s\ndeadline=%lld\nidle=%lld\nhostname=%s\n"
	    "restored=%lld\n", s->agent_secret, (long long)deadline, (long long)s->idle_s, s->id,
	    (long long)restored_ms);
	if (n < 0 || n >= (int)sizeof buf)
		return sbx_error(e, SBX_EINTERNAL, NULL, "the seed does not fit in %d bytes", SEED_SIZE);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf || fsync(fd) < 0) {
		explicit_bzero(buf, sizeof buf);
		return sbx_error_errno(e, SBX_EIO, "is the disk full?", "cannot write %s", path);
	}
	explicit_bzero(buf, sizeof buf);
	return 0;
}

/* Hard link from to to (so removing the image or snapshot never pulls a file
 * from under a VM), or a copy (reflinked where the filesystem can) when they
 * are on different filesystems. */
static int
link_or_copy(const char *from, const char *to, struct sbx_err *e)
{
	if (link(from, to) == 0)
		return 0;
	if (errno != EXDEV && errno != EPERM && errno != EMLINK)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot link %s to %s", from, to);
	char *argv[] = { "cp", "--reflink=auto", "--sparse=always", "--", (char *)from, (char *)to, NULL };
	return qemu_run(argv, NULL, 5 * 60 * 1000, NULL, e);
}

static void
append_note(char **note, const char *text)
{
	char *n = *note ? xasprintf("%s; %s", *note, text) : xstrdup(text);

	free(*note);
	*note = n;
}

/* Shell-quote s for an exec: migration URI (QEMU runs it with /bin/sh -c). */
static char *
sh_quote(const char *s)
{
	size_t n = 2;
	char *out, *o;

	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	o = out = xmalloc(n + 1);
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

static char *
endpoint_url(int port)
{
	return xasprintf("http://127.0.0.1:%d", port);
}

/* POST path to the agent of s (endpoint and secret as s has them) with an
 * empty JSON body; *out (may be NULL) gets the answer. */
static int
agent_post(const struct sandbox *s, const char *path, int64_t timeout_ms, cJSON **out,
    struct sbx_err *e)
{
	struct agentc *a = agentc_new(s, e);
	cJSON *body = cJSON_CreateObject();
	int rc;

	if (a == NULL) {
		cJSON_Delete(body);
		return -1;
	}
	agentc_set_origin(a, "qemu-backend");
	rc = agentc_call(a, "POST", path, body, timeout_ms, out, e) < 0 ? -1 : 0;
	agentc_free(a);
	cJSON_Delete(body);
	return rc;
}

/* Have the guest's agent read the seed disk again, retrying while the guest
 * gets going (after a `cont`) until end (monotonic ms). */
static int
reseed(const struct sandbox *s, int64_t end, cJSON **out, struct sbx_err *e)
{
	for (;;) {
		if (agent_post(s, "/v1/reseed", 5000, out, e) == 0)
			return 0;
		if (e->code != SBX_EAGENT && e->code != SBX_ETIMEOUT && e->code != SBX_EIO)
			return -1;
		if (now_ms() >= end)
			return -1;
		poll(NULL, 0, 50);
	}
}

static int
qemu_create_common(struct sandbox *s, const char *snapdir, struct sbx_err *e)
{
	_cleanup_free_ char *dir = NULL, *imgdir = NULL, *parent = NULL, *disk = NULL,
	    *note = NULL, *qmp = NULL, *incoming = NULL, *image_name = NULL;
	_cleanup_close_ int lock_fd = -1;
	struct qemu_accel accel;
	struct launch L;
	struct sbx_err scratch;
	struct stat st;
	int64_t deadline = s->max_duration_s > 0 ? s->max_duration_s : QEMU_DEFAULT_DEADLINE_S;
	int64_t t0, boot_ms = 0, end;
	pid_t pid = 0, wd = 0;
	unsigned long long start = 0, wd_start = 0;
	int made_dir = 0, rc = -1, port = 0, busy = 0;
	cJSON *bd = NULL, *snap = NULL;

	/* Validate. */
	if (!valid_id(s->id))
		return sbx_error(e, SBX_EINVAL, "ids are lower-case letters, digits and '-'",
		    "invalid sandbox id '%s'", s->id);
	if (s->network != NULL && strcmp(s->network, "none") != 0 && strcmp(s->network, "egress") != 0)
		return sbx_error(e, SBX_EINVAL, "use --network none or --network egress",
		    "unknown network policy '%s'", s->network);
	if (s->agent_secret == NULL || strlen(s->agent_secret) < 16 ||
	    strspn(s->agent_secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") !=
	    strlen(s->agent_secret))
		return sbx_error(e, SBX_EINTERNAL, NULL, "the sandbox has no usable agent secret");
	{
		_cleanup_free_ char *q = qemu_which(QEMU_BIN), *qi = qemu_which("qemu-img");
		if (q == NULL || qi == NULL)
			return sbx_error(e, SBX_EUNSUPPORTED, "install qemu-system-x86 and qemu-utils (scripts/deps.sh)",
			    "%s is not installed", q == NULL ? QEMU_BIN : "qemu-img");
	}
	qemu_accel_choose(&accel, snapdir != NULL ? snapdir : s->image);
	if (snapdir != NULL) {
		/* A restore runs the snapshot's machine: its kernel, memory size,
		 * vCPUs and accelerator. */
		_cleanup_free_ char *p = xasprintf("%s/snapshot.json", snapdir);
		_cleanup_free_ char *text = read_file(p, 1 << 20, NULL);
		const cJSON *acc, *img;
		if (text == NULL || (snap = cJSON_Parse(text)) == NULL)
			return sbx_error(e, SBX_EINVAL, "remove it (`sbxtop snapshot rm`) and take it again",
			    "the snapshot's %s is unreadable", p);
		acc = cJSON_GetObjectItemCaseSensitive(snap, "accel");
		if (!cJSON_IsString(acc) || strcmp(acc->valuestring, accel.kvm ? "kvm" : "tcg") != 0) {
			sbx_error(e, SBX_EUNSUPPORTED, "restore it on a host with the same accelerator, "
			    "or take a new snapshot here", "the snapshot was taken under %s, this host runs "
			    "guests under %s", cJSON_IsString(acc) ? acc->valuestring : "?",
			    accel.kvm ? "KVM" : "TCG");
			cJSON_Delete(snap);
			return -1;
		}
		if ((img = cJSON_GetObjectItemCaseSensitive(snap, "image")) != NULL && cJSON_IsString(img))
			image_name = xstrdup(img->valuestring);
		imgdir = xstrdup(snapdir);
	} else if (s->image != NULL && s->image[0] == '/') {
		_cleanup_free_ char *k = xasprintf("%s/vmlinuz", s->image);
		if (access(k, R_OK) < 0)
			return sbx_error(e, SBX_EINVAL, "give --image the name of an image (`sbxtop image ls`)",
			    "%s is not an image directory (no vmlinuz)", s->image);
		imgdir = xstrdup(s->image);
	} else if ((imgdir = image_dir(s->image, e)) == NULL) {
		return -1;
	}
	if ((dir = paths_sandbox_dir(s->id, e)) == NULL)
		goto out;
	if (strlen(dir) + sizeof "/qmp.sock" > sizeof(((struct sockaddr_un *)0)->sun_path)) {
		sbx_error(e, SBX_EINVAL, "set XDG_STATE_HOME to a shorter path",
		    "the QMP socket %s/qmp.sock would be longer than a unix socket path may be", dir);
		goto out;
	}
	parent = xstrdup(dir);
	*strrchr(parent, '/') = '\0';
	if (mkdir_p(parent, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", parent);
		goto out;
	}
	if (mkdir(dir, 0700) < 0) {
		sbx_error_errno(e, errno == EEXIST ? SBX_EINVAL : SBX_EIO,
		    errno == EEXIST ? "pick another id" : NULL, "cannot create %s", dir);
		goto out;
	}
	made_dir = 1;
	/* Locked while we build it: gc leaves it alone. */
	if ((lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || flock(lock_fd, LOCK_EX) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", dir);
		goto out;
	}
	/* Provisional, replaced once the VM is up: should this process die
	 * meanwhile, gc and destroy know the dir is a VM's (find_orphan). */
	{
		_cleanup_free_ char *p = xasprintf("%s/backend.json", dir);
		_cleanup_free_ char *text = NULL;
		cJSON *pb = cJSON_CreateObject();
		cJSON_AddStringToObject(pb, "backend", "qemu");
		cJSON_AddStringToObject(pb, "dir", dir);
		text = cJSON_PrintUnformatted(pb);
		cJSON_Delete(pb);
		if (write_file_mode(p, text, strlen(text), e) < 0)
			goto out;
	}

	/* The kernel, the initrd and the disk's base: links to the image's (or
	 * the snapshot's), so rebuilding or removing those never pulls a file
	 * from under a running VM, and a snapshot of this VM finds the machine
	 * it runs.  The disk is a qcow2 overlay whose backing names are relative:
	 * the same chain opens from the sandbox's and from a snapshot's dir. */
	{
		static const char *const from_img[][2] = { { "vmlinuz", "vmlinuz" }, { "initrd", "initrd" },
		    { "rootfs.ext4", "base.ext4" } };
		static const char *const from_snap[][2] = { { "vmlinuz", "vmlinuz" }, { "initrd", "initrd" },
		    { "base.ext4", "base.ext4" }, { "disk.qcow2", "snap.qcow2" } };
		size_t n = snapdir ? ARRAY_SIZE(from_snap) : ARRAY_SIZE(from_img);
		for (size_t i = 0; i < n; i++) {
			const char *const *pair = snapdir ? from_snap[i] : from_img[i];
			_cleanup_free_ char *from = xasprintf("%s/%s", imgdir, pair[0]);
			_cleanup_free_ char *to = xasprintf("%s/%s", dir, pair[1]);
			if (link_or_copy(from, to, e) < 0)
				goto out;
		}
	}
	disk = xasprintf("%s/disk.qcow2", dir);
	{
		char *argv[] = { "qemu-img", "create", "-q", "-f", "qcow2", "-F", snapdir ? "qcow2" : "raw",
		    "-b", snapdir ? "snap.qcow2" : "base.ext4", "disk.qcow2", NULL };
		if (qemu_run(argv, dir, 30000, NULL, e) < 0)
			goto out;
	}
	if (write_seed(dir, s, deadline, 0, e) < 0)
		goto out;

	if (!accel.kvm) {
		_cleanup_free_ char *n = xasprintf("%s (%s)", QEMU_TCG_NOTE, accel.reason);
		append_note(&note, n);
	}
	memset(&L, 0, sizeof L);
	L.dir = dir;
	L.imgdir = imgdir;
	L.accel = &accel;
	L.mem_mib = s->limits.memory_mib > 0 ? s->limits.memory_mib : QEMU_DEFAULT_MEM_MIB;
	if (L.mem_mib < QEMU_MIN_MEM_MIB) {
		_cleanup_free_ char *n = xasprintf("memory raised to the guest's minimum of %d MiB",
		    QEMU_MIN_MEM_MIB);
		append_note(&note, n);
		L.mem_mib = QEMU_MIN_MEM_MIB;
	}
	L.cpus = s->limits.cpus > 0 ? (int)s->limits.cpus + (s->limits.cpus > (int)s->limits.cpus) : 1;
	if (snap != NULL) {
		int64_t m = (int64_t)num(snap, "memory_mib");
		int c = (int)num(snap, "cpus");
		if ((s->limits.memory_mib > 0 && s->limits.memory_mib != m) ||
		    (s->limits.cpus > 0 && L.cpus != c)) {
			_cleanup_free_ char *n = xasprintf("memory %lld MiB and %d vCPU%s: the snapshot's "
			    "(a restored VM keeps its machine)", (long long)m, c, c == 1 ? "" : "s");
			append_note(&note, n);
		}
		L.mem_mib = m;
		L.cpus = c;
		s->limits.memory_mib = m;
		s->limits.cpus = c;
		if (image_name != NULL) {
			free(s->image);
			s->image = xstrdup(image_name);
		}
		_cleanup_free_ char *mem = xasprintf("%s/memory", snapdir);
		_cleanup_free_ char *q = sh_quote(mem);
		incoming = xasprintf("exec:cat %s", q);
		L.incoming = incoming;
	}
	L.restrict_net = s->network == NULL || strcmp(s->network, "egress") != 0;
	if (s->limits.pids > 0)
		append_note(&note, "pids: not limited inside the VM (memory and vCPUs bound it)");
	if (s->limits.disk_mib > 0)
		append_note(&note, "disk: the image's size bounds it");

	t0 = now_ms();
	for (int attempt = 0; attempt < 3; attempt++) {
		if ((port = pick_port(e)) < 0)
			goto out;
		L.port = port;
		if (start_qemu(&L, &pid, &busy, e) == 0)
			break;
		pid = 0;
		if (!busy)
			goto out;
	}
	if (pid <= 0)
		goto out;
	if ((start = qemu_proc_starttime(pid)) == 0) {
		sbx_error(e, SBX_EBACKEND, NULL, "QEMU (pid %d) exited right after starting", (int)pid);
		goto out;
	}
	if (spawn_watchdog(pid, start, s->created_at > 0 ? s->created_at + deadline * 1000 :
	    wall_ms() + deadline * 1000, &wd, &wd_start, e) < 0)
		goto out;
	qmp = xasprintf("%s/qmp.sock", dir);
	free(s->agent_endpoint);
	s->agent_endpoint = endpoint_url(port);
	end = now_ms() + (int64_t)boot_timeout_s(&accel) * 1000;

	if (snap != NULL) {
		/* The memory comes in; the VM then waits paused.  A new seed (this
		 * sandbox's secret, deadline and name, and the time) goes on the
		 * seed disk before the VM runs again; the restored agent, sealed
		 * when the snapshot was taken, answers nothing but /health until it
		 * has read it. */
		_cleanup_free_ char *ret = NULL;
		cJSON *rs = NULL;
		for (;;) {
			struct sbx_err qe;
			free(ret);
			ret = NULL;
			if (!alive(pid, start)) {
				char tail[300];
				_cleanup_free_ char *errf = xasprintf("%s/qemu.err", dir);
				qemu_file_tail(errf, tail, sizeof tail);
				sbx_error(e, SBX_EBACKEND, "the snapshot may be broken: take it again",
				    "QEMU could not load the snapshot: %s", tail[0] ? tail : "(no message)");
				goto out;
			}
			if (qemu_qmp(qmp, "query-status", NULL, QMP_TIMEOUT_MS, &ret, &qe) == 0 &&
			    strstr(ret, "\"inmigrate\"") == NULL)
				break;
			if (now_ms() >= end) {
				sbx_error(e, SBX_ETIMEOUT, NULL, "the snapshot did not load within %d s",
				    boot_timeout_s(&accel));
				goto out;
			}
			poll(NULL, 0, 20);
		}
		log_debug("%s: the snapshot's memory loaded after %lld ms", s->id, (long long)(now_ms() - t0));
		if (write_seed(dir, s, deadline - (wall_ms() - s->created_at) / 1000, wall_ms(), e) < 0 ||
		    qemu_qmp(qmp, "cont", NULL, QMP_TIMEOUT_MS, NULL, e) < 0)
			goto out;
		if (reseed(s, end, &rs, e) < 0) {
			char msg[sizeof e->msg];
			snprintf(msg, sizeof msg, "%s", e->msg);
			sbx_error(e, SBX_EAGENT, "the snapshot may be broken: take it again",
			    "the restored agent did not take its new secret: %s", msg);
			goto out;
		}
		log_debug("%s: reseeded after %lld ms", s->id, (long long)(now_ms() - t0));
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rs, "restored"))) {
			cJSON_Delete(rs);
			sbx_error(e, SBX_EAGENT, NULL, "the restored agent did not take the restore's settings");
			goto out;
		}
		cJSON_Delete(rs);
	} else {
		/* Wait for the agent, through the forward. */
		for (;;) {
			if (health_ok(port))
				break;
			if (!alive(pid, start) || now_ms() >= end) {
				char tail[400];
				_cleanup_free_ char *con = xasprintf("%s/console.log", dir);
				qemu_file_tail(con, tail, sizeof tail);
				if (!alive(pid, start))
					sbx_error(e, SBX_EAGENT, "check the image (`sbxtop image build`)",
					    "the VM stopped before its agent was ready; console: %s",
					    tail[0] ? tail : "(empty)");
				else
					sbx_error(e, SBX_ETIMEOUT, accel.kvm ? "check the image (`sbxtop image build`)" :
					    "TCG is slow: set SBXTOP_QEMU_BOOT_TIMEOUT higher, or use a host with KVM",
					    "the agent was not ready within %d s (%s); console: %s",
					    boot_timeout_s(&accel), accel.kvm ? "KVM" : "TCG", tail[0] ? tail : "(empty)");
				goto out;
			}
			poll(NULL, 0, 100);
		}
	}
	boot_ms = now_ms() - t0;
	{
		_cleanup_free_ char *n = xasprintf("%s in %.1f s under %s", snap ? "restored" : "booted",
		    (double)boot_ms / 1000, accel.kvm ? "KVM" : "TCG");
		append_note(&note, n);
	}

	bd = cJSON_CreateObject();
	cJSON_AddStringToObject(bd, "backend", "qemu");
	cJSON_AddStringToObject(bd, "dir", dir);
	cJSON_AddNumberToObject(bd, "pid", pid);
	cJSON_AddNumberToObject(bd, "starttime", (double)start);
	cJSON_AddNumberToObject(bd, "watchdog_pid", wd);
	cJSON_AddNumberToObject(bd, "watchdog_starttime", (double)wd_start);
	cJSON_AddNumberToObject(bd, "port", port);
	cJSON_AddStringToObject(bd, "qmp", qmp);
	cJSON_AddStringToObject(bd, "accel", accel.kvm ? "kvm" : "tcg");
	cJSON_AddStringToObject(bd, "image", imgdir);
	cJSON_AddNumberToObject(bd, "memory_mib", (double)L.mem_mib);
	cJSON_AddNumberToObject(bd, "cpus", L.cpus);
	cJSON_AddNumberToObject(bd, "deadline_s", (double)deadline);
	cJSON_AddNumberToObject(bd, snap ? "restore_ms" : "boot_ms", (double)boot_ms);
	if (snap != NULL) {
		const char *slash = strrchr(snapdir, '/');
		cJSON_AddStringToObject(bd, "snapshot", slash ? slash + 1 : snapdir);
	}
	{
		_cleanup_free_ char *text = cJSON_PrintUnformatted(bd);
		_cleanup_free_ char *p = xasprintf("%s/backend.json", dir);
		if (write_file_mode(p, text, strlen(text), e) < 0)
			goto out;
	}
	cJSON_Delete(s->backend_data);
	s->backend_data = steal_pointer(&bd);
	free(s->limits_note);
	s->limits_note = steal_pointer(&note);
	free(s->state_reason);
	s->state_reason = NULL;
	s->state = SBX_RUNNING;
	rc = 0;
out:
	if (rc < 0) {
		/* Nothing half-made stays behind. */
		kill_verified(wd, wd_start, SIGKILL);
		if (pid > 0 && start != 0) {
			kill_verified(pid, start, SIGKILL);
			(void)wait_gone(pid, start, QEMU_GONE_TIMEOUT_MS);
		}
		if (made_dir && !(stat(dir, &st) < 0))
			(void)qemu_rmtree(dir, &scratch);
	}
	cJSON_Delete(bd);
	cJSON_Delete(snap);
	return rc;
}

static int
qemu_create(struct sandbox *s, struct sbx_err *e)
{
	return qemu_create_common(s, NULL, e);
}

static int
qemu_restore(struct sandbox *s, const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *sdir = snapshot_dir(name, e);

	return sdir != NULL ? qemu_create_common(s, sdir, e) : -1;
}

static char *qmp_path(const struct qdata *d);

/* --- snapshots ------------------------------------------------------------------------ */

#define MIGRATE_TIMEOUT_MS	(10 * 60 * 1000)

/* Save the paused VM's memory to path through QMP migration to an exec: URI
 * (QEMU 7.2 has no file: URI); 0 once the migration completed. */
static int
migrate_to_file(const char *qmp, const char *path, struct sbx_err *e)
{
	_cleanup_free_ char *q = sh_quote(path), *uri = xasprintf("exec:cat > %s", q), *args = NULL;
	cJSON *o = cJSON_CreateObject();
	int64_t end = now_ms() + MIGRATE_TIMEOUT_MS;

	/* The default bandwidth cap (32 MiB/s) is for live migration over a
	 * network; a local file takes what the disk gives. */
	if (qemu_qmp(qmp, "migrate-set-parameters", "{\"max-bandwidth\":107374182400}", QMP_TIMEOUT_MS,
	    NULL, e) < 0) {
		cJSON_Delete(o);
		return -1;
	}
	cJSON_AddStringToObject(o, "uri", uri);
	args = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (qemu_qmp(qmp, "migrate", args, QMP_TIMEOUT_MS, NULL, e) < 0)
		return -1;
	for (;;) {
		_cleanup_free_ char *ret = NULL;
		if (qemu_qmp(qmp, "query-migrate", NULL, QMP_TIMEOUT_MS, &ret, e) < 0)
			return -1;
		if (strstr(ret, "\"status\":\"completed\"") != NULL)
			return 0;
		if (strstr(ret, "\"status\":\"failed\"") != NULL || strstr(ret, "\"status\":\"cancelled\"")) {
			cJSON *r = cJSON_Parse(ret);
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "error-desc");
			sbx_error(e, SBX_EBACKEND, "is the disk full?", "saving the VM's memory failed: %s",
			    cJSON_IsString(m) ? m->valuestring : "(no reason given)");
			cJSON_Delete(r);
			return -1;
		}
		if (now_ms() >= end) {
			(void)qemu_qmp(qmp, "migrate_cancel", NULL, QMP_TIMEOUT_MS, NULL, e);
			return sbx_error(e, SBX_ETIMEOUT, NULL, "saving the VM's memory took over %d s",
			    MIGRATE_TIMEOUT_MS / 1000);
		}
		poll(NULL, 0, 20);
	}
}

/* The snapshot: seal the agent (it forgets its secret, so the saved memory
 * lets nobody in), pause, save the memory, copy the disk while the VM is
 * still paused (so both are of one instant), run the VM again and give it a
 * new secret through its seed disk: whatever of the old one is left in guest
 * memory (freed pages, buffers) is in the snapshot, and no longer opens this
 * sandbox.  The new secret goes into s; the core records it. */
static int
qemu_snapshot(struct sandbox *s, const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *root = NULL, *work = NULL, *dest = NULL, *qmp = NULL, *mem = NULL,
	    *newsec = NULL, *oldsec = NULL;
	struct qdata d;
	struct sbx_err scratch;
	int rc = -1, sealed = 0, paused = 0, made_work = 0;
	int64_t t0 = now_ms(), paused_ms = 0, deadline;
	const cJSON *v;

	if (name == NULL || !image_name_valid(name))
		return sbx_error(e, SBX_EINVAL, "snapshot names are 1 to 64 letters, digits, '.', '_' and '-'",
		    "invalid snapshot name '%s'", name ? name : "");
	if (qdata_get(s, &d, e) < 0)
		return -1;
	if (d.orphan || !alive(d.pid, d.starttime)) {
		sbx_error(e, SBX_ESTATE, "run `sbxtop status` to see why", "sandbox %s is not running", s->id);
		goto out;
	}
	qmp = qmp_path(&d);
	v = cJSON_GetObjectItemCaseSensitive(s->backend_data, "deadline_s");
	deadline = cJSON_IsNumber(v) ? (int64_t)v->valuedouble :
	    s->max_duration_s > 0 ? s->max_duration_s : QEMU_DEFAULT_DEADLINE_S;
	if ((root = snapshot_root(e)) == NULL)
		goto out;
	if (mkdir_p(root, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", root);
		goto out;
	}
	dest = xasprintf("%s/%s", root, name);
	if (access(dest, F_OK) == 0) {
		sbx_error(e, SBX_EINVAL, "choose another name, or remove it first (`sbxtop snapshot rm`)",
		    "there is already a snapshot '%s'", name);
		goto out;
	}
	work = xasprintf("%s/.tmp-%s-%d", root, name, (int)getpid());
	if (mkdir(work, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", work);
		goto out;
	}
	made_work = 1;
	{
		static const char *const parts[] = { "vmlinuz", "initrd", "base.ext4" };
		for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
			_cleanup_free_ char *from = xasprintf("%s/%s", d.dir, parts[i]);
			_cleanup_free_ char *to = xasprintf("%s/%s", work, parts[i]);
			if (access(from, R_OK) < 0) {
				sbx_error(e, SBX_EUNSUPPORTED, "create a new sandbox and snapshot that",
				    "sandbox %s was made by an older sbxtop (no %s in its directory)", s->id,
				    parts[i]);
				goto out;
			}
			if (link_or_copy(from, to, e) < 0)
				goto out;
		}
	}

	if (agent_post(s, "/v1/seal", 10000, NULL, e) < 0) {
		if (strstr(e->msg, "seed") != NULL)
			snprintf(e->hint, sizeof e->hint, "rebuild the image (`sbxtop image build`) and "
			    "create a new sandbox: its agent predates snapshots");
		goto out;
	}
	sealed = 1;
	if (qemu_qmp(qmp, "stop", NULL, QMP_TIMEOUT_MS, NULL, e) < 0)
		goto out;
	paused = 1;
	paused_ms = now_ms();
	mem = xasprintf("%s/memory", work);
	if (migrate_to_file(qmp, mem, e) < 0)
		goto out;
	{
		/* The disk as the paused VM left it, its whole chain above the base
		 * folded into one overlay over base.ext4 (named relatively). */
		char *argv[] = { "qemu-img", "convert", "-q", "-f", "qcow2", "-O", "qcow2", "-B", "base.ext4",
		    "-F", "raw", "-U", NULL, "disk.qcow2", NULL };
		_cleanup_free_ char *src = xasprintf("%s/disk.qcow2", d.dir);
		argv[12] = src;
		if (qemu_run(argv, work, 10 * 60 * 1000, NULL, e) < 0)
			goto out;
	}
	{
		cJSON *j = cJSON_CreateObject();
		const cJSON *bd = s->backend_data;
		_cleanup_free_ char *text = NULL, *p = xasprintf("%s/snapshot.json", work);
		const cJSON *acc = cJSON_GetObjectItemCaseSensitive(bd, "accel");
		cJSON_AddNumberToObject(j, "format", 1);
		cJSON_AddStringToObject(j, "name", name);
		cJSON_AddNumberToObject(j, "created_at", (double)wall_ms());
		cJSON_AddStringToObject(j, "source", s->id);
		cJSON_AddStringToObject(j, "image", s->image ? s->image : IMAGE_DEFAULT_NAME);
		cJSON_AddStringToObject(j, "accel", cJSON_IsString(acc) ? acc->valuestring : "tcg");
		cJSON_AddNumberToObject(j, "memory_mib", num(bd, "memory_mib"));
		cJSON_AddNumberToObject(j, "cpus", num(bd, "cpus"));
		text = cJSON_Print(j);
		cJSON_Delete(j);
		if (write_file_mode(p, text, strlen(text), e) < 0)
			goto out;
	}
	rc = 0;
out:
	if (paused) {
		if (qemu_qmp(qmp, "cont", NULL, QMP_TIMEOUT_MS, NULL, &scratch) < 0 && rc == 0) {
			*e = scratch;
			rc = -1;
		}
		paused_ms = now_ms() - paused_ms;
	}
	if (sealed) {
		/* A new secret whether the snapshot worked or not: the agent was
		 * sealed either way and its memory may be half saved. */
		newsec = sandbox_new_secret();
		oldsec = steal_pointer(&s->agent_secret);
		s->agent_secret = newsec;
		if (write_seed(d.dir, s, deadline, 0, &scratch) < 0 ||
		    reseed(s, now_ms() + 30000, NULL, &scratch) < 0) {
			/* Try the old secret, so the sandbox stays reachable. */
			s->agent_secret = oldsec;
			oldsec = steal_pointer(&newsec);
			(void)write_seed(d.dir, s, deadline, 0, &scratch);
			if (reseed(s, now_ms() + 10000, NULL, &scratch) < 0)
				log_warnx("sandbox %s did not take its secret back after the snapshot: %s",
				    s->id, scratch.msg);
			if (rc == 0) {
				sbx_error(e, SBX_EAGENT, NULL, "the sandbox did not take its new secret: %s",
				    scratch.msg);
				rc = -1;
			}
		}
		newsec = NULL;	/* now s's */
		if (oldsec != NULL)
			explicit_bzero(oldsec, strlen(oldsec));
	}
	if (rc == 0 && rename(work, dest) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot put the snapshot at %s", dest);
		rc = -1;
	}
	if (rc < 0 && made_work)
		(void)qemu_rmtree(work, &scratch);
	if (rc == 0)
		log_info("snapshot %s of %s: %.1f s, the VM paused %.1f s", name, s->id,
		    (double)(now_ms() - t0) / 1000, (double)paused_ms / 1000);
	free(d.dir);
	return rc;
}

/* --- the other verbs ------------------------------------------------------------------- */

static char *
qmp_path(const struct qdata *d)
{
	return xasprintf("%s/qmp.sock", d->dir);
}

/* Why the VM stopped, from the console's last telling line. */
static char *
exit_reason(const struct sandbox *s, const char *dir)
{
	_cleanup_free_ char *path = xasprintf("%s/console.log", dir);
	char tail[8192], *line, *best = NULL, *save = NULL;

	if (s->expires_at > 0 && wall_ms() >= s->expires_at)
		return xstrdup("deadline reached");
	qemu_file_tail(path, tail, sizeof tail);
	for (line = strtok_r(tail, "|", &save); line != NULL; line = strtok_r(NULL, "|", &save))
		if (strstr(line, "deadline") || strstr(line, "idle") || strstr(line, "signal") ||
		    strstr(line, "panic"))
			best = line;
	if (best == NULL)
		return xstrdup("the VM exited");
	char *msg = strstr(best, ": ");
	return xasprintf("the VM exited: %s", msg != NULL ? msg + 2 : best);
}

static int
qemu_status(struct sandbox *s, struct sbx_err *e)
{
	struct qdata d;

	if (qdata_get(s, &d, e) < 0)
		return -1;
	if (d.orphan) {
		/* Its agent endpoint was never recorded: nobody can reach it. */
		s->state = SBX_TERMINATED;
		free(s->state_reason);
		s->state_reason = xasprintf("its create never finished (the creating process died); "
		    "QEMU pid %d runs on until `sbxtop destroy %s` or `sbxtop gc`", (int)d.pid, s->id);
	} else if (alive(d.pid, d.starttime)) {
		_cleanup_free_ char *q = qmp_path(&d), *ret = NULL;
		struct sbx_err qe;
		if (qemu_qmp(q, "query-status", NULL, QMP_TIMEOUT_MS, &ret, &qe) == 0) {
			s->state = strstr(ret, "\"running\":true") != NULL ? SBX_RUNNING : SBX_SUSPENDED;
			free(s->state_reason);
			s->state_reason = NULL;
		} else {
			free(s->state_reason);
			s->state_reason = xasprintf("QMP: %s", qe.msg);
		}
	} else if (s->state != SBX_TERMINATED || s->state_reason == NULL) {
		s->state = SBX_TERMINATED;
		free(s->state_reason);
		s->state_reason = exit_reason(s, d.dir);
	}
	free(d.dir);
	return 0;
}

static int
qemu_suspend_resume(struct sandbox *s, int suspend, struct sbx_err *e)
{
	struct qdata d;
	int rc;

	if (qdata_get(s, &d, e) < 0)
		return -1;
	if (d.orphan || !alive(d.pid, d.starttime)) {
		free(d.dir);
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status` to see why", "sandbox %s is not running",
		    s->id);
	}
	_cleanup_free_ char *q = qmp_path(&d);
	rc = qemu_qmp(q, suspend ? "stop" : "cont", NULL, QMP_TIMEOUT_MS, NULL, e);
	if (rc == 0)
		s->state = suspend ? SBX_SUSPENDED : SBX_RUNNING;
	free(d.dir);
	return rc;
}

static int qemu_suspend(struct sandbox *s, struct sbx_err *e) { return qemu_suspend_resume(s, 1, e); }
static int qemu_resume(struct sandbox *s, struct sbx_err *e) { return qemu_suspend_resume(s, 0, e); }

static int
teardown(const struct qdata *d, struct sbx_err *e)
{
	kill_verified(d->wd_pid, d->wd_starttime, SIGKILL);
	if (alive(d->pid, d->starttime)) {
		kill(d->pid, SIGKILL);
		if (wait_gone(d->pid, d->starttime, QEMU_GONE_TIMEOUT_MS) < 0)
			return sbx_error(e, SBX_ETIMEOUT, "try again; check `ps` for QEMU",
			    "QEMU (pid %d) did not die within %d ms", (int)d->pid, QEMU_GONE_TIMEOUT_MS);
	}
	return qemu_rmtree(d->dir, e);
}

static int
qemu_destroy(struct sandbox *s, struct sbx_err *e)
{
	struct qdata d;
	int rc;

	if (qdata_get(s, &d, e) < 0)
		return -1;
	s->state = SBX_STOPPING;
	rc = teardown(&d, e);
	free(d.dir);
	if (rc == 0) {
		s->state = SBX_TERMINATED;
		free(s->state_reason);
		s->state_reason = xstrdup("destroyed");
	}
	return rc;
}

static char *
qemu_log_path(const struct sandbox *s, const char *which, struct sbx_err *e)
{
	struct qdata d;
	char *p;

	/* The agent logs to the serial console: both names give it. */
	if (strcmp(which, "console") != 0 && strcmp(which, "agent") != 0) {
		sbx_error(e, SBX_EINVAL, "ask for the \"console\" or the \"agent\" log",
		    "no log '%s' for the qemu backend", which);
		return NULL;
	}
	if (qdata_get(s, &d, e) < 0)
		return NULL;
	p = xasprintf("%s/console.log", d.dir);
	free(d.dir);
	return p;
}

/* Snapshots a killed `sbxtop snapshot` left half made (.tmp-NAME-PID, whose
 * process is gone). */
static int
gc_snapshot_temps(void)
{
	struct sbx_err scratch;
	_cleanup_free_ char *root = snapshot_root(&scratch);
	struct dirent *de;
	int removed = 0;
	DIR *d;

	if (root == NULL || (d = opendir(root)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		const char *dash = strrchr(de->d_name, '-');
		long pid;
		char *end;
		if (strncmp(de->d_name, ".tmp-", 5) != 0 || dash == NULL)
			continue;
		pid = strtol(dash + 1, &end, 10);
		if (*end != '\0' || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", root, de->d_name);
		if (qemu_rmtree(p, &scratch) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

static int
qemu_gc(char *const *known, size_t nknown, struct sbx_err *e)
{
	_cleanup_free_ char *root = paths_dir(PATHS_STATE, e);
	_cleanup_free_ char *sdir = NULL;
	struct dirent *de;
	DIR *d;
	int removed = 0;

	if (root == NULL)
		return -1;
	removed = gc_snapshot_temps();
	sdir = xasprintf("%s/sandboxes", root);
	if ((d = opendir(sdir)) == NULL)
		return errno == ENOENT ? removed : sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", sdir);
	while ((de = readdir(d)) != NULL) {
		_cleanup_free_ char *dir = NULL, *json = NULL, *text = NULL;
		_cleanup_close_ int lock = -1;
		struct sandbox probe;
		struct qdata qd;
		struct sbx_err scratch;
		int is_known = 0;
		const cJSON *b;

		if (de->d_name[0] == '.' || !valid_id(de->d_name))
			continue;
		for (size_t i = 0; i < nknown && !is_known; i++)
			is_known = strcmp(known[i], de->d_name) == 0;
		if (is_known)
			continue;
		dir = xasprintf("%s/%s", sdir, de->d_name);
		if ((lock = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
		    flock(lock, LOCK_EX | LOCK_NB) < 0)
			continue;
		json = xasprintf("%s/backend.json", dir);
		if ((text = read_file(json, 65536, NULL)) == NULL)
			continue;
		memset(&probe, 0, sizeof probe);
		snprintf(probe.id, sizeof probe.id, "%.31s", de->d_name);
		probe.backend_data = cJSON_Parse(text);
		b = cJSON_GetObjectItemCaseSensitive(probe.backend_data, "backend");
		/* An orphan (its creator died: the dir is unlocked) goes too. */
		if (cJSON_IsString(b) && strcmp(b->valuestring, "qemu") == 0 &&
		    qdata_get(&probe, &qd, &scratch) == 0) {
			if ((qd.orphan || !alive(qd.pid, qd.starttime)) && teardown(&qd, &scratch) == 0)
				removed++;
			free(qd.dir);
		}
		cJSON_Delete(probe.backend_data);
	}
	closedir(d);
	return removed;
}

static void
qemu_doctor(check_fn report, void *arg)
{
	_cleanup_free_ char *q = qemu_which(QEMU_BIN), *qi = qemu_which("qemu-img"),
	    *mk = qemu_which("mke2fs"), *ver = NULL;
	struct qemu_accel a;
	struct sbx_err e;
	cJSON *imgs;

	if (q == NULL) {
		report(arg, CHECK_FAIL, "qemu", QEMU_BIN " is not installed",
		    "install qemu-system-x86 (scripts/deps.sh)");
	} else {
		char *argv[] = { QEMU_BIN, "--version", NULL };
		if (qemu_run(argv, NULL, 10000, &ver, &e) == 0) {
			ver[strcspn(ver, "\n")] = '\0';
			report(arg, CHECK_OK, "qemu", ver, NULL);
		} else {
			report(arg, CHECK_FAIL, "qemu", e.msg, "reinstall qemu-system-x86");
		}
	}
	report(arg, qi != NULL ? CHECK_OK : CHECK_FAIL, "qemu-img", qi != NULL ? qi : "not installed",
	    "install qemu-utils");
	/* What create will do: the verdict of this host boot, or a real boot now. */
	qemu_accel_choose(&a, NULL);
	{
		_cleanup_free_ char *how = a.forced ? xstrdup("forced by SBXTOP_QEMU_ACCEL") : a.cached ?
		    xasprintf("the verdict of a real boot, kept for host boot %s", a.boot_id) :
		    a.boot_ms > 0 ? xasprintf("a real boot just now, %lld ms", (long long)a.boot_ms) :
		    xasprintf("host boot %s", a.boot_id);
		_cleanup_free_ char *d = a.kvm ? xasprintf("KVM works (%s)", how) :
		    xasprintf("TCG: %s (%s); %s", a.reason, how, QEMU_TCG_NOTE);
		report(arg, a.kvm ? CHECK_OK : CHECK_WARN, "qemu acceleration", d, a.undecided ?
		    "run `sbxtop image build`: the next doctor or create boots it under KVM and decides" :
		    "use a host where /dev/kvm works (bare metal or nested virtualisation enabled)");
	}
	report(arg, mk != NULL ? CHECK_OK : CHECK_WARN, "mke2fs (image build)",
	    mk != NULL ? mk : "not installed", "install e2fsprogs");
	report(arg, access("/bin/busybox", X_OK) == 0 ? CHECK_OK : CHECK_WARN, "busybox (image build)",
	    access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" : "no /bin/busybox", "install busybox-static");
	if ((imgs = image_list(&e)) == NULL) {
		report(arg, CHECK_WARN, "qemu images", e.msg, e.hint);
	} else {
		_cleanup_free_ char *dd = image_dir(IMAGE_DEFAULT_NAME, &e);
		_cleanup_free_ char *msg = xasprintf("%d image%s%s", cJSON_GetArraySize(imgs),
		    cJSON_GetArraySize(imgs) == 1 ? "" : "s", dd != NULL ? ", the default one included" :
		    ", no default image");
		report(arg, dd != NULL ? CHECK_OK : CHECK_WARN, "qemu images", msg,
		    "run `sbxtop image build`");
		cJSON_Delete(imgs);
	}
}

const struct backend backend_qemu = {
	.name = "qemu",
	.description = "QEMU microVM with its own kernel (KVM when usable, TCG otherwise)",
	.create = qemu_create,
	.suspend = qemu_suspend,
	.resume = qemu_resume,
	.destroy = qemu_destroy,
	.status = qemu_status,
	.log_path = qemu_log_path,
	.doctor = qemu_doctor,
	.gc = qemu_gc,
	.snapshot = qemu_snapshot,
	.restore = qemu_restore,
};
