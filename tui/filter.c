/* The `/` filter over PCRE2 (libpcre2-8). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "tui/filter.h"

struct filter {
	char			*text;
	int			 invert;
	pcre2_code		*re;
	pcre2_match_data	*md;
};

struct filter *
filter_new(const char *pattern, char *err, size_t errlen)
{
	const char *p = pattern;
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
	int invert = 0, code;
	PCRE2_SIZE off;
	pcre2_code *re;
	struct filter *f;

	if (*p == '!') {
		invert = 1;
		p++;
	}
	/* Smart case: all lower case matches either case. */
	int upper = 0;
	for (const char *q = p; *q; q++)
		upper |= isupper((unsigned char)*q);
	if (!upper)
		opts |= PCRE2_CASELESS;
	re = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, opts, &code, &off, NULL);
	if (re == NULL) {
		PCRE2_UCHAR msg[160];
		pcre2_get_error_message(code, msg, sizeof msg);
		snprintf(err, errlen, "at %zu: %s", (size_t)off, (const char *)msg);
		return NULL;
	}
	/* Lines are matched many times a second: compile them to machine code
	 * where the library can (it falls back to the interpreter otherwise). */
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	f = xcalloc(1, sizeof *f);
	f->text = xstrdup(pattern);
	f->invert = invert;
	f->re = re;
	f->md = pcre2_match_data_create_from_pattern(re, NULL);
	if (f->md == NULL)
		fatal("pcre2: out of memory");
	return f;
}

void
filter_free(struct filter *f)
{
	if (f == NULL)
		return;
	pcre2_match_data_free(f->md);
	pcre2_code_free(f->re);
	free(f->text);
	free(f);
}

int
filter_pass(struct filter *f, const char *text, size_t len)
{
	int rc;

	if (f == NULL)
		return 1;
	rc = pcre2_match(f->re, (PCRE2_SPTR)text, len, 0, 0, f->md, NULL);
	return (rc >= 0) != f->invert;
}

const char *
filter_text(const struct filter *f)
{
	return f ? f->text : "";
}
