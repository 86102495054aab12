/* Small helpers shared by sbxtop and sbxtop-agent: scoped cleanup, allocation that
 * cannot fail, time, and file descriptor chores. */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <unistd.h>

#define SBX_VERSION "0.1.0"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UNUSED __attribute__((unused))

/* Scoped cleanup, as bubblewrap and crun do: every early return frees. */
void cleanup_freep(void *p);
void cleanup_closep(int *fd);
#define _cleanup_free_  __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))

/* Take ownership of *pp, leaving NULL behind so cleanup does nothing. */
#define steal_pointer(pp) ({ __typeof__(*(pp)) _p = *(pp); *(pp) = NULL; _p; })
#define steal_fd(fdp) ({ int _fd = *(fdp); *(fdp) = -1; _fd; })

/* Allocation: abort with a message on out-of-memory, the one fatal case. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a message and abort: out-of-memory and broken invariants only.  A front end
 * that owns the terminal registers a hook to restore it first. */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatal_set_hook(void (*hook)(void));

/* Monotonic and wall clock in milliseconds. */
int64_t now_ms(void);
int64_t wall_ms(void);

/* Write all of buf, retrying on EINTR and short writes; -1 with errno on error. */
int write_all(int fd, const void *buf, size_t len);
/* msg and a newline, whole, in one writev where the kernel takes it (a line
 * of a newline-delimited protocol); -1 with errno. */
int write_line(int fd, const char *msg, size_t len);
/* Wait until fd is readable (or hung up) or the time end_ms of now_ms()'s
 * clock passes, through EINTR: poll's answer (> 0 readable, 0 timed out). */
int poll_in_until(int fd, int64_t end_ms);
/* Close every descriptor from 3 up but a and b (either may be -1): a forked
 * child that does not exec holds nothing of its parent's, a lock's open file
 * among them. */
void close_except(int a, int b);
/* Read a whole file up to max bytes into a NUL-terminated buffer; NULL with errno
 * (EFBIG when larger than max). */
char *read_file(const char *path, size_t max, size_t *len);
int set_cloexec(int fd);
int set_nonblock(int fd, int on);

/* Constant-time comparison of two NUL-terminated strings (length leaks, content
 * does not). */
int ct_streq(const char *a, const char *b);

/* The n bytes at in as 2*n lowercase hex digits and a NUL at out. */
void hex_encode(char *out, const unsigned char *in, size_t n);
/* nbytes from the kernel's CSPRNG as 2*nbytes lowercase hex digits and a NUL in
 * out (which holds 2*nbytes+1): secrets, tokens, session ids. */
void random_hex(char *out, size_t nbytes);

/* Open path read-only if it is a regular file reached without following a
 * symlink in its last component (a sandbox may replace a log it writes with a
 * link to a host file, or a FIFO); -1 with errno (ELOOP, EINVAL: not a regular
 * file) otherwise. */
int open_regular_nofollow(const char *path);

/* The one reader of a log's tail.  tail_read_fd: the last max bytes of the
 * regular file fd, read whole (EINTR retried), NUL-terminated: *len bytes that
 * start at *from in the file; NULL with errno on a read error. */
char *tail_read_fd(int fd, size_t max, off_t *from, size_t *len);
/* The same of the file at path, opened as open_regular_nofollow does (a link
 * or a FIFO put there is not read: ELOOP or EINVAL), from the start of its
 * first whole line when the tail starts inside the file and holds one; NULL
 * with errno (ENOENT: no log yet). */
char *tail_read(const char *path, size_t max, size_t *len);
/* The end of a log a sandbox or a guest wrote, for an error message: at most
 * max-1 bytes and a NUL into out, one line (newlines as "|", carriage returns
 * as spaces, every other control escaped), cut at a character's start; "" when
 * there is no log. */
void tail_text(const char *path, char *out, size_t max);

/* What tail_fd asks of the one following a file. */
struct tail_ops {
	/* At the end, every half second: bring the file up to date when it is a
	 * copy kept from elsewhere (may be NULL). */
	void	(*refresh)(void *arg);
	/* At the end, once a second: 1 when its writer is gone for good. */
	int	(*gone)(void *arg);
	void	 *arg;
};

/* Copy what fd holds to out, every control character but newline and tab
 * escaped as utf8_escape_controls does (a log is the sandbox's text, out a
 * terminal); with follow, keep copying what is appended (a
 * file that shrank is read again from its start) until *stop or ops->gone.
 * 0 at the end or when out is closed (EPIPE); -1 with errno, and *failed set
 * to 'r' (reading fd) or 'w' (writing out). */
int tail_fd(int fd, int out, int follow, volatile int *stop, const struct tail_ops *ops,
    char *failed);

/* mkdir(2) and mkdirat(2) with exactly mode, whatever the umask: the umask is
 * process-wide, and a directory a sandbox's user must search cannot depend on
 * what the creating process (or another of its threads) set. */
int mkdir_exact(const char *path, mode_t mode);
int mkdirat_exact(int dfd, const char *path, mode_t mode);

/* mkdir -p with mode for each created component; 0 or -1 with errno. */
int mkdir_p(const char *path, mode_t mode);

/* Copy up to len bytes of in at in_off to out at out_off (file positions
 * untouched): copy_file_range, and read and write where the kernel will not
 * (EXDEV: two filesystems, ENOSYS, EINVAL, EOPNOTSUPP).  The bytes copied,
 * fewer than len when in ends first; -1 with errno. */
off_t copy_range(int in, off_t in_off, int out, off_t out_off, off_t len);

#endif
