/* What the parts of the qemu backend share about a sandbox's VM: its record
 * (qemu-record.c), launching it (qemu-launch.c: QEMU's command line, the
 * deadline watchdog, the seed disk, the process checks), and taking and
 * restoring snapshots (qemu-snapshot.c).  Only backends/qemu/ includes this. */
#ifndef SBX_QEMU_VM_H
#define SBX_QEMU_VM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "backends/qemu/qemu.h"
#include "lib/err.h"

#define QEMU_BIN		"qemu-system-x86_64"
#define QEMU_DEFAULT_DEADLINE_S	(4 * 3600)
#define QEMU_GONE_TIMEOUT_MS	5000
#define QMP_TIMEOUT_MS		3000
/* Under network rules, the guest's one way out: its proxy (core/net/proxy.c),
 * through a guestfwd of QEMU's restricted user network. */
#define QEMU_PROXY_ADDR		"10.0.2.100"

/* A sandbox's VM as its backend_data records it. */
struct qdata {
	char			*dir;
	pid_t			 pid;
	unsigned long long	 starttime;
	pid_t			 wd_pid;
	unsigned long long	 wd_starttime;
	int			 orphan;	/* found by find_orphan */
};

/* --- qemu-record.c ------------------------------------------------------------ */

/* s's VM record (d->dir is the caller's to free); 0 or -1 with e. */
int qdata_get(const struct sandbox *s, struct qdata *d, struct sbx_err *e);
/* The VM's QMP socket (caller frees). */
char *qdata_qmp(const struct qdata *d);
/* The number o has under k, 0 when there is none. */
double qemu_json_num(const cJSON *o, const char *k);

/* --- qemu-launch.c ------------------------------------------------------------ */

/* pid runs and is the process that started at starttime (so not a reused pid). */
int qemu_alive(pid_t pid, unsigned long long starttime);
/* Send sig to pid if it is still the process that started at starttime; 0 when
 * it was sent. */
int qemu_kill_verified(pid_t pid, unsigned long long starttime, int sig);
/* Wait for pid to be gone; 0, or -1 after timeout_ms. */
int qemu_wait_gone(pid_t pid, unsigned long long starttime, int timeout_ms);
/* Start the watchdog that SIGKILLs QEMU (qpid, qstart) at deadline_ms (wall
 * clock); its pid and start time go in *wd, *wd_start.  file (may be NULL) is
 * where qemu_watchdog_move puts a new deadline.  0 or -1 with e. */
int qemu_watchdog_start(pid_t qpid, unsigned long long qstart, int64_t deadline_ms,
    const char *file, pid_t *wd, unsigned long long *wd_start, struct sbx_err *e);
/* Give the running watchdog (wd, wd_start) deadline_ms instead, through file
 * and a SIGUSR1.  0, or -1 with e when it is gone. */
int qemu_watchdog_move(pid_t wd, unsigned long long wd_start, const char *file, int64_t deadline_ms,
    struct sbx_err *e);
/* A free 127.0.0.1 port, or -1 with e. */
int qemu_pick_port(struct sbx_err *e);
/* The guest's agent answers GET /health with 200 through the forward on port. */
int qemu_health_ok(int port);
/* How long a boot may take under a: $SBXTOP_QEMU_BOOT_TIMEOUT, or the default. */
int qemu_boot_timeout_s(const struct qemu_accel *a);

/* The machine to start: a sandbox's directory holds its kernel, initrd, disk
 * and seed. */
struct qemu_launch {
	const char	*dir;
	const char	*imgdir;
	const struct qemu_accel *accel;
	int64_t		 mem_mib;
	int		 cpus;
	int		 restrict_net;
	const char	*guestfwd;	/* NULL, or the command QEMU runs per proxy connection */
	int		 port;
	const char	*incoming;	/* NULL: boot; a migration URI to resume from */
};

/* Start QEMU daemonized; 0 with *pid once it runs, -1 with e (qemu.err's last
 * line) when it refused.  *port_busy says the forward's port was taken. */
int qemu_start(const struct qemu_launch *L, pid_t *pid, int *port_busy, struct sbx_err *e);
/* Write the seed disk of the VM in dir: s's secret and settings, with deadline
 * (seconds) and restored_ms (> 0: the VM was just restored, at that wall clock
 * time).  0 or -1 with e. */
int qemu_seed_write(const char *dir, const struct sandbox *s, int64_t deadline, int64_t restored_ms,
    struct sbx_err *e);

/* --- qemu-keep.c -------------------------------------------------------------- */

/* A warm pool member s: open its agent connection if there is none (or it
 * broke) and send GET /health on it, so that a claim finds it open and warm. */
void qemu_keep_warm(const struct sandbox *s);
/* POST json to path with s's secret on s's kept connection, which is then
 * closed: 0 with *out (may be NULL), 1 when there is none to use (ask another
 * way), -1 with e when the agent did not answer 200. */
int qemu_keep_post(const struct sandbox *s, const char *path, const cJSON *json,
    int64_t timeout_ms, cJSON **out, struct sbx_err *e);
/* Close id's kept connection, if any. */
void qemu_keep_drop(const char *id);

/* --- qemu-snapshot.c ---------------------------------------------------------- */

/* The backend's snapshot op: save s's VM as snapshot name (s gets a new secret). */
int qemu_snapshot(struct sandbox *s, const char *name, struct sbx_err *e);
/* struct backend's claim: a warm pool's VM takes s's deadline and idle policy
 * (a new seed and reseed, a new watchdog); s's backend_data changes. */
int qemu_claim(struct sandbox *s, struct sbx_err *e);
/* Remove the snapshots a killed `sbxtop snapshot` left half made; how many. */
int qemu_snapshot_gc_temps(void);
/* The snapshot.json of the snapshot in snapdir, once it is known to run under
 * accel (caller deletes); NULL with e. */
cJSON *qemu_restore_open(const char *snapdir, const struct qemu_accel *accel, struct sbx_err *e);
/* Take the snapshot's machine: *mem_mib, *cpus, s's limits and image become the
 * snapshot's.  A note saying so (caller frees) when s asked for others, else NULL. */
char *qemu_restore_machine(struct sandbox *s, const cJSON *snap, int64_t *mem_mib, int *cpus);
/* The -incoming URI that reads the snapshot's memory (caller frees). */
char *qemu_restore_incoming(const char *snapdir);
/* Bring the VM d, started with -incoming, to life as s: wait until its memory
 * is in (until end, monotonic ms), give it a new seed, run it, and have its
 * agent take the seed.  t0 is when the launch began (for the log).  0 or -1 with e. */
int qemu_restore_resume(struct sandbox *s, const struct qdata *d, const struct qemu_accel *accel,
    int64_t deadline, int64_t t0, int64_t end, struct sbx_err *e);

/* `sbxtop image` and `sbxtop snapshot` (qemu-admin.c): struct backend's verbs. */
extern backend_verb_fn *const qemu_verbs[BACKEND_VERBS];

#endif
