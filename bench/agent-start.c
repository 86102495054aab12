/* The agent's start, from posix_spawn to its "ready" line (every listener up),
 * run as the ns backend runs it: the bundle's loader on the bundle's libraries.
 * Beside it, in the same run: the same binary only printing its version (the
 * loader and the libraries, nothing of the agent's own), and /bin/true.
 * Usage: agent-start BUNDLE DIR [ITERATIONS] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int
main(int argc, char **argv)
{
	char loader[512], libdir[512], bin[512], sock[600], secret[600], ws[600], lsock[640];
	int n = argc > 3 ? atoi(argv[3]) : 200;
	double *start, *version, *truth;
	FILE *f;

	if (argc < 3 || n < 1) {
		fprintf(stderr, "usage: agent-start BUNDLE DIR [ITERATIONS]\n");
		return 2;
	}
	snprintf(loader, sizeof loader, "%s/lib/ld-linux-x86-64.so.2", argv[1]);
	if (access(loader, X_OK) != 0)
		snprintf(loader, sizeof loader, "%s/lib/ld-linux-aarch64.so.1", argv[1]);
	snprintf(libdir, sizeof libdir, "%s/lib", argv[1]);
	snprintf(bin, sizeof bin, "%s/bin/sbxtop-agent", argv[1]);
	snprintf(sock, sizeof sock, "%s/start.sock", argv[2]);
	snprintf(lsock, sizeof lsock, "unix:%s", sock);
	snprintf(secret, sizeof secret, "%s/secret", argv[2]);
	snprintf(ws, sizeof ws, "%s/ws", argv[2]);
	if ((f = fopen(secret, "w")) == NULL || fputs("bench-secret-0123456789abcdef\n", f) < 0 ||
	    fclose(f) != 0 || (mkdir(ws, 0700) < 0 && access(ws, F_OK) != 0)) {
		perror(argv[2]);
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
			fprintf(stderr, "agent-start: the agent never said ready\n");
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
