/* The core: what every front end calls (the CLI now; the MCP server and the
 * console call the same functions).  It owns the configuration and the event
 * ring, picks backends, keeps the registry, and talks to the agents.  Front ends
 * never call a backend or the agent client directly. */
#ifndef SBX_CORE_H
#define SBX_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "core/config.h"
#include "lib/err.h"
#include "core/sandbox.h"

struct core;

/* A core over configuration cfg (taken). */
struct core *core_new(struct config *cfg);
void core_free(struct core *c);
const struct config *core_config(const struct core *c);

/* --- sandboxes ---------------------------------------------------------- */

struct core_create_opts {
	const char	*name;		/* NULL: none */
	const char	*name_prefix;	/* NULL; or the name is this, '-' and the id's
					 * suffix, whatever id it gets (fork:
					 * "web-7f3a9c" for sbx-7f3a9c) */
	const char	*backend;	/* NULL: config "backend" */
	const char	*image;		/* NULL: config "image" ("" the backend's default) */
	const char	*image_id;	/* NULL; an OCI image's id in the store, which
					 * image names (a fork: its source's, exactly) */
	int64_t		 memory_mib;	/* -1: config; 0: none */
	double		 cpus;		/* -1: config */
	int64_t		 pids;		/* -1: config */
	int64_t		 disk_mib;	/* -1: config; 0: none */
	int64_t		 max_duration_s; /* -1: config */
	int64_t		 idle_s;	/* -1: config */
	const char	*network;	/* NULL: config */
	const cJSON	*net;		/* {allow, deny: arrays of entries, ask: bool}
					 * for network rules (core/net.h), or NULL */
	const cJSON	*env;		/* object of strings, or NULL */
	const char	*owner;		/* "cli", an MCP client's name */
	int		 agent;		/* 1 an agent (net_limit bounds it), -1 the
					 * operator, 0 by owner (any but cli, console) */
	const char	*from_snapshot;	/* NULL: boot; a snapshot name (qemu) */
	const char	*host;		/* NULL: here; a host's name, or "auto" (the
					 * one with most headroom): the ssh backend */
	const struct sandbox *fork_of;	/* NULL; a sandbox whose files the new one
					 * starts with (struct backend's fork) */
	int64_t		 idle_suspend_s; /* -1: config; 0: never */
	const char	*pool;		/* NULL; a warm pool's profile: the sandbox is
					 * made as its member (core-pool.c) */
};
/* The compiled-in backends' names (the --backend values), NULL-terminated. */
const char *const *core_backend_names(void);
/* Every value at "take it from the configuration". */
void core_create_opts_init(struct core_create_opts *o);
/* Validate o (ranges in the message), make the id and secret, have the backend
 * bring the sandbox up, and record it.  A failure half-way leaves nothing
 * behind.  *out is the new record (caller frees). */
int core_create(struct core *c, const struct core_create_opts *o, struct sandbox **out,
    struct sbx_err *e);

/* Warm pools (core-pool.c): start keeping the sandboxes the `pool` option asks
 * for, refilled by a thread of this core after each create that takes one;
 * stop destroys them.  For the core server: one process keeps pools. */
int core_pool_start(struct core *c, struct sbx_err *e);
void core_pool_stop(struct core *c);

/* Every known sandbox, each reconciled with its backend: one found dead is marked
 * terminated with the reason, reported (warning and event) once.  *out is an
 * array of *n records; free with core_list_free. */
int core_list(struct core *c, struct sandbox ***out, size_t *n, struct sbx_err *e);
void core_list_free(struct sandbox **v, size_t n);

/* The sandbox with id key, the only one whose id starts with key, or the only one
 * named key (caller frees); SBX_ENOTFOUND "unknown sandbox 'x'" otherwise. */
struct sandbox *core_get(struct core *c, const char *key, struct sbx_err *e);

/* Who the calls of this thread act for: an API key of the HTTP listener (its
 * id, core/keys/), from here until core_act_for(NULL, 1).  The sandboxes its
 * calls make record the key (struct sandbox's api_key) and, unless all (the
 * admin scope), its calls see only those: core_get, core_list and every
 * lookup by id, prefix or name pass over the others as if they did not
 * exist.  Not set (the operator, agents of the socket, the listener's token):
 * everything.  Set by the thread that runs a call, before it calls the core. */
void core_act_for(const char *key_id, int all);
/* The key this thread's calls act for, or NULL. */
const char *core_acting_key(void);
/* 1 when this thread's calls may see s; core_sees_key for a sandbox made
 * with API key api_key (NULL or "": none). */
int core_sees(const struct sandbox *s);
int core_sees_key(const char *api_key);

/* Reconciled record plus, when the agent answers, its /health in *health (may be
 * NULL; caller frees both). */
int core_status(struct core *c, const char *key, struct sandbox **out, cJSON **health,
    struct sbx_err *e);

int core_suspend(struct core *c, const char *key, struct sbx_err *e);
int core_resume(struct core *c, const char *key, struct sbx_err *e);
/* Save sandbox key as snapshot name (the qemu backend: memory and disk, see
 * backends/qemu/qemu-snapshot.h); `create` with from_snapshot starts new sandboxes from it. */
int core_snapshot(struct core *c, const char *key, const char *name, struct sbx_err *e);
/* Make n (1..CORE_FORK_MAX) new sandboxes that start as copies of sandbox key
 * (running or suspended, and left so): ns copies its files, a backend with
 * snapshots its memory and disk through a snapshot and n restores.  Each is a
 * sandbox of its own (new id, name, secret and deadline; the limits, image,
 * network and environment of key).  *out gets the records made (caller frees
 * with core_list_free), *nout how many; on a failure part-way those made are
 * kept and returned with the error in e (core-fork.c).  by names who forks:
 * NULL the operator (each copy keeps key's owner); else the copies are by's
 * (its owner, and its agent as in struct core_create_opts, so an agent's copy
 * is bounded by net_limit and images_allowed as its create would be). */
#define CORE_FORK_MAX 64
struct core_fork_by {
	const char	*owner;
	int		 agent;
};
int core_fork(struct core *c, const char *key, int n, const struct core_fork_by *by,
    struct sandbox ***out, size_t *nout, struct sbx_err *e);
/* Backend destroy, then the record is dropped.  *id_out (may be NULL) gets the id. */
int core_destroy(struct core *c, const char *key, char id_out[32], struct sbx_err *e);

/* --- commands ----------------------------------------------------------- */

struct core_exec_opts {
	const char	*command;	/* run with bash -c (or sh -c) in the sandbox */
	const char	*cwd;		/* NULL: /workspace */
	const cJSON	*env;		/* object of strings, or NULL */
	const char	*stdin_data;	/* NULL: none; must be UTF-8 text */
	size_t		 stdin_len;
	int64_t		 timeout_s;	/* 0: the agent's default */
	int		 as_root;
	int		 background;
	const char	*origin;	/* who runs it ("cli", "mcp", "console") */
	/* NULL, or asked with the output callback's arg about once a second (and
	 * with each output): non-zero stops the exec, which the agent then kills. */
	int		(*cancelled)(void *arg);
};

struct core_exec_result {
	int	 exit_code;	/* -1 when killed by a signal */
	int	 signo;		/* 0 when it exited */
	int	 timed_out;
	int	 truncated;
	int	 oom;		/* the OOM killer ended it (the agent's reason "oom") */
	int64_t	 duration_ms;
	char	 exec_id[32];	/* the agent's exec id */
	/* Each stream's whole size, and where the agent keeps it whole inside the
	 * sandbox ("": nowhere: no output, or an agent that keeps none) with how
	 * many of its first bytes that file holds; [0] stdout, [1] stderr. */
	uint64_t bytes[2];
	char	 kept_path[2][128];
	uint64_t kept[2];
	/* Background execs only. */
	int	 pid;
	char	*log_path;	/* caller frees */
};

/* Output as it comes: stream 1 stdout, 2 stderr.  Returning < 0 stops the exec
 * (the agent kills it when the stream is dropped). */
typedef int (*core_output_fn)(int stream, const char *data, size_t len, void *arg);

/* Run a command and stream its output to out; res gets the exit. */
int core_exec(struct core *c, const char *key, const struct core_exec_opts *o,
    core_output_fn out, void *arg, struct core_exec_result *res, struct sbx_err *e);
/* The shell status of a result: the exit code, or 128+N for signal N. */
int core_exec_status(const struct core_exec_result *res);
/* How it ended: "exit", "signal", "timeout" or "oom" (the kernel's OOM killer,
 * at the sandbox's memory limit; its status stays 137) (core-files.c). */
const char *core_exec_reason(const struct core_exec_result *res);

/* Copy a host file or directory into the sandbox, and back.  Like cp -r: when the
 * destination is an existing directory, the source goes inside it under its own
 * name.  Sandbox paths are relative to /workspace unless absolute. */
int core_copy_in(struct core *c, const char *key, const char *local, const char *remote,
    struct sbx_err *e);
int core_copy_out(struct core *c, const char *key, const char *remote, const char *local,
    struct sbx_err *e);
/* The same with a tar stream on fd in place of the host path, as docker cp's
 * `-` (core-copy-tar.c): remote written to fd as a tar whose top entry is its
 * own name; or the tar read from fd (plain or compressed; files, directories
 * and links, names that stay inside) put into the sandbox directory remote. */
int core_copy_out_tar(struct core *c, const char *key, const char *remote, int fd,
    struct sbx_err *e);
int core_copy_in_tar(struct core *c, const char *key, int fd, const char *remote,
    struct sbx_err *e);

/* The host path of a sandbox's log ("agent" or "console"), caller frees; open it
 * with open_regular_nofollow (lib/util.h): a sandbox's root may replace what
 * is in its run directory, and a link to a host file must not be read on its
 * behalf.  For a sandbox on a remote host, a local copy brought up to date by
 * this call: followers call it again as they poll. */
char *core_log_path(struct core *c, const char *key, const char *which, struct sbx_err *e);
/* Write the log to fd; with follow, keep writing what is appended until the
 * sandbox stops or *stop becomes non-zero. */
int core_logs(struct core *c, const char *key, const char *which, int follow, int fd,
    volatile int *stop, struct sbx_err *e);

/* --- the exec journal (core-procs.c) ------------------------------------ */

/* The agent's journal of running and recent execs: *out gets its array, oldest
 * first, each {id, command, origin, pid, state, exit_code, signal, started_ms,
 * duration_ms, background, as_root, timed_out, truncated, log_path?}. */
int core_execs(struct core *c, const char *key, cJSON **out, struct sbx_err *e);
/* Send signal sig ("TERM", "KILL", ... or a number as text) to the process group
 * of exec exec_id; SBX_ESTATE when it has exited, SBX_ENOTFOUND when unknown. */
int core_exec_signal(struct core *c, const char *key, const char *exec_id, const char *sig,
    const char *origin, struct sbx_err *e);

/* --- files (core-files.c) ----------------------------------------------- */

/* The agent's file route op ("read", "write", "list", "stat", "delete") with body
 * req, whose fields are the route's (docs/agent-api.md); *out gets the answer
 * (caller frees).  Sandbox paths are relative to /workspace unless absolute. */
int core_files(struct core *c, const char *key, const char *op, const cJSON *req,
    const char *origin, cJSON **out, struct sbx_err *e);

/* --- transfers with excludes and a digest (core-copy.c) ------------------ */

/* Names skipped when no exclude list is given (as the agent's archive routes). */
extern const char *const core_exclude_default[];

/* How far a transfer is: done bytes of total (0: unknown).  Non-zero stops it. */
typedef int (*core_progress_fn)(uint64_t done, uint64_t total, const char *what,
    void *arg);

struct core_xfer_opts {
	/* Names skipped at any depth, NULL-terminated; NULL: core_exclude_default;
	 * an empty list: nothing skipped.  Names are non-empty, without '/' or ','. */
	const char *const *exclude;
	const char	*origin;	/* NULL: "cli" */
	core_progress_fn progress;	/* may be NULL */
	void		*arg;
};

struct core_xfer_result {
	uint64_t	 bytes;		/* content bytes of the regular files moved */
	uint64_t	 files;		/* regular files moved */
	char		 sha256[65];	/* of the archive moved (of the file for one file) */
	char		*path;		/* where it went: a sandbox or host path (caller frees) */
};

/* Put the contents of the host directory local (or the host file local) into the
 * sandbox directory remote (created with its parents; default /workspace when
 * NULL).  Files already there with the same names are replaced. */
int core_upload(struct core *c, const char *key, const char *local, const char *remote,
    const struct core_xfer_opts *o, struct core_xfer_result *res, struct sbx_err *e);
/* Bring the sandbox path remote (default /workspace) to the host path local
 * (absolute; its parent must exist).  A directory's contents go into local
 * (created when missing, merged when it is a directory); a file becomes local,
 * or goes inside it under its own name when local is a directory.  Nothing is
 * written outside local. */
int core_download(struct core *c, const char *key, const char *remote, const char *local,
    const struct core_xfer_opts *o, struct core_xfer_result *res, struct sbx_err *e);
void core_xfer_result_free(struct core_xfer_result *res);

/* --- resource use (core-usage.c) ----------------------------------------- */

/* Set s->usage to what the running or suspended sandbox s uses now, where its
 * backend can tell (struct backend's usage): {cpu_pct (from this process's
 * previous sample, absent on the first), cpu_ns, mem_bytes, pids, disk_bytes
 * (its layers' upper directories, walked at most every 15 s; disk_partial when
 * the walk was cut), net_rx_bytes, net_tx_bytes, oom_kills}.
 * core_list and core_status call it. */
void core_usage_attach(struct core *c, struct sandbox *s);
/* Whether c's listings say what runs in each sandbox of this machine, from
 * its agent's journal ("execs_running" and "exec_now" in "usage",
 * core-runs.c): the core server and the console's own core do; a command
 * that lists once does not (each would ask every agent). */
void core_runs_track(struct core *c, int on);
/* The bytes (st_blocks) of the tree at path, no link followed, at most
 * max_entries looked at (*cut, may be NULL, set when stopped there); -1 when
 * path is not a directory. */
int64_t core_tree_bytes(const char *path, long max_entries, int *cut);

/* --- what changed in a sandbox (core/diff/) ---------------------------- */

struct core_diff_opts {
	const char	*path;		/* only at or under this sandbox path (relative:
					 * under /workspace), and only it is walked;
					 * NULL: all */
	int		 content;	/* read the files: unified diffs of text files */
	const char	*cursor;	/* start where an earlier call's items stopped
					 * (core_diff_cursor); NULL: at the first */
	size_t		 max_text;	/* bytes of a file compared; 0: 256 KiB */
	/* NULL, or 1 when the caller went away: the walk stops. */
	int		(*cancelled)(void *arg);
	void		*cancel_arg;
};

/* What a diff found in all (whatever was handed to the item function). */
struct core_diff_info {
	char		 sandbox_id[32];
	uint64_t	 added, changed, removed;	/* files (removed: directories too) */
	int64_t		 bytes;		/* the sizes of the files added and changed */
	uint64_t	 items;		/* in the listing (a folded directory is one) */
	uint64_t	 folded;	/* directories folded into one item */
	uint64_t	 unreadable;	/* directories this process could not read */
	uint64_t	 unlisted;	/* changes counted but in no item (more than a
					 * diff keeps, right under the path asked for) */
	int		 walk_cut;	/* the walk stopped at its limit: the counts
					 * are of what it looked at */
	int		 cursor_stale;	/* what the cursor named moved since (the
					 * sandbox changed): items may repeat or be missed */
};

/* One item of the listing: a change, or a directory folded into one line. */
struct core_diff_item {
	const char	*path;		/* a folded directory's ends in '/' */
	uint64_t	 index;		/* in the listing's order */
	char		 change;	/* 'A' added, 'M' changed, 'D' removed; a folded
					 * directory: 'A' or 'D' when all its changes
					 * are, else 'M' */
	const char	*type;		/* "file", "dir", "symlink", "other" */
	int64_t		 size, lower_size;	/* -1: none */
	/* A folded directory: why ("cache", "packages", "git", "many entries",
	 * "too many to list"), its changes and the sizes of its files added and
	 * changed; NULL for a change. */
	const char	*folded;
	uint64_t	 added, changed, removed;
	int64_t		 bytes;
	/* With content, for a file added or changed: */
	int		 binary;	/* not text: sizes only */
	int		 cut;		/* only the first max_text bytes were compared */
	const char	*diff;		/* the unified diff from its line `line` on ("":
					 * the same bytes, only metadata changed), or NULL */
	uint64_t	 line, lines;	/* that first line, and the diff's lines in all */
	/* Not read: this call read its limit of bytes; the next starts here. */
	int		 unread;
};

/* Called with each item in the listing's order (from the cursor's on); info is
 * complete before the first call.  Nonzero stops the listing. */
typedef int (*core_diff_fn)(void *arg, const struct core_diff_info *info,
    const struct core_diff_item *it);

/* What changed in sandbox key since it was created, from its backend's
 * writable layers (struct backend's layers), item by item to fn: each file
 * added, changed or removed, with directories of caches, packages and git's
 * files, and any with many entries, folded into one item with counts.  The
 * memory, the entries looked at and the bytes read are bounded, whatever the
 * sandbox holds.  *info is filled even when no item is handed.
 * SBX_EUNSUPPORTED for a backend with no layers to read. */
int core_diff(struct core *c, const char *key, const struct core_diff_opts *o,
    core_diff_fn fn, void *arg, struct core_diff_info *info, struct sbx_err *e);
/* The walk runs in this program started again as `PROGRAM CORE_DIFF_WALKER`
 * (core/diff/walker.c): a main that sees it first calls core_diff_walker_main,
 * which reads its request on standard input and answers on standard output. */
#define CORE_DIFF_WALKER	"--diff-walker"
int core_diff_walker_main(void);
/* The same over the layers given (what a backend's layers hook gives), for a
 * sandbox id, in this process; the unit tests call it. */
int core_diff_layers(const struct backend_layer *layers, size_t n, const char *id,
    const struct core_diff_opts *o, core_diff_fn fn, void *arg,
    struct core_diff_info *info, struct sbx_err *e);
/* The cursor of item it at line (of its diff) into buf (64 bytes), for a later
 * call's core_diff_opts.cursor to start there. */
void core_diff_cursor(const struct core_diff_item *it, uint64_t line, char *buf, size_t len);
/* Item it as an object {path, change, type, size?, lower_size?, folded?,
 * files?, added?, changed?, removed?, bytes?, binary?, cut?, diff?,
 * diff_line?, diff_lines?}, with the first diff_len bytes of its diff (all of
 * it: (size_t)-1); a path that is not UTF-8 is made so. */
cJSON *core_diff_item_json(const struct core_diff_item *it, size_t diff_len);
/* A page of a diff: {sandbox_id, totals: {added, changed, removed, bytes,
 * items, folded}, changes (taken), truncated, next_cursor (next, when not
 * NULL or "")}. */
cJSON *core_diff_result_json(const struct core_diff_info *info, cJSON *changes,
    const char *next);

/* --- vanished sandboxes (core-events.c) ---------------------------------- */

struct core_vanished {
	char	 id[32];
	char	*reason;
	char	 api_key[16];	/* the key it was made with (core_act_for), or "" */
};
/* Sandboxes that core_list or core_status found dead (terminated or
 * in error) and that no caller has taken yet: each is handed out once. */
void core_vanished_take(struct core *c, struct core_vanished **out, size_t *n);
void core_vanished_free(struct core_vanished *v, size_t n);
/* --- port forwards ----------------------------------------------------- */

/* A forward: a local listening socket whose every connection is relayed through
 * an agent tunnel to 127.0.0.1:remote_port inside the sandbox (core/core-forward.c).
 * Forwards run in the core that started them, on its own relay thread; the
 * registry records each one (the sandbox record's "forwards") with its owner and
 * counters, flushed about once a second. */
struct core_forward_opts {
	const char	*bind;		/* NULL: 127.0.0.1 */
	int		 remote_port;	/* 1..65535 */
	int		 local_port;	/* 0: a free one */
	int		 http;		/* lambda only: HTTP straight to the port through
					 * the AWS proxy (X-aws-proxy-port), not a tunnel */
};

struct core_forward {
	char		 sandbox[32];
	char		 bind[64];
	int		 local_port;
	int		 remote_port;
	int		 pid;		/* the process that runs it */
	int		 live;		/* that process is still running */
	int64_t		 since_ms;	/* wall clock */
	uint64_t	 conns_now;
	uint64_t	 conns_total;
	uint64_t	 bytes_in;	/* local clients to the sandbox */
	uint64_t	 bytes_out;	/* the sandbox to local clients */
	uint64_t	 failures;	/* connections that found no tunnel */
	char		 last_error[160];
	int		 http;		/* a direct HTTP forward (core_forward_opts) */
};

/* Listen on bind:local_port and start relaying to the sandbox key names; *out
 * (may be NULL) describes it, with the port actually bound. */
int core_forward_start(struct core *c, const char *key, const struct core_forward_opts *o,
    struct core_forward *out, struct sbx_err *e);
/* Stop the forwards of sandbox key (to remote_port only when > 0) and drop their
 * records, whichever process runs them (another process lets go of its ports
 * within a second; this waits for that).  key NULL: every forward this core runs.
 * *stopped (may be NULL) gets how many. */
int core_forward_stop(struct core *c, const char *key, int remote_port, int *stopped,
    struct sbx_err *e);
/* The recorded forwards (of sandbox key, or all when NULL), with the counters
 * this core has or the registry's last copy; free *out with free(). */
int core_forward_list(struct core *c, const char *key, struct core_forward **out,
    size_t *n, struct sbx_err *e);
/* Start again every recorded forward whose process is gone (a core that starts
 * up); returns how many were restored, or -1 with e.  *left (when not NULL)
 * counts the other processes' records it did not restore: a live owner, or one
 * that failed (logged when warn), worth another try while a killed owner lets
 * go of its port. */
int core_forward_restore(struct core *c, int warn, int *left, struct sbx_err *e);
/* How many forwards this core runs now. */
size_t core_forward_running(struct core *c);

/* --- idle suspend (core-idle.c) ----------------------------------------- */

/* Start the thread that suspends sandboxes idle for their idle_suspend_s (for
 * a long-lived process: the core server). */
int core_idle_start(struct core *c, struct sbx_err *e);
/* One pass of that thread: suspend what has been idle too long, resume what
 * passed its deadline suspended.  Returns how many sandboxes have the policy
 * (running, or suspended for idleness), or -1. */
int core_idle_tick(struct core *c);
/* What the last pass counted: a server with any keeps running. */
int core_idle_watching(struct core *c);

/* --- housekeeping ------------------------------------------------------- */

/* One thing gc found on the host (struct backend_gc's found). */
struct core_gc_item {
	char	 kind[16];		/* "agent", "cgroup", "mount", "loop", "directory", "vm" */
	char	 id[32];		/* the sandbox it carries */
	char	*what;			/* where it is: a path, "pid N" */
	int	 live;			/* it runs or holds a kernel object */
	int	 orphan;		/* no record names its sandbox at all */
};
struct core_gc_result {
	int	removed_backend;	/* sandboxes whose leftovers the backends removed */
	int	dropped_records;	/* terminated records whose directories are gone */
	int	orphans;		/* sandboxes found that no record names */
	struct core_gc_item *items;	/* what was found (and, unless a dry run, removed) */
	size_t	nitems;
};
/* Find what sandboxes the registry does not hold as live left on the host
 * (what runs as well as what is written: agents, cgroups, mounts, loop
 * devices, directories, VMs) and remove it, then drop the records of
 * terminated sandboxes with nothing left; with dry_run, only list and count.
 * Free res with core_gc_result_free. */
int core_gc(struct core *c, int dry_run, struct core_gc_result *res, struct sbx_err *e);
void core_gc_result_free(struct core_gc_result *res);
/* How many sandboxes no record names hold something on this host, from what
 * costs no scan of its processes (directories, cgroups); counted at most
 * every 2 s, for listings. */
int core_orphans(struct core *c);
/* Remove every sandbox no record names (a new core server, after one died
 * mid-create); full: look at every process and mount, else only when
 * core_orphans counts any.  How many went, -1 with e. */
int core_sweep_orphans(struct core *c, int full, struct sbx_err *e);
/* In a thread of the core's: core_sweep_orphans at once (full), then each
 * second for for_ms; it stops with the core (a new core server). */
void core_sweep_start(struct core *c, int64_t for_ms);
/* Reap what the registry's sandboxes left of this process's children, each
 * through its backend (struct backend's reap); for a long-lived process. */
void core_reap(struct core *c);
/* The name of the i-th compiled-in backend, NULL past the last. */
const char *core_backend_name(size_t i);
/* One of backend's own verbs (its entry of struct backend's verbs: `sbxtop
 * image`, `host`, `setup`, ...), with args; *out (caller frees) gets its
 * answer. */
int core_admin(struct core *c, const char *backend, enum backend_verb verb, const cJSON *args,
    FILE *progress, cJSON **out, struct sbx_err *e);

/* The state directories, the registry, and each backend's own checks (only
 * backend when not NULL).  Returns the worst level reported; -1 with e for an
 * unknown backend. */
int core_doctor(struct core *c, const char *backend, check_fn report, void *arg,
    struct sbx_err *e);

/* --- events ------------------------------------------------------------- */

struct core_event {
	uint64_t	 seq;		/* 1, 2, ... per core */
	int64_t		 time_ms;	/* wall clock */
	const char	*type;		/* "sandbox.created", "exec.started", ... */
	const char	*sandbox;	/* id, or NULL */
	const cJSON	*data;		/* may be NULL */
};
#define CORE_EVENTS_RING 1024

typedef void (*core_event_fn)(const struct core_event *ev, void *arg);
/* Record an event (data taken, may be NULL) and hand it to every subscriber;
 * returns its sequence number. */
uint64_t core_events_emit(struct core *c, const char *type, const char *sandbox,
    cJSON *data);
/* Call fn for each new event until unsubscribed; returns a handle > 0. */
int core_events_subscribe(struct core *c, core_event_fn fn, void *arg);
void core_events_unsubscribe(struct core *c, int handle);
/* Call fn for each event still in the ring with seq >= from; returns how many.
 * *first (may be NULL) gets the oldest seq kept, so a gap can be noticed. */
size_t core_events_replay(struct core *c, uint64_t from, core_event_fn fn, void *arg,
    uint64_t *first);
/* Replay from seq from (as core_events_replay) and subscribe, in one step: fn
 * sees every event from there once and in order, none lost in between.
 * Returns the handle; *first as core_events_replay. */
int core_events_subscribe_from(struct core *c, uint64_t from, core_event_fn fn, void *arg,
    uint64_t *first);

#endif
