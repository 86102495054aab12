/* Internals of the qemu backend (backends/qemu/backend-qemu.c), split by concern:
 * qemu-kvm.c (is KVM really usable here: a probe run once and remembered),
 * qemu-run.c (running helper programs: qemu-img, mke2fs, apt-get, dpkg-deb; the
 * file chores: removing trees, private files, links) and
 * the QMP client.  Images are backends/qemu/qemu-image.h.  Only backends/qemu/ calls
 * these. */
#ifndef SBX_QEMU_H
#define SBX_QEMU_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/err.h"

/* What runs the guests: hardware virtualisation or software emulation. */
struct qemu_accel {
	int	kvm;		/* 1: -accel kvm, 0: -accel tcg */
	int	cached;		/* 1 when the verdict came from the cache file */
	int	forced;		/* 1 when $SBXTOP_QEMU_ACCEL chose */
	int	undecided;	/* 1: no image to boot yet, so KVM was not tried (TCG) */
	int64_t	boot_ms;	/* how long the real boot took (0: none ran) */
	char	boot_id[64];	/* the host boot the verdict belongs to */
	char	reason[256];	/* why TCG (empty under KVM) */
};

/* The speed difference, said wherever TCG is chosen. */
#define QEMU_TCG_NOTE "TCG software emulation: guests run about 10-50x slower than under " \
	"KVM (boot ~10-20 s instead of under 1 s)"

/* Decide KVM or TCG.  $SBXTOP_QEMU_ACCEL=kvm|tcg forces it; otherwise the
 * verdict of this host boot kept in $XDG_CACHE_HOME/sbxtop/kvm-probe, or,
 * when there is none, qemu_accel_probe's.  image (an image name or a
 * directory with a vmlinuz; NULL: the default image) is the kernel a probe
 * boots. */
void qemu_accel_choose(struct qemu_accel *a, const char *image);
/* Decide now, ignoring and rewriting the cache: the raw KVM ioctls (a
 * one-instruction guest in a child killed after 3 s), then a real boot of
 * image's kernel under KVM, killed when it prints nothing within 6 s. */
void qemu_accel_probe(struct qemu_accel *a, const char *image);

/* Run argv (argv[0] searched in PATH) with stdin from /dev/null, stdout and
 * stderr to a temporary buffer; 0 when it exits 0 within timeout_ms, else -1
 * with e naming the program and the last line of its output.  cwd may be
 * NULL.  When out is not NULL it gets stdout+stderr (caller frees). */
int qemu_run(char *const argv[], const char *cwd, int timeout_ms, char **out,
    struct sbx_err *e);
/* qemu_run that also tells how it failed: *exit_status (may be NULL) gets the
 * exit status (-1 when it did not exit by itself: not started, killed, timed
 * out), and *out (may be NULL) the output also when it exited non-zero. */
int qemu_run_status(char *const argv[], const char *cwd, int timeout_ms, char **out,
    int *exit_status, struct sbx_err *e);
/* The program's absolute path found in PATH (caller frees), or NULL. */
char *qemu_which(const char *prog);

/* Remove a directory tree (no symlinks followed); 0 or -1 with e. */
int qemu_rmtree(const char *path, struct sbx_err *e);
/* The last max-1 bytes of a file, newlines turned into " | ". */
void qemu_file_tail(const char *path, char *out, size_t max);
/* Write a private (0600) file, no symlink followed; 0 or -1 with e. */
int qemu_write_file(const char *path, const void *data, size_t len, struct sbx_err *e);
/* Hard link from to to, or copy it across filesystems; 0 or -1 with e. */
int qemu_link_or_copy(const char *from, const char *to, struct sbx_err *e);

/* One QMP command on the socket at path, within timeout_ms: sends
 * qmp_capabilities, then {"execute": cmd}; *ret (when not NULL) gets the
 * "return" member printed as JSON (caller frees). */
int qemu_qmp(const char *path, const char *cmd, const char *args_json, int timeout_ms,
    char **ret, struct sbx_err *e);

#endif
