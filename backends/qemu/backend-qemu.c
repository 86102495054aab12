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
 * The agent is reached through a host forward from a random 127.0.0.1 port to
 * the guest's 8080.  Network "none" is QEMU's user-mode network with
 * restrict=on: the guest reaches nothing but that forward; "egress" is passt
 * with its gateway mapping off (qemu-launch.c), so the host's loopback is never
 * the guest's 10.0.2.2.  QEMU runs detached (-daemonize,
 * its own session), and a detached watchdog process kills it at the deadline
 * even with no sbxtop alive; the agent enforces the deadline inside too.
 *
 * This file keeps create and the other verbs, and the vtable; qemu-record.c
 * reads the sandbox's record, qemu-launch.c starts QEMU and its watchdog,
 * qemu-snapshot.c takes and restores snapshots; qemu-vm.h is what they share.
 * The parts call down (qemu-run.c's chores), never back into this file. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/qemu/qemu-image.h"
#include "core/paths.h"
#include "backends/qemu/qemu.h"
#include "backends/qemu/qemu-snapshot.h"
#include "backends/qemu/qemu-vm.h"
#include "core/net.h"
#include "lib/fault.h"
#include "lib/proc.h"
#include "lib/util.h"

#define QEMU_DEFAULT_MEM_MIB	512
#define QEMU_MIN_MEM_MIB	128

/* --- create ------------------------------------------------------------------------ */

static void
append_note(char **note, const char *text)
{
	char *n = *note ? xasprintf("%s; %s", *note, text) : xstrdup(text);

	free(*note);
	*note = n;
}

static char *
endpoint_url(int port)
{
	return xasprintf("http://127.0.0.1:%d", port);
}

/* Where sbxtop-guestfwd is: beside this program (caller frees), or NULL. */
static char *
guestfwd_helper(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n <= 0 || memchr(exe, '/', (size_t)n) == NULL)
		return NULL;
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	return xasprintf("%s/sbxtop-guestfwd", exe);
}

/* The command QEMU runs for each guest connection to the proxy's address
 * under network rules: sbxtop-guestfwd (cli/guestfwd.c, beside this
 * program), handing it to the proxy's socket in dir (caller frees); NULL
 * with e.  QEMU splits it as a shell would (single quotes hold the paths) and
 * takes a comma for the end of its option, so paths with either are refused. */
static char *
guestfwd_cmd(const char *dir, struct sbx_err *e)
{
	_cleanup_free_ char *helper = guestfwd_helper();

	if (helper == NULL) {
		sbx_error_errno(e, SBX_EINTERNAL, NULL, "cannot find this program");
		return NULL;
	}
	if (access(helper, X_OK) < 0) {
		sbx_error_errno(e, SBX_EUNSUPPORTED, "reinstall sbxtop (make install puts it beside "
		    "sbxtop-core)", "network rules on qemu need %s", helper);
		return NULL;
	}
	if (strpbrk(helper, "',") != NULL || strpbrk(dir, "',") != NULL) {
		sbx_error(e, SBX_EUNSUPPORTED, "install sbxtop and set XDG_STATE_HOME under paths "
		    "without those characters", "network rules on qemu need paths without a quote or "
		    "a comma (QEMU's option syntax): %s, %s", helper, dir);
		return NULL;
	}
	return xasprintf("'%s' '%s/proxy.sock'", helper, dir);
}

/* A create (or a restore: snapdir set) as it goes, step by step; what is
 * made is undone by create_undo when a step fails. */
struct qcreate {
	struct sandbox		*s;
	const char		*snapdir;	/* NULL: boot from an image */
	const char		*disk_of;	/* an OCI image's disk, or NULL */
	int64_t			 deadline;	/* seconds */
	struct qemu_accel	 accel;
	struct qemu_launch	 L;
	cJSON			*snap;		/* the snapshot's snapshot.json */
	char			*dir, *imgdir, *note, *incoming, *guestfwd;
	int			 lock_fd, made_dir, port;
	pid_t			 pid, wd;
	unsigned long long	 start, wd_start;
	int64_t			 t0, boot_ms;
};

/* Validate: the id, the network policy, the agent's secret, QEMU there. */
static int
create_check(const struct sandbox *s, struct sbx_err *e)
{
	_cleanup_free_ char *q = NULL, *qi = NULL;

	if (!sandbox_id_valid(s->id))
		return sbx_error(e, SBX_EINVAL, "ids are lower-case letters, digits and '-'",
		    "invalid sandbox id '%s'", s->id);
	if (s->network != NULL && strcmp(s->network, "none") != 0 && strcmp(s->network, "egress") != 0 &&
	    strcmp(s->network, "rules") != 0)
		return sbx_error(e, SBX_EINVAL, "use --network none, egress or rules",
		    "unknown network policy '%s'", s->network);
	if (s->agent_secret == NULL || strlen(s->agent_secret) < 16 ||
	    strspn(s->agent_secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") !=
	    strlen(s->agent_secret))
		return sbx_error(e, SBX_EINTERNAL, NULL, "the sandbox has no usable agent secret");
	q = qemu_which(QEMU_BIN);
	qi = qemu_which("qemu-img");
	if (q == NULL || qi == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "install qemu-system-x86 and qemu-utils (scripts/deps.sh)",
		    "%s is not installed", q == NULL ? QEMU_BIN : "qemu-img");
	return 0;
}

/* The accelerator, and the directory the machine comes from: the snapshot's
 * (its kernel, memory size, vCPUs and accelerator), the default image's for
 * an OCI image (its kernel on a disk made of the OCI image), or the image's. */
static int
create_source(struct qcreate *c, struct sbx_err *e)
{
	struct sandbox *s = c->s;

	qemu_accel_choose(&c->accel, c->snapdir != NULL ? c->snapdir : c->disk_of != NULL ? NULL :
	    s->image);
	if (c->snapdir != NULL) {
		if ((c->snap = qemu_restore_open(c->snapdir, &c->accel, e)) == NULL)
			return -1;
		c->imgdir = xstrdup(c->snapdir);
	} else if (c->disk_of != NULL) {
		if ((c->imgdir = image_dir(NULL, e)) == NULL)
			return -1;
	} else if (s->image != NULL && s->image[0] == '/') {
		_cleanup_free_ char *k = xasprintf("%s/vmlinuz", s->image);
		if (access(k, R_OK) < 0)
			return sbx_error(e, SBX_EINVAL, "give --image the name of an image (`sbxtop image ls`)",
			    "%s is not an image directory (no vmlinuz)", s->image);
		c->imgdir = xstrdup(s->image);
	} else if ((c->imgdir = image_dir(s->image, e)) == NULL) {
		return -1;
	}
	return 0;
}

/* The sandbox's directory, made and locked while it is built (gc leaves it
 * alone), with a provisional backend.json, replaced once the VM is up: should
 * this process die meanwhile, gc and destroy know the dir is a VM's
 * (find_orphan). */
static int
create_dir(struct qcreate *c, struct sbx_err *e)
{
	_cleanup_free_ char *parent = NULL, *p = NULL, *text = NULL;
	cJSON *pb;

	if ((c->dir = paths_sandbox_dir(c->s->id, e)) == NULL)
		return -1;
	if (strlen(c->dir) + sizeof "/qmp.sock" > sizeof(((struct sockaddr_un *)0)->sun_path))
		return sbx_error(e, SBX_EINVAL, "set XDG_STATE_HOME to a shorter path",
		    "the QMP socket %s/qmp.sock would be longer than a unix socket path may be", c->dir);
	parent = xstrdup(c->dir);
	*strrchr(parent, '/') = '\0';
	if (mkdir_p(parent, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", parent);
	if (mkdir(c->dir, 0700) < 0)
		return sbx_error_errno(e, errno == EEXIST ? SBX_EINVAL : SBX_EIO,
		    errno == EEXIST ? "pick another id" : NULL, "cannot create %s", c->dir);
	c->made_dir = 1;
	if ((c->lock_fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    flock(c->lock_fd, LOCK_EX) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", c->dir);
	p = xasprintf("%s/backend.json", c->dir);
	pb = cJSON_CreateObject();
	cJSON_AddStringToObject(pb, "backend", "qemu");
	cJSON_AddStringToObject(pb, "dir", c->dir);
	text = cJSON_PrintUnformatted(pb);
	cJSON_Delete(pb);
	if (qemu_write_file(p, text, strlen(text), e) < 0 || fault_point("create.qemu.dir", e) < 0)
		return -1;
	return 0;
}

/* The kernel, the initrd and the disk's base: links to the image's (or the
 * snapshot's), so rebuilding or removing those never pulls a file from under
 * a running VM, and a snapshot of this VM finds the machine it runs.  The disk
 * is a qcow2 overlay whose backing names are relative: the same chain opens
 * from the sandbox's and from a snapshot's dir.  Then the seed disk. */
static int
create_disks(struct qcreate *c, struct sbx_err *e)
{
	static const char *const from_img[][2] = { { "vmlinuz", "vmlinuz" }, { "initrd", "initrd" },
	    { "rootfs.ext4", "base.ext4" } };
	static const char *const from_snap[][2] = { { "vmlinuz", "vmlinuz" }, { "initrd", "initrd" },
	    { "base.ext4", "base.ext4" }, { "disk.qcow2", "snap.qcow2" } };
	const char *snapdir = c->snapdir;
	size_t n = snapdir ? ARRAY_SIZE(from_snap) : ARRAY_SIZE(from_img);
	char *argv[] = { "qemu-img", "create", "-q", "-f", "qcow2", "-F", snapdir ? "qcow2" : "raw",
	    "-b", snapdir ? "snap.qcow2" : "base.ext4", "disk.qcow2", NULL };

	for (size_t i = 0; i < n; i++) {
		const char *const *pair = snapdir ? from_snap[i] : from_img[i];
		_cleanup_free_ char *from = c->disk_of != NULL && !snapdir &&
		    strcmp(pair[0], "rootfs.ext4") == 0 ? xstrdup(c->disk_of) :
		    xasprintf("%s/%s", c->imgdir, pair[0]);
		_cleanup_free_ char *to = xasprintf("%s/%s", c->dir, pair[1]);
		if (qemu_link_or_copy(from, to, e) < 0)
			return -1;
	}
	if (qemu_run(argv, c->dir, 30000, NULL, e) < 0)
		return -1;
	return qemu_seed_write(c->dir, c->s, c->deadline, 0, e);
}

/* The machine to start: memory, vCPUs (a snapshot's own), the network, and
 * what of s's limits the VM cannot keep, said in the note. */
static int
create_machine(struct qcreate *c, struct sbx_err *e)
{
	struct sandbox *s = c->s;
	struct qemu_launch *L = &c->L;

	if (!c->accel.kvm) {
		_cleanup_free_ char *n = xasprintf("%s (%s)", QEMU_TCG_NOTE, c->accel.reason);
		append_note(&c->note, n);
	}
	memset(L, 0, sizeof *L);
	L->dir = c->dir;
	L->imgdir = c->imgdir;
	L->accel = &c->accel;
	L->mem_mib = s->limits.memory_mib > 0 ? s->limits.memory_mib : QEMU_DEFAULT_MEM_MIB;
	if (L->mem_mib < QEMU_MIN_MEM_MIB) {
		_cleanup_free_ char *n = xasprintf("memory raised to the guest's minimum of %d MiB",
		    QEMU_MIN_MEM_MIB);
		append_note(&c->note, n);
		L->mem_mib = QEMU_MIN_MEM_MIB;
	}
	L->cpus = s->limits.cpus > 0 ? (int)s->limits.cpus + (s->limits.cpus > (int)s->limits.cpus) : 1;
	if (c->snap != NULL) {
		_cleanup_free_ char *n = qemu_restore_machine(s, c->snap, &L->mem_mib, &L->cpus);
		if (n != NULL)
			append_note(&c->note, n);
		c->incoming = qemu_restore_incoming(c->snapdir);
		L->incoming = c->incoming;
	}
	L->restrict_net = s->network == NULL || strcmp(s->network, "egress") != 0;
	if (s->network != NULL && strcmp(s->network, "rules") == 0 &&
	    (c->guestfwd = guestfwd_cmd(c->dir, e)) == NULL)
		return -1;
	L->guestfwd = c->guestfwd;
	if (s->limits.pids > 0)
		append_note(&c->note, "pids: not limited inside the VM (memory and vCPUs bound it)");
	if (s->limits.disk_mib > 0)
		append_note(&c->note, "disk: the image's size bounds it");
	return 0;
}

/* Start QEMU on a free port (another when the one picked was taken
 * meanwhile), then its deadline watchdog. */
static int
create_start(struct qcreate *c, struct sbx_err *e)
{
	_cleanup_free_ char *wdf = xasprintf("%s/deadline", c->dir);
	struct sandbox *s = c->s;
	int busy = 0;

	c->t0 = now_ms();
	for (int attempt = 0; attempt < 3; attempt++) {
		if ((c->port = qemu_pick_port(e)) < 0)
			return -1;
		c->L.port = c->port;
		if (qemu_start(&c->L, &c->pid, &busy, e) == 0)
			break;
		c->pid = 0;
		if (!busy)
			return -1;
	}
	if (c->pid <= 0)
		return -1;
	if ((c->start = proc_running_since(c->pid)) == 0)
		return sbx_error(e, SBX_EBACKEND, NULL, "QEMU (pid %d) exited right after starting",
		    (int)c->pid);
	if (fault_point("create.qemu.started", e) < 0)
		return -1;
	return qemu_watchdog_start(c->pid, c->start, s->created_at > 0 ?
	    s->created_at + c->deadline * 1000 : wall_ms() + c->deadline * 1000, wdf, &c->wd,
	    &c->wd_start, e);
}

/* Wait for the booted VM's agent, through the forward, until end (monotonic
 * ms); when the VM stops or the time is up, the console's last words say why. */
static int
create_wait_agent(struct qcreate *c, int64_t end, struct sbx_err *e)
{
	char tail[400];
	_cleanup_free_ char *con = NULL;

	for (;;) {
		if (qemu_health_ok(c->port))
			return 0;
		if (!qemu_alive(c->pid, c->start) || now_ms() >= end)
			break;
		poll(NULL, 0, 100);
	}
	con = xasprintf("%s/console.log", c->dir);
	qemu_file_tail(con, tail, sizeof tail);
	if (!qemu_alive(c->pid, c->start))
		return sbx_error(e, SBX_EAGENT, "check the image (`sbxtop image build`)",
		    "the VM stopped before its agent was ready; console: %s",
		    tail[0] ? tail : "(empty)");
	return sbx_error(e, SBX_ETIMEOUT, c->accel.kvm ? "check the image (`sbxtop image build`)" :
	    "TCG is slow: set SBXTOP_QEMU_BOOT_TIMEOUT higher, or use a host with KVM",
	    "the agent was not ready within %d s (%s); console: %s",
	    qemu_boot_timeout_s(&c->accel), c->accel.kvm ? "KVM" : "TCG", tail[0] ? tail : "(empty)");
}

/* The VM runs: its record (backend_data and backend.json) and s's state. */
static int
create_record(struct qcreate *c, struct sbx_err *e)
{
	struct sandbox *s = c->s;
	_cleanup_free_ char *qmp = xasprintf("%s/qmp.sock", c->dir), *text = NULL, *p = NULL;
	cJSON *bd = cJSON_CreateObject();

	cJSON_AddStringToObject(bd, "backend", "qemu");
	cJSON_AddStringToObject(bd, "dir", c->dir);
	cJSON_AddNumberToObject(bd, "pid", c->pid);
	cJSON_AddNumberToObject(bd, "starttime", (double)c->start);
	cJSON_AddNumberToObject(bd, "watchdog_pid", c->wd);
	cJSON_AddNumberToObject(bd, "watchdog_starttime", (double)c->wd_start);
	cJSON_AddNumberToObject(bd, "port", c->port);
	cJSON_AddStringToObject(bd, "qmp", qmp);
	cJSON_AddStringToObject(bd, "accel", c->accel.kvm ? "kvm" : "tcg");
	cJSON_AddStringToObject(bd, "image", c->imgdir);
	cJSON_AddNumberToObject(bd, "memory_mib", (double)c->L.mem_mib);
	cJSON_AddNumberToObject(bd, "cpus", c->L.cpus);
	cJSON_AddNumberToObject(bd, "deadline_s", (double)c->deadline);
	cJSON_AddNumberToObject(bd, c->snap ? "restore_ms" : "boot_ms", (double)c->boot_ms);
	if (c->snap != NULL) {
		const char *slash = strrchr(c->snapdir, '/');
		cJSON_AddStringToObject(bd, "snapshot", slash ? slash + 1 : c->snapdir);
	}
	text = cJSON_PrintUnformatted(bd);
	p = xasprintf("%s/backend.json", c->dir);
	if (qemu_write_file(p, text, strlen(text), e) < 0) {
		cJSON_Delete(bd);
		return -1;
	}
	cJSON_Delete(s->backend_data);
	s->backend_data = bd;
	free(s->limits_note);
	s->limits_note = steal_pointer(&c->note);
	free(s->state_reason);
	s->state_reason = NULL;
	s->state = SBX_RUNNING;
	return 0;
}

/* A step failed: nothing half-made stays behind. */
static void
create_undo(struct qcreate *c)
{
	struct sbx_err scratch;
	struct stat st;

	qemu_kill_verified(c->wd, c->wd_start, SIGKILL);
	if (c->pid > 0 && c->start != 0) {
		qemu_kill_verified(c->pid, c->start, SIGKILL);
		(void)qemu_wait_gone(c->pid, c->start, QEMU_GONE_TIMEOUT_MS);
	}
	if (c->made_dir && !(stat(c->dir, &st) < 0))
		(void)qemu_rmtree(c->dir, &scratch);
}

static int
qemu_create_common(struct sandbox *s, const char *snapdir, struct sbx_err *e)
{
	struct qcreate c = {
		.s = s, .snapdir = snapdir, .lock_fd = -1,
		.disk_of = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->image_spec, "disk")),
		.deadline = s->max_duration_s > 0 ? s->max_duration_s : QEMU_DEFAULT_DEADLINE_S,
	};
	int rc = -1;

	if (create_check(s, e) < 0 || create_source(&c, e) < 0)
		goto out;
	if (create_dir(&c, e) < 0 || create_disks(&c, e) < 0 || create_machine(&c, e) < 0 ||
	    create_start(&c, e) < 0)
		goto undo;
	free(s->agent_endpoint);
	s->agent_endpoint = endpoint_url(c.port);
	{
		int64_t end = now_ms() + (int64_t)qemu_boot_timeout_s(&c.accel) * 1000;
		struct qdata vm = { .dir = c.dir, .pid = c.pid, .starttime = c.start };
		int up = c.snap != NULL ? qemu_restore_resume(s, &vm, &c.accel, c.deadline, c.t0, end, e) :
		    create_wait_agent(&c, end, e);
		if (up < 0)
			goto undo;
	}
	c.boot_ms = now_ms() - c.t0;
	if (fault_point("create.qemu.ready", e) < 0)
		goto undo;
	{
		_cleanup_free_ char *n = xasprintf("%s in %.1f s under %s", c.snap ? "restored" : "booted",
		    (double)c.boot_ms / 1000, c.accel.kvm ? "KVM" : "TCG");
		append_note(&c.note, n);
	}
	if (create_record(&c, e) < 0)
		goto undo;
	if (s->pool != NULL)
		qemu_keep_warm(s);
	rc = 0;
undo:
	if (rc < 0)
		create_undo(&c);
out:
	if (c.lock_fd >= 0)
		close(c.lock_fd);
	cJSON_Delete(c.snap);
	free(c.dir);
	free(c.imgdir);
	free(c.note);
	free(c.incoming);
	free(c.guestfwd);
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

/* --- the other verbs ------------------------------------------------------------------- */

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
	} else if (qemu_alive(d.pid, d.starttime)) {
		_cleanup_free_ char *q = qdata_qmp(&d), *ret = NULL;
		struct sbx_err qe;
		if (qemu_qmp(q, "query-status", NULL, QMP_TIMEOUT_MS, &ret, &qe) == 0) {
			enum sbx_state was = s->state;
			s->state = strstr(ret, "\"running\":true") != NULL ? SBX_RUNNING : SBX_SUSPENDED;
			/* Why it was suspended ("idle") holds while it stays so. */
			if (s->state != was || s->state != SBX_SUSPENDED) {
				free(s->state_reason);
				s->state_reason = NULL;
			}
		} else {
			free(s->state_reason);
			s->state_reason = xasprintf("QMP: %s", qe.msg);
		}
	} else if (s->state != SBX_TERMINATED || s->state_reason == NULL) {
		s->state = SBX_TERMINATED;
		free(s->state_reason);
		s->state_reason = exit_reason(s, d.dir);
	}
	/* A warm pool's check asks every few seconds: its member's connection. */
	if (s->pool != NULL && s->state == SBX_RUNNING)
		qemu_keep_warm(s);
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
	if (d.orphan || !qemu_alive(d.pid, d.starttime)) {
		free(d.dir);
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status` to see why", "sandbox %s is not running",
		    s->id);
	}
	_cleanup_free_ char *q = qdata_qmp(&d);
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
	qemu_kill_verified(d->wd_pid, d->wd_starttime, SIGKILL);
	if (qemu_alive(d->pid, d->starttime)) {
		kill(d->pid, SIGKILL);
		if (qemu_wait_gone(d->pid, d->starttime, QEMU_GONE_TIMEOUT_MS) < 0)
			return sbx_error(e, SBX_ETIMEOUT, "try again; check `ps` for QEMU",
			    "QEMU (pid %d) did not die within %d ms", (int)d->pid, QEMU_GONE_TIMEOUT_MS);
	}
	if (fault_point("destroy.qemu.killed", e) < 0)
		return -1;
	return qemu_rmtree(d->dir, e);
}

static int
qemu_destroy(struct sandbox *s, struct sbx_err *e)
{
	struct qdata d;
	int rc;

	if (qdata_get(s, &d, e) < 0)
		return -1;
	qemu_keep_drop(s->id);
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

/* The proxy's listener for a guest under network rules: a unix socket in the
 * VM's directory (0700; the socket 0600), where each guest connection to
 * QEMU_PROXY_ADDR:port arrives as a descriptor from the guestfwd helper.  The
 * VM's end (QEMU's pid) is the sandbox's. */
static int
qemu_net_listen(const struct sandbox *s, int port, int *fd, pid_t *init, struct sbx_err *e)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	_cleanup_free_ char *path = NULL;
	struct qdata d;
	int lfd;

	if (qdata_get(s, &d, e) < 0)
		return -1;
	path = xasprintf("%s/proxy.sock", d.dir);
	if (d.orphan || !qemu_alive(d.pid, d.starttime)) {
		free(d.dir);
		return sbx_error(e, SBX_ESTATE, NULL, "sandbox %s's VM is not running", s->id);
	}
	*init = d.pid;
	free(d.dir);
	if (port != NET_PROXY_PORT || strlen(path) >= sizeof a.sun_path)
		return sbx_error(e, SBX_EINTERNAL, NULL, "no proxy socket at %s:%d", path, port);
	memcpy(a.sun_path, path, strlen(path) + 1);
	(void)unlink(path);
	if ((lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "socket");
	if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || chmod(path, 0600) < 0 ||
	    listen(lfd, 128) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot listen on %s", path);
		close(lfd);
		return -1;
	}
	*fd = lfd;
	return 0;
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

static int
is_known(const struct backend_gc *g, const char *id)
{
	for (size_t i = 0; i < g->nknown; i++)
		if (strcmp(g->known[i], id) == 0)
			return 1;
	return 0;
}

/* A QEMU of a sandbox of this state directory: its -pidfile is SDIR/ID/qemu.pid
 * (in id). */
static int
qemu_of(pid_t pid, const char *sdir, char *id, size_t len)
{
	char path[64];
	_cleanup_free_ char *cl = NULL;
	size_t n = 0, k = strlen(sdir);

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if ((cl = read_file(path, 65536, &n)) == NULL)
		return 0;
	for (size_t i = 0; i < n;) {
		const char *arg = cl + i;
		i += strlen(arg) + 1;
		if (strcmp(arg, "-pidfile") != 0 || i >= n)
			continue;
		arg = cl + i;
		if (strncmp(arg, sdir, k) != 0 || arg[k] != '/')
			return 0;
		arg += k + 1;
		if (strcspn(arg, "/") >= len || strcmp(arg + strcspn(arg, "/"), "/qemu.pid") != 0)
			return 0;
		snprintf(id, len, "%.*s", (int)strcspn(arg, "/"), arg);
		return sandbox_id_valid(id);
	}
	return 0;
}

static void
gc_found(const struct backend_gc *g, const char *kind, const char *id, const char *what, int live)
{
	if (g->found != NULL)
		g->found(g->arg, kind, id, what, live);
}

/* A VM the registry does not hold as live: found by its directory (the pid
 * file, checked against QMP socket in the command line) or, with its
 * directory gone, by its command line alone. */
static int
qemu_gc(const struct backend_gc *g, struct sbx_err *e)
{
	_cleanup_free_ char *root = paths_dir(PATHS_STATE, e);
	_cleanup_free_ char *sdir = NULL;
	struct dirent *de;
	DIR *d;
	int removed = 0;

	if (root == NULL)
		return -1;
	if (!g->dry_run)
		removed = qemu_snapshot_gc_temps();
	sdir = xasprintf("%s/sandboxes", root);
	if ((d = opendir(sdir)) == NULL && errno != ENOENT)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", sdir);
	while (d != NULL && (de = readdir(d)) != NULL) {
		_cleanup_free_ char *dir = NULL, *json = NULL, *text = NULL;
		_cleanup_close_ int lock = -1;
		struct sandbox probe;
		struct qdata qd;
		struct sbx_err scratch;
		const cJSON *b;

		if (de->d_name[0] == '.' || !sandbox_id_valid(de->d_name) || is_known(g, de->d_name))
			continue;
		dir = xasprintf("%s/%s", sdir, de->d_name);
		/* Locked: a create still runs. */
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
			int live = qd.orphan || qemu_alive(qd.pid, qd.starttime);
			if (live) {
				char what[48];
				snprintf(what, sizeof what, "QEMU pid %d", (int)qd.pid);
				gc_found(g, "vm", probe.id, what, 1);
			}
			gc_found(g, "directory", probe.id, dir, 0);
			if (!g->dry_run && (!live || g->recorded == NULL ||
			    !g->recorded(g->arg, probe.id)) && teardown(&qd, &scratch) == 0)
				removed++;
			free(qd.dir);
		}
		cJSON_Delete(probe.backend_data);
	}
	if (d != NULL)
		closedir(d);
	/* A VM whose directory is gone, by its command line. */
	if (!g->quick && (d = opendir("/proc")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			_cleanup_free_ char *dir = NULL;
			pid_t pid = (pid_t)atoi(de->d_name);
			unsigned long long start;
			char id[32], what[48];
			struct stat st;

			if (pid <= 1 || !qemu_of(pid, sdir, id, sizeof id) || is_known(g, id) ||
			    (dir = xasprintf("%s/%s", sdir, id), lstat(dir, &st) == 0) ||
			    (start = proc_running_since(pid)) == 0)
				continue;
			snprintf(what, sizeof what, "QEMU pid %d", (int)pid);
			gc_found(g, "vm", id, what, 1);
			if (g->dry_run || (g->recorded != NULL && g->recorded(g->arg, id)))
				continue;
			qemu_kill_verified(pid, start, SIGKILL);
			removed += qemu_wait_gone(pid, start, QEMU_GONE_TIMEOUT_MS) == 0;
		}
		closedir(d);
	}
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
	{
		_cleanup_free_ char *gf = guestfwd_helper();
		report(arg, gf != NULL && access(gf, X_OK) == 0 ? CHECK_OK : CHECK_WARN,
		    "sbxtop-guestfwd (network rules)", gf != NULL ? gf : "not found",
		    "reinstall sbxtop: make install puts it beside sbxtop-core");
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
	.host_bound = 1,
	.warm_pool = 1,
	.claim = qemu_claim,
	.suspend = qemu_suspend,
	.resume = qemu_resume,
	.destroy = qemu_destroy,
	.status = qemu_status,
	.log_path = qemu_log_path,
	.doctor = qemu_doctor,
	.gc = qemu_gc,
	.snapshot = qemu_snapshot,
	.restore = qemu_restore,
	.snapshot_rm = snapshot_rm,
	.verbs = qemu_verbs,
	.image_inject = qemu_image_inject,
	.net_listen = qemu_net_listen,
	.net_proxy_addr = QEMU_PROXY_ADDR,
};
