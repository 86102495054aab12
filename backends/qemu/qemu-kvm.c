/* Is KVM usable here?  /dev/kvm existing is not enough: under nested
 * virtualisation KVM_RUN may hang forever, or QEMU may fail to set up a vCPU
 * (MSRs the outer hypervisor refuses).  So the probe has two steps: a child
 * process runs a guest of one instruction (hlt) through the raw KVM ioctls and
 * is killed when it has not answered within a short timeout; then QEMU itself
 * runs a 5-byte firmware under -accel kvm -cpu host, exactly as sandboxes will,
 * which writes to the isa-debug-exit port (QEMU exits with status 3).  The
 * answer is kept in
 * $XDG_CACHE_HOME/sbxtop/kvm-probe with the host's boot id, so it is asked once
 * per boot. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/log.h"
#include "core/paths.h"
#include "backends/qemu/qemu.h"
#include "lib/util.h"

#define PROBE_TIMEOUT_MS	3000
#define GUEST_ADDR		0x1000
#define PROBE_FW_SIZE		65536

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

/* Step two: QEMU under KVM as sandboxes run it, on firmware that only says
 * "done" through isa-debug-exit.  Clears a->kvm with the reason on failure. */
static void
qemu_stage(struct qemu_accel *a)
{
	struct sbx_err e;
	_cleanup_free_ char *fw = paths_file(PATHS_CACHE, "kvm-probe.bin", 1, &e);
	static const unsigned char code[] = { 0xb0, 0x01, 0xe6, 0xf4, 0xf4 };	/* mov al,1; out 0xf4,al; hlt */
	unsigned char *img;
	int rc, st;

	if (fw == NULL) {
		snprintf(a->reason, sizeof a->reason, "KVM probe: %.200s", e.msg);
		a->kvm = 0;
		return;
	}
	/* 64 KiB of hlt, the reset vector (16 bytes from the end) runs code. */
	img = xmalloc(PROBE_FW_SIZE);
	memset(img, 0xf4, PROBE_FW_SIZE);
	memcpy(img + PROBE_FW_SIZE - 16, code, sizeof code);
	{
		_cleanup_close_ int fd = open(fw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		rc = fd < 0 || write_all(fd, img, PROBE_FW_SIZE) < 0 ? -1 : 0;
	}
	free(img);
	if (rc < 0) {
		snprintf(a->reason, sizeof a->reason, "KVM probe: cannot write %s", fw);
		a->kvm = 0;
		return;
	}
	char *argv[] = { "qemu-system-x86_64", "-M", "microvm", "-accel", "kvm", "-cpu", "host",
	    "-nodefaults", "-no-user-config", "-display", "none", "-bios", fw,
	    "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", NULL };
	rc = qemu_run_status(argv, NULL, PROBE_TIMEOUT_MS + 2000, NULL, &st, &e);
	unlink(fw);
	if (rc < 0 && st == 3)
		return;		/* the firmware's "done" */
	a->kvm = 0;
	snprintf(a->reason, sizeof a->reason, "/dev/kvm works but QEMU cannot run a guest under KVM: %.180s",
	    rc == 0 ? "it exited without running the firmware" : e.msg);
}

static void
boot_id(char *out, size_t len)
{
	_cleanup_free_ char *b = read_file("/proc/sys/kernel/random/boot_id", 128, NULL);

	snprintf(out, len, "%s", b != NULL ? b : "unknown");
	out[strcspn(out, "\n")] = '\0';
}

void
qemu_accel_probe(struct qemu_accel *a)
{
	struct sbx_err e;
	_cleanup_free_ char *path = NULL;
	char bid[64];
	int status = 0;
	pid_t pid, r = 0;

	memset(a, 0, sizeof *a);
	if (access("/dev/kvm", F_OK) < 0) {
		snprintf(a->reason, sizeof a->reason, "no /dev/kvm on this host");
	} else if ((pid = fork()) < 0) {
		snprintf(a->reason, sizeof a->reason, "cannot fork the KVM probe: %s", strerror(errno));
	} else if (pid == 0) {
		probe_child();
	} else {
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
			snprintf(a->reason, sizeof a->reason, "/dev/kvm exists but KVM_RUN did not "
			    "return within %d ms (nested virtualisation that hangs?)", PROBE_TIMEOUT_MS);
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == P_OK) {
			a->kvm = 1;
		} else if (WIFEXITED(status)) {
			snprintf(a->reason, sizeof a->reason, "/dev/kvm is not usable: %s",
			    probe_step(WEXITSTATUS(status)));
		} else {
			snprintf(a->reason, sizeof a->reason, "the KVM probe died of signal %d",
			    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		}
	}
	if (a->kvm)
		qemu_stage(a);
	boot_id(bid, sizeof bid);
	if ((path = paths_file(PATHS_CACHE, "kvm-probe", 1, &e)) != NULL) {
		_cleanup_free_ char *text = xasprintf("boot_id=%s\nresult=%s\nreason=%s\n", bid,
		    a->kvm ? "kvm" : "tcg", a->reason);
		_cleanup_free_ char *tmp = xasprintf("%s.tmp", path);
		_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0)
			log_warn("cannot remember the KVM probe in %s", path);
	}
}

void
qemu_accel_choose(struct qemu_accel *a)
{
	const char *force = getenv("SBXTOP_QEMU_ACCEL");
	struct sbx_err e;
	_cleanup_free_ char *path = NULL, *text = NULL;
	char bid[64], want[80];

	memset(a, 0, sizeof *a);
	if (force != NULL && strcmp(force, "kvm") == 0) {
		a->kvm = 1;
		return;
	}
	if (force != NULL && strcmp(force, "tcg") == 0) {
		snprintf(a->reason, sizeof a->reason, "SBXTOP_QEMU_ACCEL=tcg");
		return;
	}
	boot_id(bid, sizeof bid);
	snprintf(want, sizeof want, "boot_id=%s\n", bid);
	if ((path = paths_file(PATHS_CACHE, "kvm-probe", 0, &e)) != NULL &&
	    (text = read_file(path, 4096, NULL)) != NULL && strncmp(text, want, strlen(want)) == 0) {
		char *res = strstr(text, "\nresult="), *why = strstr(text, "\nreason=");
		if (res != NULL && strncmp(res + 8, "kvm\n", 4) == 0) {
			a->kvm = a->cached = 1;
			return;
		}
		if (res != NULL && strncmp(res + 8, "tcg\n", 4) == 0) {
			a->cached = 1;
			if (why != NULL) {
				why += 8;
				why[strcspn(why, "\n")] = '\0';
				snprintf(a->reason, sizeof a->reason, "%s", why);
			}
			return;
		}
	}
	qemu_accel_probe(a);
}
