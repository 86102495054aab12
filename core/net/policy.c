/* Network policy entries: parsing, matching, bounds (see net/policy.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/net/policy.h"
#include "lib/util.h"

#define RULE_HINT "an entry is a domain (api.github.com), *.domain (its subdomains), " \
	"*, an address or CIDR (10.0.0.0/8, [2001:db8::/32]), each optionally :PORT"

int
net_parse_addr(const char *text, int *family, uint8_t addr[16])
{
	struct in_addr a4;
	struct in6_addr a6;

	memset(addr, 0, 16);
	if (inet_pton(AF_INET, text, &a4) == 1) {
		*family = 4;
		memcpy(addr, &a4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &a6) == 1) {
		*family = 6;
		memcpy(addr, &a6, 16);
		return 0;
	}
	return -1;
}

void
net_addr_normalize(int *family, uint8_t a[16])
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t zero[12];

	if (*family != 6)
		return;
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0 ||
	    (memcmp(a, zero, 12) == 0 && (a[12] | a[13] | a[14] | (a[15] & 0xfe)) != 0)) {
		memmove(a, a + 12, 4);
		memset(a + 4, 0, 12);
		*family = 4;
	}
}

int
net_addr_hostlocal(int family, const uint8_t addr[16])
{
	static const uint8_t zero[16];
	uint8_t a[16];

	memcpy(a, addr, 16);
	net_addr_normalize(&family, a);
	if (family == 4)
		return a[0] == 127 || a[0] == 0 || (a[0] == 169 && a[1] == 254);
	if (memcmp(a, zero, 16) == 0)
		return 1;				/* :: */
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return 1;				/* ::1 */
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;	/* fe80::/10 */
}

static void
mask(uint8_t *a, int bytes, int prefix)
{
	for (int i = 0; i < bytes; i++) {
		int keep = prefix - i * 8;
		if (keep >= 8)
			continue;
		a[i] &= keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
	}
}

static int
name_ok(const char *n)
{
	size_t len = strlen(n), lab = 0;

	if (len == 0 || len > 253 || n[0] == '.' || n[len - 1] == '.' || n[0] == '-')
		return 0;
	for (const char *p = n; *p; p++) {
		if (*p == '.') {
			if (lab == 0)
				return 0;
			lab = 0;
		} else if (isalnum((unsigned char)*p) || *p == '-' || *p == '_') {
			if (++lab > 63)
				return 0;
		} else {
			return 0;
		}
	}
	return 1;
}

int
net_rule_parse(const char *text, struct net_rule *r, struct sbx_err *e)
{
	char buf[300], *host, *port = NULL, *slash;
	size_t len = text ? strlen(text) : 0;

	memset(r, 0, sizeof *r);
	if (len == 0 || len >= sizeof buf)
		return sbx_error(e, SBX_EINVAL, RULE_HINT, "network entry '%s' is empty or too long",
		    text ? text : "");
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)tolower((unsigned char)text[i]);
	buf[len] = '\0';
	host = buf;
	if (buf[0] == '[') {
		char *end = strchr(buf, ']');
		if (end == NULL)
			goto bad;
		*end = '\0';
		host = buf + 1;
		if (end[1] == ':')
			port = end + 2;
		else if (end[1] != '\0')
			goto bad;
	} else if ((port = strrchr(buf, ':')) != NULL) {
		if (strchr(buf, ':') != port)
			goto bad;	/* IPv6 goes in brackets */
		*port++ = '\0';
	}
	if (port != NULL) {
		char *end;
		long v = strtol(port, &end, 10);
		if (*port == '\0' || *end != '\0' || v < 1 || v > 65535)
			return sbx_error(e, SBX_EINVAL, "a port is 1 to 65535",
			    "network entry '%s': bad port '%s'", text, port);
		r->port = (int)v;
	}
	if ((slash = strchr(host, '/')) != NULL) {
		char *end;
		int fam;
		long pl;
		*slash = '\0';
		pl = strtol(slash + 1, &end, 10);
		if (net_parse_addr(host, &fam, r->addr) < 0 || slash[1] == '\0' || *end != '\0' ||
		    pl < 0 || pl > (fam == 4 ? 32 : 128))
			goto bad;
		r->kind = fam == 4 ? NET_RULE_NET4 : NET_RULE_NET6;
		r->prefix = (int)pl;
	} else {
		int fam;
		if (net_parse_addr(host, &fam, r->addr) == 0) {
			r->kind = fam == 4 ? NET_RULE_NET4 : NET_RULE_NET6;
			r->prefix = fam == 4 ? 32 : 128;
		} else if (buf[0] == '[') {
			goto bad;
		} else if (strcmp(host, "*") == 0) {
			r->kind = NET_RULE_ANY;
		} else if (strncmp(host, "*.", 2) == 0 && name_ok(host + 2)) {
			r->kind = NET_RULE_WILD;
			memcpy(r->name, host + 2, strlen(host + 2) + 1);	/* name_ok: <= 253 */
		} else if (name_ok(host)) {
			r->kind = NET_RULE_NAME;
			memcpy(r->name, host, strlen(host) + 1);
		} else {
			goto bad;
		}
	}
	if (r->kind == NET_RULE_NET6 && r->prefix >= 96) {
		/* [::ffff:10.0.0.0/104] is 10.0.0.0/8: destinations are checked
		 * in their IPv4 form. */
		int fam = 6;
		mask(r->addr, 16, r->prefix);
		net_addr_normalize(&fam, r->addr);
		if (fam == 4) {
			r->kind = NET_RULE_NET4;
			r->prefix -= 96;
		}
	}
	if (r->kind == NET_RULE_NET4 || r->kind == NET_RULE_NET6) {
		char a[INET6_ADDRSTRLEN];
		int v6 = r->kind == NET_RULE_NET6;
		mask(r->addr, v6 ? 16 : 4, r->prefix);
		inet_ntop(v6 ? AF_INET6 : AF_INET, r->addr, a, sizeof a);
		if (r->prefix == (v6 ? 128 : 32))
			snprintf(buf, sizeof buf, v6 ? "[%s]" : "%s", a);
		else
			snprintf(buf, sizeof buf, v6 ? "[%s/%d]" : "%s/%d", a, r->prefix);
	} else {
		snprintf(buf, sizeof buf, "%s%s", r->kind == NET_RULE_WILD ? "*." : "",
		    r->kind == NET_RULE_ANY ? "*" : r->name);
	}
	if (r->port)
		snprintf(r->text, sizeof r->text, "%s:%d", buf, r->port);
	else
		snprintf(r->text, sizeof r->text, "%s", buf);
	return 0;
bad:
	return sbx_error(e, SBX_EINVAL, RULE_HINT, "network entry '%s' is not valid", text);
}

/* name is sfx or ends with "." sfx. */
static int
under(const char *name, const char *sfx, int or_equal)
{
	size_t n = strlen(name), s = strlen(sfx);

	if (n == s)
		return or_equal && strcasecmp(name, sfx) == 0;
	return n > s && name[n - s - 1] == '.' && strcasecmp(name + n - s, sfx) == 0;
}

static int
in_net(const uint8_t *net, int prefix, const uint8_t *a, int bytes)
{
	uint8_t m[16];

	memcpy(m, a, (size_t)bytes);
	mask(m, bytes, prefix);
	return memcmp(m, net, (size_t)bytes) == 0;
}

int
net_rule_match(const struct net_rule *r, const struct net_dest *d)
{
	if (r->port && r->port != d->port)
		return 0;
	switch (r->kind) {
	case NET_RULE_ANY:
		return 1;
	case NET_RULE_NAME:
		return d->name != NULL && strcasecmp(d->name, r->name) == 0;
	case NET_RULE_WILD:
		return d->name != NULL && under(d->name, r->name, 0);
	case NET_RULE_NET4:
		return d->family == 4 && in_net(r->addr, r->prefix, d->addr, 4);
	case NET_RULE_NET6:
		return d->family == 6 && in_net(r->addr, r->prefix, d->addr, 16);
	}
	return 0;
}

static int
rules_from(const cJSON *arr, const char *what, int64_t now, struct net_rule **out,
    size_t *n, struct sbx_err *e)
{
	const cJSON *it;
	size_t cap = (size_t)cJSON_GetArraySize(arr);

	*out = cap ? xcalloc(cap, sizeof **out) : NULL;
	*n = 0;
	cJSON_ArrayForEach(it, arr) {
		const char *t = cJSON_GetStringValue(it);
		if (cJSON_IsObject(it)) {
			/* A grant: {rule, until}. */
			const cJSON *u = cJSON_GetObjectItemCaseSensitive(it, "until");
			t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "rule"));
			if (cJSON_IsNumber(u) && u->valuedouble <= (double)now)
				continue;
		}
		if (t == NULL)
			return sbx_error(e, SBX_EINVAL, NULL, "network policy: %s holds a non-string",
			    what);
		if (net_rule_parse(t, &(*out)[*n], e) < 0)
			return -1;
		(*n)++;
	}
	return 0;
}

int
net_policy_from_json(const cJSON *o, int64_t now, struct net_policy *p, struct sbx_err *e)
{
	struct net_rule *g = NULL;
	size_t ng = 0;
	const cJSON *t;

	memset(p, 0, sizeof *p);
	p->ask_timeout_s = 60;
	if (o == NULL || cJSON_IsNull(o))
		return 0;
	if (!cJSON_IsObject(o))
		return sbx_error(e, SBX_EINVAL, NULL, "network policy: not an object");
	if (rules_from(cJSON_GetObjectItemCaseSensitive(o, "allow"), "allow", now, &p->allow,
	    &p->nallow, e) < 0 ||
	    rules_from(cJSON_GetObjectItemCaseSensitive(o, "deny"), "deny", now, &p->deny,
	    &p->ndeny, e) < 0 ||
	    rules_from(cJSON_GetObjectItemCaseSensitive(o, "limit"), "limit", now, &p->limit,
	    &p->nlimit, e) < 0 ||
	    rules_from(cJSON_GetObjectItemCaseSensitive(o, "grants"), "grants", now, &g, &ng,
	    e) < 0) {
		free(g);
		net_policy_clear(p);
		return -1;
	}
	if (ng > 0) {
		p->allow = xrealloc(p->allow, (p->nallow + ng) * sizeof *p->allow);
		memcpy(p->allow + p->nallow, g, ng * sizeof *g);
		p->nallow += ng;
	}
	free(g);
	p->ask = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ask"));
	t = cJSON_GetObjectItemCaseSensitive(o, "ask_timeout_s");
	if (cJSON_IsNumber(t) && t->valuedouble >= 1 && t->valuedouble <= 86400)
		p->ask_timeout_s = (int)t->valuedouble;
	return 0;
}

void
net_policy_clear(struct net_policy *p)
{
	free(p->allow);
	free(p->deny);
	free(p->limit);
	memset(p, 0, sizeof *p);
}

enum net_verdict
net_policy_decide(const struct net_policy *p, const struct net_dest *dest, char *rule,
    size_t len)
{
	struct net_dest n = *dest, *d = &n;
	int local;

	net_addr_normalize(&n.family, n.addr);
	local = d->family != 0 && (d->own || net_addr_hostlocal(d->family, d->addr));
	for (size_t i = 0; i < p->ndeny; i++)
		if (net_rule_match(&p->deny[i], d)) {
			if (rule)
				snprintf(rule, len, "deny %s", p->deny[i].text);
			return NET_DENY;
		}
	for (size_t i = 0; i < p->nallow; i++) {
		const struct net_rule *r = &p->allow[i];
		/* The host's own addresses (loopback, link-local, its interfaces')
		 * only through an entry that names an address: never through a
		 * name that resolves there, or a wildcard. */
		if (local && r->kind != NET_RULE_NET4 && r->kind != NET_RULE_NET6)
			continue;
		if (net_rule_match(r, d)) {
			if (rule)
				snprintf(rule, len, "allow %s", r->text);
			return NET_ALLOW;
		}
	}
	if (rule)
		snprintf(rule, len, "default");
	return NET_NONE;
}

static int
within_one(const struct net_rule *r, const struct net_rule *l)
{
	int bytes;

	if (l->port && l->port != r->port)
		return 0;
	switch (l->kind) {
	case NET_RULE_ANY:
		return 1;
	case NET_RULE_NAME:
		return r->kind == NET_RULE_NAME && strcmp(r->name, l->name) == 0;
	case NET_RULE_WILD:
		return (r->kind == NET_RULE_NAME && under(r->name, l->name, 0)) ||
		    (r->kind == NET_RULE_WILD && under(r->name, l->name, 1));
	case NET_RULE_NET4:
	case NET_RULE_NET6:
		if (r->kind != l->kind || r->prefix < l->prefix)
			return 0;
		bytes = l->kind == NET_RULE_NET4 ? 4 : 16;
		return in_net(l->addr, l->prefix, r->addr, bytes);
	}
	return 0;
}

int
net_rule_within(const struct net_rule *r, const struct net_rule *lim, size_t nlim)
{
	for (size_t i = 0; i < nlim; i++)
		if (within_one(r, &lim[i]))
			return 1;
	return 0;
}

int
net_rules_list(const char *csv, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *copy = xstrdup(csv ? csv : "");
	char *tok, *save = NULL;

	*out = cJSON_CreateArray();
	for (tok = strtok_r(copy, ", \t", &save); tok != NULL; tok = strtok_r(NULL, ", \t", &save)) {
		struct net_rule r;
		if (net_rule_parse(tok, &r, e) < 0) {
			cJSON_Delete(*out);
			*out = NULL;
			return -1;
		}
		cJSON_AddItemToArray(*out, cJSON_CreateString(r.text));
	}
	return 0;
}
