/* Fuzz target: the thin sbxtop's own cJSON (cli/cjson.c), which reads the core
 * server's answers.  Whatever it parses must print, and what it prints must
 * read back to the same text, compact or indented, and copy to the same text;
 * a document that fails must leave nothing allocated (LeakSanitizer says).
 * tests/integration/thin-json.sh holds it against the system's cJSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *
reprint(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	char *out;

	if (j == NULL)
		abort();
	out = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *j = cJSON_ParseWithLength((const char *)data, size), *dup;
	char *flat, *pretty, *again, *from_pretty, *copied;

	if (j == NULL)
		return 0;
	flat = cJSON_PrintUnformatted(j);
	pretty = cJSON_Print(j);
	dup = cJSON_Duplicate(j, 1);
	copied = cJSON_PrintUnformatted(dup);
	if (flat == NULL || pretty == NULL || copied == NULL)
		abort();
	again = reprint(flat);
	from_pretty = reprint(pretty);
	if (strcmp(flat, again) != 0 || strcmp(flat, from_pretty) != 0 || strcmp(flat, copied) != 0)
		abort();
	free(flat);
	free(pretty);
	free(again);
	free(from_pretty);
	free(copied);
	cJSON_Delete(dup);
	cJSON_Delete(j);
	return 0;
}
