/* The server name of a TLS ClientHello across records (see net/hello.h).  The
 * layout: RFC 8446 sections 4.1.2 and 5.1, RFC 6066 section 3. */
#include <string.h>

#include "core/net/hello.h"

#define REC_MAX		16384		/* TLSPlaintext.length */
#define EXT_SNI		0x0000
#define EXT_ECH		0xfe0d		/* encrypted_client_hello */
#define EXT_ESNI	0xffce		/* its draft predecessor */
#define EXTS_SEEN	64

static unsigned
u16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static enum net_hello
bad(const char **why, const char *what)
{
	*why = what;
	return NET_HELLO_BAD;
}

/* The ClientHello body m (len bytes, after its 4-byte header). */
static enum net_hello
parse(const uint8_t *m, size_t len, char *name, size_t namelen, const char **why)
{
	unsigned seen[EXTS_SEEN];
	size_t p = 2 + 32, end, nseen = 0;

	name[0] = '\0';
	if (p + 1 > len || (p += 1 + m[p]) + 2 > len)
		return bad(why, "a ClientHello cut short in its session id");
	if (u16(m + p) < 2 || (u16(m + p) & 1) || (p += 2 + u16(m + p)) + 1 > len)
		return bad(why, "a ClientHello with bad cipher suites");
	if (m[p] < 1 || (p += 1 + m[p]) > len)
		return bad(why, "a ClientHello with bad compression methods");
	if (p == len)
		return NET_HELLO_NAME;		/* no extensions: no name */
	if (p + 2 > len || p + 2 + u16(m + p) != len)
		return bad(why, "a ClientHello whose extensions do not fill it");
	for (p += 2, end = len; p < end;) {
		unsigned type, el;
		if (p + 4 > end || p + 4 + (el = u16(m + p + 2)) > end)
			return bad(why, "an extension overruns the ClientHello");
		type = u16(m + p);
		for (size_t i = 0; i < nseen; i++)
			if (seen[i] == type)
				return bad(why, "an extension given twice");
		if (nseen == EXTS_SEEN)
			return bad(why, "too many extensions");
		seen[nseen++] = type;
		if (type == EXT_ECH || type == EXT_ESNI)
			return bad(why, "an encrypted ClientHello (ECH): its server name cannot be read");
		if (type == EXT_SNI) {
			const uint8_t *x = m + p + 4;
			size_t nl;
			if (el < 5 || u16(x) != el - 2 || x[2] != 0 || (nl = u16(x + 3)) + 5 != el)
				return bad(why, "a server name list other than one host name");
			if (nl == 0 || nl >= namelen)
				return bad(why, "a server name that is empty or too long");
			for (size_t i = 0; i < nl; i++)
				if (x[5 + i] <= ' ' || x[5 + i] >= 0x7f)
					return bad(why, "a server name with a character no host name has");
			memcpy(name, x + 5, nl);
			name[nl] = '\0';
		}
		p += 4 + el;
	}
	return NET_HELLO_NAME;
}

enum net_hello
net_hello_name(const uint8_t *b, size_t n, char *name, size_t namelen, const char **why)
{
	uint8_t msg[NET_HELLO_MSG_MAX + 4];
	size_t have = 0, p = 0;

	*why = NULL;
	if (namelen == 0)
		return bad(why, "no room for a name");
	name[0] = '\0';
	/* The handshake bytes of each record in turn, until the message is whole. */
	while (p + 5 <= n) {
		size_t rl = u16(b + p + 3), avail, take;
		if (b[p] != 0x16 || b[p + 1] != 3)
			return bad(why, "a record that is not a TLS handshake record");
		if (rl == 0 || rl > REC_MAX)
			return bad(why, "a handshake record that is empty or over the TLS limit");
		avail = n - p - 5 < rl ? n - p - 5 : rl;
		take = avail < sizeof msg - have ? avail : sizeof msg - have;
		memcpy(msg + have, b + p + 5, take);
		have += take;
		if (have >= 4) {
			size_t ml = (size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3];
			if (msg[0] != 1)
				return bad(why, "the first handshake message is not a ClientHello");
			if (ml > NET_HELLO_MSG_MAX)
				return bad(why, "a ClientHello over the size read");
			if (have >= 4 + ml)
				return parse(msg + 4, ml, name, namelen, why);
		}
		if (avail < rl)
			break;			/* the rest of this record is to come */
		p += 5 + rl;
	}
	if (n >= NET_HELLO_BUF_MAX)
		return bad(why, "a ClientHello spread over too many bytes");
	return NET_HELLO_MORE;
}
