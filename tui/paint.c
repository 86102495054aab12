/* What every pane writes with: text put in a width with control characters
 * shown as '?' (put_from), and the small formatters of durations, sizes and
 * clock times.  Drawing (draw.c, viewer.c, net.c) and the key handlers stand
 * on it; it calls nothing of the console. */
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <wchar.h>
#include <wctype.h>

#include "tui/tui-int.h"

/* Put UTF-8 text at y,x in at most w columns.  Control characters (escape
 * sequences in a command's output included) are shown as '?', never sent to
 * the terminal.  Returns the columns used. */
int
put_from(int y, int x, int w, const char *s, int attr, int skip)
{
	mbstate_t st;
	int used = 0;
	size_t len = strlen(s);

	if (w <= 0)
		return 0;
	memset(&st, 0, sizeof st);
	attron(attr);
	move(y, x);
	while (len > 0 && used < w) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, len, &st);
		int cw;
		if (n == (size_t)-1 || n == (size_t)-2) {
			memset(&st, 0, sizeof st);
			wc = L'?';
			n = 1;
		} else if (n == 0) {
			break;
		}
		if (wc == L'\t')
			wc = L' ';
		if (iswcntrl((wint_t)wc) || wc == 0x7f)
			wc = L'?';
		cw = wcwidth(wc);
		if (cw < 0) {
			wc = L'?';
			cw = 1;
		}
		s += n;
		len -= n;
		if (skip > 0) {
			skip -= cw;
			continue;
		}
		if (used + cw > w)
			break;
		addnwstr(&wc, 1);
		used += cw;
	}
	attroff(attr);
	return used;
}

/* printf into a fixed line. */
const char *
fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
	return buf;
}

void
human_dur(char *buf, size_t len, int64_t ms)
{
	int64_t s = ms / 1000;
	char tmp[64];

	if (ms < 0)
		snprintf(tmp, sizeof tmp, "-");
	else if (ms < 10000)
		snprintf(tmp, sizeof tmp, "%.1fs", (double)ms / 1000);
	else if (s < 60)
		snprintf(tmp, sizeof tmp, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(tmp, sizeof tmp, "%lldm%02llds", (long long)(s / 60),
		    (long long)(s % 60));
	else
		snprintf(tmp, sizeof tmp, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s % 3600 / 60));
	/* Bounded copy: a duration fits any caller's 16 bytes but days. */
	size_t n = strnlen(tmp, len - 1);
	memcpy(buf, tmp, n);
	buf[n] = '\0';
}

void
human_bytes(char *buf, size_t len, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else if (b < 1024 * 1024)
		snprintf(buf, len, "%.1f KB", (double)b / 1024);
	else
		snprintf(buf, len, "%.1f MB", (double)b / (1024 * 1024));
}

void
clock_of(char *buf, size_t len, int64_t wall)
{
	time_t t = (time_t)(wall / 1000);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}
