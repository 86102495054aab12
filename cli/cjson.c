/* The part of cJSON's API the thin sbxtop uses, written here so that binary
 * links statically (Debian ships cJSON as a shared library only): a static
 * client starts with no dynamic loader at all, about a millisecond less of
 * every command on a machine where a page fault is dear.  The core, the agent
 * and the console keep the system's cJSON.
 *
 * It follows the system's cJSON (1.7.15 on Debian 12) where a caller could
 * tell the difference, quirks included (a bad hex digit in \u makes the code
 * point 0; a number is read whatever its length): the items
 * are cJSON's own struct (its header declares everything here), the first
 * child's prev is the last child, cJSON_Delete frees the siblings that follow,
 * the parser takes any byte up to a space as blank, accepts what follows the
 * value, reads numbers with strtod and \u escapes (surrogate pairs included)
 * into UTF-8, and the printer writes cJSON's layout and number forms.
 * tests/integration/thin-json.sh holds the two side by side. */
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/buf.h"
#include "lib/util.h"

static cJSON *
item_new(int type)
{
	cJSON *it = xcalloc(1, sizeof *it);

	it->type = type;
	return it;
}

/* A number item's two values: valueint saturates, as cJSON's does. */
static void
set_number(cJSON *it, double d)
{
	it->type = cJSON_Number;
	it->valuedouble = d;
	it->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
}

void
cJSON_Delete(cJSON *it)
{
	cJSON *next;

	for (; it != NULL; it = next) {
		next = it->next;
		if (!(it->type & cJSON_IsReference)) {
			cJSON_Delete(it->child);
			free(it->valuestring);
		}
		if (!(it->type & cJSON_StringIsConst))
			free(it->string);
		free(it);
	}
}

/* --- reading ------------------------------------------------------------------- */

struct in {
	const unsigned char *p;
	size_t len, off;
	int depth;
};

static int
can(const struct in *in, size_t n)
{
	return in->off + n <= in->len;
}

static unsigned char
at(const struct in *in)
{
	return in->p[in->off];
}

static void
blanks(struct in *in)
{
	while (can(in, 1) && at(in) <= ' ')
		in->off++;
}

static int parse_value(cJSON *, struct in *);

/* Four hex digits; cJSON reads a bad digit as making the whole value 0. */
static unsigned
hex4(const unsigned char *s)
{
	unsigned h = 0;

	for (int i = 0; i < 4; i++) {
		int c = tolower(s[i]);
		if (c >= '0' && c <= '9')
			h = h << 4 | (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			h = h << 4 | (unsigned)(c - 'a' + 10);
		else
			return 0;
	}
	return h;
}

/* \uXXXX, or a surrogate pair of two, at s (end bounds the string): its UTF-8
 * at *out; returns the escape's length, 0 if it is malformed. */
static size_t
utf16_escape(const unsigned char *s, const unsigned char *end, char **out)
{
	unsigned long cp;
	unsigned first, second;
	size_t n = 6;
	unsigned char *o = (unsigned char *)*out;

	if (end - s < 6)
		return 0;
	first = hex4(s + 2);
	if (first >= 0xDC00 && first <= 0xDFFF)
		return 0;
	cp = first;
	if (first >= 0xD800 && first <= 0xDBFF) {
		if (end - s < 12 || s[6] != '\\' || s[7] != 'u')
			return 0;
		second = hex4(s + 8);
		if (second < 0xDC00 || second > 0xDFFF)
			return 0;
		cp = 0x10000 + (((first & 0x3FF) << 10) | (second & 0x3FF));
		n = 12;
	}
	if (cp < 0x80) {
		*o++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*o++ = (unsigned char)(0xC0 | cp >> 6);
		*o++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*o++ = (unsigned char)(0xE0 | cp >> 12);
		*o++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		*o++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else {
		*o++ = (unsigned char)(0xF0 | cp >> 18);
		*o++ = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
		*o++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		*o++ = (unsigned char)(0x80 | (cp & 0x3F));
	}
	*out = (char *)o;
	return n;
}

/* A string at the opening quote; its text (caller frees), NULL if malformed. */
static char *
parse_string(struct in *in)
{
	const unsigned char *s, *end;
	char *text, *o;

	if (!can(in, 1) || at(in) != '"')
		return NULL;
	s = in->p + in->off + 1;
	for (end = s; (size_t)(end - in->p) < in->len && *end != '"'; end++)
		if (*end == '\\' && (size_t)(++end - in->p) >= in->len)
			return NULL;
	if ((size_t)(end - in->p) >= in->len)
		return NULL;
	/* An escape never grows: \uXXXX is at most 3 bytes of UTF-8, a pair 4. */
	o = text = xmalloc((size_t)(end - s) + 1);
	while (s < end) {
		size_t n = 2;
		if (*s != '\\') {
			*o++ = (char)*s++;
			continue;
		}
		switch (s[1]) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case '"': case '\\': case '/': *o++ = (char)s[1]; break;
		case 'u':
			if ((n = utf16_escape(s, end, &o)) != 0)
				break;
			/* FALLTHROUGH */
		default:
			free(text);
			return NULL;
		}
		s += n;
	}
	*o = '\0';
	in->off = (size_t)(end - in->p) + 1;
	return text;
}

/* What strtod reads of the run of number-like characters here. */
static int
parse_number(cJSON *it, struct in *in)
{
	char small[64], *num = small, *stop;
	size_t n = 0;
	double d;

	while (can(in, n + 1) && in->p[in->off + n] != '\0' &&
	    strchr("0123456789+-eE.", in->p[in->off + n]) != NULL)
		n++;
	if (n >= sizeof small)
		num = xmalloc(n + 1);
	memcpy(num, in->p + in->off, n);
	num[n] = '\0';
	d = strtod(num, &stop);
	n = (size_t)(stop - num);
	if (num != small)
		free(num);
	if (n == 0)
		return 0;
	set_number(it, d);
	in->off += n;
	return 1;
}

static void
append_child(cJSON *parent, cJSON *it)
{
	cJSON *first = parent->child;

	it->next = NULL;
	if (first == NULL) {
		parent->child = it;
		it->prev = it;
	} else {
		first->prev->next = it;
		it->prev = first->prev;
		first->prev = it;
	}
}

/* An array or an object at its bracket: members until the closing one. */
static int
parse_members(cJSON *it, struct in *in, int object)
{
	char close = object ? '}' : ']';

	if (in->depth >= CJSON_NESTING_LIMIT)
		return 0;
	in->depth++;
	it->type = object ? cJSON_Object : cJSON_Array;
	in->off++;
	blanks(in);
	if (can(in, 1) && at(in) == close)
		goto done;
	for (;;) {
		cJSON *m = item_new(cJSON_Invalid);
		append_child(it, m);
		blanks(in);
		if (object) {
			if ((m->string = parse_string(in)) == NULL)
				return 0;
			blanks(in);
			if (!can(in, 1) || at(in) != ':')
				return 0;
			in->off++;
			blanks(in);
		}
		if (!parse_value(m, in))
			return 0;
		blanks(in);
		if (!can(in, 1) || at(in) != ',')
			break;
		in->off++;
	}
	if (!can(in, 1) || at(in) != close)
		return 0;
done:
	in->off++;
	in->depth--;
	return 1;
}

static int
literal(struct in *in, const char *word)
{
	size_t n = strlen(word);

	if (!can(in, n) || memcmp(in->p + in->off, word, n) != 0)
		return 0;
	in->off += n;
	return 1;
}

static int
parse_value(cJSON *it, struct in *in)
{
	if (literal(in, "null")) {
		it->type = cJSON_NULL;
		return 1;
	}
	if (literal(in, "false")) {
		it->type = cJSON_False;
		return 1;
	}
	if (literal(in, "true")) {
		it->type = cJSON_True;
		it->valueint = 1;
		return 1;
	}
	if (!can(in, 1))
		return 0;
	switch (at(in)) {
	case '"':
		it->type = cJSON_String;
		return (it->valuestring = parse_string(in)) != NULL;
	case '[':
		return parse_members(it, in, 0);
	case '{':
		return parse_members(it, in, 1);
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return parse_number(it, in);
	default:
		return 0;
	}
}

cJSON *
cJSON_ParseWithLength(const char *text, size_t len)
{
	struct in in = { (const unsigned char *)text, len, 0, 0 };
	cJSON *it;

	if (text == NULL || len == 0)
		return NULL;
	if (len > 4 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		in.off = 3;
	blanks(&in);
	it = item_new(cJSON_Invalid);
	if (!parse_value(it, &in)) {
		cJSON_Delete(it);
		return NULL;
	}
	return it;
}

cJSON *
cJSON_Parse(const char *text)
{
	return text == NULL ? NULL : cJSON_ParseWithLength(text, strlen(text) + 1);
}

/* --- writing ------------------------------------------------------------------- */

static void
put(struct buf *b, const void *p, size_t n)
{
	if (buf_append(b, p, n) < 0)
		fatal("out of memory");
}

/* The letter of a short escape (\n, \"), or 0 for the \u00XX form. */
static char
escape_letter(unsigned char c)
{
	switch (c) {
	case '"': return '"';
	case '\\': return '\\';
	case '\b': return 'b';
	case '\f': return 'f';
	case '\n': return 'n';
	case '\r': return 'r';
	case '\t': return 't';
	default: return 0;
	}
}

static void
print_string(struct buf *b, const char *s)
{
	put(b, "\"", 1);
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char e[8] = "\\";
		if (c >= ' ' && c != '"' && c != '\\')
			put(b, s, 1);
		else if ((e[1] = escape_letter(c)) != 0)
			put(b, e, 2);
		else
			put(b, e, (size_t)snprintf(e, sizeof e, "\\u%04x", c));
	}
	put(b, "\"", 1);
}

/* %1.15g when it reads back as the same number (within an epsilon), else %1.17g. */
static void
print_number(struct buf *b, double d)
{
	char num[32];
	double back;

	if (isnan(d) || isinf(d)) {
		put(b, "null", 4);
		return;
	}
	snprintf(num, sizeof num, "%1.15g", d);
	if (sscanf(num, "%lg", &back) != 1 ||
	    fabs(back - d) > fmax(fabs(back), fabs(d)) * DBL_EPSILON)
		snprintf(num, sizeof num, "%1.17g", d);
	put(b, num, strlen(num));
}

static void
tabs(struct buf *b, int n)
{
	while (n-- > 0)
		put(b, "\t", 1);
}

static int
print_value(struct buf *b, const cJSON *it, int pretty, int depth)
{
	const cJSON *m;

	switch (it->type & 0xFF) {
	case cJSON_NULL: put(b, "null", 4); return 1;
	case cJSON_False: put(b, "false", 5); return 1;
	case cJSON_True: put(b, "true", 4); return 1;
	case cJSON_Number: print_number(b, it->valuedouble); return 1;
	case cJSON_String: print_string(b, it->valuestring); return 1;
	case cJSON_Raw:
		if (it->valuestring == NULL)
			return 0;
		put(b, it->valuestring, strlen(it->valuestring));
		return 1;
	case cJSON_Array:
		put(b, "[", 1);
		for (m = it->child; m != NULL; m = m->next) {
			if (!print_value(b, m, pretty, depth + 1))
				return 0;
			if (m->next != NULL)
				put(b, ", ", pretty ? 2 : 1);
		}
		put(b, "]", 1);
		return 1;
	case cJSON_Object:
		put(b, "{\n", pretty ? 2 : 1);
		for (m = it->child; m != NULL; m = m->next) {
			if (pretty)
				tabs(b, depth + 1);
			print_string(b, m->string);
			put(b, ":\t", pretty ? 2 : 1);
			if (!print_value(b, m, pretty, depth + 1))
				return 0;
			if (m->next != NULL)
				put(b, ",", 1);
			if (pretty)
				put(b, "\n", 1);
		}
		if (pretty)
			tabs(b, depth);
		put(b, "}", 1);
		return 1;
	default:
		return 0;
	}
}

static char *
print(const cJSON *it, int pretty)
{
	struct buf b;

	if (it == NULL)
		return NULL;
	buf_init(&b, SIZE_MAX / 2);
	if (!print_value(&b, it, pretty, 0)) {
		buf_free(&b);
		return NULL;
	}
	put(&b, "", 0);
	return buf_steal(&b);
}

char *
cJSON_Print(const cJSON *it)
{
	return print(it, 1);
}

char *
cJSON_PrintUnformatted(const cJSON *it)
{
	return print(it, 0);
}

/* --- looking ------------------------------------------------------------------- */

int
cJSON_GetArraySize(const cJSON *a)
{
	int n = 0;

	for (const cJSON *m = a != NULL ? a->child : NULL; m != NULL; m = m->next)
		n++;
	return n;
}

static cJSON *
member(const cJSON *o, const char *key, int exact)
{
	cJSON *m;

	if (o == NULL || key == NULL)
		return NULL;
	for (m = o->child; m != NULL; m = m->next) {
		if (m->string == NULL) {
			if (exact)	/* where cJSON's exact search stops */
				return NULL;
			continue;
		}
		if (exact ? strcmp(key, m->string) == 0 : strcasecmp(key, m->string) == 0)
			return m;
	}
	return NULL;
}

cJSON *
cJSON_GetObjectItem(const cJSON *const o, const char *const key)
{
	return member(o, key, 0);
}

cJSON *
cJSON_GetObjectItemCaseSensitive(const cJSON *const o, const char *const key)
{
	return member(o, key, 1);
}

cJSON_bool
cJSON_HasObjectItem(const cJSON *o, const char *key)
{
	return member(o, key, 0) != NULL;
}

char *
cJSON_GetStringValue(const cJSON *const it)
{
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

double
cJSON_GetNumberValue(const cJSON *const it)
{
	return cJSON_IsNumber(it) ? it->valuedouble : NAN;
}

static int
type_is(const cJSON *it, int type)
{
	return it != NULL && (it->type & 0xFF) == type;
}

cJSON_bool cJSON_IsTrue(const cJSON *const it) { return type_is(it, cJSON_True); }
cJSON_bool cJSON_IsNull(const cJSON *const it) { return type_is(it, cJSON_NULL); }
cJSON_bool cJSON_IsNumber(const cJSON *const it) { return type_is(it, cJSON_Number); }
cJSON_bool cJSON_IsString(const cJSON *const it) { return type_is(it, cJSON_String); }
cJSON_bool cJSON_IsArray(const cJSON *const it) { return type_is(it, cJSON_Array); }
cJSON_bool cJSON_IsObject(const cJSON *const it) { return type_is(it, cJSON_Object); }

cJSON_bool
cJSON_IsBool(const cJSON *const it)
{
	return it != NULL && (it->type & (cJSON_True | cJSON_False)) != 0;
}

/* --- making -------------------------------------------------------------------- */

cJSON *cJSON_CreateNull(void) { return item_new(cJSON_NULL); }
cJSON *cJSON_CreateArray(void) { return item_new(cJSON_Array); }
cJSON *cJSON_CreateObject(void) { return item_new(cJSON_Object); }

cJSON *
cJSON_CreateString(const char *s)
{
	cJSON *it;

	if (s == NULL)
		return NULL;
	it = item_new(cJSON_String);
	it->valuestring = xstrdup(s);
	return it;
}

cJSON_bool
cJSON_AddItemToArray(cJSON *a, cJSON *it)
{
	if (a == NULL || it == NULL || a == it)
		return 0;
	append_child(a, it);
	return 1;
}

cJSON_bool
cJSON_AddItemToObject(cJSON *o, const char *key, cJSON *it)
{
	if (o == NULL || key == NULL || it == NULL || o == it)
		return 0;
	if (!(it->type & cJSON_StringIsConst))
		free(it->string);
	it->string = xstrdup(key);
	it->type &= ~cJSON_StringIsConst;
	append_child(o, it);
	return 1;
}

cJSON_bool
cJSON_AddItemReferenceToObject(cJSON *o, const char *key, cJSON *it)
{
	cJSON *ref;

	if (o == NULL || key == NULL || it == NULL)
		return 0;
	ref = item_new(cJSON_Invalid);
	*ref = *it;
	ref->string = NULL;
	ref->type |= cJSON_IsReference;
	ref->next = ref->prev = NULL;
	return cJSON_AddItemToObject(o, key, ref);
}

/* Adds it under key and returns it, or frees it and returns NULL. */
static cJSON *
add(cJSON *o, const char *key, cJSON *it)
{
	if (cJSON_AddItemToObject(o, key, it))
		return it;
	cJSON_Delete(it);
	return NULL;
}

cJSON *
cJSON_AddNullToObject(cJSON *const o, const char *const key)
{
	return add(o, key, item_new(cJSON_NULL));
}

cJSON *
cJSON_AddTrueToObject(cJSON *const o, const char *const key)
{
	return add(o, key, item_new(cJSON_True));
}

cJSON *
cJSON_AddBoolToObject(cJSON *const o, const char *const key, const cJSON_bool v)
{
	return add(o, key, item_new(v ? cJSON_True : cJSON_False));
}

cJSON *
cJSON_AddNumberToObject(cJSON *const o, const char *const key, const double d)
{
	cJSON *it = item_new(cJSON_Invalid);

	set_number(it, d);
	return add(o, key, it);
}

cJSON *
cJSON_AddStringToObject(cJSON *const o, const char *const key, const char *const s)
{
	cJSON *it = cJSON_CreateString(s);

	return it != NULL ? add(o, key, it) : NULL;
}

cJSON *
cJSON_AddObjectToObject(cJSON *const o, const char *const key)
{
	return add(o, key, item_new(cJSON_Object));
}

cJSON *
cJSON_AddArrayToObject(cJSON *const o, const char *const key)
{
	return add(o, key, item_new(cJSON_Array));
}

cJSON *
cJSON_DetachItemFromObjectCaseSensitive(cJSON *o, const char *key)
{
	cJSON *it = member(o, key, 1);

	if (it == NULL)
		return NULL;
	if (it == o->child) {
		o->child = it->next;
		if (it->next != NULL)
			it->next->prev = it->prev;
	} else {
		it->prev->next = it->next;
		if (it->next != NULL)
			it->next->prev = it->prev;
		else
			o->child->prev = it->prev;
	}
	it->prev = it->next = NULL;
	return it;
}

void
cJSON_DeleteItemFromObjectCaseSensitive(cJSON *o, const char *key)
{
	cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(o, key));
}

cJSON *
cJSON_Duplicate(const cJSON *it, cJSON_bool recurse)
{
	cJSON *d;

	if (it == NULL)
		return NULL;
	d = item_new(it->type & ~cJSON_IsReference);
	d->valueint = it->valueint;
	d->valuedouble = it->valuedouble;
	if (it->valuestring != NULL)
		d->valuestring = xstrdup(it->valuestring);
	if (it->string != NULL)
		d->string = it->type & cJSON_StringIsConst ? it->string : xstrdup(it->string);
	if (recurse)
		for (const cJSON *m = it->child; m != NULL; m = m->next)
			append_child(d, cJSON_Duplicate(m, 1));
	return d;
}
