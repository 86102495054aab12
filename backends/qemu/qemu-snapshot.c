/* Snapshots of qemu sandboxes (see qemu-snapshot.h for what one holds): listing
 * and removing them, taking one of a running VM (the backend's snapshot op), and
 * the steps of a restore that backend-qemu.c's create takes when it starts a VM
 * from one. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/jspec.h"
#include "backends/qemu/qemu-image.h"
#include "core/client/agentc.h"
#include "core/paths.h"
#include "backends/qemu/qemu.h"
#include "backends/qemu/qemu-snapshot.h"
#include "backends/qemu/qemu-vm.h"
#include "lib/log.h"
#include "lib/util.h"

static const char *const parts[] = { "snapshot.json", "memory", "disk.qcow2", "base.ext4",
    "vmlinuz", "initrd" };

char *
snapshot_root(struct sbx_err *e)
{
	_cleanup_free_ char *data = paths_dir(PATHS_DATA, e);

	return data != NULL ? xasprintf("%s/snapshots", data) : NULL;
}

char *
snapshot_dir(const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *root = NULL;
	char *dir;

	if (name == NULL || !image_name_valid(name)) {
		sbx_error(e, SBX_EINVAL, "snapshot names are 1 to 64 letters, digits, '.', '_' and '-'",
		    "invalid snapshot name '%s'", name ? name : "");
		return NULL;
	}
	if ((root = snapshot_root(e)) == NULL)
		return NULL;
	dir = xasprintf("%s/%s", root, name);
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, parts[i]);
		if (access(p, R_OK) < 0) {
			if (i == 0)
				sbx_error(e, SBX_ENOTFOUND, "see `sbxtop snapshot ls`; make one with "
				    "`sbxtop snapshot ID NAME`", "no snapshot '%s'", name);
			else
				sbx_error(e, SBX_EINVAL, "remove it (`sbxtop snapshot rm`) and take it again",
				    "snapshot '%s' is broken: %s is missing", name, parts[i]);
			free(dir);
			return NULL;
		}
	}
	return dir;
}

cJSON *
snapshot_list(struct sbx_err *e)
{
	_cleanup_free_ char *root = snapshot_root(e);
	cJSON *arr, *o;

	if (root == NULL || (arr = qemu_store_list(root, "snapshot.json", snapshot_dir)) == NULL)
		return NULL;
	cJSON_ArrayForEach(o, arr) {
		_cleanup_free_ char *p = xasprintf("%s/%s/memory", root,
		    cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")));
		struct stat st;
		if (stat(p, &st) == 0) {
			cJSON_DeleteItemFromObjectCaseSensitive(o, "memory_bytes");
			cJSON_AddNumberToObject(o, "memory_bytes", (double)st.st_size);
		}
	}
	return arr;
}

int
snapshot_rm(const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *root = snapshot_root(e);

	return root ? image_store_rm(root, "snapshot", name, e) : -1;
}

/* --- taking a snapshot ------------------------------------------------------------- */

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

/* Where snapshot name goes (*dest) and the work directory it is made in
 * first (*work, made now; renamed to *dest when whole). */
static int
snapshot_dirs(const char *name, char **dest, char **work, struct sbx_err *e)
{
	_cleanup_free_ char *root = NULL, *w = NULL;

	if ((root = snapshot_root(e)) == NULL)
		return -1;
	if (mkdir_p(root, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", root);
	*dest = xasprintf("%s/%s", root, name);
	if (access(*dest, F_OK) == 0)
		return sbx_error(e, SBX_EINVAL, "choose another name, or remove it first (`sbxtop snapshot rm`)",
		    "there is already a snapshot '%s'", name);
	w = xasprintf("%s/.tmp-%s-%d", root, name, (int)getpid());
	if (mkdir(w, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", w);
	*work = steal_pointer(&w);
	return 0;
}

/* The machine the VM runs (kernel, initrd, the disk's base), linked into work. */
static int
snapshot_machine(const struct sandbox *s, const struct qdata *d, const char *work,
    struct sbx_err *e)
{
	static const char *const machine[] = { "vmlinuz", "initrd", "base.ext4" };

	for (size_t i = 0; i < ARRAY_SIZE(machine); i++) {
		_cleanup_free_ char *from = xasprintf("%s/%s", d->dir, machine[i]);
		_cleanup_free_ char *to = xasprintf("%s/%s", work, machine[i]);
		if (access(from, R_OK) < 0)
			return sbx_error(e, SBX_EUNSUPPORTED, "create a new sandbox and snapshot that",
			    "sandbox %s was made by an older sbxtop (no %s in its directory)", s->id,
			    machine[i]);
		if (qemu_link_or_copy(from, to, e) < 0)
			return -1;
	}
	return 0;
}

/* The paused VM's memory and disk into work: the disk as the VM left it, its
 * whole chain above the base folded into one overlay over base.ext4 (named
 * relatively). */
static int
snapshot_save(const struct qdata *d, const char *qmp, const char *work, struct sbx_err *e)
{
	char *argv[] = { "qemu-img", "convert", "-q", "-f", "qcow2", "-O", "qcow2", "-B", "base.ext4",
	    "-F", "raw", "-U", NULL, "disk.qcow2", NULL };
	_cleanup_free_ char *mem = xasprintf("%s/memory", work);
	_cleanup_free_ char *src = xasprintf("%s/disk.qcow2", d->dir);

	if (migrate_to_file(qmp, mem, e) < 0)
		return -1;
	argv[12] = src;
	return qemu_run(argv, work, 10 * 60 * 1000, NULL, e);
}

/* work/snapshot.json: what the snapshot is of, and its machine. */
static int
snapshot_json(const struct sandbox *s, const char *name, const char *work, struct sbx_err *e)
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
	cJSON_AddNumberToObject(j, "memory_mib", qemu_json_num(bd, "memory_mib"));
	cJSON_AddNumberToObject(j, "cpus", qemu_json_num(bd, "cpus"));
	text = cJSON_Print(j);
	cJSON_Delete(j);
	return qemu_write_file(p, text, strlen(text), e);
}

/* After a seal, a new secret for s whether the snapshot worked or not (rc):
 * the agent was sealed either way and its memory may be half saved.  When the
 * VM does not take it, the old one goes back, so the sandbox stays reachable.
 * Returns rc, or -1 with e when the new secret was not taken. */
static int
snapshot_rekey(struct sandbox *s, const struct qdata *d, int64_t deadline, int rc,
    struct sbx_err *e)
{
	char *newsec = sandbox_new_secret(), *oldsec = steal_pointer(&s->agent_secret);
	struct sbx_err scratch;

	s->agent_secret = newsec;
	if (qemu_seed_write(d->dir, s, deadline, 0, &scratch) < 0 ||
	    reseed(s, now_ms() + 30000, NULL, &scratch) < 0) {
		s->agent_secret = oldsec;
		oldsec = newsec;
		(void)qemu_seed_write(d->dir, s, deadline, 0, &scratch);
		if (reseed(s, now_ms() + 10000, NULL, &scratch) < 0)
			log_warnx("sandbox %s did not take its secret back after the snapshot: %s",
			    s->id, scratch.msg);
		if (rc == 0) {
			sbx_error(e, SBX_EAGENT, NULL, "the sandbox did not take its new secret: %s",
			    scratch.msg);
			rc = -1;
		}
	}
	/* The one s does not hold. */
	if (oldsec != NULL)
		explicit_bzero(oldsec, strlen(oldsec));
	free(oldsec);
	return rc;
}

/* The snapshot: seal the agent (it forgets its secret, so the saved memory
 * lets nobody in), pause, save the memory, copy the disk while the VM is
 * still paused (so both are of one instant), run the VM again and give it a
 * new secret through its seed disk: whatever of the old one is left in guest
 * memory (freed pages, buffers) is in the snapshot, and no longer opens this
 * sandbox.  The new secret goes into s; the core records it. */
int
qemu_snapshot(struct sandbox *s, const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *work = NULL, *dest = NULL, *qmp = NULL;
	struct qdata d;
	struct sbx_err scratch;
	int rc = -1, sealed = 0, paused = 0;
	int64_t t0 = now_ms(), paused_ms = 0, deadline;
	const cJSON *v;

	if (name == NULL || !image_name_valid(name))
		return sbx_error(e, SBX_EINVAL, "snapshot names are 1 to 64 letters, digits, '.', '_' and '-'",
		    "invalid snapshot name '%s'", name ? name : "");
	if (qdata_get(s, &d, e) < 0)
		return -1;
	if (d.orphan || !qemu_alive(d.pid, d.starttime)) {
		sbx_error(e, SBX_ESTATE, "run `sbxtop status` to see why", "sandbox %s is not running", s->id);
		goto out;
	}
	qmp = qdata_qmp(&d);
	v = cJSON_GetObjectItemCaseSensitive(s->backend_data, "deadline_s");
	deadline = cJSON_IsNumber(v) ? jint_of(v, 0, INT64_MIN, INT64_MAX) :
	    s->max_duration_s > 0 ? s->max_duration_s : QEMU_DEFAULT_DEADLINE_S;
	if (snapshot_dirs(name, &dest, &work, e) < 0 || snapshot_machine(s, &d, work, e) < 0)
		goto out;
	if (agent_post(s, "/v1/seal", 10000, NULL, e) < 0) {
		if (e->reason == SBX_R_NO_SEED)
			snprintf(e->hint, sizeof e->hint, "rebuild the image (`sbxtop image build`) and "
			    "create a new sandbox: its agent predates snapshots");
		goto out;
	}
	sealed = 1;
	if (qemu_qmp(qmp, "stop", NULL, QMP_TIMEOUT_MS, NULL, e) < 0)
		goto out;
	paused = 1;
	paused_ms = now_ms();
	if (snapshot_save(&d, qmp, work, e) < 0 || snapshot_json(s, name, work, e) < 0)
		goto out;
	rc = 0;
out:
	if (paused) {
		if (qemu_qmp(qmp, "cont", NULL, QMP_TIMEOUT_MS, NULL, &scratch) < 0 && rc == 0) {
			*e = scratch;
			rc = -1;
		}
		paused_ms = now_ms() - paused_ms;
	}
	if (sealed)
		rc = snapshot_rekey(s, &d, deadline, rc, e);
	if (rc == 0 && rename(work, dest) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot put the snapshot at %s", dest);
		rc = -1;
	}
	if (rc < 0 && work != NULL)
		(void)qemu_rmtree(work, &scratch);
	if (rc == 0)
		log_info("snapshot %s of %s: %.1f s, the VM paused %.1f s", name, s->id,
		    (double)(now_ms() - t0) / 1000, (double)paused_ms / 1000);
	free(d.dir);
	return rc;
}

/* Snapshots a killed `sbxtop snapshot` left half made (.tmp-NAME-PID, whose
 * process is gone). */
int
qemu_snapshot_gc_temps(void)
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

/* --- restoring ---------------------------------------------------------------------- */

cJSON *
qemu_restore_open(const char *snapdir, const struct qemu_accel *accel, struct sbx_err *e)
{
	_cleanup_free_ char *p = xasprintf("%s/snapshot.json", snapdir);
	_cleanup_free_ char *text = read_file(p, 1 << 20, NULL);
	const cJSON *acc;
	cJSON *snap;

	if (text == NULL || (snap = cJSON_Parse(text)) == NULL) {
		sbx_error(e, SBX_EINVAL, "remove it (`sbxtop snapshot rm`) and take it again",
		    "the snapshot's %s is unreadable", p);
		return NULL;
	}
	acc = cJSON_GetObjectItemCaseSensitive(snap, "accel");
	if (!cJSON_IsString(acc) || strcmp(acc->valuestring, accel->kvm ? "kvm" : "tcg") != 0) {
		sbx_error(e, SBX_EUNSUPPORTED, "restore it on a host with the same accelerator, "
		    "or take a new snapshot here", "the snapshot was taken under %s, this host runs "
		    "guests under %s", cJSON_IsString(acc) ? acc->valuestring : "?",
		    accel->kvm ? "KVM" : "TCG");
		cJSON_Delete(snap);
		return NULL;
	}
	return snap;
}

char *
qemu_restore_machine(struct sandbox *s, const cJSON *snap, int64_t *mem_mib, int *cpus)
{
	int64_t m = (int64_t)qemu_json_num(snap, "memory_mib");
	int c = (int)qemu_json_num(snap, "cpus");
	const cJSON *img = cJSON_GetObjectItemCaseSensitive(snap, "image");
	char *note = NULL;

	if ((s->limits.memory_mib > 0 && s->limits.memory_mib != m) ||
	    (s->limits.cpus > 0 && *cpus != c))
		note = xasprintf("memory %lld MiB and %d vCPU%s: the snapshot's "
		    "(a restored VM keeps its machine)", (long long)m, c, c == 1 ? "" : "s");
	*mem_mib = m;
	*cpus = c;
	s->limits.memory_mib = m;
	s->limits.cpus = c;
	if (cJSON_IsString(img)) {
		free(s->image);
		s->image = xstrdup(img->valuestring);
	}
	return note;
}

char *
qemu_restore_incoming(const char *snapdir)
{
	_cleanup_free_ char *mem = xasprintf("%s/memory", snapdir);
	_cleanup_free_ char *q = sh_quote(mem);

	return xasprintf("exec:cat %s", q);
}

/* The memory comes in; the VM then waits paused.  A new seed (this sandbox's
 * secret, deadline and name, and the time) goes on the seed disk before the VM
 * runs again; the restored agent, sealed when the snapshot was taken, answers
 * nothing but /health until it has read it. */
int
qemu_restore_resume(struct sandbox *s, const struct qdata *d, const struct qemu_accel *accel,
    int64_t deadline, int64_t t0, int64_t end, struct sbx_err *e)
{
	_cleanup_free_ char *qmp = qdata_qmp(d), *ret = NULL;
	cJSON *rs = NULL;

	for (;;) {
		struct sbx_err qe;
		free(ret);
		ret = NULL;
		if (!qemu_alive(d->pid, d->starttime)) {
			char tail[300];
			_cleanup_free_ char *errf = xasprintf("%s/qemu.err", d->dir);
			qemu_file_tail(errf, tail, sizeof tail);
			return sbx_error(e, SBX_EBACKEND, "the snapshot may be broken: take it again",
			    "QEMU could not load the snapshot: %s", tail[0] ? tail : "(no message)");
		}
		if (qemu_qmp(qmp, "query-status", NULL, QMP_TIMEOUT_MS, &ret, &qe) == 0 &&
		    strstr(ret, "\"inmigrate\"") == NULL)
			break;
		if (now_ms() >= end)
			return sbx_error(e, SBX_ETIMEOUT, NULL, "the snapshot did not load within %d s",
			    qemu_boot_timeout_s(accel));
		poll(NULL, 0, 20);
	}
	log_debug("%s: the snapshot's memory loaded after %lld ms", s->id, (long long)(now_ms() - t0));
	if (qemu_seed_write(d->dir, s, deadline - (wall_ms() - s->created_at) / 1000, wall_ms(), e) < 0 ||
	    qemu_qmp(qmp, "cont", NULL, QMP_TIMEOUT_MS, NULL, e) < 0)
		return -1;
	if (reseed(s, end, &rs, e) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		return sbx_error(e, SBX_EAGENT, "the snapshot may be broken: take it again",
		    "the restored agent did not take its new secret: %s", msg);
	}
	log_debug("%s: reseeded after %lld ms", s->id, (long long)(now_ms() - t0));
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rs, "restored"))) {
		cJSON_Delete(rs);
		return sbx_error(e, SBX_EAGENT, NULL, "the restored agent did not take the restore's settings");
	}
	cJSON_Delete(rs);
	return 0;
}

/* --- a warm pool's claim ------------------------------------------------------- */

static void
bd_set(cJSON *bd, const char *k, double v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(bd, k);
	cJSON_AddNumberToObject(bd, k, v);
}

/* A VM a warm pool kept (booted with a day's deadline and no idle policy)
 * takes the create's deadline (from now) and idle policy.  On the connection
 * the pool kept warm (qemu-keep.c), its agent takes them as an ns member's
 * does (POST /v1/claim, with the secret): no read of the seed disk in the
 * guest, which is most of a reseed's 5-25 ms under TCG.  Without one, the seed
 * is read again, marked as a restore so the agent applies it.  The seed is
 * written either way, so it holds what the VM runs with.  Then its watchdog
 * takes the new deadline (a new watchdog in place of the old when that one
 * cannot be told). */
int
qemu_claim(struct sandbox *s, struct sbx_err *e)
{
	struct qdata d;
	pid_t wd = 0;
	unsigned long long wd_start = 0;
	cJSON *rs = NULL, *body;
	int rc = -1, took, kept;
	int64_t t0, t1, t2;
	_cleanup_free_ char *wdf = NULL;

	if (qdata_get(s, &d, e) < 0)
		return -1;
	if (d.orphan || !qemu_alive(d.pid, d.starttime)) {
		sbx_error(e, SBX_ESTATE, NULL, "sandbox %s is not running", s->id);
		goto out;
	}
	t0 = now_ms();
	if (qemu_seed_write(d.dir, s, s->max_duration_s, wall_ms(), e) < 0)
		goto out;
	t1 = now_ms();
	body = cJSON_CreateObject();
	cJSON_AddNumberToObject(body, "deadline_s", (double)s->max_duration_s);
	cJSON_AddNumberToObject(body, "idle_s", (double)s->idle_s);
	kept = qemu_keep_post(s, "/v1/claim", body, 5000, &rs, e);
	cJSON_Delete(body);
	if (kept < 0)
		goto out;
	if (kept == 0) {
		took = qemu_json_num(rs, "deadline_s") == (double)s->max_duration_s;
	} else {
		if (reseed(s, now_ms() + 10000, &rs, e) < 0)
			goto out;
		took = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rs, "restored"));
	}
	t2 = now_ms();
	cJSON_Delete(rs);
	if (!took) {
		sbx_error(e, SBX_EAGENT, NULL, "the agent of %s did not take the claim's deadline",
		    s->id);
		goto out;
	}
	wdf = xasprintf("%s/deadline", d.dir);
	if (qemu_watchdog_move(d.wd_pid, d.wd_starttime, wdf, wall_ms() + s->max_duration_s * 1000,
	    e) < 0) {
		if (qemu_watchdog_start(d.pid, d.starttime, wall_ms() + s->max_duration_s * 1000, wdf,
		    &wd, &wd_start, e) < 0)
			goto out;
		qemu_kill_verified(d.wd_pid, d.wd_starttime, SIGKILL);
		bd_set(s->backend_data, "watchdog_pid", wd);
		bd_set(s->backend_data, "watchdog_starttime", (double)wd_start);
	}
	bd_set(s->backend_data, "deadline_s", (double)s->max_duration_s);
	log_debug("qemu claim %s (ms): seed %lld, agent %lld (%s), watchdog %lld", s->id,
	    (long long)(t1 - t0), (long long)(t2 - t1),
	    kept ? "a reseed on a new connection" : "claim on the kept connection",
	    (long long)(now_ms() - t2));
	rc = 0;
out:
	free(d.dir);
	return rc;
}
