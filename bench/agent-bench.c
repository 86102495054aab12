/* Agent benchmarks, each printed beside a peer measured in the same run:
 *   exec round trip of `true` over the unix socket vs posix_spawn of bash -c true
 *   streamed output throughput vs the same command into a plain pipe
 *   (--start) the agent's start to ready vs its loading alone and /bin/true
 * Usage: agent-bench SOCKET SECRET [ITERATIONS] [STREAM_MB]
 *        agent-bench --start BUNDLE DIR [ITERATIONS] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void
percentiles(double *v, int n, double *p50, double *p99)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	*p50 = v[n / 2];
	*p99 = v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
}

static int
dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static void
send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k <= 0) {
			perror("write");
			exit(1);
		}
		p += k;
		n -= (size_t)k;
	}
}

/* One keep-alive request with a Content-Length response; returns the status. */
static int
roundtrip(int fd, const char *req, size_t reqlen, char *buf, size_t cap)
{
	size_t have = 0;
	char *body;
	long clen;

	send_all(fd, req, reqlen);
	for (;;) {
		ssize_t k = read(fd, buf + have, cap - 1 - have);
		if (k <= 0) {
			fprintf(stderr, "agent closed the connection\n");
			exit(1);
		}
		have += (size_t)k;
		buf[have] = '\0';
		if ((body = strstr(buf, "\r\n\r\n")) == NULL)
			continue;
		char *cl = strcasestr(buf, "Content-Length:");
		clen = cl ? strtol(cl + 15, NULL, 10) : 0;
		if ((size_t)(body + 4 - buf) + (size_t)clen <= have)
			break;
	}
	return atoi(buf + 9);
}

static void
bench_exec(const char *sock, const char *secret, int n)
{
	const char *body = "{\"command\":\"true\"}";
	char req[1024], buf[65536];
	double *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
	double p50a, p99a, p50b, p99b;
	int fd = dial(sock);
	int len = snprintf(req, sizeof req,
	    "POST /v1/exec HTTP/1.1\r\nHost: a\r\nX-Sandbox-Secret: %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    secret, strlen(body), body);

	for (int i = 0; i < n; i++) {
		double t = now_us();
		if (roundtrip(fd, req, (size_t)len, buf, sizeof buf) != 200) {
			fprintf(stderr, "exec failed: %s\n", buf);
			exit(1);
		}
		a[i] = now_us() - t;

		char *argv[] = { "bash", "-c", "true", NULL };
		pid_t pid;
		int st;
		t = now_us();
		if (posix_spawn(&pid, "/bin/bash", NULL, NULL, argv, environ) != 0) {
			perror("posix_spawn");
			exit(1);
		}
		waitpid(pid, &st, 0);
		b[i] = now_us() - t;
	}
	close(fd);
	percentiles(a, n, &p50a, &p99a);
	percentiles(b, n, &p50b, &p99b);
	printf("%-44s %10s %10s\n", "exec round trip (bash -c true)", "p50 ms", "p99 ms");
	printf("  %-42s %10.3f %10.3f\n", "sbxtop-agent POST /v1/exec (unix socket)", p50a / 1e3, p99a / 1e3);
	printf("  %-42s %10.3f %10.3f\n", "peer: posix_spawn + waitpid", p50b / 1e3, p99b / 1e3);
	printf("  %-42s %10.3f %10s   (target < 1 ms)\n", "agent overhead at p50", (p50a - p50b) / 1e3, "");
	free(a);
	free(b);
}

static void
bench_stream(const char *sock, const char *secret, long mb)
{
	char body[256], req[1024];
	static char buf[1 << 20];
	long long total = 0;
	double t;
	int fd = dial(sock), len;

	snprintf(body, sizeof body,
	    "{\"command\":\"head -c %ld /dev/zero | tr '\\\\0' x\"}",
	    mb * 1000000);
	len = snprintf(req, sizeof req,
	    "POST /v1/exec HTTP/1.1\r\nHost: a\r\nX-Sandbox-Secret: %s\r\nConnection: close\r\n"
	    "Accept: application/x-ndjson\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s", secret, strlen(body), body);
	t = now_us();
	send_all(fd, req, (size_t)len);
	for (ssize_t k; (k = read(fd, buf, sizeof buf)) > 0;)
		total += k;
	double agent_s = (now_us() - t) / 1e6;
	close(fd);

	/* The peer: the same producer into a pipe read by this process. */
	char cmd[128];
	snprintf(cmd, sizeof cmd, "head -c %ld /dev/zero | tr '\\0' x", mb * 1000000);
	t = now_us();
	FILE *p = popen(cmd, "r");
	long long ptotal = 0;
	for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;)
		ptotal += (long long)k;
	pclose(p);
	double pipe_s = (now_us() - t) / 1e6;

	printf("%-44s %10s %10s\n", "streamed output", "MB", "MB/s");
	printf("  %-42s %10.0f %10.0f   (target >= 300 MB/s)\n",
	    "sbxtop-agent NDJSON stream (unix socket)", mb * 1.0, mb / agent_s);
	printf("  %-42s %10.0f %10.0f\n", "peer: the same command into a pipe",
	    ptotal / 1e6, ptotal / 1e6 / pipe_s);
	if (total < mb * 1000000LL)
		printf("  warning: only %lld bytes came back\n", total);
}

static void
report(const char *label, double *v, int n, const char *note)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	printf("  %-42s %10.3f %10.3f%s\n", label, v[n / 2] / 1e3,
	    v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1e3, note);
}

/* Spawn argv with stdout and stderr on /dev/null and fd 3 as ready_w. */
static pid_t
spawn(char **argv, int ready_w)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (ready_w >= 0)
		posix_spawn_file_actions_adddup2(&fa, ready_w, 3);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
		perror(argv[0]);
		exit(1);
	}
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* The agent's start, from posix_spawn to its "ready" line (every listener up),
 * run as the ns backend runs it: the bundle's loader on the bundle's libraries.
 * Beside it, in the same rounds: the same binary only printing its version (the
 * loader and the libraries, nothing of the agent's own), and /bin/true. */
static int
bench_start(int argc, char **argv)
{
	char loader[512], libdir[512], bin[512], sock[600], secret[600], ws[600], lsock[640];
	int n = argc > 4 ? atoi(argv[4]) : 200;
	double *start, *version, *truth;
	FILE *f;

	if (argc < 4 || n < 1) {
		fprintf(stderr, "usage: agent-bench --start BUNDLE DIR [ITERATIONS]\n");
		return 2;
	}
	snprintf(loader, sizeof loader, "%s/lib/ld-linux-x86-64.so.2", argv[2]);
	if (access(loader, X_OK) != 0)
		snprintf(loader, sizeof loader, "%s/lib/ld-linux-aarch64.so.1", argv[2]);
	snprintf(libdir, sizeof libdir, "%s/lib", argv[2]);
	snprintf(bin, sizeof bin, "%s/bin/sbxtop-agent", argv[2]);
	snprintf(sock, sizeof sock, "%s/start.sock", argv[3]);
	snprintf(lsock, sizeof lsock, "unix:%s", sock);
	snprintf(secret, sizeof secret, "%s/secret", argv[3]);
	snprintf(ws, sizeof ws, "%s/ws", argv[3]);
	if ((f = fopen(secret, "w")) == NULL || fputs("bench-secret-0123456789abcdef\n", f) < 0 ||
	    fclose(f) != 0 || (mkdir(ws, 0700) < 0 && access(ws, F_OK) != 0)) {
		perror(argv[3]);
		return 1;
	}
	char *agent[] = { loader, "--library-path", libdir, bin, "--listen", lsock,
	    "--secret-file", secret, "--workspace", ws, "--ready-fd", "3", NULL };
	char *ver[] = { loader, "--library-path", libdir, bin, "--version", NULL };
	char *tru[] = { "/bin/true", NULL };
	start = calloc((size_t)n, sizeof *start);
	version = calloc((size_t)n, sizeof *version);
	truth = calloc((size_t)n, sizeof *truth);
	for (int i = 0; i < n; i++) {
		int p[2], st;
		char line[16];
		double t;
		pid_t pid;

		/* Interleaved, so that load on the machine falls on all three alike. */
		if (pipe2(p, O_CLOEXEC) < 0)
			return 1;
		t = now_us();
		pid = spawn(agent, p[1]);
		close(p[1]);
		if (read(p[0], line, sizeof line) <= 0) {
			fprintf(stderr, "agent-bench: the agent never said ready\n");
			return 1;
		}
		start[i] = now_us() - t;
		close(p[0]);
		kill(pid, SIGTERM);
		waitpid(pid, &st, 0);

		t = now_us();
		waitpid(spawn(ver, -1), &st, 0);
		version[i] = now_us() - t;
		t = now_us();
		waitpid(spawn(tru, -1), &st, 0);
		truth[i] = now_us() - t;
	}
	printf("%-44s %10s %10s\n", "agent start (the bundle, as ns runs it)", "p50 ms", "p99 ms");
	report("sbxtop-agent: spawn to ready", start, n, "   (target <= 1 ms)");
	report("sbxtop-agent --version: loading alone", version, n, "");
	report("peer: /bin/true, spawn to exit", truth, n, "");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--start") == 0)
		return bench_start(argc, argv);
	if (argc < 3) {
		fprintf(stderr, "usage: agent-bench SOCKET SECRET [ITERATIONS] [STREAM_MB]\n");
		return 2;
	}
	bench_exec(argv[1], argv[2], argc > 3 ? atoi(argv[3]) : 1000);
	bench_stream(argv[1], argv[2], argc > 4 ? atol(argv[4]) : 200);
	return 0;
}
