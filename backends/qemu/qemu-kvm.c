/* Is KVM usable here?  /dev/kvm existing is not enough: under nested
 * virtualisation KVM_RUN may hang forever, QEMU may fail to set up a vCPU
 * (MSRs the outer hypervisor refuses), or a guest may run its first
 * instructions and then never print a byte.  Only a real boot tells, so the
 * verdict comes from one: first a child process runs a guest of one
 * instruction (hlt) through the raw KVM ioctls, killed when it has not answered
 * within a short timeout (cheap, and it names what is missing); then QEMU runs
 * the sandboxes' own kernel under -M microvm -accel kvm -cpu host, as sandboxes
 * do, with no root disk: a working KVM shows the kernel's banner on the
 * console within a second and ends in the kernel's "no root" panic, which
 * -no-reboot turns into QEMU's exit.  A boot that prints nothing within a few
 * seconds is killed: "KVM hangs here".  The verdict is kept in
 * $XDG_CACHE_HOME/sbxtop/kvm-probe with the host's boot id
 * (/proc/sys/kernel/random/boot_id), so it is decided once per boot of the
 * host, and afresh after a reboot or on another machine sharing the cache. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/log.h"
#include "core/paths.h"
#include "backends/qemu/qemu.h"
#include "backends/qemu/qemu-image.h"
#include "lib/util.h"

#define PROBE_TIMEOUT_MS	3000
#define GUEST_ADDR		0x1000
/* The real boot: no kernel output within BOOT_QUIET_MS is a hang; a kernel
 * that talks gets until BOOT_MAX_MS to reach its panic. */
#define BOOT_QUIET_MS		6000
#define BOOT_MAX_MS		30000
#define KERNEL_BANNER		"Linux version "
/* In the cache file: verdicts of the older, boot-less probe are not trusted. */
#define VERDICT_METHOD		"boot"

enum probe_rc { P_OK = 0, P_NODEV = 10, P_API, P_VM, P_MEM, P_VCPU, P_REGS, P_RUN, P_EXIT };

/* In the child: 0 when a real-mode guest executing "hlt" exits with
 * KVM_EXIT_HLT.  Exit codes name the step that failed. */
static int __attribute__((noreturn))
probe_child(void)
{
	int kvm, vm, vcpu, size;
	struct kvm_userspace_memory_region region;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run;
	unsigned char *mem;

	alarm(PROBE_TIMEOUT_MS / 1000 + 1);
	if ((kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) < 0)
		_exit(P_NODEV);
	if (ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		_exit(P_API);
	if ((vm = ioctl(kvm, KVM_CREATE_VM, 0UL)) < 0)
		_exit(P_VM);
	mem = mmap(NULL, 0x1000, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		_exit(P_MEM);
	mem[0] = 0xf4;		/* hlt */
	memset(&region, 0, sizeof region);
	region.guest_phys_addr = GUEST_ADDR;
	region.memory_size = 0x1000;
	region.userspace_addr = (unsigned long)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		_exit(P_MEM);
	if ((vcpu = ioctl(vm, KVM_CREATE_VCPU, 0UL)) < 0)
		_exit(P_VCPU);
	if ((size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0)
		_exit(P_VCPU);
	run = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		_exit(P_VCPU);
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		_exit(P_REGS);
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		_exit(P_REGS);
	memset(&regs, 0, sizeof regs);
	regs.rip = GUEST_ADDR;
	regs.rflags = 0x2;
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		_exit(P_REGS);
	if (ioctl(vcpu, KVM_RUN, 0) < 0)
		_exit(P_RUN);
	_exit(run->exit_reason == KVM_EXIT_HLT ? P_OK : P_EXIT);
}

static const char *
probe_step(int code)
{
	switch (code) {
	case P_NODEV: return "cannot open /dev/kvm";
	case P_API: return "/dev/kvm speaks another API version";
	case P_VM: return "KVM_CREATE_VM failed";
	case P_MEM: return "cannot give the probe guest memory";
	case P_VCPU: return "KVM_CREATE_VCPU failed";
	case P_REGS: return "cannot set the probe vCPU's registers";
	case P_RUN: return "KVM_RUN failed";
	case P_EXIT: return "KVM_RUN returned for the wrong reason";
	default: return "the probe failed";
	}
}

/* Step one: the raw ioctls.  0 when a one-instruction guest ran, else -1 with
 * a->reason. */
static int
ioctl_stage(struct qemu_accel *a)
{
	int status = 0;
	pid_t pid, r = 0;

	if (access("/dev/kvm", F_OK) < 0) {
		snprintf(a->reason, sizeof a->reason, "no /dev/kvm on this host");
		return -1;
	}
	if ((pid = fork()) < 0) {
		snprintf(a->reason, sizeof a->reason, "cannot fork the KVM probe: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		probe_child();
	for (int64_t end = now_ms() + PROBE_TIMEOUT_MS; now_ms() < end;) {
		if ((r = waitpid(pid, &status, WNOHANG)) == pid || (r < 0 && errno != EINTR))
			break;
		poll(NULL, 0, 10);
	}
	if (r != pid) {
		kill(pid, SIGKILL);
		/* A vCPU stuck in the kernel may not die at once: do not wait on it
		 * for long, it is reaped when it goes. */
		for (int i = 0; i < 100 && waitpid(pid, NULL, WNOHANG) == 0; i++)
			poll(NULL, 0, 10);
		snprintf(a->reason, sizeof a->reason, "KVM hangs here: /dev/kvm exists but KVM_RUN did not "
		    "return within %d ms (nested virtualisation?)", PROBE_TIMEOUT_MS);
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == P_OK)
		return 0;
	if (WIFEXITED(status))
		snprintf(a->reason, sizeof a->reason, "/dev/kvm is not usable: %s",
		    probe_step(WEXITSTATUS(status)));
	else
		snprintf(a->reason, sizeof a->reason, "the KVM probe died of signal %d",
		    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return -1;
}

/* The first (first: 1) or last non-empty line of a file, control characters
 * blanked. */
static void
file_line(const char *path, int first, char *out, size_t max)
{
	_cleanup_free_ char *text = read_file(path, 1 << 16, NULL);
	char *p = NULL, *q;
	size_t n;

	out[0] = '\0';
	if (text == NULL)
		return;
	for (char *c = text; *c; c++)
		if (*c != '\n' && ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f))
			*c = ' ';
	for (char *line = strtok_r(text, "\n", &q); line != NULL; line = strtok_r(NULL, "\n", &q)) {
		while (*line == ' ')
			line++;
		if (*line == '\0')
			continue;
		p = line;
		if (first)
			break;
	}
	if (p == NULL)
		return;
	n = strlen(p) < max - 1 ? strlen(p) : max - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Kill the probe's QEMU; a vCPU stuck in the host kernel may keep it a
 * while, so it is not waited on for long (init reaps it). */
static void
kill_boot(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	for (int i = 0; i < 200 && waitpid(pid, NULL, WNOHANG) == 0; i++)
		poll(NULL, 0, 10);
}

/* Step two: boot kernel under KVM as sandboxes do.  Sets a->kvm, or the
 * reason why not; a->boot_ms says how long it took. */
static void
boot_stage(struct qemu_accel *a, const char *kernel)
{
	struct sbx_err e;
	_cleanup_free_ char *prog = qemu_which("qemu-system-x86_64");
	_cleanup_free_ char *dir = paths_dir(PATHS_CACHE, &e);
	_cleanup_free_ char *con = NULL, *errf = NULL, *serial = NULL, *text = NULL;
	int64_t t0 = now_ms(), seen = 0;
	int status = 0, exited = 0;
	char line[200];
	pid_t pid, r;

	if (prog == NULL) {
		snprintf(a->reason, sizeof a->reason, "qemu-system-x86_64 is not installed");
		return;
	}
	if (dir == NULL || mkdir_p(dir, 0700) < 0) {
		snprintf(a->reason, sizeof a->reason, "KVM probe: no cache directory: %.200s",
		    dir == NULL ? e.msg : strerror(errno));
		return;
	}
	con = xasprintf("%s/kvm-probe.%d.console", dir, (int)getpid());
	errf = xasprintf("%s/kvm-probe.%d.err", dir, (int)getpid());
	serial = xasprintf("file:%s", con);
	char *argv[] = { "qemu-system-x86_64", "-M", "microvm", "-accel", "kvm", "-cpu", "host",
	    "-m", "256", "-smp", "1", "-nodefaults", "-no-user-config", "-display", "none",
	    "-no-reboot", "-kernel", (char *)kernel, "-append", "console=ttyS0 panic=-1",
	    "-serial", serial, NULL };
	if ((pid = fork()) < 0) {
		snprintf(a->reason, sizeof a->reason, "cannot fork the KVM probe: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		int err = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (null < 0 || err < 0 || dup2(null, 0) < 0 || dup2(err, 1) < 0 || dup2(err, 2) < 0)
			_exit(127);
		syscall(SYS_close_range, 3, ~0U, 0);
		setpgid(0, 0);
		execv(prog, argv);
		_exit(127);
	}
	for (;;) {
		int64_t t = now_ms() - t0;
		if ((r = waitpid(pid, &status, WNOHANG)) == pid) {
			exited = 1;
			break;
		}
		if (r < 0 && errno != EINTR)
			break;
		if (!seen) {
			free(text);
			text = read_file(con, 1 << 20, NULL);
			if (text != NULL && strstr(text, KERNEL_BANNER) != NULL)
				seen = t > 0 ? t : 1;
		}
		if ((!seen && t >= BOOT_QUIET_MS) || t >= BOOT_MAX_MS)
			break;
		poll(NULL, 0, 20);
	}
	a->boot_ms = now_ms() - t0;
	free(text);
	text = read_file(con, 1 << 20, NULL);
	if (exited && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    text != NULL && strstr(text, KERNEL_BANNER) != NULL) {
		a->kvm = 1;
	} else if (exited) {
		/* QEMU's first complaint names the cause ("failed to set MSR ..."). */
		file_line(errf, 1, line, sizeof line);
		snprintf(a->reason, sizeof a->reason, "QEMU cannot run a guest under KVM here: %.180s",
		    line[0] ? line : WIFSIGNALED(status) ? "it was killed by a signal" : "it exited without booting");
	} else {
		kill_boot(pid);
		if (!seen) {
			snprintf(a->reason, sizeof a->reason, "KVM hangs here: a guest kernel under KVM "
			    "printed nothing on its console within %d s (nested virtualisation?)",
			    BOOT_QUIET_MS / 1000);
		} else {
			file_line(con, 0, line, sizeof line);
			snprintf(a->reason, sizeof a->reason, "KVM hangs here: a guest kernel under KVM "
			    "stopped within %d s after \"%.100s\"", BOOT_MAX_MS / 1000, line);
		}
	}
	unlink(con);
	unlink(errf);
}

static void
boot_id(char *out, size_t len)
{
	_cleanup_free_ char *b = read_file("/proc/sys/kernel/random/boot_id", 128, NULL);

	snprintf(out, len, "%s", b != NULL ? b : "unknown");
	out[strcspn(out, "\n")] = '\0';
}

/* The kernel the real boot runs: image's (a name, or a directory with a
 * vmlinuz), else the default image's, else any complete image's.  NULL when
 * there is none. */
static char *
probe_kernel(const char *image)
{
	struct sbx_err e;
	_cleanup_free_ char *dir = NULL;
	cJSON *all, *it;

	if (image != NULL && image[0] == '/')
		dir = xstrdup(image);
	else if (image != NULL)
		dir = image_dir(image, &e);
	if (dir == NULL)
		dir = image_dir(IMAGE_DEFAULT_NAME, &e);
	if (dir == NULL && (all = image_list(&e)) != NULL) {
		cJSON_ArrayForEach(it, all) {
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(it, "dir");
			if (cJSON_IsString(d) && cJSON_GetObjectItemCaseSensitive(it, "error") == NULL) {
				dir = xstrdup(d->valuestring);
				break;
			}
		}
		cJSON_Delete(all);
	}
	if (dir == NULL)
		return NULL;
	char *k = xasprintf("%s/vmlinuz", dir);
	if (access(k, R_OK) == 0)
		return k;
	free(k);
	return NULL;
}

/* Keep the verdict (atomically: concurrent probes each rename their own). */
static void
remember(const struct qemu_accel *a, const char *kernel)
{
	struct sbx_err e;
	_cleanup_free_ char *path = paths_file(PATHS_CACHE, "kvm-probe", 1, &e);

	if (path == NULL) {
		log_warnx("cannot remember the KVM verdict: %s", e.msg);
		return;
	}
	_cleanup_free_ char *text = xasprintf("boot_id=%s\nmethod=%s\nresult=%s\nreason=%s\n"
	    "kernel=%s\nboot_ms=%lld\ndecided_at=%lld\n", a->boot_id, VERDICT_METHOD,
	    a->kvm ? "kvm" : "tcg", a->reason, kernel != NULL ? kernel : "", (long long)a->boot_ms,
	    (long long)(wall_ms() / 1000));
	_cleanup_free_ char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0) {
		log_warn("cannot remember the KVM verdict in %s", path);
		unlink(tmp);
	}
}

void
qemu_accel_probe(struct qemu_accel *a, const char *image)
{
	_cleanup_free_ char *kernel = NULL;

	memset(a, 0, sizeof *a);
	boot_id(a->boot_id, sizeof a->boot_id);
	if (ioctl_stage(a) == 0) {
		if ((kernel = probe_kernel(image)) == NULL) {
			/* Nothing to boot: no verdict yet, and none kept. */
			a->undecided = 1;
			snprintf(a->reason, sizeof a->reason, "KVM not tried yet: the verdict comes from "
			    "booting a guest under KVM, and there is no image to boot");
			return;
		}
		boot_stage(a, kernel);
	}
	remember(a, kernel);
}

/* Where the value of "\nkey=" starts in text (it ends at a newline). */
static char *
field(char *text, const char *key)
{
	_cleanup_free_ char *k = xasprintf("\n%s=", key);
	char *p = strstr(text, k);

	return p != NULL ? p + strlen(k) : NULL;
}

/* The kept verdict of this host boot into a; 0, or -1 when there is none. */
static int
kept_verdict(struct qemu_accel *a)
{
	struct sbx_err e;
	_cleanup_free_ char *path = paths_file(PATHS_CACHE, "kvm-probe", 0, &e), *text = NULL;
	char want[96], *method, *res, *why;

	snprintf(want, sizeof want, "boot_id=%s\n", a->boot_id);
	if (path == NULL || (text = read_file(path, 4096, NULL)) == NULL ||
	    strncmp(text, want, strlen(want)) != 0)
		return -1;
	method = field(text, "method");
	res = field(text, "result");
	why = field(text, "reason");
	if (method == NULL || strncmp(method, VERDICT_METHOD "\n", strlen(VERDICT_METHOD) + 1) != 0 ||
	    res == NULL || (strncmp(res, "kvm\n", 4) != 0 && strncmp(res, "tcg\n", 4) != 0))
		return -1;
	a->cached = 1;
	a->kvm = res[0] == 'k';
	if (!a->kvm && why != NULL)
		snprintf(a->reason, sizeof a->reason, "%.*s", (int)strcspn(why, "\n"), why);
	return 0;
}

void
qemu_accel_choose(struct qemu_accel *a, const char *image)
{
	const char *force = getenv("SBXTOP_QEMU_ACCEL");
	struct sbx_err e;
	_cleanup_free_ char *lock = NULL;
	_cleanup_close_ int fd = -1;

	memset(a, 0, sizeof *a);
	if (force != NULL && strcmp(force, "kvm") == 0) {
		a->kvm = a->forced = 1;
		return;
	}
	if (force != NULL && strcmp(force, "tcg") == 0) {
		a->forced = 1;
		snprintf(a->reason, sizeof a->reason, "SBXTOP_QEMU_ACCEL=tcg");
		return;
	}
	boot_id(a->boot_id, sizeof a->boot_id);
	if (kept_verdict(a) == 0)
		return;
	/* One real boot at a time: a burst of first creates waits for the first
	 * one's verdict instead of booting a probe guest each. */
	if ((lock = paths_file(PATHS_CACHE, "kvm-probe.lock", 1, &e)) != NULL &&
	    (fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) >= 0 && flock(fd, LOCK_EX) == 0 &&
	    kept_verdict(a) == 0)
		return;
	qemu_accel_probe(a, image);
}
