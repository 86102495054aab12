/* Fuzz target: the ClientHello reader of the proxy's SNI check
 * (core/net/hello.c).  The proxy asks again with more bytes for as long as it
 * answers "more", so a prefix must answer "more" or what the whole input
 * answers (the same name); a name never holds a control or a space; and an
 * answer of "more" never comes at the size limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/net/hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char whole[256], part[256];
	const char *why;
	enum net_hello a, b;
	size_t cut;

	if (size < 2)
		return 0;
	cut = ((size_t)data[0] << 8 | data[1]) % size;
	data += 2;
	size -= 2;
	a = net_hello_name(data, size, whole, sizeof whole, &why);
	if (a == NET_HELLO_BAD && why == NULL)
		abort();
	if (a == NET_HELLO_MORE && size >= NET_HELLO_BUF_MAX)
		abort();
	if (a == NET_HELLO_NAME)
		for (const char *p = whole; *p; p++)
			if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
				abort();
	if (cut > size)
		cut = size;
	b = net_hello_name(data, cut, part, sizeof part, &why);
	if (b != NET_HELLO_MORE && (b != a || (b == NET_HELLO_NAME && strcmp(part, whole) != 0)))
		abort();
	return 0;
}
