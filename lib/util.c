/* Small helpers shared by sbxtop and sbxtop-agent. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lib/utf8.h"
#include "lib/util.h"

static void (*fatal_hook)(void);

void cleanup_freep(void *p) { free(*(void **)p); }

void
cleanup_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

void
fatal_set_hook(void (*hook)(void))
{
	fatal_hook = hook;
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	if (fatal_hook != NULL)
		fatal_hook();
	va_start(ap, fmt);
	fputs("fatal: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		fatal("out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		fatal("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		fatal("out of memory (%zu bytes)", n);
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
	return s;
}

static int64_t
clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }
int64_t wall_ms(void) { return clock_ms(CLOCK_REALTIME); }

int
write_line(int fd, const char *msg, size_t len)
{
	struct iovec iov[2] = { { (void *)msg, len }, { (void *)"\n", 1 } };
	size_t left = len + 1;

	while (left > 0) {
		ssize_t n = writev(fd, iov, 2);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		left -= (size_t)n;
		for (int i = 0; i < 2 && n > 0; i++) {
			size_t k = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			n -= (ssize_t)k;
		}
	}
	return 0;
}

int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
poll_in_until(int fd, int64_t end_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int rc;

	do {
		int64_t left = end_ms - now_ms();
		rc = poll(&p, 1, left > 0 ? (int)left : 0);
	} while (rc < 0 && errno == EINTR);
	return rc;
}

void
close_except(int a, int b)
{
	int keep[2] = { a < b ? a : b, a < b ? b : a };
	unsigned from = 3;

	/* The gaps below, between and above the two kept. */
	for (int i = 0; i < 2; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned)keep[i] > from)
			close_range(from, (unsigned)keep[i] - 1, 0);
		from = (unsigned)keep[i] + 1;
	}
	close_range(from, ~0u, 0);
}

char *
read_file(const char *path, size_t max, size_t *lenp)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = xmalloc(cap + 1);
	for (;;) {
		if (len == cap) {
			if (cap >= max) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			cap = cap * 2 > max ? max : cap * 2;
			buf = xrealloc(buf, cap + 1);
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			free(buf);
			errno = saved;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return buf;
}

int
set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);
	return fl < 0 ? -1 : fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

int
set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int
ct_streq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	/* Walk the expected string's length whatever the input, so timing does not
	 * tell how many leading bytes matched. */
	for (size_t i = 0; i < lb; i++)
		diff |= (unsigned char)((i < la ? a[i] : 0) ^ b[i]);
	return diff == 0;
}

int
open_regular_nofollow(const char *path)
{
	/* O_NONBLOCK: opening a FIFO put in the file's place must not hang. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

char *
tail_read_fd(int fd, size_t max, off_t *from, size_t *len)
{
	struct stat st;
	char *b;
	size_t got = 0;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return NULL;
	*from = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
	b = xmalloc(max + 1);
	while (got < max && (n = pread(fd, b + got, max - got, *from + (off_t)got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			free(b);
			errno = saved;
			return NULL;
		}
		got += (size_t)n;
	}
	b[got] = '\0';
	*len = got;
	return b;
}

char *
tail_read(const char *path, size_t max, size_t *len)
{
	int fd = open_regular_nofollow(path), saved;
	char *b, *nl;
	off_t from;

	if (fd < 0)
		return NULL;
	b = tail_read_fd(fd, max, &from, len);
	saved = errno;
	close(fd);
	errno = saved;
	if (b != NULL && from > 0 && (nl = memchr(b, '\n', *len)) != NULL) {
		*len -= (size_t)(nl + 1 - b);
		memmove(b, nl + 1, *len + 1);
	}
	return b;
}

void
tail_text(const char *path, char *out, size_t max)
{
	int fd = open_regular_nofollow(path), saved = errno;
	size_t n = 0, el, from = 0;
	off_t at;
	char *raw, *esc;

	if (max == 0)
		return;
	out[0] = '\0';
	if (fd < 0 && (saved == ELOOP || saved == EINVAL)) {
		snprintf(out, max, "(not a regular file: not read)");
		return;
	}
	if (fd < 0 || max < 2)
		goto done;
	if ((raw = tail_read_fd(fd, max - 1, &at, &n)) == NULL)
		goto done;
	while (n > 0 && (raw[n - 1] == '\n' || raw[n - 1] == '\r'))
		n--;
	for (size_t i = 0; i < n; i++)
		if (raw[i] == '\n')
			raw[i] = '|';
		else if (raw[i] == '\r')
			raw[i] = ' ';
	esc = xmalloc(4 * n + 1);
	el = utf8_escape_controls(raw, n, esc, 4 * n + 1, 0);
	/* The last max-1 bytes of that, from a character's start. */
	if (el > max - 1)
		from = el - (max - 1);
	while (from < el && ((unsigned char)esc[from] & 0xc0) == 0x80)
		from++;
	memcpy(out, esc + from, el - from + 1);
	free(esc);
	free(raw);
done:
	if (fd >= 0)
		close(fd);
}

int
tail_fd(int fd, int out, int follow, volatile int *stop, const struct tail_ops *ops,
    char *failed)
{
	/* What a sandbox wrote reaches a terminal: every control but newline and
	 * tab is escaped, and a character cut by a read waits for its end. */
	char raw[16384], esc[4 * sizeof raw + 1];
	size_t have = 0;
	int64_t next_refresh = now_ms() + 500, next_check = now_ms() + 1000;

	for (;;) {
		ssize_t n = read(fd, raw + have, sizeof raw - have);
		if (n < 0 && errno == EINTR) {
			if (stop && *stop)
				return 0;
			continue;
		}
		if (n < 0) {
			*failed = 'r';
			return -1;
		}
		if (n > 0 || (have > 0 && !follow)) {
			size_t all = have + (size_t)n;
			size_t k = n > 0 ? utf8_complete_prefix(raw, all) : all;
			size_t el = utf8_escape_controls(raw, k, esc, sizeof esc, 1);
			memmove(raw, raw + k, all - k);
			have = all - k;
			if (write_all(out, esc, el) < 0) {
				*failed = 'w';
				return errno == EPIPE ? 0 : -1;
			}
			continue;
		}
		if (!follow || (stop && *stop))
			return 0;
		if (now_ms() >= next_refresh) {
			struct stat st;
			if (ops->refresh)
				ops->refresh(ops->arg);
			if (fstat(fd, &st) == 0 && st.st_size < lseek(fd, 0, SEEK_CUR))
				(void)lseek(fd, 0, SEEK_SET);
			next_refresh = now_ms() + 500;
			continue;
		}
		if (now_ms() >= next_check) {
			if (ops->gone(ops->arg))
				return 0;
			next_check = now_ms() + 1000;
		}
		poll(NULL, 0, 200);
	}
}

void
hex_encode(char *out, const unsigned char *in, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		*out++ = hex[in[i] >> 4];
		*out++ = hex[in[i] & 15];
	}
	*out = '\0';
}

void
random_hex(char *out, size_t nbytes)
{
	unsigned char r[64];

	while (nbytes > 0) {
		size_t n = nbytes < sizeof r ? nbytes : sizeof r;

		if (getrandom(r, n, 0) != (ssize_t)n)
			fatal("getrandom: %s", strerror(errno));
		hex_encode(out, r, n);
		out += 2 * n;
		nbytes -= n;
	}
	*out = '\0';
	explicit_bzero(r, sizeof r);
}

int
mkdir_exact(const char *path, mode_t mode)
{
	return mkdirat_exact(AT_FDCWD, path, mode);
}

int
mkdirat_exact(int dfd, const char *path, mode_t mode)
{
	if (mkdirat(dfd, path, mode) < 0)
		return -1;
	return fchmodat(dfd, path, mode, 0);
}

int
mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = NULL;

	/* Mostly it is there already: one call, not one per component. */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -1;
	p = xstrdup(path);
	for (char *s = p + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

off_t
copy_range(int in, off_t in_off, int out, off_t out_off, off_t len)
{
	off_t done = 0;
	int kernel = 1;

	while (done < len) {
		size_t want = (size_t)(len - done < (1 << 30) ? len - done : (1 << 30));
		ssize_t n;
		if (kernel) {
			loff_t a = in_off + done, b = out_off + done;
			n = copy_file_range(in, &a, out, &b, want, 0);
			if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
			    errno == EOPNOTSUPP)) {
				kernel = 0;	/* from here on, by hand */
				continue;
			}
		} else {
			char buf[65536];
			n = pread(in, buf, want < sizeof buf ? want : sizeof buf, in_off + done);
			for (ssize_t w = 0, k; n > 0 && w < n; w += k) {
				k = pwrite(out, buf + w, (size_t)(n - w), out_off + done + w);
				if (k < 0 && errno == EINTR)
					k = 0;
				else if (k <= 0)
					return k == 0 ? (errno = EIO, -1) : -1;
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;		/* in ended */
		done += n;
	}
	return done;
}
