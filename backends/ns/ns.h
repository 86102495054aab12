/* Internals of the ns backend (backends/ns/backend-ns.c), split by concern:
 * ns-harden.c (seccomp, capabilities, rlimits), ns-cgroup.c (limits and freezer,
 * cgroup v2 or v1), ns-net.c (loopback, egress through slirp4netns or pasta),
 * and the doctor checks.  Only backend-ns.c calls these. */
#ifndef SBX_NS_H
#define SBX_NS_H

#include <pthread.h>
#include <semaphore.h>
#include <sys/types.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "core/paths.h"
#include "lib/err.h"
#include "core/sandbox.h"

/* --- inside the sandbox, in the launcher's child, in this order (after
 * pivot_root): ns_net_loopback_up, ns_rlimits_apply, ns_caps_drop, then
 * PR_SET_NO_NEW_PRIVS, then ns_seccomp_apply, then exec of the agent. --- */

/* Bring up "lo" in the sandbox's new network namespace. */
int ns_net_loopback_up(struct sbx_err *e);
/* Resource limits for the sandbox's processes (open files, core size, and an
 * RLIMIT_NPROC fallback for pids when no cgroup enforces it). */
int ns_rlimits_apply(const struct sbx_limits *l, int pids_in_cgroup, struct sbx_err *e);
/* Keep only the capabilities a container needs (Docker's default set) in the
 * bounding, permitted, effective and inheritable sets. */
int ns_caps_drop(struct sbx_err *e);
/* From the host, right after clone: put the sandbox's init (the agent) out of
 * the OOM killer's reach, oom_score_adj -1000, which only a caller with
 * CAP_SYS_RESOURCE may set: done as real root only (a refusal is logged).  The agent
 * itself raises every command's to 1000 (agent/state.c). */
void ns_oom_protect(pid_t pid);
/* Install the seccomp deny list (libseccomp) in the calling thread; no_new_privs
 * must already be set.  Builds and loads: for a single-threaded caller. */
int ns_seccomp_apply(struct sbx_err *e);
/* The deny list compiled to a BPF program beforehand, by the parent: the child
 * of a raw clone() in a threaded process must not allocate (another thread may
 * have held malloc's lock at the clone), so it only loads the program. */
struct ns_bpf {
	void	*insns;		/* struct sock_filter[len] */
	size_t	 len;
};
int ns_seccomp_build(struct ns_bpf *out, struct sbx_err *e);
/* Load b in the calling thread (system calls only); no_new_privs must be set. */
int ns_seccomp_load(const struct ns_bpf *b, struct sbx_err *e);
void ns_bpf_free(struct ns_bpf *b);

/* --- on the host, in the launcher (parent side) --- */

/* Create a cgroup for sandbox id with the limits that this host lets us enforce
 * (v2 under our own delegated cgroup, or v1 controllers) and record where it is
 * in *state (an object, for backend_data).  Limits that cannot be enforced are
 * described in *note (caller frees; NULL when all are).  Not an error when no
 * cgroup can be made: *state stays NULL and the note says why. */
int ns_cgroup_create(const char *id, const struct sbx_limits *l, cJSON **state,
    char **note, struct sbx_err *e);
/* Move pid (the sandbox's init, before it forks anything) into the cgroup. */
int ns_cgroup_attach(const cJSON *state, pid_t pid, struct sbx_err *e);
/* cgroup v1: the `tasks` file of each of the cgroups in state, opened for
 * writing into fds (at most max), for the init to move itself with
 * ns_cgroup_self_attach: a thread writing "0" there moves without the global
 * lock whose first taking by a move by pid waits for an RCU grace period
 * (5-20 ms of every create here).  How many; 0 on v2 or with no cgroup (the
 * parent moves it), -1 when one does not open. */
int ns_cgroup_self_fds(const cJSON *state, int *fds, int max);
/* In the init, still one thread: write "0" to each; 0 when every one took. */
int ns_cgroup_self_attach(const int *fds, int n);
/* Freeze or thaw every process in the cgroup; -1 with SBX_EUNSUPPORTED when the
 * state has no freezer. */
int ns_cgroup_freeze(const cJSON *state, int frozen, struct sbx_err *e);
/* 1 when frozen, 0 when not, -1 when unknown. */
int ns_cgroup_frozen(const cJSON *state);
/* Remove the cgroup (its processes must be gone). */
int ns_cgroup_destroy(const cJSON *state, struct sbx_err *e);
/* 1 when the cgroup in state enforces what ("memory", "pids", "cpu", "freezer"),
 * else 0; the launcher passes has("pids") to ns_rlimits_apply. */
int ns_cgroup_has(const cJSON *state, const char *what);
/* Processes the kernel's OOM killer ended in the cgroup (0: none, or unknown). */
long long ns_cgroup_oom_kills(const cJSON *state);
/* A read-only descriptor of that count's file, for the agent (--oom-events), so
 * it can name the commands the OOM killer ends; -1 when there is none. */
int ns_cgroup_oom_fd(const cJSON *state);
/* "out of memory: ..." when the OOM killer ended any (caller frees), or NULL. */
char *ns_cgroup_oom_note(const cJSON *state, const struct sbx_limits *l);
/* The v2 cgroup the sandboxes' cgroups are made in, or NULL (v1, none). */
const char *ns_cgroup_where(const cJSON *state);

/* Fill what u's cgroup can tell (cpu_ns, mem_bytes, pids, oom_kills: v2's
 * cpu.stat, memory.current, pids.current, memory.events; v1's
 * memory.usage_in_bytes, pids.current, memory.oom_control, and cpuacct.usage or
 * the times of the processes in it); -1 when state has no cgroup. */
int ns_cgroup_usage(const cJSON *state, struct sbx_usage *u);

/* Start the egress helper (slirp4netns --disable-host-loopback, or pasta) for the
 * network namespace of pid; its pid goes in *helper.  SBX_EUNSUPPORTED with a
 * hint when neither is installed. */
int ns_net_egress_start(pid_t pid, pid_t *helper, struct sbx_err *e);
/* The same, with the helper's stdout and stderr appended to log_path (0600). */
int ns_net_egress_start_logged(pid_t pid, const char *log_path, pid_t *helper,
    struct sbx_err *e);
void ns_net_egress_stop(pid_t helper);
/* A socket listening on 127.0.0.1:port in the network namespace of pid, made
 * there by a short-lived child and held out here (the network proxy's
 * listener); -1 with e. */
int ns_net_listen_in(pid_t pid, int port, int *fd, struct sbx_err *e);
/* Which egress helper exists here: "slirp4netns", "pasta", or NULL. */
const char *ns_net_egress_helper(void);

/* The doctor checks for the ns backend (the agent bundle, the id mapping, user
 * namespaces, overlay in a user namespace, seccomp, cgroups v1/v2 and what they
 * delegate, egress helpers, AppArmor's userns restriction, state directories). */
void ns_doctor(check_fn report, void *arg);

/* Bytes in and out of pid's network namespace, every interface but lo
 * (/proc/PID/net/dev), into u->net_rx and u->net_tx. */
void ns_net_bytes(pid_t pid, struct sbx_usage *u);

/* --- shared by backend-ns.c, ns-copy.c, ns-state.c and ns-sweep.c ------- */

/* STATE/sandboxes, where each sandbox has its directory (caller frees;
 * ns-record.c, as ns_data_get). */
char *ns_sandboxes_dir(struct sbx_err *e);
/* The label every sandbox's agent carries (--tag ID@LABEL) and its
 * backend.json holds: the state directory's (paths_state_label), or the one
 * ns_label_use gave: a launcher on a remote host labels what it makes and
 * sweeps with its client's, so that two clients of one host never take each
 * other's sandboxes. */
#define NS_LABEL_LEN PATHS_LABEL_LEN
int ns_label(char out[NS_LABEL_LEN + 1], struct sbx_err *e);
/* 1 when the command line cl (n bytes, NUL-separated arguments) carries
 * --tag ID@label, with ID (a valid sandbox id, shorter than len) in id
 * (ns-tag.c). */
int ns_tag_of(const char *cl, size_t n, const char *label, char *id, size_t len);
/* Use label (16 hex digits) from now on in this process; -1 when not one. */
int ns_label_use(const char *label);
/* 1 when label is one (16 lower-case hex digits). */
int ns_label_valid(const char *label);
/* A create's lock on the directory of sandbox id (fd), kept until the core
 * has recorded it: ns_settled (struct backend's settled) lets it go. */
void ns_hold_put(const char *id, int fd);
void ns_settled(const struct sandbox *s);
/* dir made and locked (*lock_fd), never there unlocked for long: one a sweep
 * removed in the moment before the lock is made again.  *made when a
 * directory was made, even if it could not be locked then. */
int ns_dir_make_locked(const char *dir, int *lock_fd, int *made, struct sbx_err *e);
/* The label s is made with (its agent's --tag, its backend.json): the one
 * its spec names (a launcher's client's), else ns_label's. */
int ns_label_of(const struct sandbox *s, char out[NS_LABEL_LEN + 1], struct sbx_err *e);
/* gc (ns-sweep.c): find and (unless g->dry_run) remove what sandboxes of
 * this state directory that the registry does not hold as live left on the
 * host.  How many were removed; *unsettled when any was left (being made,
 * only listed, or not removable). */
int ns_sweep(const struct backend_gc *g, int *unsettled, struct sbx_err *e);
/* Every cgroup named after a sandbox below our own, as an object of state
 * objects (what ns_cgroup_create records) by sandbox id. */
cJSON *ns_cgroup_list(void);
/* The cgroup (as ns_cgroup_list's entries) that pid is in when it is sandbox
 * id's, wherever it was made (v2: another scope's): an object holding it by
 * id, or empty. */
cJSON *ns_cgroup_of_pid(pid_t pid, const char *id);
/* A process in the cgroup of state, 0 when none is. */
pid_t ns_cgroup_first_pid(const cJSON *state);

struct proc_stat;
struct ns_idmap;

/* What the record's backend_data holds (ns_data_get, ns-record.c, fills it;
 * free dir). */
struct ns_data {
	char			*dir;
	pid_t			 pid;
	unsigned long long	 starttime;
	pid_t			 egress_pid;
	const cJSON		*cgroup;	/* borrowed from the record, or NULL */
};

int ns_data_get(const struct sandbox *s, struct ns_data *d, struct sbx_err *e);
/* A clone in the caller's memory (CLONE_VM, added to flags) by a thread that
 * then waits, idle, so the child may use its thread state (ns-clone.c): fn(arg)
 * runs on a stack of its own with every signal held.  ns_clone_start returns
 * the child's pid or -1 with errno; ns_clone_finish, called once the child has
 * exec'd or been reaped (and after a failed start too), lets the thread go and
 * frees the stack. */
struct ns_clone {
	int		(*fn)(void *);
	void		*arg;
	int		 flags;
	void		*stack;
	size_t		 stack_size;
	pid_t		 pid;
	int		 err;
	int		 running;
	pthread_t	 thread;
	sem_t		 cloned, done;
};
pid_t ns_clone_start(struct ns_clone *c, int (*fn)(void *), void *arg, int flags);
void ns_clone_finish(struct ns_clone *c);

/* 1 when pid is the sandbox's init still (its start time matches), with its
 * stat in *out (may be NULL). */
int ns_init_alive(pid_t pid, unsigned long long starttime, struct proc_stat *out);
/* Wait until pid (started at starttime) is gone, at most timeout_ms: 0, or -1
 * when it still runs (ns-proc.c, as ns_init_alive and ns_signal_pidns). */
int ns_wait_gone(pid_t pid, unsigned long long starttime, int timeout_ms);
/* Send sig to every process of the pid namespace whose init is pid, the init
 * first or last; how many were signalled. */
int ns_signal_pidns(pid_t pid, int sig, int init_first);
/* Suspend (the cgroup's freezer, else SIGSTOP to every process) or resume the
 * running sandbox s; its state follows.  0, or -1 with e (ns-proc.c). */
int ns_suspend_resume(struct sandbox *s, int suspend, struct sbx_err *e);
/* s (whose directory is dir), found frozen: when a fork held it still and
 * died before letting it go, thaw it (1); else 0. */
int ns_fork_unhold(struct sandbox *s, const char *dir);
/* Copy src's writable files into the new sandbox directory dir (ns-copy.c). */
int ns_fork_copy(const struct sandbox *src, const char *dir, const struct ns_idmap *m,
    struct sbx_err *e);
/* struct backend's usage and layers (ns-state.c). */
int ns_usage(const struct sandbox *s, struct sbx_usage *u, struct sbx_err *e);
int ns_layers(const struct sandbox *s, struct backend_layer **out, size_t *n, struct sbx_err *e);
int64_t ns_layers_bytes(const struct sandbox *s, tree_walk_fn walk, long max, int *cut);
int ns_layers_userns(const struct sandbox *s);
/* s's hostname: its name where that is one (letters, digits, '-'), else its id. */
void ns_hostname(const struct sandbox *s, char *buf, size_t len);
/* The last max bytes of a log the sandbox writes, as one escaped line
 * (ns-state.c), and why its agent stopped, from its log (caller frees). */
void ns_log_tail(const char *path, char *out, size_t max);
char *ns_exit_reason(const char *dir);
/* A claimed pool member takes the hostname of its name (backend op claimed). */
int ns_claimed(const struct sandbox *s, struct sbx_err *e);

/* The disk limit (ns-disk.c).  When l has one and we are root, make dir the
 * mount point of a filesystem of the limit's size owned by uid/gid, and move
 * *lock_fd's lock onto its root: 1, or 2 when the directories of
 * ns_layout_make are in it already (a spare).  0 when there is no limit, or none could
 * be mounted (an ordinary user, no loop devices, no mke2fs): *note says what
 * holds instead (caller frees).  -1 with e when a mount failed. */
int ns_disk_setup(const char *dir, const struct sbx_limits *l, uid_t uid, gid_t gid,
    int *lock_fd, char **note, struct sbx_err *e);
/* dir becomes the mount point of a filesystem of mib MiB, whose root is
 * locked (*lock_fd) before it is mounted: 1 when it is a spare with the
 * directories of ns_layout_make in it already, else 0. */
int ns_disk_attach(const char *dir, int64_t mib, uid_t uid, gid_t gid, int *lock_fd,
    struct sbx_err *e);
/* Keep a filesystem ready for the next create (on: 1) or no more (0). */
void ns_disk_keep_ready(int on);
/* Unmount dir's own filesystem (lazily): 1, 0 when it has none, -1 on error. */
int ns_disk_detach(const char *dir);
/* Bytes in use on dir's own filesystem, -1 when it has none. */
int64_t ns_disk_used(const char *dir);
/* Remove the filesystem templates (a cache beside the images); how many went. */
int ns_disk_gc(void);

/* OCI images (ns-oci.c): struct backend's image_ids, image_run, image_rmtree. */
int ns_image_ids(struct backend_image_ids *out, struct sbx_err *e);
int ns_image_run(int (*pre)(void *arg, void *report), int (*fn)(void *arg, void *report),
    void *arg, void *report, size_t rlen, struct sbx_err *e);
int ns_image_rmtree(const char *path, struct sbx_err *e);
struct ns_rootfs;
/* The layer directories of a create's image_spec into r (top first; the
 * paths borrowed from spec); ns_oci_free closes and frees what it added. */
int ns_oci_layers(const cJSON *spec, struct ns_rootfs *r, struct sbx_err *e);
void ns_oci_free(struct ns_rootfs *r);
/* The agent's arguments for the image's Env, User and WorkingDir, appended
 * at argv[*argc] (room for ns_oci_argc(spec) more; borrowed from spec). */
size_t ns_oci_argc(const cJSON *spec);
void ns_oci_args(const cJSON *spec, const struct ns_idmap *m, char **argv, int *argc);

#endif
