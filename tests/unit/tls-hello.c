/* Unit tests for the ClientHello reader of the proxy's SNI check
 * (core/net/hello.c), on ClientHellos OpenSSL makes: whole, cut into records
 * at every byte (so one record ends between fields, inside the server name,
 * or exactly between two extensions), handed over a byte at a time; and the
 * ones it must refuse: other record types, records over the limit, two server
 * names, an extension twice, an encrypted ClientHello, controls in a name. */
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "tap.h"
#include "core/net/hello.h"

/* The first flight of an OpenSSL client naming sni (NULL: none): one record. */
static size_t
client_hello(const char *sni, uint8_t *out, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *s = SSL_new(ctx);
	BIO *rd = BIO_new(BIO_s_mem()), *wr = BIO_new(BIO_s_mem());
	int n;

	SSL_set_bio(s, rd, wr);
	if (sni != NULL)
		SSL_set_tlsext_host_name(s, sni);
	SSL_connect(s);			/* wants to read: the hello is written */
	n = BIO_read(wr, out, (int)cap);
	SSL_free(s);
	SSL_CTX_free(ctx);
	return n > 0 ? (size_t)n : 0;
}

/* The handshake message of record rec (one record) split into records of the
 * sizes in cuts (0-terminated; the rest goes in a last one). */
static size_t
resplit(const uint8_t *rec, size_t len, const size_t *cuts, uint8_t *out)
{
	const uint8_t *m = rec + 5;
	size_t ml = len - 5, o = 0, at = 0;

	for (size_t i = 0; at < ml; i++) {
		size_t k = cuts[i] ? cuts[i] : ml - at;
		if (k > ml - at)
			k = ml - at;
		memcpy(out + o, rec, 3);
		out[o + 3] = (uint8_t)(k >> 8);
		out[o + 4] = (uint8_t)k;
		memcpy(out + o + 5, m + at, k);
		o += 5 + k;
		at += k;
		if (cuts[i] == 0)
			break;
	}
	return o;
}

static enum net_hello
name_of(const uint8_t *b, size_t n, char *name)
{
	const char *why;

	return net_hello_name(b, n, name, 256, &why);
}

/* Offset of the extensions' length in the ClientHello record rec. */
static size_t
exts_at(const uint8_t *rec)
{
	size_t p = 5 + 4 + 2 + 32;

	p += 1 + rec[p];
	p += 2 + ((size_t)rec[p] << 8 | rec[p + 1]);
	return p + 1 + rec[p];
}

/* Offset of extension type in the ClientHello record rec, or 0. */
static size_t
ext_at(const uint8_t *rec, size_t len, unsigned type)
{
	for (size_t p = exts_at(rec) + 2; p + 4 <= len;
	    p += 4 + ((size_t)rec[p + 2] << 8 | rec[p + 3]))
		if (((unsigned)rec[p] << 8 | rec[p + 1]) == type)
			return p;
	return 0;
}

/* Set the three lengths of the record rec of len bytes (record, handshake
 * message, extensions) after an edit. */
static void
relength(uint8_t *rec, size_t len)
{
	size_t ml = len - 5, x = exts_at(rec), xl = len - x - 2;

	rec[3] = (uint8_t)(ml >> 8), rec[4] = (uint8_t)ml;
	rec[6] = 0, rec[7] = (uint8_t)((ml - 4) >> 8), rec[8] = (uint8_t)(ml - 4);
	rec[x] = (uint8_t)(xl >> 8), rec[x + 1] = (uint8_t)xl;
}

int
main(void)
{
	uint8_t rec[4096], split[8192], bad[8192];
	char name[256];
	size_t n = client_hello("up.test", rec, sizeof rec), sni, m;
	int all = 1, more = 1;

	if (!check(n > 100 && rec[0] == 0x16, "OpenSSL made a ClientHello (%zu bytes)", n))
		return tap_end();
	check(name_of(rec, n, name) == NET_HELLO_NAME && strcmp(name, "up.test") == 0,
	    "a whole ClientHello: its name");
	for (size_t k = 1; k < n - 5 && all; k++) {
		size_t cuts[] = { k, 0 };
		m = resplit(rec, n, cuts, split);
		all = name_of(split, m, name) == NET_HELLO_NAME && strcmp(name, "up.test") == 0;
		if (!all)
			diag("cut after %zu bytes", k);
	}
	check(all, "split into two records at every byte: the name, each time");
	sni = ext_at(rec, n, 0) - 5;
	{
		size_t cuts[] = { sni, 0 };
		m = resplit(rec, n, cuts, split);
		check(name_of(split, m, name) == NET_HELLO_NAME && strcmp(name, "up.test") == 0,
		    "split exactly before the server name extension: the name is still read");
		for (size_t k = 1; k < m && more; k++)
			more = name_of(split, k, name) == NET_HELLO_MORE;
		check(more, "every prefix of it asks for more, none passes without the name");
	}
	{
		size_t cuts[] = { 1, 1, 1, 7, 3, 0 };
		m = resplit(rec, n, cuts, split);
		check(name_of(split, m, name) == NET_HELLO_NAME && strcmp(name, "up.test") == 0,
		    "in six records, the first ones a byte long");
	}
	n = client_hello(NULL, rec, sizeof rec);
	check(name_of(rec, n, name) == NET_HELLO_NAME && name[0] == '\0',
	    "a ClientHello without a name: none");

	n = client_hello("up.test", rec, sizeof rec);
	memcpy(bad, rec, n);
	bad[0] = 0x17;
	check(name_of(bad, n, name) == NET_HELLO_BAD, "an application data record: refused");
	{
		size_t cuts[] = { 40, 0 };
		m = resplit(rec, n, cuts, split);
		split[45] = 0x15;	/* the second record an alert */
		check(name_of(split, m, name) == NET_HELLO_BAD,
		    "another record type in the middle of a ClientHello: refused");
	}
	memcpy(bad, "\x16\x03\x01\xff\xff", 5);
	check(name_of(bad, 5, name) == NET_HELLO_BAD, "a record over the TLS limit: refused");
	memcpy(bad, "\x16\x03\x01\x00\x00", 5);
	check(name_of(bad, 5, name) == NET_HELLO_BAD, "an empty record: refused");
	memcpy(bad, "\x16\x03\x01\x00\x04\x01\x01\x00\x00", 9);
	check(name_of(bad, 9, name) == NET_HELLO_BAD, "a ClientHello over the size read: refused");
	memcpy(bad, "\x16\x03\x01\x00\x04\x02\x00\x00\x10", 9);
	check(name_of(bad, 9, name) == NET_HELLO_BAD, "a first message that is not a ClientHello");
	{
		/* A ClientHello of 32767 bytes announced, sent a byte a record. */
		static const uint8_t head[] = { 1, 0, 0x7f, 0xff };
		uint8_t *big = calloc(1, NET_HELLO_BUF_MAX);
		for (size_t k = 0, i = 0; k + 6 <= NET_HELLO_BUF_MAX; k += 6, i++) {
			memcpy(big + k, "\x16\x03\x01\x00\x01", 5);
			big[k + 5] = i < 4 ? head[i] : 0;
		}
		check(name_of(big, 8190, name) == NET_HELLO_MORE,
		    "records of one byte each: more is asked for while under the limit");
		check(name_of(big, NET_HELLO_BUF_MAX, name) == NET_HELLO_BAD,
		    "and refused at the limit");
		free(big);
	}

	/* The server name extension edited in place. */
	sni = ext_at(rec, n, 0);
	memcpy(bad, rec, n);
	bad[sni + 9 + 2] = 0x1b;	/* "up" ESC "test" */
	check(name_of(bad, n, name) == NET_HELLO_BAD, "a name holding a control: refused");
	memcpy(bad, rec, n);
	bad[sni] = 0xfe, bad[sni + 1] = 0x0d;
	check(name_of(bad, n, name) == NET_HELLO_BAD, "an encrypted ClientHello (ECH): refused");
	{
		/* The server name extension again, right after itself. */
		size_t el = 4 + ((size_t)rec[sni + 2] << 8 | rec[sni + 3]);
		memcpy(bad, rec, sni + el);
		memcpy(bad + sni + el, rec + sni, n - sni);
		relength(bad, n + el);
		check(name_of(bad, n + el, name) == NET_HELLO_BAD,
		    "a server name extension twice: refused");
		memcpy(bad, rec, n);
		relength(bad, n);
		check(name_of(bad, n, name) == NET_HELLO_NAME, "(the same edit, once: read)");
	}
	memcpy(bad, rec, n);
	bad[sni + 6] = 1;	/* a name type that is not host_name */
	check(name_of(bad, n, name) == NET_HELLO_BAD, "a name list of another type: refused");
	return tap_end();
}
