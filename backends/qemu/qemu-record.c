/* A qemu sandbox's VM as its record keeps it (backend_data: its directory,
 * QEMU's and the watchdog's pids and start times), found again from QEMU's pid
 * file when a create died before recording it: what the backend's verbs and
 * parts all read first. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/qemu/qemu-vm.h"
#include "core/paths.h"
#include "lib/proc.h"
#include "lib/util.h"

double
qemu_json_num(const cJSON *o, const char *k)
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
	d->starttime = proc_running_since(d->pid);
	d->orphan = d->starttime != 0;
}

int
qdata_get(const struct sandbox *s, struct qdata *d, struct sbx_err *e)
{
	const cJSON *bd = s->backend_data, *v;

	memset(d, 0, sizeof *d);
	if ((v = cJSON_GetObjectItemCaseSensitive(bd, "dir")) != NULL && cJSON_IsString(v)) {
		d->dir = xstrdup(v->valuestring);
	} else {
		if (!sandbox_id_valid(s->id))
			return sbx_error(e, SBX_EINVAL, NULL, "invalid sandbox id '%s'", s->id);
		if ((d->dir = paths_sandbox_dir(s->id, e)) == NULL)
			return -1;
	}
	d->pid = (pid_t)qemu_json_num(bd, "pid");
	d->starttime = (unsigned long long)qemu_json_num(bd, "starttime");
	d->wd_pid = (pid_t)qemu_json_num(bd, "watchdog_pid");
	d->wd_starttime = (unsigned long long)qemu_json_num(bd, "watchdog_starttime");
	if (d->pid <= 0)
		find_orphan(d);
	return 0;
}

char *
qdata_qmp(const struct qdata *d)
{
	return xasprintf("%s/qmp.sock", d->dir);
}
