/* TAP output for the unit tests: one "ok N - ..." or "not ok N - ..." line per
 * check, "# ..." diagnostics, and the plan at the end (tests/run.sh counts
 * them).  Header-only: every test program is a single file. */
#ifndef SBXTOP_TESTS_TAP_H
#define SBXTOP_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int ntests, nfailed;

/* Record one check; returns cond so a test can stop when a step failed. */
static inline int __attribute__((format(printf, 2, 3)))
check(int cond, const char *fmt, ...)
{
	va_list ap;

	ntests++;
	if (!cond)
		nfailed++;
	printf("%s %d - ", cond ? "ok" : "not ok", ntests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);		/* children fork after checks: no line twice */
	return cond;
}

/* Count a check that cannot run here, saying why. */
static inline void __attribute__((format(printf, 1, 2)))
skip(const char *fmt, ...)
{
	va_list ap;

	ntests++;
	printf("ok %d - # SKIP ", ntests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* A diagnostic line, shown with the results. */
static inline void __attribute__((format(printf, 1, 2)))
diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Print the plan; the exit status of the test program. */
static inline int
tap_end(void)
{
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}

#endif
