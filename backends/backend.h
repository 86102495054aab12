/* The backend interface: one table of function pointers per backend, filled by
 * backends/<name>/backend-<name>.c (tmux's window modes, OpenSSH's sandbox-*.c). Front ends
 * never call a backend directly: they call core/ (core.h), which calls these. */
#ifndef SBX_BACKEND_H
#define SBX_BACKEND_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cjson/cJSON.h>
#include <sys/types.h>

#include "core/config.h"
#include "lib/err.h"
#include "core/sandbox.h"

/* What a doctor check reports. */
enum check_level { CHECK_OK, CHECK_WARN, CHECK_FAIL };
struct registry;

/* What a sandbox uses now, as its backend sees it; -1 where it cannot tell.
 * Counters (cpu_ns, net bytes, oom_kills) only grow while the sandbox lives. */
struct sbx_usage {
	int64_t	cpu_ns;		/* CPU time of all its processes */
	int64_t	mem_bytes;	/* memory charged to it */
	int64_t	pids;		/* tasks */
	int64_t	disk_bytes;	/* what is in its layers' upper directories: -1, and
				 * the core walks them (see layers), unless the
				 * backend can tell at once (ns: its own filesystem) */
	int64_t	net_rx, net_tx;	/* bytes through its network interfaces (not lo) */
	int64_t	oom_kills;	/* processes the OOM killer ended in it */
};

/* One writable layer of a sandbox's filesystem, for `sbxtop diff`: mount is
 * where it shows in the sandbox ("/", "/usr", "/workspace"), upper the host
 * directory its changes are in (overlay upper layer: whiteouts are removals),
 * lower the host directory below it (NULL: none, everything in upper is new). */
struct backend_layer {
	char	*mount;
	char	*upper;
	char	*lower;
};
/* The n layers at v, as the layers hook gave them, and v. */
static inline void
backend_layers_free(struct backend_layer *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].mount);
		free(v[i].upper);
		free(v[i].lower);
	}
	free(v);
}
/* How a backend's sandboxes see the files of the image store's layers
 * (core/image/): unpacked once per mapping, named by key. */
struct backend_image_ids {
	char		 key[64];	/* names the mapping: a directory of the store */
	uint32_t	 count;		/* ids mapped from 0 (1: the caller's alone) */
	int		 strip_setid;	/* setuid and setgid bits must go */
	uid_t		 owner;		/* the sandboxes' root on the host, which owns */
	gid_t		 group;		/* the key's directory */
};
typedef void (*check_fn)(void *arg, enum check_level level, const char *what,
    const char *detail, const char *fix);

/* What gc works from (struct backend's gc). */
struct backend_gc {
	char *const	*known;		/* the ids the registry holds as live */
	size_t		 nknown;
	int		 dry_run;	/* find and report; remove nothing */
	int		 quick;		/* only what costs no scan of the host's
					 * processes and mounts (a listing's count) */
	int		 caches;	/* also what sandboxes share and none uses
					 * now (ns: set-aside images, disk templates) */
	/* One thing found: its kind ("agent", "cgroup", "mount", "loop",
	 * "directory", "vm"), the sandbox id it carries, what it is; live when
	 * it runs or holds a kernel object (not only files). */
	void		(*found)(void *arg, const char *kind, const char *id,
			    const char *what, int live);
	/* 1 when the registry holds id as live now, read again: a create may
	 * have recorded it since known was read.  Asked before removing what
	 * runs. */
	int		(*recorded)(void *arg, const char *id);
	void		*arg;
};
typedef int64_t (*tree_walk_fn)(const char *path, long max_entries, int *cut);

/* The backends' own verbs, behind `sbxtop image`, `snapshot`, `host` and
 * `setup`: the entries of a backend's verbs table (struct backend's verbs),
 * NULL where it has none.  Each takes args, an object as given here, puts its
 * answer in *out (caller frees; may stay NULL), progress lines on progress
 * (NULL: none); r is the registry, read for the call. */
enum backend_verb {
	BACKEND_IMAGE_BUILD,	/* {name?, kernel?, from?, debootstrap?, packages?,
				 * size_mib?} -> image.json of the new image */
	BACKEND_IMAGE_LIST,	/* -> [image.json...] */
	BACKEND_IMAGE_RM,	/* {name} */
	BACKEND_SNAPSHOT_LIST,	/* -> [snapshot.json...] */
	BACKEND_SNAPSHOT_RM,	/* {name} */
	BACKEND_HOST_ADD,	/* {name, url, identity?, max_sandboxes?, accept_new?}
				 * -> {name} */
	BACKEND_HOST_LIST,	/* {probe?} -> [{name, user, addr, port, reachable,
				 * sandboxes, ...}] */
	BACKEND_HOST_CHECK,	/* {name} -> [{level, what, detail?, fix?}] */
	BACKEND_HOST_RM,	/* {name} */
	BACKEND_SETUP,		/* {name, arch, bundle_dir, out_dir, region?, ...}:
				 * the cloud account made ready (lambda) */
	BACKEND_VERBS
};
typedef int backend_verb_fn(const cJSON *args, const struct registry *r, FILE *progress,
    cJSON **out, struct sbx_err *e);

struct backend {
	const char	*name;
	const char	*description;

	/* Bring up the sandbox described by s (id, name, image, limits, network,
	 * max_duration_s, idle_s, env, agent_secret filled by the core); on success
	 * fill agent_endpoint, backend_data, limits_note, state RUNNING, and return 0.
	 * On failure remove everything made and return -1. */
	int	(*create)(struct sandbox *s, struct sbx_err *e);
	int	(*suspend)(struct sandbox *s, struct sbx_err *e);
	int	(*resume)(struct sandbox *s, struct sbx_err *e);
	/* Stop every process and remove every directory the sandbox had.  Destroying
	 * a sandbox that is already gone succeeds. */
	int	(*destroy)(struct sandbox *s, struct sbx_err *e);
	/* Refresh s->state (and state_reason) from what is really there: a sandbox
	 * whose init died becomes TERMINATED with the reason. */
	int	(*status)(struct sandbox *s, struct sbx_err *e);
	/* Path of a log on the host ("console" or "agent"), caller frees; NULL with
	 * e when the backend keeps no such log.  A backend whose logs are elsewhere
	 * (ssh) keeps a local copy and brings it up to date on each call, so
	 * readers that follow a log call this again as they poll. */
	char	*(*log_path)(const struct sandbox *s, const char *which, struct sbx_err *e);
	/* Check what this backend needs on this host; call report once per check. */
	void	(*doctor)(check_fn report, void *arg);
	/* Find what sandboxes the registry does not hold as live left on the
	 * host, from what runs as well as what is written (processes, cgroups,
	 * mounts, directories), report each through g->found, and unless
	 * g->dry_run remove it.  Returns how many sandboxes' leftovers were
	 * removed. */
	int	(*gc)(const struct backend_gc *g, struct sbx_err *e);

	/* Optional (NULL where not needed). */
	/* The core has recorded s, or destroyed it after failing to: what the
	 * backend held since create so that gc takes s for a create still
	 * running (ns: the lock on its directory) may go. */
	void	(*settled)(const struct sandbox *s);
	/* Hand the backend the configuration (flags, environment, file) once, when a
	 * core is made; cfg outlives every other call. */
	void	(*configure)(const struct config *cfg);
	/* Make s's agent_endpoint and agent_headers usable now (a remote endpoint's
	 * token re-minted when it is about to expire or is refused).  1 when s
	 * changed and should be stored, 0 when not, -1 with e. */
	int	(*agent_endpoint)(struct sandbox *s, struct sbx_err *e);
	/* Save the running sandbox s as snapshot name: its memory and disk at one
	 * instant.  s may change (the backend may give it a new secret); the core
	 * stores it afterwards. */
	int	(*snapshot)(struct sandbox *s, const char *name, struct sbx_err *e);
	/* As create, but resume snapshot name instead of booting. */
	int	(*restore)(struct sandbox *s, const char *snapshot, struct sbx_err *e);
	/* Remove snapshot name (warm pools remove the ones they made). */
	int	(*snapshot_rm)(const char *name, struct sbx_err *e);
	/* As create, but s starts with the files of the sandbox src (running or
	 * suspended), which is held still while they are copied and left as it
	 * was.  A backend without it forks through snapshot and restore. */
	int	(*fork)(const struct sandbox *src, struct sandbox *s, struct sbx_err *e);
	/* Wait for what of s has ended and is a child of this process (an ns init
	 * past its deadline stays a zombie until its parent reaps it).  A process
	 * that outlives the sandboxes it created (the core server) calls it now
	 * and then, through core_reap. */
	void	(*reap)(const struct sandbox *s);
	/* The same process (the core server, with on 1): the backend may keep
	 * something ready for its next create, made in a thread of its own
	 * (ns: the disk limit's filesystem); on 0 stops that and frees it. */
	void	(*keep_ready)(int on);
	/* The backend that runs sandboxes on other hosts: check the host a new
	 * sandbox asks for, or choose one for "auto", and set s->host.  r is the
	 * registry, locked, so that two creates cannot both take a host's last
	 * place. */
	int	(*place)(struct sandbox *s, const char *host, const struct registry *r,
	    struct sbx_err *e);
	/* With place: the backend it runs there ("ns"). */
	const char *hosts_run;
	/* Its sandboxes run on this machine and end with it: after a crash none
	 * runs, so a registry holding only such records is written without an
	 * fsync (core/registry.c). */
	int	 host_bound;
	/* Its create takes milliseconds: the core writes the record once, when
	 * the sandbox is up, rather than reserving it first (core_create). */
	int	 record_once;
	/* Warm pools keep its sandboxes ready (core/core-pool.c).  A claim gives
	 * one the create's deadline (max_duration_s, from now) and idle policy:
	 * through claim when it has one (s may change: the core stores it), else
	 * its agent is the sandbox's init and takes POST /v1/claim. */
	int	 warm_pool;
	int	(*claim)(struct sandbox *s, struct sbx_err *e);
	/* Optional, after a claim: give the claimed s what of its create lives
	 * inside (ns: the hostname its name makes).  Best effort. */
	int	(*claimed)(const struct sandbox *s, struct sbx_err *e);
	/* Its own verbs: BACKEND_VERBS entries, by enum backend_verb, or NULL:
	 * none. */
	backend_verb_fn *const *verbs;
	/* Open the agent's PTY (GET /v1/pty?query) for a backend whose endpoint the
	 * core cannot speak to itself (HTTPS behind a proxy): an fd that carries the
	 * agent's PTY frames in the clear after its 101, or -1 with e. */
	int	(*pty_open)(struct sandbox *s, const char *query, const char *origin,
	    struct sbx_err *e);
	/* For the network proxy (core/net/proxy.c): a socket listening where s's
	 * connections to net_proxy_addr:port arrive, held by the caller outside s
	 * (ns: a TCP socket on 127.0.0.1:port inside its network namespace; qemu:
	 * a unix socket in the VM's directory, over which each guest connection's
	 * descriptor is handed); *init gets the pid whose end is the sandbox's end. */
	int	(*net_listen)(const struct sandbox *s, int port, int *fd, pid_t *init,
	    struct sbx_err *e);
	/* The address the sandbox reaches its proxy at (NULL: 127.0.0.1). */
	const char *net_proxy_addr;
	/* Live use of the running sandbox s into u (every field set, -1 where
	 * unknown). */
	int	(*usage)(const struct sandbox *s, struct sbx_usage *u, struct sbx_err *e);
	/* The writable layers of s, *n of them in *out (free each field and the
	 * array).  The directories are the sandbox's to change: read them with
	 * no-follow opens only. */
	int	(*layers)(const struct sandbox *s, struct backend_layer **out, size_t *n,
	    struct sbx_err *e);
	/* Optional: the bytes in s's layers, each upper directory walked by walk
	 * (the core's, at most max entries each, *cut when stopped there) from
	 * where every file in them can be read (ns with a subordinate range: a
	 * child in the sandbox's user namespace, for the files of its users that
	 * the caller may not enter); -1 when it cannot tell.  NULL: the core walks
	 * them as itself. */
	int64_t	(*layers_bytes)(const struct sandbox *s, tree_walk_fn walk, long max, int *cut);
	/* Optional: a descriptor (the caller closes it) of the user namespace
	 * that a forked, single-threaded child joins (setns) to read every file
	 * in s's layers, or -1 when the caller reads them as itself. */
	int	(*layers_userns)(const struct sandbox *s);
	/* Optional: sandboxes from OCI images, whose layers (s->image_spec) the
	 * core unpacks for this backend.  image_ids says how it maps ids;
	 * image_run runs fn(arg, report) in a child, as root of a user namespace
	 * mapped that way (report, rlen bytes, comes back whether fn succeeded
	 * or not): 0 when fn returned 0, -1 with e otherwise; pre (may be NULL)
	 * runs before fn in the same child, still with the caller's uid and
	 * every capability in the namespace (a mount namespace made there, paths
	 * the sandboxes' root may not search opened); image_rmtree removes a
	 * tree of such files. */
	int	(*image_ids)(struct backend_image_ids *out, struct sbx_err *e);
	int	(*image_run)(int (*pre)(void *arg, void *report), int (*fn)(void *arg,
	    void *report), void *arg, void *report, size_t rlen, struct sbx_err *e);
	int	(*image_rmtree)(const char *path, struct sbx_err *e);
	/* Optional: the backend boots an OCI image's root as a disk the core
	 * makes (an ext4 of the image's layers, the ids as the image has them):
	 * image_inject makes *dir (caller removes it), what goes on top of the
	 * image's root for it (its agent, its init, the image's Env, User and
	 * WorkingDir as the agent's arguments); s->image_spec's "disk" is then
	 * the disk at create. */
	int	(*image_inject)(const cJSON *spec, char **dir, struct sbx_err *e);
};

extern const struct backend backend_ns;
extern const struct backend backend_qemu;
extern const struct backend backend_lambda;
extern const struct backend backend_ssh;

/* The backend called name, or NULL. */
const struct backend *backend_find(const char *name);
/* The verb's name as messages give it ("image.build"). */
const char *backend_verb_name(enum backend_verb v);
/* args' "name" for verb v, or NULL with e saying v needs what ("a name"). */
const char *backend_arg_name(const cJSON *args, enum backend_verb v, const char *what,
    struct sbx_err *e);
/* Every compiled-in backend, NULL-terminated. */
extern const struct backend *const backends[];

#endif
