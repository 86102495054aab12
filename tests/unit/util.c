/* Unit tests for the small shared utilities: UTF-8 validation, base64, bounded
 * buffers, JSON field tables, constant-time comparison, mkdir_p, hex, signal
 * names, /proc/PID/stat and the sandbox id rule.  TAP lines;
 * exits non-zero when any check fails. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/jspec.h"
#include "lib/line-reader.h"
#include "lib/proc.h"
#include "lib/sig.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "core/sandbox.h"

/* A tiny deterministic generator, so a failure can be replayed. */
static uint32_t rng_state = 0x12345678;
static uint32_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* --- lib/utf8 ---------------------------------------------------------- */

struct utf8_case {
	const char	*what;
	const char	*s;
	size_t		 n;
	int		 valid;
};

#define U(what, lit, valid) { what, lit, sizeof(lit) - 1, valid }

static void
test_utf8(void)
{
	static const struct utf8_case cases[] = {
		U("empty", "", 1),
		U("ASCII", "hello, world", 1),
		U("NUL is a character", "a\0b", 1),
		U("2-byte e-acute", "\xc3\xa9", 1),
		U("3-byte euro", "\xe2\x82\xac", 1),
		U("4-byte G clef", "\xf0\x9d\x84\x9e", 1),
		U("U+D7FF, last before the surrogates", "\xed\x9f\xbf", 1),
		U("U+E000, first after the surrogates", "\xee\x80\x80", 1),
		U("U+10FFFF, the last code point", "\xf4\x8f\xbf\xbf", 1),
		U("U+0800, smallest 3-byte", "\xe0\xa0\x80", 1),
		U("U+10000, smallest 4-byte", "\xf0\x90\x80\x80", 1),
		U("overlong NUL c0 80", "\xc0\x80", 0),
		U("overlong c1 bf", "\xc1\xbf", 0),
		U("overlong 3-byte e0 80 80", "\xe0\x80\x80", 0),
		U("overlong 3-byte e0 9f bf", "\xe0\x9f\xbf", 0),
		U("overlong 4-byte f0 8f bf bf", "\xf0\x8f\xbf\xbf", 0),
		U("high surrogate U+D800", "\xed\xa0\x80", 0),
		U("low surrogate U+DFFF", "\xed\xbf\xbf", 0),
		U("U+110000", "\xf4\x90\x80\x80", 0),
		U("f5 lead byte", "\xf5\x80\x80\x80", 0),
		U("ff byte", "a\xff", 0),
		U("lone continuation byte", "a\x80" "b", 0),
		U("truncated 2-byte at the end", "ab\xc3", 0),
		U("truncated 3-byte at the end", "ab\xe2\x82", 0),
		U("truncated 4-byte at the end", "\xf0\x9d\x84", 0),
		U("truncated 2-byte before ASCII", "\xc3" "A", 0),
		U("3-byte cut by a new lead byte", "\xe2\x82\xe2\x82\xac", 0),
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		check(utf8_valid(cases[i].s, cases[i].n) == cases[i].valid,
		    "utf8_valid: %s is %s", cases[i].what, cases[i].valid ? "valid" : "invalid");

	struct { const char *what; const char *s; size_t n, want; } pre[] = {
		{ "ASCII is whole", "abc", 3, 3 },
		{ "empty", "", 0, 0 },
		{ "cut 2-byte", "a\xc3", 2, 1 },
		{ "cut 3-byte after 1 byte", "ab\xe2", 3, 2 },
		{ "cut 3-byte after 2 bytes", "ab\xe2\x82", 4, 2 },
		{ "complete 3-byte", "ab\xe2\x82\xac", 5, 5 },
		{ "cut 4-byte after 3 bytes", "abcd\xf0\x9d\x84", 7, 4 },
		{ "cut 4-byte after 1 byte", "\xf0", 1, 0 },
		{ "invalid byte counts as whole", "a\xff", 2, 2 },
		{ "lone continuation counts as whole", "a\x80", 2, 2 },
		{ "overlong start cannot be completed", "a\xe0\x80", 3, 3 },
		{ "surrogate start cannot be completed", "a\xed\xa0", 3, 3 },
		{ "f5 cannot start anything", "a\xf5\x80", 3, 3 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(pre); i++) {
		size_t got = utf8_complete_prefix(pre[i].s, pre[i].n);
		if (!check(got == pre[i].want, "utf8_complete_prefix: %s", pre[i].what))
			diag("got %zu, want %zu", got, pre[i].want);
	}

	/* Every cut of a valid mixed string: the prefix is the last character
	 * boundary at or before the cut, and it is valid on its own. */
	static const char mixed[] = "a\xc3\xa9" "b\xe2\x82\xac" "\xf0\x9d\x84\x9e" "c\xf4\x8f\xbf\xbf";
	static const size_t bounds[] = { 0, 1, 3, 4, 7, 11, 12, 16 };
	int all = 1;
	for (size_t n = 0; n <= sizeof mixed - 1; n++) {
		size_t want = 0;
		for (size_t k = 0; k < ARRAY_SIZE(bounds); k++)
			if (bounds[k] <= n)
				want = bounds[k];
		size_t got = utf8_complete_prefix(mixed, n);
		if (got != want || !utf8_valid(mixed, got)) {
			diag("cut at %zu: prefix %zu, want %zu", n, got, want);
			all = 0;
		}
	}
	check(all, "utf8_complete_prefix: every cut of a mixed string ends on a boundary");
}

/* --- lib/b64 ----------------------------------------------------------- */

static void
test_b64(void)
{
	static const char *const vec[][2] = {	/* RFC 4648 section 10 */
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(vec); i++) {
		_cleanup_free_ char *e = b64_encode(vec[i][0], strlen(vec[i][0]));
		check(strcmp(e, vec[i][1]) == 0, "b64_encode(\"%s\") = \"%s\"", vec[i][0], vec[i][1]);
		size_t n = 99;
		_cleanup_free_ unsigned char *d = b64_decode(vec[i][1], strlen(vec[i][1]), &n);
		check(d != NULL && n == strlen(vec[i][0]) && memcmp(d, vec[i][0], n) == 0 &&
		    d[n] == '\0', "b64_decode(\"%s\") = \"%s\", NUL-terminated", vec[i][1], vec[i][0]);
	}

	static const unsigned char all3[] = { 0xff, 0xfe, 0xfd };
	_cleanup_free_ char *e = b64_encode(all3, 3);
	check(strcmp(e, "//79") == 0, "b64_encode uses '/' and high values");
	_cleanup_free_ char *e2 = b64_encode("\xfb\xef", 2);
	check(strcmp(e2, "++8=") == 0, "b64_encode uses '+'");

	static const char *const bad[] = {
		"Zg=", "Zm9", "Z", "Z===", "====", "Zm9v====", "Zg==Zg==", "Zm=v",
		"Zm9\n", "Zm 9v", "Zm9v!Zm9", "Zm-_", "=Zm9", "Zm9v\0AAA",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t n, len = i == ARRAY_SIZE(bad) - 1 ? 8 : strlen(bad[i]);
		unsigned char *d = b64_decode(bad[i], len, &n);
		char shown[32];
		size_t k = 0;
		for (size_t j = 0; j < len && k < sizeof shown - 3; j++) {
			char c = bad[i][j];
			if (c == '\n') { shown[k++] = '\\'; shown[k++] = 'n'; }
			else if (c == '\0') { shown[k++] = '\\'; shown[k++] = '0'; }
			else shown[k++] = c;
		}
		shown[k] = '\0';
		check(d == NULL, "b64_decode rejects \"%s\"", shown);
		free(d);
	}

	int all = 1;
	unsigned char src[300];
	for (size_t len = 0; len <= sizeof src; len++) {
		for (size_t j = 0; j < len; j++)
			src[j] = (unsigned char)rng();
		_cleanup_free_ char *enc = b64_encode(src, len);
		size_t n = 0;
		_cleanup_free_ unsigned char *dec = b64_decode(enc, strlen(enc), &n);
		if (strlen(enc) != (len + 2) / 3 * 4 || dec == NULL || n != len ||
		    memcmp(dec, src, len) != 0) {
			diag("round trip of %zu random bytes failed", len);
			all = 0;
		}
	}
	check(all, "b64: decode(encode(x)) == x for random x of 0..300 bytes");
}

/* --- lib/buf ----------------------------------------------------------- */

static void
test_buf(void)
{
	struct buf b;

	buf_init(&b, 10);
	check(buf_append(&b, "hello", 5) == 0 && b.len == 5 && strcmp(b.data, "hello") == 0,
	    "buf_append within the cap");
	check(buf_append(&b, "worlds", 6) == -1 && b.len == 5 && strcmp(b.data, "hello") == 0,
	    "buf_append over the cap fails and appends nothing");
	check(buf_append(&b, "world", 5) == 0 && b.len == 10 && strcmp(b.data, "helloworld") == 0,
	    "buf_append up to exactly the cap");
	check(buf_append(&b, "", 0) == 0 && b.len == 10, "buf_append of nothing at the cap");
	check(buf_append(&b, "x", 1) == -1 && b.len == 10, "buf_append of one byte past the cap fails");
	check(buf_printf(&b, "%d", 1) == -1 && b.len == 10, "buf_printf past the cap fails");
	buf_free(&b);
	check(b.data == NULL && b.len == 0, "buf_free empties");

	buf_init(&b, 8);
	check(buf_append_some(&b, "abcdefghij", 10) == 8 && b.len == 8 &&
	    strcmp(b.data, "abcdefgh") == 0, "buf_append_some truncates at the cap, NUL-terminated");
	check(buf_append_some(&b, "k", 1) == 0 && b.len == 8, "buf_append_some when full appends 0");
	buf_consume(&b, 3);
	check(b.len == 5 && strcmp(b.data, "defgh") == 0, "buf_consume drops the first bytes");
	check(buf_append_some(&b, "XYZW", 4) == 3 && strcmp(b.data, "defghXYZ") == 0,
	    "after consume there is room again");
	buf_consume(&b, 0);
	check(b.len == 8, "buf_consume(0) keeps everything");
	buf_consume(&b, 100);
	check(b.len == 0 && b.data[0] == '\0', "buf_consume past the end empties");
	buf_free(&b);

	buf_init(&b, 1 << 20);
	int ok = 1;
	for (int i = 0; i < 1000; i++)
		ok &= buf_printf(&b, "%04d,", i) == 0;
	check(ok && b.len == 5000 && strncmp(b.data + 4995, "0999,", 5) == 0,
	    "buf grows across many appends");
	char *s = buf_steal(&b);
	check(s != NULL && strlen(s) == 5000 && b.data == NULL && b.len == 0,
	    "buf_steal hands the data over and leaves the buffer empty");
	free(s);
	s = buf_steal(&b);
	check(s != NULL && s[0] == '\0', "buf_steal of an empty buffer gives \"\"");
	free(s);
	buf_reset(&b);
	check(b.len == 0, "buf_reset of an empty buffer");
}

/* --- lib/jspec --------------------------------------------------------- */

static const struct jfield spec[] = {
	{ "name", J_STRING, 1, 0, 0 },
	{ "count", J_INT, 0, 1, 10 },
	{ "offset", J_INT, 0, 0, 0 },
	{ "flag", J_BOOL, 0, 0, 0 },
	{ "env", J_STRMAP, 0, 0, 0 },
	{ "args", J_STRLIST, 0, 0, 0 },
	{ "opts", J_OBJECT, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

/* Expect jspec_check on json to pass (want NULL) or fail with want in the message. */
static void
jcase(const char *json, const char *want)
{
	char msg[128] = "";
	cJSON *o = cJSON_Parse(json);
	int rc;

	if (o == NULL) {
		check(0, "jspec: test JSON parses: %s", json);
		return;
	}
	rc = jspec_check(o, spec, msg, sizeof msg);
	if (want == NULL) {
		if (!check(rc == 0, "jspec accepts %s", json))
			diag("message: %s", msg);
	} else if (!check(rc == -1 && strstr(msg, want) != NULL, "jspec rejects %s: \"%s\"", json, want))
		diag("rc %d, message: %s", rc, msg);
	cJSON_Delete(o);
}

static void
test_jspec(void)
{
	jcase("{\"name\":\"x\"}", NULL);
	jcase("{\"name\":\"x\",\"count\":10,\"offset\":-5,\"flag\":false,\"env\":{\"A\":\"b\"},"
	    "\"args\":[\"a\",\"\"],\"opts\":{\"any\":[1,{}]}}", NULL);
	jcase("{\"name\":\"x\",\"count\":null,\"env\":null}", NULL);
	jcase("{\"name\":\"x\",\"env\":{},\"args\":[]}", NULL);
	jcase("{\"name\":\"x\",\"offset\":9007199254740992}", NULL);
	jcase("{}", "field 'name' is required");
	jcase("{\"count\":3}", "field 'name' is required");
	jcase("{\"name\":null}", "field 'name' must be a string");
	jcase("{\"name\":1}", "field 'name' must be a string");
	jcase("{\"name\":\"x\",\"count\":\"3\"}", "field 'count' must be a whole number");
	jcase("{\"name\":\"x\",\"count\":1.5}", "field 'count' must be a whole number");
	jcase("{\"name\":\"x\",\"count\":0}", "field 'count' must be between 1 and 10");
	jcase("{\"name\":\"x\",\"count\":11}", "field 'count' must be between 1 and 10");
	jcase("{\"name\":\"x\",\"count\":-1e300}", "field 'count' must be a whole number");
	jcase("{\"name\":\"x\",\"offset\":1e300}", "field 'offset' must be a whole number");
	jcase("{\"name\":\"x\",\"flag\":1}", "field 'flag' must be true or false");
	jcase("{\"name\":\"x\",\"flag\":\"true\"}", "field 'flag' must be true or false");
	jcase("{\"name\":\"x\",\"env\":[]}", "field 'env' must be an object of strings");
	jcase("{\"name\":\"x\",\"env\":{\"A\":\"1\",\"B\":2}}", "field 'env.B' must be a string");
	jcase("{\"name\":\"x\",\"env\":{\"A\":null}}", "field 'env.A' must be a string");
	jcase("{\"name\":\"x\",\"args\":\"ls\"}", "field 'args' must be an array of strings");
	jcase("{\"name\":\"x\",\"args\":[\"a\",2]}", "field 'args' must hold only strings");
	jcase("{\"name\":\"x\",\"args\":[[]]}", "field 'args' must hold only strings");
	jcase("{\"name\":\"x\",\"opts\":[]}", "field 'opts' must be an object");
	jcase("{\"name\":\"x\",\"zzz\":1}", "unknown field 'zzz'");
	jcase("{\"name\":\"x\",\"Name\":\"y\"}", "unknown field 'Name'");
	jcase("[]", "the body must be a JSON object");
	jcase("\"name\"", "the body must be a JSON object");

	/* A very long unknown name is cut, and a small buffer is never overrun. */
	char big[400], small[16];
	memset(big, 0, sizeof big);
	strcpy(big, "{\"");
	memset(big + 2, 'k', 300);
	strcpy(big + 302, "\":1}");
	cJSON *o = cJSON_Parse(big);
	char msg[256];
	check(jspec_check(o, spec, msg, sizeof msg) == -1 && strlen(msg) < 100 &&
	    strncmp(msg, "unknown field 'kkkk", 19) == 0, "jspec cuts a long unknown name");
	memset(small, 'X', sizeof small);
	check(jspec_check(o, spec, small, 8) == -1 && small[7] == '\0' && small[8] == 'X',
	    "jspec keeps to the message buffer it is given");
	cJSON_Delete(o);

	o = cJSON_Parse("{\"name\":\"n\",\"count\":7,\"flag\":true,\"s\":1,\"i\":\"x\"}");
	check(strcmp(jstr(o, "name", "d"), "n") == 0 && strcmp(jstr(o, "nope", "d"), "d") == 0 &&
	    strcmp(jstr(o, "s", "d"), "d") == 0, "jstr: value, default when absent or not a string");
	check(jint(o, "count", -1) == 7 && jint(o, "nope", -1) == -1 && jint(o, "i", -1) == -1,
	    "jint: value, default when absent or not a number");
	check(jbool(o, "flag", 0) == 1 && jbool(o, "nope", 1) == 1 && jbool(o, "count", 0) == 0,
	    "jbool: value, default when absent or not a bool");
	cJSON_Delete(o);
	/* Numbers past int64_t's range are clamped or refused, never converted. */
	o = cJSON_Parse("[3.3e67,-1e300,1e999,9223372036854775807,4.5,12]");
	int64_t n = 0;
	check(jint_of(cJSON_GetArrayItem(o, 0), 0, INT64_MIN, INT64_MAX) == INT64_MAX &&
	    jint_of(cJSON_GetArrayItem(o, 1), 0, INT64_MIN, INT64_MAX) == INT64_MIN &&
	    jint_of(cJSON_GetArrayItem(o, 2), 0, 0, 99) == 99 &&
	    jint_of(cJSON_GetArrayItem(o, 5), 0, 0, 9) == 9 &&
	    jint_of(cJSON_GetArrayItem(o, 1), 7, 1, 9) == 1, "jint_of: clamped into its range");
	check(jint_in(cJSON_GetArrayItem(o, 0), 1, 100, &n) < 0 &&
	    jint_in(cJSON_GetArrayItem(o, 2), 1, INT64_MAX, &n) < 0 &&
	    jint_in(cJSON_GetArrayItem(o, 3), 1, INT64_MAX, &n) < 0 &&
	    jint_in(cJSON_GetArrayItem(o, 4), 1, 100, &n) < 0 && n == 0 &&
	    jint_in(cJSON_GetArrayItem(o, 5), 1, 100, &n) == 0 && n == 12 &&
	    jint_in(cJSON_GetArrayItem(o, 5), 13, 100, &n) < 0, "jint_in: whole and in range, "
	    "checked before it is converted");
	cJSON_Delete(o);
}

/* --- ct_streq, mkdir_p -------------------------------------------------- */

static void
test_misc(void)
{
	check(ct_streq("secret-value", "secret-value") == 1, "ct_streq: equal");
	check(ct_streq("", "") == 1, "ct_streq: both empty");
	check(ct_streq("secret-valuf", "secret-value") == 0, "ct_streq: last byte differs");
	check(ct_streq("Secret-value", "secret-value") == 0, "ct_streq: first byte differs");
	check(ct_streq("secret", "secret-value") == 0, "ct_streq: a prefix is not equal");
	check(ct_streq("secret-value-and-more", "secret-value") == 0, "ct_streq: longer is not equal");
	check(ct_streq("", "secret") == 0 && ct_streq("secret", "") == 0, "ct_streq: empty vs not");

	char tmpl[] = "/tmp/sbxunit.XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (!check(dir != NULL, "mkdtemp for the mkdir_p checks"))
		return;
	mode_t old = umask(0);
	struct stat st;
	_cleanup_free_ char *deep = xasprintf("%s/a/b/c", dir);
	check(mkdir_p(deep, 0750) == 0 && stat(deep, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (st.st_mode & 07777) == 0750, "mkdir_p creates every component with the mode");
	_cleanup_free_ char *mid = xasprintf("%s/a/b", dir);
	check(stat(mid, &st) == 0 && (st.st_mode & 07777) == 0750, "mkdir_p: parents get the mode too");
	check(mkdir_p(deep, 0750) == 0, "mkdir_p on an existing directory succeeds");
	_cleanup_free_ char *slash = xasprintf("%s/x/y/", dir);
	_cleanup_free_ char *noslash = xasprintf("%s/x/y", dir);
	check(mkdir_p(slash, 0700) == 0 && stat(noslash, &st) == 0 && S_ISDIR(st.st_mode),
	    "mkdir_p with a trailing slash");
	_cleanup_free_ char *file = xasprintf("%s/f", dir);
	FILE *f = fopen(file, "w");
	if (f != NULL)
		fclose(f);
	_cleanup_free_ char *through = xasprintf("%s/f/g", dir);
	errno = 0;
	check(mkdir_p(through, 0700) == -1 && errno == ENOTDIR,
	    "mkdir_p through a regular file fails with ENOTDIR");
	umask(old);

	_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
}

/* --- lib/line-reader ----------------------------------------------------- */

struct got { char lines[256]; char over[256]; int firsts, ends; };

static void
got_line(void *arg, const char *line, size_t len)
{
	struct got *g = arg;
	size_t n = strlen(g->lines);

	snprintf(g->lines + n, sizeof g->lines - n, "[%.*s]", (int)len, line);
}

static void
got_over(void *arg, const char *piece, size_t len, int first, int end)
{
	struct got *g = arg;
	size_t n = strlen(g->over);

	snprintf(g->over + n, sizeof g->over - n, "%.*s", (int)len, piece);
	g->firsts += first;
	g->ends += end;
}

static void
test_line_reader(void)
{
	static const char in[] = "one\ntwo\n0123456789abcdef\nthree\n\nlast";
	struct line_reader r;
	struct got g;

	/* Every split of the input into two chunks gives the same lines. */
	int same = 1;
	for (size_t cut = 0; cut <= sizeof in - 1; cut++) {
		memset(&g, 0, sizeof g);
		line_reader_init(&r, 8, got_line, got_over, &g);
		line_reader_feed(&r, in, cut);
		line_reader_feed(&r, in + cut, sizeof in - 1 - cut);
		line_reader_finish(&r);
		line_reader_free(&r);
		same &= strcmp(g.lines, "[one][two][three][][last]") == 0 &&
		    strcmp(g.over, "0123456789abcdef") == 0 && g.firsts == 1 && g.ends == 1;
		if (!same)
			diag("cut %zu: lines %s, over %s (%d, %d)", cut, g.lines, g.over, g.firsts, g.ends);
	}
	check(same, "line_reader: whole lines at any chunk boundary; a line over the cap "
	    "comes in pieces, all its bytes, once first and once at its end");
	memset(&g, 0, sizeof g);
	line_reader_init(&r, 8, got_line, got_over, &g);
	line_reader_feed(&r, "0123456789", 10);
	line_reader_finish(&r);
	line_reader_free(&r);
	check(strcmp(g.lines, "") == 0 && strcmp(g.over, "0123456789") == 0 && g.ends == 0,
	    "line_reader: an unfinished line over the cap is not a line at the end");
}

/* --- lib/util hex, lib/sig, lib/proc, the id rule ------------------------ */

/* close_except(a, b) in a child: 0 when exactly a and b of fds (and none
 * of the descriptors above them) are open after it. */
static int
close_except_in_child(const int *fds, int n, int a, int b)
{
	int st = -1;
	pid_t kid;

	if ((kid = fork()) == 0) {
		close_except(a, b);
		for (int i = 0; i < n; i++)
			if ((fcntl(fds[i], F_GETFD) >= 0) != (fds[i] == a || fds[i] == b))
				_exit(1);
		_exit(0);
	}
	waitpid(kid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
close_except_cases(void)
{
	int fds[10];

	for (int i = 0; i < 10; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[9] = fcntl(fds[9], F_DUPFD_CLOEXEC, 200);	/* one far above the rest */
	check(close_except_in_child(fds, 10, fds[2], fds[6]) == 0,
	    "close_except: the two named stay open, the others close");
	check(close_except_in_child(fds, 10, fds[6], fds[2]) == 0,
	    "close_except: in either order");
	check(close_except_in_child(fds, 10, -1, fds[4]) == 0,
	    "close_except with -1: only the one named stays");
	check(close_except_in_child(fds, 10, fds[3], fds[4]) == 0,
	    "close_except: two side by side");
	check(close_except_in_child(fds, 10, -1, -1) == 0, "close_except(-1, -1): every one closes");
	for (int i = 0; i < 10; i++)
		close(fds[i]);
}

static void
test_lib_pieces(void)
{
	const unsigned char bytes[] = { 0x00, 0x7f, 0xa5, 0xff };
	char hex[9], rnd[17];
	struct proc_stat ps;
	pid_t kid;

	hex_encode(hex, bytes, sizeof bytes);
	check(strcmp(hex, "007fa5ff") == 0, "hex_encode: lowercase, two digits a byte");
	random_hex(rnd, 8);
	check(strlen(rnd) == 16 && strspn(rnd, "0123456789abcdef") == 16, "random_hex: 16 digits");

	check(sig_name(SIGIO) != NULL && strcmp(sig_name(SIGIO), "IO") == 0 &&
	    strcmp(sig_name(SIGPWR), "PWR") == 0, "sig_name knows IO and PWR");
	check(sig_name(0) == NULL && sig_name(1000) == NULL, "sig_name: NULL for no signal");
	check(sig_number("TERM") == SIGTERM && sig_number("sigkill") == SIGKILL &&
	    sig_number("SIGPWR") == SIGPWR && sig_number("2") == SIGINT,
	    "sig_number: names with or without SIG, any case, and numbers");
	check(sig_number("BOGUS") == 0 && sig_number("") == 0 && sig_number("99999") == 0 &&
	    sig_number("-1") == 0, "sig_number: 0 for what names no signal");

	check(proc_stat(getpid(), &ps) == 0 && ps.state == 'R' && ps.starttime > 0,
	    "proc_stat of this process: running, with a start time");
	check(proc_running_since(getpid()) == ps.starttime, "proc_running_since: the same start");
	if ((kid = fork()) == 0)
		_exit(0);
	for (int i = 0; i < 200 && proc_stat(kid, &ps) == 0 && ps.state != 'Z'; i++)
		usleep(10000);
	check(proc_stat(kid, &ps) == 0 && ps.state == 'Z', "proc_stat sees a zombie");
	check(proc_running_since(kid) == 0, "proc_running_since: 0 for a zombie");
	waitpid(kid, NULL, 0);
	check(proc_stat(kid, &ps) == -1 && proc_running_since(kid) == 0,
	    "a reaped process: no stat, not running");
	check(proc_stat(0, &ps) == -1 && proc_stat(-5, &ps) == -1, "no pid 0 or below");

	close_except_cases();
	int pp[2];
	if (pipe(pp) == 0) {
		int64_t t0 = now_ms();
		check(poll_in_until(pp[0], t0 + 30) == 0 && now_ms() - t0 >= 30,
		    "poll_in_until: 0 once the time passed, not before");
		check(poll_in_until(pp[0], t0 - 1000) == 0, "poll_in_until: a time gone is no wait");
		(void)!write(pp[1], "x", 1);
		check(poll_in_until(pp[0], now_ms() + 5000) > 0, "poll_in_until: readable at once");
		close(pp[0]);
		close(pp[1]);
	}

	check(sandbox_id_valid("sbx-7f3a9c") && sandbox_id_valid("a"), "ids: sbx-7f3a9c, a");
	check(!sandbox_id_valid("") && !sandbox_id_valid("-x") && !sandbox_id_valid("SBX-1") &&
	    !sandbox_id_valid("sbx_1") && !sandbox_id_valid("a/b") && !sandbox_id_valid("..") &&
	    !sandbox_id_valid("a234567890123456789012345678901b"),
	    "ids: empty, leading '-', uppercase, '_', '/', '..' and 32 characters refused");
}

/* --- escaping for terminals, lossy UTF-8, names in JSON ---------------------- */

static void
esc_is(const char *what, const char *in, size_t n, int keep_nl, const char *want)
{
	char out[256];

	utf8_escape_controls(in, n, out, sizeof out, keep_nl);
	if (!check(strcmp(out, want) == 0, "escape: %s", what))
		diag("got %s", out);
}

static void
test_escape(void)
{
	char small[8], out[64];
	cJSON *o;

	esc_is("OSC 2 and BEL", "a\033]2;t\007b", 8, 0, "a\\x1b]2;t\\x07b");
	esc_is("C1 CSI as UTF-8 (U+009B)", "\302\23331m", 5, 0, "\\u009b31m");
	esc_is("C1 CSI as a raw byte", "\23331m", 4, 0, "\\x9b31m");
	esc_is("DEL", "\177", 1, 0, "\\x7f");
	esc_is("newline and tab kept when asked", "a\n\tb\r", 5, 1, "a\n\tb\\x0d");
	esc_is("newline escaped otherwise", "a\nb", 3, 0, "a\\x0ab");
	esc_is("text passes", "caf\303\251 \342\202\254", 9, 0, "caf\303\251 \342\202\254");
	esc_is("U+00A0 is not a control", "\302\240", 2, 0, "\302\240");
	utf8_escape_controls("\033\033\033", 3, small, sizeof small, 0);
	check(strcmp(small, "\\x1b") == 0, "escape: a small buffer holds whole escapes only");
	utf8_lossy("a\377b\303", 4, out, sizeof out);
	check(strcmp(out, "a\357\277\275b\357\277\275") == 0, "lossy: invalid bytes become U+FFFD");
	o = cJSON_CreateObject();
	jadd_name(o, "name", "ok-\303\251");
	jadd_name(o, "bad", "x\377y");
	check(strcmp(cJSON_GetObjectItem(o, "name")->valuestring, "ok-\303\251") == 0 &&
	    cJSON_GetObjectItem(o, "name_b64") == NULL, "jadd_name: a UTF-8 name as it is");
	check(strcmp(cJSON_GetObjectItem(o, "bad")->valuestring, "x\357\277\275y") == 0 &&
	    strcmp(cJSON_GetObjectItem(o, "bad_b64")->valuestring, "eP95") == 0,
	    "jadd_name: a bad name as U+FFFD plus its bytes in base64");
	cJSON_Delete(o);

	/* The last guard: every string and key of a tree made UTF-8. */
	o = cJSON_Parse("{\"ok\":\"fine\",\"list\":[\"a\",{\"k\":\"b\"}]}");
	check(jfix_utf8(o) == 0, "jfix_utf8: a valid tree is left alone");
	cJSON_AddStringToObject(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "list"), 1), "bad\377key",
	    "v\376");
	cJSON_AddItemToArray(cJSON_GetObjectItem(o, "list"), cJSON_CreateStringReference("r\377"));
	check(jfix_utf8(o) == 1, "jfix_utf8: a bad string, key and reference are fixed");
	char *t = cJSON_PrintUnformatted(o);
	check(t != NULL && utf8_valid(t, strlen(t)) && strstr(t, "\"bad\357\277\275key\":"
	    "\"v\357\277\275\"") != NULL && strstr(t, "\"r\357\277\275\"") != NULL,
	    "jfix_utf8: the printed text is UTF-8: %s", t ? t : "(null)");
	free(t);
	cJSON_Delete(o);
}

int
main(void)
{
	test_escape();
	test_utf8();
	test_b64();
	test_buf();
	test_jspec();
	test_misc();
	test_lib_pieces();
	test_line_reader();
	return tap_end();
}
