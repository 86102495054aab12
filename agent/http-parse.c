/* The agent's request reader over Node's http-parser: heads, bodies and trailers,
 * one request at a time, with the limits and checks a server adds. */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/http-parse.h"
#include "lib/util.h"

enum { PH_HEAD, PH_BODY, PH_DONE };

#define MSG(p) ((struct http_msg *)(p)->data)

static int
fail(struct http_msg *m, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(struct http_msg *m, unsigned status, const char *fmt, ...)
{
	va_list ap;

	if (m->err_status == 0) {
		m->err_status = status;
		va_start(ap, fmt);
		vsnprintf(m->err, sizeof m->err, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void
fields_free(struct http_fields *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].value);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

static int
fields_add(struct http_msg *m, struct http_fields *f, char *name, char *value)
{
	if (f->n == HTTP_FIELDS_MAX) {
		free(name);
		free(value);
		return fail(m, HTTP_STATUS_REQUEST_HEADER_FIELDS_TOO_LARGE,
		    "more than %d header fields or query arguments", HTTP_FIELDS_MAX);
	}
	f->v = xrealloc(f->v, (f->n + 1) * sizeof *f->v);
	f->v[f->n].name = name;
	f->v[f->n].value = value;
	f->n++;
	return 0;
}

/* A head or trailers with more fields than a request may carry is refused. */
static int
fields_over(struct http_msg *m)
{
	if (!m->fields_over)
		return 0;
	return fail(m, HTTP_STATUS_REQUEST_HEADER_FIELDS_TOO_LARGE,
	    "more than %d header fields", HTTP_FIELDS_MAX);
}

/* The field read so far goes into the headers, or the trailers after the body. */
static int
field_commit(struct http_msg *m)
{
	const char *v = m->value.data ? m->value.data : "";
	size_t n = m->value.len;
	struct http_fields *f;
	int rc;

	if (m->field.len == 0 && n == 0)
		return 0;
	while (n > 0 && (v[0] == ' ' || v[0] == '\t'))
		v++, n--;
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	f = m->phase == PH_HEAD ? &m->headers : &m->trailers;
	if (f->n == HTTP_FIELDS_MAX) {
		/* Dropped here and refused where the head or the trailers end
		 * (fields_over): a name that starts at the end of a read reaches
		 * on_field sooner than one inside it, and how the bytes came must not
		 * change which error the client gets. */
		m->fields_over = 1;
		rc = 0;
	} else {
		rc = fields_add(m, f, xstrndup(m->field.data ? m->field.data : "",
		    m->field.len), xstrndup(v, n));
	}
	buf_reset(&m->field);
	buf_reset(&m->value);
	m->in_value = 0;
	return rc;
}

static int
on_url(http_parser *p, const char *at, size_t len)
{
	struct http_msg *m = MSG(p);

	if (buf_append(&m->url, at, len) < 0)
		return fail(m, HTTP_STATUS_URI_TOO_LONG, "the request target is over %d bytes",
		    HTTP_HEAD_MAX);
	return 0;
}

static int
on_field(http_parser *p, const char *at, size_t len)
{
	struct http_msg *m = MSG(p);

	if (m->in_value && field_commit(m) < 0)
		return -1;
	if (buf_append(&m->field, at, len) < 0)
		return fail(m, HTTP_STATUS_REQUEST_HEADER_FIELDS_TOO_LARGE,
		    "a header field name is over %d bytes", HTTP_HEAD_MAX);
	return 0;
}

static int
on_value(http_parser *p, const char *at, size_t len)
{
	struct http_msg *m = MSG(p);

	m->in_value = 1;
	if (buf_append(&m->value, at, len) < 0)
		return fail(m, HTTP_STATUS_REQUEST_HEADER_FIELDS_TOO_LARGE,
		    "a header field is over %d bytes", HTTP_HEAD_MAX);
	return 0;
}

static int
unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode %XX (and '+' as a space with plus) in s, in place; a '%' without two hex
 * digits stays as it is.  -1 when the result would hold a NUL. */
static int
pct_decode(char *s, int plus)
{
	char *o = s;

	for (const char *i = s; *i != '\0'; i++) {
		int hi, lo;
		if (*i == '%' && (hi = unhex((unsigned char)i[1])) >= 0 &&
		    (lo = unhex((unsigned char)i[2])) >= 0) {
			if (hi == 0 && lo == 0)
				return -1;
			*o++ = (char)(hi << 4 | lo);
			i += 2;
		} else
			*o++ = plus && *i == '+' ? ' ' : *i;
	}
	*o = '\0';
	return 0;
}

/* name=value&name&... into m->query. */
static int
query_parse(struct http_msg *m, const char *q, size_t len)
{
	const char *end = q + len;

	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(q, '=', (size_t)(stop - q));
		char *name, *value = NULL;

		if (stop == q) {
			q++;
			continue;
		}
		name = xstrndup(q, (size_t)((eq ? eq : stop) - q));
		if (eq != NULL)
			value = xstrndup(eq + 1, (size_t)(stop - eq - 1));
		if (pct_decode(name, 1) < 0 || (value != NULL && pct_decode(value, 1) < 0)) {
			free(name);
			free(value);
			return fail(m, HTTP_STATUS_BAD_REQUEST, "the query holds an encoded NUL (%%00)");
		}
		if (fields_add(m, &m->query, name, value) < 0)
			return -1;
		q = stop + (amp != NULL);
	}
	return 0;
}

/* The target: origin-form ("/path?query") or absolute-form ("http://host/path"). */
static int
target_parse(struct http_msg *m)
{
	struct http_parser_url u;
	const char *t = m->url.data ? m->url.data : "";

	http_parser_url_init(&u);
	if (m->p.method == HTTP_CONNECT ||
	    http_parser_parse_url(t, m->url.len, 0, &u) != 0)
		return fail(m, HTTP_STATUS_BAD_REQUEST, "the request target is not a path "
		    "(\"/v1/...\") or an http URL");
	if (u.field_set & (1 << UF_PATH))
		m->path = xstrndup(t + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
	else
		m->path = xstrdup("/");
	if (pct_decode(m->path, 0) < 0)
		return fail(m, HTTP_STATUS_BAD_REQUEST, "the path holds an encoded NUL (%%00)");
	if (u.field_set & (1 << UF_QUERY))
		return query_parse(m, t + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
	return 0;
}

static int
on_headers_complete(http_parser *p)
{
	struct http_msg *m = MSG(p);
	const char *expect;

	http_parser_pause(p, 1);
	if (field_commit(m) < 0 || fields_over(m) < 0)
		return 0;
	m->phase = PH_BODY;
	m->method = http_method_str((enum http_method)p->method);
	m->http_minor = p->http_minor;
	if (p->http_major != 1) {
		fail(m, HTTP_STATUS_HTTP_VERSION_NOT_SUPPORTED, "HTTP/%d.%d is not served here: "
		    "use HTTP/1.1", p->http_major, p->http_minor);
		return 0;
	}
	m->keep_alive = http_should_keep_alive(p);
	m->upgrade = p->upgrade;
	m->has_body = (p->flags & F_CHUNKED) ||
	    (p->content_length > 0 && p->content_length != ULLONG_MAX);
	expect = http_fields_get(&m->headers, "Expect");
	m->expect_continue = m->http_minor >= 1 && expect != NULL &&
	    strcasecmp(expect, "100-continue") == 0;
	/* RFC 9112 section 3.2: an HTTP/1.1 request without Host is refused. */
	if (m->http_minor >= 1 && http_fields_get(&m->headers, "Host") == NULL) {
		fail(m, HTTP_STATUS_BAD_REQUEST, "an HTTP/1.1 request needs a Host header");
		return 0;
	}
	target_parse(m);
	return 0;
}

static int
on_body(http_parser *p, const char *at, size_t len)
{
	struct http_msg *m = MSG(p);

	if (m->on_body != NULL)
		m->on_body(m->cls, at, len);
	return 0;
}

static int
on_message_complete(http_parser *p)
{
	struct http_msg *m = MSG(p);

	if (m->in_value || m->field.len > 0)
		field_commit(m);
	fields_over(m);
	m->phase = PH_DONE;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_url = on_url,
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

static void
set_limits(void)
{
	/* The parser counts the request line and fields (and the trailers); its
	 * limit is process-wide. */
	http_parser_set_max_header_size(HTTP_HEAD_MAX);
}

void
http_msg_init(struct http_msg *m, void (*on_body_fn)(void *, const char *, size_t), void *cls)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, set_limits);
	memset(m, 0, sizeof *m);
	m->on_body = on_body_fn;
	m->cls = cls;
	buf_init(&m->url, HTTP_HEAD_MAX);
	buf_init(&m->field, HTTP_HEAD_MAX);
	buf_init(&m->value, HTTP_HEAD_MAX);
	http_msg_reset(m);
}

void
http_msg_reset(struct http_msg *m)
{
	http_parser_init(&m->p, HTTP_REQUEST);
	m->p.data = m;
	free(m->path);
	m->path = NULL;
	m->method = NULL;
	fields_free(&m->query);
	fields_free(&m->headers);
	fields_free(&m->trailers);
	m->http_minor = m->keep_alive = m->upgrade = m->has_body = m->expect_continue = 0;
	m->err_status = 0;
	m->err[0] = '\0';
	buf_reset(&m->url);
	buf_reset(&m->field);
	buf_reset(&m->value);
	m->phase = PH_HEAD;
	m->in_value = m->fields_over = 0;
}

void
http_msg_free(struct http_msg *m)
{
	http_msg_reset(m);
	buf_free(&m->url);
	buf_free(&m->field);
	buf_free(&m->value);
}

enum http_ev
http_msg_feed(struct http_msg *m, const char *data, size_t len, size_t *used)
{
	int phase = m->phase;
	size_t n;
	enum http_errno err;

	*used = 0;
	if (m->err_status != 0)
		return HTTP_EV_ERROR;
	if (phase == PH_DONE)
		return HTTP_EV_DONE;
	if (len == 0)
		return HTTP_EV_MORE;	/* to the parser, 0 bytes are the end of input */
	n = http_parser_execute(&m->p, &settings, data, len);
	*used = n;
	err = HTTP_PARSER_ERRNO(&m->p);
	if (err == HPE_PAUSED)
		http_parser_pause(&m->p, 0);
	if (m->err_status != 0)
		return HTTP_EV_ERROR;
	if (err != HPE_OK && err != HPE_PAUSED) {
		fail(m, err == HPE_HEADER_OVERFLOW ? HTTP_STATUS_REQUEST_HEADER_FIELDS_TOO_LARGE :
		    HTTP_STATUS_BAD_REQUEST, "malformed request: %s", http_errno_description(err));
		return HTTP_EV_ERROR;
	}
	if (m->phase != phase)
		return m->phase == PH_BODY ? HTTP_EV_HEAD : HTTP_EV_DONE;
	return HTTP_EV_MORE;
}

const char *
http_fields_get(const struct http_fields *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcasecmp(f->v[i].name, name) == 0)
			return f->v[i].value;
	return NULL;
}

int
http_list_has(const char *list, const char *token)
{
	size_t tlen = strlen(token);

	for (const char *p = list; p != NULL && *p != '\0';) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, ",");
		size_t k = n;
		while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t'))
			k--;
		if (k == tlen && strncasecmp(p, token, tlen) == 0)
			return 1;
		p += n;
	}
	return 0;
}

const char *
http_reason(unsigned status)
{
	switch (status) {
#define XX(num, name, string) case num: return #string;
	HTTP_STATUS_MAP(XX)
#undef XX
	}
	return "Unknown";
}
