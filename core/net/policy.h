/* A sandbox's network policy under `--network rules`: allow and deny entries
 * of a domain (api.github.com), a wildcard (*.npmjs.org: its subdomains), an
 * address or a CIDR (IPv4, or IPv6 in brackets), each with an optional port.
 * A deny entry that matches wins over any allow entry; what no entry covers is
 * denied, or held for the operator in ask mode.  Pure logic: the proxy
 * (core/net/proxy.c) and the core functions (core/core-net.c) share it. */
#ifndef SBX_NETPOLICY_H
#define SBX_NETPOLICY_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "lib/err.h"

enum net_rule_kind { NET_RULE_NAME, NET_RULE_WILD, NET_RULE_ANY, NET_RULE_NET4, NET_RULE_NET6 };

struct net_rule {
	enum net_rule_kind kind;
	char		 name[254];	/* NAME: the name; WILD: the suffix after "*." */
	uint8_t		 addr[16];	/* NET4 (4 bytes) and NET6, masked to prefix */
	int		 prefix;
	int		 port;		/* 0: any */
	char		 text[320];	/* the canonical form, as shown and stored */
};

enum net_verdict { NET_NONE, NET_ALLOW, NET_DENY };

/* Parse one entry ("api.github.com", "*.npmjs.org:443", "10.0.0.0/8",
 * "[2001:db8::/32]:443", "*"); -1 with e saying what is accepted. */
int net_rule_parse(const char *text, struct net_rule *r, struct sbx_err *e);

/* A destination: a name (or NULL when it was given as an address) and/or an
 * address (family 4 or 6; 0 when not known yet), and a port.  own: the address
 * is one of this host's (the caller looked: net_addr_own), reached, as
 * loopback and link-local are, only through an entry that names an address. */
struct net_dest {
	const char	*name;
	int		 family;
	uint8_t		 addr[16];
	int		 port;
	int		 own;
};

/* Whether r covers d. */
int net_rule_match(const struct net_rule *r, const struct net_dest *d);

struct net_policy {
	struct net_rule	*allow, *deny, *limit;
	size_t		 nallow, ndeny, nlimit;
	int		 ask;
	int		 ask_timeout_s;
};

/* From the record's "net" object {allow, deny, ask, ask_timeout_s, grants,
 * limit}; grants (allow entries with an "until" in wall ms) count as allow
 * entries until then.  NULL: nothing allowed.  -1 with e on a bad entry. */
int net_policy_from_json(const cJSON *o, int64_t now_wall_ms, struct net_policy *p,
    struct sbx_err *e);
void net_policy_clear(struct net_policy *p);

/* The verdict for d and, in rule (may be NULL, len bytes), the entry that
 * decided ("default" when none did). */
enum net_verdict net_policy_decide(const struct net_policy *p, const struct net_dest *d,
    char *rule, size_t len);

/* Whether the entry r asks for nothing beyond the entries in lim (an agent's
 * upper bound): a name within a name or wildcard, a wildcard within a wider
 * one, a network inside a network, the same port or any. */
int net_rule_within(const struct net_rule *r, const struct net_rule *lim, size_t nlim);

/* Parse a comma-separated list of entries (a configuration value) into a JSON
 * array of canonical strings (caller frees); -1 with e naming the entry. */
int net_rules_list(const char *csv, cJSON **out, struct sbx_err *e);

/* The address text as parsed ("10.0.0.1", "::1"): a literal destination. */
int net_parse_addr(const char *text, int *family, uint8_t addr[16]);

/* An IPv6 address that stands for an IPv4 one becomes that IPv4 address:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d, but not :: and
 * ::1) and NAT64 (64:ff9b::/96).  Policies are checked on the result, so no
 * spelling of an address gets past an entry that names its IPv4 form. */
void net_addr_normalize(int *family, uint8_t addr[16]);

/* Loopback, link-local and unspecified addresses, in any spelling
 * (net_addr_normalize): the host's own, reached only when an address entry
 * names them. */
int net_addr_hostlocal(int family, const uint8_t addr[16]);

#endif
