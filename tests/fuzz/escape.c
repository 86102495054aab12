/* Fuzz target: what shows a sandbox's text on a terminal or in JSON.
 * utf8_escape_controls leaves valid UTF-8 with no C0, DEL or C1 control (and
 * keeps newline and tab only when asked); utf8_lossy leaves valid UTF-8 of the
 * same length when the input was valid; jadd_name prints as valid UTF-8 JSON
 * whose *_b64 field gives the bytes back exactly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/b64.h"
#include "lib/jspec.h"
#include "lib/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
no_controls(const char *s, size_t n, int keep_nl)
{
	const unsigned char *u = (const unsigned char *)s;

	if (!utf8_valid(s, n))
		abort();
	for (size_t i = 0; i < n; i++) {
		if ((u[i] < 0x20 && !(keep_nl && (u[i] == '\n' || u[i] == '\t'))) || u[i] == 0x7f)
			abort();
		if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] < 0xa0)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t cap = 6 * size + 1, n;
	char *out = malloc(cap), *small = malloc(8);

	for (int keep = 0; keep < 2; keep++) {
		n = utf8_escape_controls(s, size, out, cap, keep);
		if (n != strlen(out))
			abort();
		no_controls(out, n, keep);
		/* A small buffer cuts between escapes, never inside one. */
		n = utf8_escape_controls(s, size, small, 8, keep);
		if (n > 7)
			abort();
		no_controls(small, n, keep);
	}
	n = utf8_lossy(s, size, out, 3 * size + 1);
	if (!utf8_valid(out, n) || (utf8_valid(s, size) && (n != size || memcmp(out, s, n))))
		abort();

	if (memchr(s, '\0', size) == NULL) {
		char *z = strndup(s, size);
		cJSON *o = cJSON_CreateObject();
		jadd_name(o, "name", z);
		char *txt = cJSON_PrintUnformatted(o);
		if (txt == NULL || !utf8_valid(txt, strlen(txt)))
			abort();
		cJSON *back = cJSON_Parse(txt);
		const char *b64 = cJSON_GetStringValue(cJSON_GetObjectItem(back, "name_b64"));
		if (b64 != NULL) {
			size_t bl;
			unsigned char *raw = b64_decode(b64, strlen(b64), &bl);
			if (raw == NULL || bl != size || memcmp(raw, s, size) != 0)
				abort();
			free(raw);
		} else if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(back, "name")), z) != 0) {
			abort();
		}
		cJSON_Delete(back);
		free(txt);
		cJSON_Delete(o);
		free(z);
	}
	free(out);
	free(small);
	return 0;
}
