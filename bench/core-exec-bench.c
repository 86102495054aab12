/* The baseline of bench/30-mcp.sh: sandbox exec of `true` through the core API
 * (core_exec), with no MCP in between, in the same sandbox the MCP client uses,
 * with the options sandbox_exec passes by default.
 * Prints one microsecond sample per line on stdout.
 * Usage: core-exec-bench SANDBOX_ID [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/config.h"
#include "core/core.h"

static int
never(void *arg)
{
	return 0;
}

static int
sink(int stream, const char *data, size_t len, void *arg)
{
	return 0;
}

int
main(int argc, char **argv)
{
	struct config *cfg = config_new();
	struct core_exec_opts o = { .command = "true", .origin = "bench" };
	struct core_exec_result res;
	struct sbx_err e;
	struct core *c;
	int n = argc > 2 ? atoi(argv[2]) : 1000;

	if (argc < 2 || config_load(cfg, &e) < 0) {
		fprintf(stderr, "usage: core-exec-bench SANDBOX_ID [ITERATIONS]\n");
		return 2;
	}
	/* The exec sandbox_exec asks for by default: a 120 s timeout (the agent
	 * arms a deadline for it) and a cancellation check (the request may be
	 * cancelled); only the MCP layer differs then. */
	o.timeout_s = 120;
	o.cancelled = never;
	c = core_new(cfg);
	for (int i = 0; i < n; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (core_exec(c, argv[1], &o, sink, NULL, &res, &e) < 0 || res.exit_code != 0) {
			fprintf(stderr, "core_exec: %s\n", e.msg);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		free(res.log_path);
		printf("%.0f\n", (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
	}
	core_free(c);
	return 0;
}
