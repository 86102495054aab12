/* Unit tests for the commands' one way to print what others wrote (cli/cmd.c):
 * cli_printf formats as printf does, with every %s and %c argument escaped
 * (an OSC title, an OSC 52 clipboard write, a CSI as U+009B, a newline that
 * would start a line of its own); cli_print_json writes JSON a reader parses
 * back to the same strings, with no raw DEL or C1 control. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "cli/cli.h"

static char got[4096];

#define PRINTS(...) do { \
	FILE *f_ = fmemopen(got, sizeof got, "w"); \
	cli_printf(f_, __VA_ARGS__); \
	fclose(f_); \
} while (0)

/* Whether s holds a byte a terminal acts on: C0 but newline and tab, DEL, a C1
 * control raw or as UTF-8. */
static int
raw_controls(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++)
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || (*p >= 0x80 && *p < 0xa0 &&
		    (p == (const unsigned char *)s || p[-1] != 0xc2)) || (*p == 0xc2 &&
		    p[1] >= 0x80 && p[1] < 0xa0))
			return 1;
	return 0;
}

int
main(void)
{
	char want[512];
	const char *evil = "name\033]0;title\007\033]52;c;ZWNobyBwd25lZA==\007\302\233" "2J\nfake";
	cJSON *o;

	PRINTS("%-12s|%5d|%-4lld|%zu|%.1f|%x|%3s|%%|%c|%.3s|%*d|%ld\n", "id", 42, 7LL,
	    (size_t)9, 2.25, 255u, "ab", 'z', "abcdef", 6, 3, -5L);
	snprintf(want, sizeof want, "%-12s|%5d|%-4lld|%zu|%.1f|%x|%3s|%%|%c|%.3s|%*d|%ld\n", "id",
	    42, 7LL, (size_t)9, 2.25, 255u, "ab", 'z', "abcdef", 6, 3, -5L);
	check(strcmp(got, want) == 0, "plain arguments print as printf prints them");
	PRINTS("owner:    %s\n", evil);
	check(!raw_controls(got), "an OSC title, an OSC 52 write, a C1 CSI: no raw control");
	check(strstr(got, "\\x1b]0;title\\x07") != NULL && strstr(got, "\\u009b2J") != NULL,
	    "  each written as text: %s", got);
	check(strchr(got, '\n') == got + strlen(got) - 1,
	    "a newline in an argument does not start a line of its own");
	PRINTS("%-20s|\n", "\033x");
	check(strcmp(got, "\\x1bx               |\n") == 0, "a width counts the escaped text");
	PRINTS("%s\n", "\377bad");
	check(strcmp(got, "\\xffbad\n") == 0, "bytes that are not UTF-8");

	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "owner", evil);
	cJSON_AddStringToObject(o, "del", "a\177b\302\237c\377d caf\303\251");
	{
		FILE *f = fmemopen(got, sizeof got, "w");
		cJSON *back;
		cli_print_json(f, o, 1);
		fclose(f);
		check(!raw_controls(got), "JSON output: no raw control either");
		back = cJSON_Parse(got);
		check(back != NULL && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(back, "owner")),
		    evil) == 0, "  and it parses back to the same string");
		check(back != NULL && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(back, "del")),
		    "a\177b\302\237c\357\277\275d caf\303\251") == 0,
		    "  DEL and C1 as \\u escapes, a byte that is not UTF-8 as U+FFFD, UTF-8 kept");
		cJSON_Delete(back);
	}
	cJSON_Delete(o);
	return tap_end();
}
