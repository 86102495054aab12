/* The ns backend's in-sandbox hardening: the seccomp deny list, the capability
 * sets and the resource limits.  All of it runs in the launcher's child after
 * pivot_root, in the order backends/ns/ns.h writes down: rlimits, capabilities,
 * no_new_privs, seccomp, exec. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backends/ns/ns.h"
#include "lib/log.h"
#include "lib/util.h"

/* --- seccomp --------------------------------------------------------------
 *
 * Default allow, and a deny list in the spirit of Docker's default profile: what a
 * build or a test never needs and what has been the door of kernel escapes.
 * Everything denied returns EPERM, except clone3, which returns ENOSYS so that libc
 * falls back to clone(2), whose flags a filter can read (clone3 passes them in
 * memory that seccomp cannot see).
 *
 * Decisions:
 * - ptrace, process_vm_readv and process_vm_writev are ALLOWED.  The sandbox has
 *   its own pid namespace and user namespace, so the only processes it can reach
 *   are its own, and since Linux 4.8 a traced process cannot use ptrace to skip
 *   its seccomp filter.  Docker allows them on such kernels too; agents need gdb
 *   and strace.
 * - kcmp is DENIED: it only serves checkpoint/restore tools, and Docker refuses
 *   it without CAP_SYS_PTRACE.
 * - io_uring_* are DENIED, as Docker does since 25.0: io_uring bypasses the
 *   syscall filter for the operations it runs and has been a steady source of
 *   kernel bugs.
 * - Only the native ABI is in the filter.  A syscall made through another ABI
 *   (int 0x80 for 32-bit x86, the x32 numbers) kills the process: nothing in a
 *   64-bit sandbox needs them, and they have been a way around filters that
 *   forgot them.
 */

#define NS_CLONE_NS_FLAGS (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
	CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

enum deny_kind {
	DENY,			/* always EPERM */
	DENY_ENOSYS,		/* always ENOSYS */
	DENY_NS_FLAGS_A0,	/* EPERM when arg 0 has a namespace flag (unshare, clone) */
	DENY_PERSONA,		/* EPERM for a persona other than the ones Docker allows */
};

struct deny_rule {
	const char	*name;
	enum deny_kind	 kind;
	const char	*why;
};

static const struct deny_rule deny_table[] = {
	/* mounts: the sandbox's mount tree is made by the launcher, then frozen */
	{ "mount",		DENY, "mounts are made by the launcher only" },
	{ "umount",		DENY, "mounts are made by the launcher only" },
	{ "umount2",		DENY, "would uncover what the overlay hides" },
	{ "pivot_root",		DENY, "root is fixed at launch" },
	{ "move_mount",		DENY, "new mount API" },
	{ "open_tree",		DENY, "new mount API" },
	{ "fsopen",		DENY, "new mount API" },
	{ "fsmount",		DENY, "new mount API" },
	{ "fsconfig",		DENY, "new mount API" },
	{ "fspick",		DENY, "new mount API" },
	{ "mount_setattr",	DENY, "new mount API" },
	/* the machine itself */
	{ "swapon",		DENY, "host swap" },
	{ "swapoff",		DENY, "host swap" },
	{ "reboot",		DENY, "host power" },
	{ "kexec_load",		DENY, "loads a new kernel" },
	{ "kexec_file_load",	DENY, "loads a new kernel" },
	{ "init_module",	DENY, "kernel modules" },
	{ "finit_module",	DENY, "kernel modules" },
	{ "delete_module",	DENY, "kernel modules" },
	{ "create_module",	DENY, "kernel modules (obsolete)" },
	{ "get_kernel_syms",	DENY, "kernel modules (obsolete)" },
	{ "query_module",	DENY, "kernel modules (obsolete)" },
	{ "acct",		DENY, "host process accounting" },
	{ "settimeofday",	DENY, "host clock" },
	{ "stime",		DENY, "host clock" },
	{ "clock_settime",	DENY, "host clock" },
	{ "clock_adjtime",	DENY, "host clock" },
	{ "adjtimex",		DENY, "host clock" },
	{ "iopl",		DENY, "raw I/O ports" },
	{ "ioperm",		DENY, "raw I/O ports" },
	{ "quotactl",		DENY, "host quotas" },
	{ "quotactl_fd",	DENY, "host quotas" },
	{ "nfsservctl",		DENY, "kernel NFS server (obsolete)" },
	{ "syslog",		DENY, "kernel log: addresses and host messages" },
	{ "vhangup",		DENY, "hangs up the terminal" },
	{ "uselib",		DENY, "obsolete loader" },
	{ "ustat",		DENY, "obsolete" },
	{ "sysfs",		DENY, "obsolete" },
	{ "_sysctl",		DENY, "obsolete" },
	{ "lookup_dcookie",	DENY, "profiling, leaks kernel pointers" },
	/* kernel attack surface */
	{ "bpf",		DENY, "eBPF programs" },
	{ "perf_event_open",	DENY, "perf events leak and have had many bugs" },
	{ "userfaultfd",	DENY, "widens kernel race windows" },
	{ "keyctl",		DENY, "the kernel keyring is not namespaced" },
	{ "add_key",		DENY, "the kernel keyring is not namespaced" },
	{ "request_key",	DENY, "the kernel keyring is not namespaced" },
	{ "fanotify_init",	DENY, "filesystem-wide monitoring" },
	{ "open_by_handle_at",	DENY, "opens files outside the root (shocker)" },
	{ "name_to_handle_at",	DENY, "pairs with open_by_handle_at" },
	{ "kcmp",		DENY, "checkpoint/restore only" },
	{ "io_uring_setup",	DENY, "io_uring bypasses this filter" },
	{ "io_uring_enter",	DENY, "io_uring bypasses this filter" },
	{ "io_uring_register",	DENY, "io_uring bypasses this filter" },
	{ "vm86",		DENY, "32-bit x86 only" },
	{ "vm86old",		DENY, "32-bit x86 only" },
	/* namespaces: the sandbox gets the ones it has, no more */
	{ "setns",		DENY, "would join another namespace" },
	{ "unshare",		DENY_NS_FLAGS_A0, "new namespaces (a nested user namespace regains every capability)" },
	{ "clone",		DENY_NS_FLAGS_A0, "new namespaces" },
	{ "clone3",		DENY_ENOSYS, "flags unreadable by seccomp: libc falls back to clone" },
	{ "personality",	DENY_PERSONA, "turning off ASLR and other personas" },
};

/* The personas Docker allows: PER_LINUX (0), PER_LINUX32 (0x8), UNAME26 (0x20000)
 * with either, and the query 0xffffffff.  libseccomp takes one comparison per
 * argument in a rule, so "none of these" is written as rules that each refuse on
 * one bit pattern of the low 32 bits (the kernel reads an unsigned int):
 *   bit 31 clear and any bit other than 3 and 17 set, or
 *   bit 31 set and any other bit clear (so only 0xffffffff has bit 31). */
#define PERSONA_OK_BITS ((uint64_t)(PER_LINUX32 | UNAME26))
#define PERSONA_BIT31	((uint64_t)0x80000000u)

static int
add_rule(scmp_filter_ctx ctx, const struct deny_rule *r, int nr)
{
	static const uint64_t ns_flags[] = {
		CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
		CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
	};
	size_t i, nflags;
	int rc;

	switch (r->kind) {
	case DENY:
		return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	case DENY_ENOSYS:
		return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	case DENY_NS_FLAGS_A0:
		/* One rule per flag: a filter can test "this bit is set", and any of
		 * them is enough to refuse.  CLONE_NEWTIME shares its bit with the exit
		 * signal in clone(2)'s flags, so only unshare(2) is checked for it. */
		nflags = ARRAY_SIZE(ns_flags);
		if (strcmp(r->name, "clone") == 0)
			nflags--;
		for (i = 0; i < nflags; i++) {
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
			    SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
			if (rc < 0)
				return rc;
		}
		return 0;
	case DENY_PERSONA:
		for (i = 0; i < 31; i++) {
			uint64_t bit = (uint64_t)1 << i;

			if (!(bit & PERSONA_OK_BITS)) {
				rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				    SCMP_A0(SCMP_CMP_MASKED_EQ, bit | PERSONA_BIT31, bit));
				if (rc < 0)
					return rc;
			}
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
			    SCMP_A0(SCMP_CMP_MASKED_EQ, bit | PERSONA_BIT31, PERSONA_BIT31));
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	return -EINVAL;
}

static int
seccomp_compile(struct ns_bpf *out, struct sbx_err *e)
{
	scmp_filter_ctx ctx;
	size_t i;
	int nr, rc, fd = -1;
	struct stat st;

	out->insns = NULL;
	out->len = 0;
	/* seccomp_init adds the native architecture only: every other ABI meets
	 * the bad-arch action. */
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx == NULL)
		return sbx_error(e, SBX_EBACKEND, "check `sbxtop doctor` (seccomp)",
		    "seccomp: cannot initialise libseccomp");
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc < 0)
		goto fail;
	for (i = 0; i < ARRAY_SIZE(deny_table); i++) {
		nr = seccomp_syscall_resolve_name(deny_table[i].name);
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;	/* not a syscall of this architecture */
		rc = add_rule(ctx, &deny_table[i], nr);
		if (rc < 0) {
			seccomp_release(ctx);
			return sbx_error(e, SBX_EBACKEND, NULL, "seccomp: rule for %s: %s",
			    deny_table[i].name, strerror(-rc));
		}
	}
	/* libseccomp 2.5 exports to a descriptor only. */
	if ((fd = memfd_create("sbxtop-seccomp", MFD_CLOEXEC)) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0 || fstat(fd, &st) < 0 ||
	    st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		rc = rc < 0 ? rc : -EINVAL;
		goto fail;
	}
	out->insns = xmalloc((size_t)st.st_size);
	if (pread(fd, out->insns, (size_t)st.st_size, 0) != (ssize_t)st.st_size) {
		ns_bpf_free(out);
		rc = -EIO;
		goto fail;
	}
	out->len = (size_t)st.st_size / sizeof(struct sock_filter);
	close(fd);
	seccomp_release(ctx);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return sbx_error(e, SBX_EBACKEND, "check `sbxtop doctor` (seccomp)",
	    "seccomp: %s", strerror(-rc));
}

/* The deny list is the same for every sandbox: libseccomp compiles it once per
 * process (0.4 ms of each create otherwise), and each create takes a copy. */
int
ns_seccomp_build(struct ns_bpf *out, struct sbx_err *e)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct ns_bpf compiled;
	int rc = 0;

	out->insns = NULL;
	out->len = 0;
	pthread_mutex_lock(&mu);
	if (compiled.insns == NULL)
		rc = seccomp_compile(&compiled, e);
	if (rc == 0) {
		out->insns = xmalloc(compiled.len * sizeof(struct sock_filter));
		memcpy(out->insns, compiled.insns, compiled.len * sizeof(struct sock_filter));
		out->len = compiled.len;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

int
ns_seccomp_load(const struct ns_bpf *b, struct sbx_err *e)
{
	struct sock_fprog prog = { .len = (unsigned short)b->len, .filter = b->insns };

	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return sbx_error(e, SBX_EINTERNAL, "set PR_SET_NO_NEW_PRIVS before the filter",
		    "seccomp: no_new_privs is not set");
	if (b->insns == NULL || b->len == 0)
		return sbx_error(e, SBX_EINTERNAL, NULL, "seccomp: no filter was built");
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, "check `sbxtop doctor` (seccomp)",
		    "seccomp: cannot load the filter");
	return 0;
}

void
ns_bpf_free(struct ns_bpf *b)
{
	free(b->insns);
	b->insns = NULL;
	b->len = 0;
}

int
ns_seccomp_apply(struct sbx_err *e)
{
	struct ns_bpf b;
	int rc;

	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return sbx_error(e, SBX_EINTERNAL, "set PR_SET_NO_NEW_PRIVS before the filter",
		    "seccomp: no_new_privs is not set");
	if (ns_seccomp_build(&b, e) < 0)
		return -1;
	rc = ns_seccomp_load(&b, e);
	ns_bpf_free(&b);
	return rc;
}

/* --- capabilities ---------------------------------------------------------
 *
 * Docker's default set.  Everything else leaves the bounding set (so no exec can
 * bring it back, even of a file with capabilities) and the permitted, effective
 * and inheritable sets.  The inheritable set is left empty, as Docker does since
 * CVE-2022-24769: a kept inheritable capability would reach programs run as an
 * ordinary user through file capabilities.  Ambient capabilities are cleared. */

static const int kept_caps[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FSETID, CAP_FOWNER, CAP_MKNOD, CAP_NET_RAW,
	CAP_SETGID, CAP_SETUID, CAP_SETFCAP, CAP_SETPCAP, CAP_NET_BIND_SERVICE,
	CAP_SYS_CHROOT, CAP_KILL, CAP_AUDIT_WRITE,
};

static int
cap_kept(int cap)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kept_caps); i++)
		if (kept_caps[i] == cap)
			return 1;
	return 0;
}

/* Read into a stack buffer: this runs in the launcher's child, which must not
 * allocate (another thread of the core server may hold malloc's lock). */
static int
cap_last(void)
{
	char buf[16];
	ssize_t len = -1;
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC), n = 0;

	if (fd >= 0) {
		len = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	for (ssize_t i = 0; i < len && buf[i] >= '0' && buf[i] <= '9'; i++)
		n = n * 10 + (buf[i] - '0');
	if (n <= 0 || n > 63)
		return CAP_LAST_CAP;
	return n;
}

/* --- the OOM killer ----------------------------------------------------------
 *
 * A value written by a holder of CAP_SYS_RESOURCE also becomes the process's
 * floor (oom_score_adj_min), and both pass to its children: a command may raise
 * its score and lower it again, never below the agent's. */
void
ns_oom_protect(pid_t pid)
{
	char p[40];
	_cleanup_close_ int fd = -1;

	if (geteuid() != 0)
		return;		/* not allowed: the agent's commands raise their own */
	snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)pid);
	if ((fd = open(p, O_WRONLY | O_CLOEXEC)) >= 0 && write(fd, "-1000", 5) == 5)
		return;
	/* EACCES: root without CAP_SYS_RESOURCE (a container's), as an ordinary user. */
	if (errno == EACCES)
		log_debug("the sandbox's init (pid %d): oom_score_adj not lowered: %s", (int)pid,
		    strerror(errno));
	else
		log_warn("the sandbox's init (pid %d): oom_score_adj not set", (int)pid);
}

int
ns_caps_drop(struct sbx_err *e)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	int cap, last = cap_last();

	/* Bounding set first: dropping needs CAP_SETPCAP, which is kept anyway. */
	for (cap = 0; cap <= last; cap++) {
		if (cap_kept(cap))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return sbx_error_errno(e, SBX_EBACKEND, NULL,
			    "capabilities: cannot drop %d from the bounding set", cap);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return sbx_error_errno(e, SBX_EBACKEND, NULL,
		    "capabilities: cannot clear the ambient set");

	memset(data, 0, sizeof data);
	for (cap = 0; cap <= last && cap < 64; cap++) {
		if (!cap_kept(cap))
			continue;
		data[cap / 32].permitted |= 1u << (cap % 32);
		data[cap / 32].effective |= 1u << (cap % 32);
	}
	if (syscall(SYS_capset, &hdr, data) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "capabilities: capset");
	return 0;
}

/* --- resource limits ------------------------------------------------------ */

#define NS_NOFILE 65536

int
ns_rlimits_apply(const struct sbx_limits *l, int pids_in_cgroup, struct sbx_err *e)
{
	struct rlimit rl;

	/* Open files: 65536, or the hard limit when that is lower (raising a hard
	 * limit needs CAP_SYS_RESOURCE in the host's user namespace). */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "rlimits: RLIMIT_NOFILE");
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > NS_NOFILE)
		rl.rlim_max = NS_NOFILE;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "rlimits: RLIMIT_NOFILE");

	/* No core dumps: they would land in the sandbox at best, in the host's
	 * core_pattern handler at worst. */
	rl.rlim_cur = rl.rlim_max = 0;
	if (setrlimit(RLIMIT_CORE, &rl) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "rlimits: RLIMIT_CORE");

	/* The pids fallback.  RLIMIT_NPROC counts every process of the real uid, not
	 * only the sandbox's: it is a fair bound only because the sandbox's uids are
	 * a range of their own (or, in the single-uid mapping, it also counts the
	 * caller's processes; the note from the cgroup says pids are not enforced). */
	if (!pids_in_cgroup && l != NULL && l->pids > 0) {
		struct rlimit host;
		rl.rlim_cur = rl.rlim_max = (rlim_t)l->pids;
		/* A hard limit below it (small hosts: the kernel's default is
		 * threads-max / 2) cannot be raised here: keep the lower one. */
		if (getrlimit(RLIMIT_NPROC, &host) == 0 && host.rlim_max < rl.rlim_max)
			rl.rlim_cur = rl.rlim_max = host.rlim_max;
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			return sbx_error_errno(e, SBX_EBACKEND, NULL, "rlimits: RLIMIT_NPROC");
	}
	/* A disk limit without a filesystem of its own (ns-disk.c): no file
	 * grows past it (EFBIG, or SIGXFSZ to a writer that does not ignore it);
	 * the core's watcher bounds the sum. */
	if (l != NULL && l->disk_mib > 0) {
		struct rlimit host;
		rl.rlim_cur = rl.rlim_max = (rlim_t)l->disk_mib << 20;
		if (getrlimit(RLIMIT_FSIZE, &host) == 0 && host.rlim_max < rl.rlim_max)
			rl.rlim_cur = rl.rlim_max = host.rlim_max;
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			return sbx_error_errno(e, SBX_EBACKEND, NULL, "rlimits: RLIMIT_FSIZE");
	}
	return 0;
}
