/* Runs documents through the cJSON API the thin sbxtop uses and prints what
 * each call gives.  Built twice, against the system's cJSON and against
 * cli/cjson.c, so tests/integration/thin-json.sh can hold the two outputs
 * side by side.  Input: records "LENGTH\n" followed by that many bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static void
show(const char *what, char *text)
{
	printf("%s %s\n", what, text != NULL ? text : "(null)");
	free(text);
}

static void
show_item(const cJSON *it)
{
	double d = cJSON_GetNumberValue(it);
	const char *s = cJSON_GetStringValue(it);

	printf("item type=%d int=%d num=%s%.17g str=%s flags=%d%d%d%d%d%d%d\n", it->type & 0xFF,
	    cJSON_IsNumber(it) || cJSON_IsBool(it) ? it->valueint : 0, isnan(d) ? "nan:" : "",
	    isnan(d) ? 0 : d, s != NULL ? s : "(null)", cJSON_IsTrue(it), cJSON_IsBool(it),
	    cJSON_IsNull(it), cJSON_IsNumber(it), cJSON_IsString(it), cJSON_IsArray(it),
	    cJSON_IsObject(it));
}

/* Every member, looked up both ways and by an upper-cased key; a copy built
 * with the Add calls from what was read. */
static void
walk(cJSON *root, int depth)
{
	cJSON *m, *copy = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(copy, "all");

	show_item(root);
	printf("size %d\n", cJSON_GetArraySize(root));
	cJSON_ArrayForEach(m, root) {
		char key[64] = "";
		if (m->string != NULL) {
			snprintf(key, sizeof key, "%s", m->string);
			for (char *k = key; *k; k++)
				*k = (char)(*k >= 'a' && *k <= 'z' ? *k - 32 : *k);
			printf("get %d %d %d %d\n", cJSON_GetObjectItem(root, m->string) == m,
			    cJSON_GetObjectItemCaseSensitive(root, m->string) == m,
			    cJSON_GetObjectItem(root, key) != NULL, cJSON_HasObjectItem(root, key));
		}
		const char *name = m->string != NULL ? m->string : "x";
		if (cJSON_IsNumber(m))
			cJSON_AddNumberToObject(copy, name, m->valuedouble);
		else if (cJSON_IsString(m))
			cJSON_AddStringToObject(copy, name, m->valuestring);
		else if (cJSON_IsNull(m))
			cJSON_AddNullToObject(copy, name);
		else if (cJSON_IsTrue(m))
			cJSON_AddTrueToObject(copy, name);
		else if (cJSON_IsBool(m))
			cJSON_AddBoolToObject(copy, name, 0);
		else if (cJSON_IsArray(m))
			cJSON_AddArrayToObject(copy, name);
		else
			cJSON_AddObjectToObject(copy, name);
		cJSON_AddItemToArray(arr, cJSON_CreateString(name));
		if (depth < 3)
			walk(m, depth + 1);
	}
	cJSON_AddItemReferenceToObject(copy, "ref", arr);
	cJSON_AddItemToArray(arr, cJSON_CreateNull());
	show("copy", cJSON_Print(copy));
	cJSON_Delete(copy);
}

static void
one(const char *doc, size_t len)
{
	char *z = malloc(len + 1);
	cJSON *r, *dup, *shallow;

	memcpy(z, doc, len);
	z[len] = '\0';
	r = cJSON_Parse(z);
	show("parse", cJSON_PrintUnformatted(r));
	cJSON_Delete(r);
	free(z);
	if ((r = cJSON_ParseWithLength(doc, len)) == NULL) {
		printf("parse-len (null)\n");
		return;
	}
	show("pretty", cJSON_Print(r));
	show("flat", cJSON_PrintUnformatted(r));
	walk(r, 0);
	dup = cJSON_Duplicate(r, 1);
	shallow = cJSON_Duplicate(r, 0);
	show("dup", cJSON_PrintUnformatted(dup));
	show("shallow", cJSON_PrintUnformatted(shallow));
	if (cJSON_IsObject(dup) && dup->child != NULL) {
		char *first = strdup(dup->child->string), *last = strdup(dup->child->prev->string);
		cJSON *d = cJSON_DetachItemFromObjectCaseSensitive(dup, last);
		show("detached", cJSON_PrintUnformatted(d));
		cJSON_Delete(d);
		cJSON_DeleteItemFromObjectCaseSensitive(dup, first);
		show("left", cJSON_PrintUnformatted(dup));
		cJSON_AddItemToObject(dup, "again", cJSON_CreateString(first));
		show("added", cJSON_Print(dup));
		free(first);
		free(last);
	}
	cJSON_Delete(shallow);
	cJSON_Delete(dup);
	cJSON_Delete(r);
}

int
main(void)
{
	size_t len;

	while (scanf("%zu", &len) == 1 && getchar() == '\n') {
		char *doc = malloc(len + 1);
		if (fread(doc, 1, len, stdin) != len)
			return 1;
		printf("--- %zu\n", len);
		one(doc, len);
		free(doc);
		fflush(stdout);
	}
	return 0;
}
