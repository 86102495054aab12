/* The server name of a TLS ClientHello, read across the TLS records that carry
 * it (a handshake message may be split over any number of records, and over
 * any number of reads).  Pure logic, for the proxy's SNI check (net/proxy.c)
 * and a fuzz target. */
#ifndef SBX_NET_HELLO_H
#define SBX_NET_HELLO_H

#include <stddef.h>
#include <stdint.h>

/* The most of a ClientHello (its handshake message) and of the records around
 * it that are read; anything longer is refused. */
#define NET_HELLO_MSG_MAX	(32 * 1024)
#define NET_HELLO_BUF_MAX	(64 * 1024)

enum net_hello {
	NET_HELLO_MORE,		/* a ClientHello so far: more bytes are needed */
	NET_HELLO_NAME,		/* a whole ClientHello: its server name in name ("" none) */
	NET_HELLO_BAD,		/* not a ClientHello this can read whole: refuse it */
};

/* Read the first n bytes a client sent (which start with a TLS record:
 * b[0] == 0x16).  NET_HELLO_MORE only while n < NET_HELLO_BUF_MAX: the caller
 * reads more and asks again with all of it.  NET_HELLO_BAD, with why, for
 * anything a server might read otherwise than this: a record that is not a
 * handshake record, empty or over the TLS record limit, a first message that
 * is not a ClientHello, one over NET_HELLO_MSG_MAX, fields that overrun it,
 * an extension given twice, more than one server name, a name that is empty,
 * too long or holds a character no host name has, and an encrypted
 * ClientHello (ECH, ESNI: its real server name is one no proxy can read). */
enum net_hello net_hello_name(const uint8_t *b, size_t n, char *name, size_t namelen,
    const char **why);

#endif
