/* Fuzz target: the bounded XML extractor of AWS answers (backends/lambda/aws-xml.c) and the
 * percent decoder of IAM's policy documents.  Whatever the input: no read past
 * it, the output is NUL-terminated and fits; a value found with a large buffer
 * is found the same with a buffer of exactly its size and refused with one byte
 * less; aws_xml_text_in finds nothing aws_xml_text would not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/lambda/aws-xml.h"

static const char *const tags[] = { "Code", "Message", "Arn", "Account", "Error",
    "AssumeRolePolicyDocument", "BlockPublicAcls", "SSEAlgorithm", "Role", "a" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char big[4096], small[4096], in[4096];
	const char *tag, *parent;
	int r;

	if (size < 2)
		return 0;
	tag = tags[data[0] % 10];
	parent = tags[data[1] % 10];
	data += 2;
	size -= 2;
	/* An exact-size copy, so ASan sees any read past the input. */
	char *xml = malloc(size ? size : 1);
	memcpy(xml, data, size);

	r = aws_xml_text(xml, size, tag, big, sizeof big);
	if (r < -1 || r > 1 || strlen(big) >= sizeof big || (r != 1 && big[0] != '\0'))
		abort();
	if (r == 1) {
		size_t n = strlen(big);
		if (aws_xml_text(xml, size, tag, small, n + 1) != 1 || strcmp(small, big) != 0)
			abort();
		if (aws_xml_text(xml, size, tag, small, n == 0 ? 1 : n) != (n == 0 ? 1 : -1))
			abort();
	}
	r = aws_xml_text_in(xml, size, parent, tag, small, sizeof small);
	if (r < -1 || r > 1 || strlen(small) >= sizeof small)
		abort();
	free(xml);

	if (size < sizeof in) {
		memcpy(in, data, size);
		in[size] = '\0';
		size_t before = strlen(in);
		if (aws_pct_decode(in, (int)(size & 1)) == 0 && strlen(in) > before)
			abort();
	}
	return 0;
}
