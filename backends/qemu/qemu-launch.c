/* Launching a qemu sandbox's VM: QEMU's command line and its daemonized start,
 * the detached deadline watchdog, the seed disk, the forward's port and the
 * agent's health probe, and the pid checks they rest on (a pid counts as the
 * same process only while its start time matches). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/qemu/qemu-vm.h"
#include "backends/qemu/qemu.h"
#include "core/net.h"
#include "lib/proc.h"
#include "lib/util.h"

#define QEMU_BOOT_TIMEOUT_TCG_S	180
#define QEMU_BOOT_TIMEOUT_KVM_S	30
#define QEMU_START_TIMEOUT_MS	30000
#define SEED_SIZE		4096
#define GUEST_AGENT_PORT	8080

/* --- processes ------------------------------------------------------------------- */

int
qemu_alive(pid_t pid, unsigned long long starttime)
{
	return pid > 0 && starttime != 0 && proc_running_since(pid) == starttime;
}

int
qemu_kill_verified(pid_t pid, unsigned long long starttime, int sig)
{
	return qemu_alive(pid, starttime) && kill(pid, sig) == 0 ? 0 : -1;
}

int
qemu_wait_gone(pid_t pid, unsigned long long starttime, int timeout_ms)
{
	for (int64_t end = now_ms() + timeout_ms; qemu_alive(pid, starttime);) {
		if (now_ms() >= end)
			return -1;
		/* Reaped here when it happens to be our child. */
		(void)waitpid(pid, NULL, WNOHANG);
		poll(NULL, 0, 10);
	}
	return 0;
}

/* --- the watchdog ---------------------------------------------------------------- */

static volatile sig_atomic_t watchdog_moved;

static void
watchdog_on_usr1(int sig)
{
	watchdog_moved = 1;
}

/* The deadline (wall clock ms) in file, or 0. */
static int64_t
watchdog_deadline_read(const char *file)
{
	char buf[32];
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoll(buf, NULL, 10);
}

/* A detached process (own session, no fds of ours) that SIGKILLs QEMU at the
 * deadline (wall clock, ms) and exits as soon as QEMU is gone.  SIGUSR1 has it
 * take the deadline in file instead (qemu_watchdog_move): a fork of the server
 * less for a claim. */
int
qemu_watchdog_start(pid_t qpid, unsigned long long qstart, int64_t deadline_ms,
    const char *file, pid_t *wd, unsigned long long *wd_start, struct sbx_err *e)
{
	int p[2];
	pid_t mid, got = 0;
	sigset_t usr1, during;

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
		/* Held until the watchdog waits: a move sent before it is ready is
		 * taken then, never the signal's default (the end of the watchdog). */
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, &during);
		sigdelset(&during, SIGUSR1);
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
		struct sigaction sa = { .sa_handler = watchdog_on_usr1 };
		sigaction(SIGUSR1, &sa, NULL);
		for (;;) {
			if (watchdog_moved && file != NULL) {
				int64_t moved = watchdog_deadline_read(file);
				watchdog_moved = 0;
				if (moved > 0)
					deadline_ms = moved;
			}
			int64_t left = deadline_ms - wall_ms();
			if (!qemu_alive(qpid, qstart))
				_exit(0);
			if (left <= 0) {
				qemu_kill_verified(qpid, qstart, SIGKILL);
				_exit(0);
			}
			/* Wake at least once a minute: the wall clock may jump. */
			int64_t wait = pfd >= 0 ? (left < 60000 ? left : 60000) : (left < 1000 ? left : 1000);
			struct timespec ts = { .tv_sec = wait / 1000, .tv_nsec = (wait % 1000) * 1000000 };
			struct pollfd pp = { .fd = pfd, .events = POLLIN };
			(void)ppoll(pfd >= 0 ? &pp : NULL, pfd >= 0, &ts, &during);
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
	for (int i = 0; i < 100 && (*wd_start = proc_running_since(got)) == 0; i++)
		poll(NULL, 0, 1);
	return 0;
}

int
qemu_watchdog_move(pid_t wd, unsigned long long wd_start, const char *file, int64_t deadline_ms,
    struct sbx_err *e)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%lld\n", (long long)deadline_ms);

	if (qemu_write_file(file, buf, (size_t)n, e) < 0)
		return -1;
	if (qemu_kill_verified(wd, wd_start, SIGUSR1) < 0)
		return sbx_error(e, SBX_ESTATE, NULL, "the deadline watchdog (pid %d) is gone", (int)wd);
	return 0;
}

/* --- starting QEMU ---------------------------------------------------------------- */

/* A free 127.0.0.1 port, as the kernel picks one.  QEMU binds it a moment later;
 * a lost race shows as a QEMU start error, and create tries another port. */
int
qemu_pick_port(struct sbx_err *e)
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
int
qemu_health_ok(int port)
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

int
qemu_boot_timeout_s(const struct qemu_accel *a)
{
	const char *v = getenv("SBXTOP_QEMU_BOOT_TIMEOUT");
	int t = v != NULL ? atoi(v) : 0;

	return t > 0 ? t : a->kvm ? QEMU_BOOT_TIMEOUT_KVM_S : QEMU_BOOT_TIMEOUT_TCG_S;
}

/* Egress goes through passt, not QEMU's user networking: slirp maps its
 * gateway (10.0.2.2) to the host's loopback, where the core server's HTTP MCP
 * listener and any other 127.0.0.1 service would be in the guest's reach.
 * passt with --no-map-gw gives the guest the same addresses (10.0.2.15/24,
 * gateway 10.0.2.2, DNS 10.0.2.3, so images need no change) but sends what goes
 * to the gateway to the network, never to the host.  The agent's port is
 * forwarded from 127.0.0.1 as before.  --one-off: it exits with the VM. */
static int
passt_start(const struct qemu_launch *L, const char *sock, int *port_busy, struct sbx_err *e)
{
	_cleanup_free_ char *prog = qemu_which("passt"), *errf = xasprintf("%s/passt.err", L->dir);
	_cleanup_free_ char *pidf = xasprintf("%s/passt.pid", L->dir);
	char fwd[64], runas[32];
	const char *argv[32];
	int argc = 0, status, pp[2];
	pid_t child, passt = -1;

	if (prog == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "install passt (scripts/deps.sh), or use "
		    "--network none", "--network egress for qemu needs passt, which is not installed");
	snprintf(fwd, sizeof fwd, "127.0.0.1/%d:%d", L->port, GUEST_AGENT_PORT);
	(void)unlink(sock);
	argv[argc++] = "passt";
	argv[argc++] = "--foreground";
	argv[argc++] = "--quiet";
	argv[argc++] = "--one-off";
	argv[argc++] = "--no-map-gw";
	argv[argc++] = "--ipv4-only";
	argv[argc++] = "--address";
	argv[argc++] = "10.0.2.15";
	argv[argc++] = "--netmask";
	argv[argc++] = "24";
	argv[argc++] = "--gateway";
	argv[argc++] = "10.0.2.2";
	argv[argc++] = "--dns-forward";
	argv[argc++] = "10.0.2.3";
	argv[argc++] = "--tcp-ports";
	argv[argc++] = fwd;
	argv[argc++] = "--udp-ports";
	argv[argc++] = "none";
	argv[argc++] = "--socket";
	argv[argc++] = sock;
	/* As root it would drop to nobody before binding its socket in our 0700
	 * directory, and fail: it runs as whoever runs the VM. */
	snprintf(runas, sizeof runas, "%u:%u", (unsigned)geteuid(), (unsigned)getegid());
	argv[argc++] = "--runas";
	argv[argc++] = runas;
	argv[argc] = NULL;
	if (pipe2(pp, O_CLOEXEC) < 0 || (child = fork()) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "fork");
	if (child == 0) {
		/* Forked twice, so that init and not this process (which may be a
		 * long-lived core server) reaps it when it ends with the VM. */
		pid_t g = fork();
		if (g == 0) {
			int null = open("/dev/null", O_RDWR);
			int err = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (null < 0 || err < 0 || dup2(null, 0) < 0 || dup2(err, 1) < 0 ||
			    dup2(err, 2) < 0)
				_exit(127);
			syscall(SYS_close_range, 3, ~0U, 0);
			setsid();
			execv(prog, (char **)argv);
			_exit(127);
		}
		(void)write_all(pp[1], &g, sizeof g);
		_exit(g < 0);
	}
	close(pp[1]);
	if (read(pp[0], &passt, sizeof passt) != (ssize_t)sizeof passt)
		passt = -1;
	close(pp[0]);
	waitpid(child, &status, 0);
	if (passt > 0) {
		char num[16];
		int n = snprintf(num, sizeof num, "%d\n", (int)passt);
		_cleanup_close_ int pf = open(pidf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (pf >= 0)
			(void)write_all(pf, num, (size_t)n);
	}
	/* Ready once its socket is there; gone early means it refused. */
	for (int64_t end = now_ms() + 10000;;) {
		struct stat st;
		if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
			break;
		if (passt <= 0 || kill(passt, 0) < 0 || now_ms() >= end) {
			char tail[300];
			if (passt > 0)
				kill(passt, SIGKILL);
			qemu_file_tail(errf, tail, sizeof tail);
			*port_busy = strstr(tail, "in use") != NULL || strstr(tail, "bind") != NULL;
			return sbx_error(e, SBX_EBACKEND, "see passt's message; `sbxtop doctor --backend qemu`",
			    "passt (the guest's egress) did not start: %s", tail[0] ? tail : "(no message)");
		}
		poll(NULL, 0, 10);
	}
	return 0;
}

/* The passt of a VM that did not start (it would wait for QEMU forever). */
static void
passt_stop(const struct qemu_launch *L)
{
	_cleanup_free_ char *pidf = xasprintf("%s/passt.pid", L->dir);
	_cleanup_free_ char *text = L->restrict_net ? NULL : read_file(pidf, 64, NULL);
	pid_t p = text ? (pid_t)atoi(text) : 0;

	if (p > 1)
		kill(p, SIGKILL);
}

/* QEMU's command line for L: the strings it is made of are held in own
 * (cmdline_free frees them). */
struct cmdline {
	char	*own[9];
	char	 mem[32], smp[16];
	char	*argv[64];
};

static void
cmdline_make(const struct qemu_launch *L, const char *psock, struct cmdline *q)
{
	/* Restricted, the guest reaches nothing but what is forwarded: the
	 * agent's port from the host, and under network rules one guestfwd
	 * address whose every connection QEMU hands to a command of ours. */
	_cleanup_free_ char *gf = L->guestfwd ? xasprintf(",guestfwd=tcp:%s:%d-cmd:%s",
	    QEMU_PROXY_ADDR, NET_PROXY_PORT, L->guestfwd) : xstrdup("");
	char **o = q->own, **argv = q->argv;
	int argc = 0;

	o[0] = xasprintf("%s/vmlinuz", L->dir);
	o[1] = xasprintf("%s/initrd", L->dir);
	o[2] = xasprintf("file:%s/console.log", L->dir);
	o[3] = xasprintf("id=root,file=%s/disk.qcow2,format=qcow2,if=none,discard=unmap", L->dir);
	o[4] = xasprintf("id=seed,file=%s/seed.img,format=raw,if=none,readonly=on", L->dir);
	o[5] = L->restrict_net ?
	    xasprintf("user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:%d-:%d%s", L->port,
	    GUEST_AGENT_PORT, gf) :
	    xasprintf("stream,id=n0,server=off,addr.type=unix,addr.path=%s", psock);
	o[6] = xasprintf("unix:%s/qmp.sock,server=on,wait=off", L->dir);
	o[7] = xasprintf("%s/qemu.pid", L->dir);
	o[8] = NULL;
	snprintf(q->mem, sizeof q->mem, "%lld", (long long)L->mem_mib);
	snprintf(q->smp, sizeof q->smp, "%d", L->cpus);
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
	argv[argc++] = q->mem;
	argv[argc++] = "-smp";
	argv[argc++] = q->smp;
	argv[argc++] = "-nodefaults";
	argv[argc++] = "-no-user-config";
	argv[argc++] = "-display";
	argv[argc++] = "none";
	argv[argc++] = "-no-reboot";
	argv[argc++] = "-kernel";
	argv[argc++] = o[0];
	argv[argc++] = "-initrd";
	argv[argc++] = o[1];
	argv[argc++] = "-append";
	argv[argc++] = "console=ttyS0 panic=-1 quiet";
	argv[argc++] = "-serial";
	argv[argc++] = o[2];
	argv[argc++] = "-drive";
	argv[argc++] = o[3];
	argv[argc++] = "-device";
	argv[argc++] = "virtio-blk-device,drive=root";
	argv[argc++] = "-drive";
	argv[argc++] = o[4];
	argv[argc++] = "-device";
	argv[argc++] = "virtio-blk-device,drive=seed";
	argv[argc++] = "-netdev";
	argv[argc++] = o[5];
	argv[argc++] = "-device";
	argv[argc++] = "virtio-net-device,netdev=n0";
	argv[argc++] = "-qmp";
	argv[argc++] = o[6];
	argv[argc++] = "-pidfile";
	argv[argc++] = o[7];
	argv[argc++] = "-daemonize";
	if (L->incoming != NULL) {
		/* The same machine as the snapshot's, its memory read from the
		 * stream; the VM stays paused (it was paused when saved). */
		argv[argc++] = "-incoming";
		argv[argc++] = (char *)L->incoming;
	}
	argv[argc] = NULL;
}

static void
cmdline_free(struct cmdline *q)
{
	for (size_t i = 0; i < ARRAY_SIZE(q->own); i++)
		free(q->own[i]);
}

/* Run prog with argv in a session of its own, its output to errf, and wait
 * for its first process, which -daemonize makes exit once the VM is set up
 * (or failed): 0 with its *status, or -1 with e when it did not exit in time. */
static int
daemonize(const char *prog, char *const argv[], const char *errf, int *status,
    const struct qemu_launch *L, struct sbx_err *e)
{
	pid_t child;

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
	for (int64_t end = now_ms() + QEMU_START_TIMEOUT_MS;;) {
		pid_t r = waitpid(child, status, WNOHANG);
		if (r == child)
			return 0;
		if (r < 0 && errno != EINTR)
			return sbx_error_errno(e, SBX_EINTERNAL, NULL, "waitpid");
		if (now_ms() >= end) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			passt_stop(L);
			return sbx_error(e, SBX_ETIMEOUT, NULL, "QEMU did not start within %d s",
			    QEMU_START_TIMEOUT_MS / 1000);
		}
		poll(NULL, 0, 10);
	}
}

int
qemu_start(const struct qemu_launch *L, pid_t *pid, int *port_busy, struct sbx_err *e)
{
	_cleanup_free_ char *psock = xasprintf("%s/passt.sock", L->dir);
	_cleanup_free_ char *errf = xasprintf("%s/qemu.err", L->dir);
	_cleanup_free_ char *prog = qemu_which(QEMU_BIN), *text = NULL;
	struct cmdline q;
	char tail[300];
	int status = 0, rc;

	*port_busy = 0;
	if (prog == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "install qemu-system-x86 (scripts/deps.sh)",
		    "%s is not installed", QEMU_BIN);
	if (!L->restrict_net && passt_start(L, psock, port_busy, e) < 0)
		return -1;
	cmdline_make(L, psock, &q);
	rc = daemonize(prog, q.argv, errf, &status, L, e);
	if (rc == 0)
		text = read_file(q.own[7], 64, NULL);
	cmdline_free(&q);
	if (rc < 0)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		qemu_file_tail(errf, tail, sizeof tail);
		*port_busy = strstr(tail, "host forwarding") != NULL;
		passt_stop(L);
		return sbx_error(e, SBX_EBACKEND, "see qemu's message; `sbxtop doctor --backend qemu`",
		    "QEMU refused to start: %s", tail[0] ? tail : "(no message)");
	}
	if (text == NULL || (*pid = (pid_t)atoi(text)) <= 0) {
		/* QEMU removes its pid file as it exits: the VM already failed
		 * (a broken snapshot's memory, say, fails right after the fork). */
		passt_stop(L);
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
int
qemu_seed_write(const char *dir, const struct sandbox *s, int64_t deadline, int64_t restored_ms,
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
	/* No fsync: QEMU reads the seed through the page cache (its drive's
	 * cache mode is writeback), and a VM ends with its host anyway. */
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) {
		explicit_bzero(buf, sizeof buf);
		return sbx_error_errno(e, SBX_EIO, "is the disk full?", "cannot write %s", path);
	}
	explicit_bzero(buf, sizeof buf);
	return 0;
}

