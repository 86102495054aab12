/* Validation of JSON request objects against a small field table: types, ranges,
 * required fields and unknown fields, with a message that names the field. */
#ifndef SBX_JSPEC_H
#define SBX_JSPEC_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

enum jtype {
	J_STRING,
	J_INT,		/* a whole number within [min, max] */
	J_BOOL,
	J_STRMAP,	/* an object whose values are all strings */
	J_STRLIST,	/* an array of strings */
	J_OBJECT,
};

struct jfield {
	const char	*name;
	enum jtype	 type;
	int		 required;
	int64_t		 min, max;	/* J_INT only; both 0 means any */
};

/* Check obj against the table, which ends with a NULL name.  0 when valid; -1 with
 * a message naming the offending field in msg. */
int jspec_check(const cJSON *obj, const struct jfield *spec, char *msg, size_t msglen);

/* Typed getters for fields already checked (defaults when absent). */
const char *jstr(const cJSON *obj, const char *name, const char *def);
int64_t jint(const cJSON *obj, const char *name, int64_t def);
/* v as a whole number clamped into [lo, hi] (a double beyond int64_t's range has
 * no defined conversion); def when v is not a number. */
int64_t jint_of(const cJSON *v, int64_t def, int64_t lo, int64_t hi);
/* v as a whole number in [min, max]: 0 with *out set, or -1 when it is not a number,
 * not whole, or out of range (checked before any conversion). */
int jint_in(const cJSON *v, int64_t min, int64_t max, int64_t *out);
/* A finite number, or def. */
double jnum(const cJSON *obj, const char *name, double def);
int jbool(const cJSON *obj, const char *name, int def);

/* obj[name] = s when s is valid UTF-8 (a JSON string must be); otherwise s with
 * each invalid byte as U+FFFD, and obj[name + "_b64"] the raw bytes in base64,
 * so a file name that is not UTF-8 is still named exactly. */
void jadd_name(cJSON *obj, const char *name, const char *s);
/* Every key and string of v and what follows it (v->next...) made valid UTF-8,
 * invalid bytes as U+FFFD; 1 when something changed.  The last guard before a
 * JSON text is written for a strict reader. */
int jfix_utf8(cJSON *v);

#endif
