/* Unit tests for network policy entries (core/net/policy.c): parsing and the
 * canonical form, matching names, wildcards, addresses, CIDRs and ports, deny
 * over allow, host-local addresses in every IPv6 spelling, the host's own,
 * grants that lapse, and the agent bound. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "core/net/policy.h"
#include "lib/util.h"

static const char *
canon(const char *in)
{
	static struct net_rule r;
	struct sbx_err e;

	return net_rule_parse(in, &r, &e) == 0 ? r.text : "ERR";
}

static enum net_verdict
decide_own(const char *json, const char *name, const char *addr, int port, int own,
    char *rule)
{
	struct net_policy p;
	struct net_dest d = { .name = name, .port = port, .own = own };
	struct sbx_err e;
	cJSON *o = cJSON_Parse(json);
	enum net_verdict v;

	if (addr != NULL)
		net_parse_addr(addr, &d.family, d.addr);
	if (net_policy_from_json(o, 1000, &p, &e) < 0) {
		cJSON_Delete(o);
		return (enum net_verdict)-1;
	}
	v = net_policy_decide(&p, &d, rule, 320);
	net_policy_clear(&p);
	cJSON_Delete(o);
	return v;
}

static enum net_verdict
decide(const char *json, const char *name, const char *addr, int port, char *rule)
{
	return decide_own(json, name, addr, port, 0, rule);
}

/* Whether the address text is host-local. */
static int
local(const char *text)
{
	uint8_t a[16];
	int fam;

	return net_parse_addr(text, &fam, a) == 0 ? net_addr_hostlocal(fam, a) : -1;
}

static int
within(const char *rule, const char *limit)
{
	struct net_rule r, l;
	struct sbx_err e;

	if (net_rule_parse(rule, &r, &e) < 0 || net_rule_parse(limit, &l, &e) < 0)
		return -1;
	return net_rule_within(&r, &l, 1);
}

int
main(void)
{
	char rule[320];
	struct net_rule r;
	struct sbx_err e;
	cJSON *list;

	check(strcmp(canon("API.GitHub.com"), "api.github.com") == 0, "names are lower-cased");
	check(strcmp(canon("*.npmjs.org:443"), "*.npmjs.org:443") == 0, "a wildcard with a port");
	check(strcmp(canon("10.1.2.3/8"), "10.0.0.0/8") == 0, "a CIDR is masked");
	check(strcmp(canon("10.1.2.3"), "10.1.2.3") == 0, "an address");
	check(strcmp(canon("[2001:DB8::1/32]:443"), "[2001:db8::/32]:443") == 0,
	    "an IPv6 CIDR in brackets, with a port");
	check(strcmp(canon("*"), "*") == 0, "* is everything");
	check(net_rule_parse("2001:db8::1", &r, &e) < 0 && strstr(e.hint, "CIDR") != NULL,
	    "IPv6 without brackets is refused, saying what is accepted");
	check(net_rule_parse("a.com:0", &r, &e) < 0 && net_rule_parse("a.com:70000", &r, &e) < 0 &&
	    net_rule_parse("a.com:", &r, &e) < 0, "bad ports are refused");
	check(net_rule_parse("a..com", &r, &e) < 0 && net_rule_parse("a.com/x", &r, &e) < 0 &&
	    net_rule_parse("*a.com", &r, &e) < 0 && net_rule_parse("a b", &r, &e) < 0 &&
	    net_rule_parse("", &r, &e) < 0 && net_rule_parse("10.0.0.0/33", &r, &e) < 0,
	    "bad names and networks are refused");

	check(decide("{\"allow\":[\"api.github.com\"]}", "api.github.com", NULL, 443, rule) ==
	    NET_ALLOW && strcmp(rule, "allow api.github.com") == 0, "a name allows itself, any port");
	check(decide("{\"allow\":[\"api.github.com\"]}", "github.com", NULL, 443, rule) ==
	    NET_NONE && strcmp(rule, "default") == 0, "but not its parent");
	check(decide("{\"allow\":[\"*.npmjs.org\"]}", "registry.npmjs.org", NULL, 443, rule) ==
	    NET_ALLOW, "a wildcard allows a subdomain");
	check(decide("{\"allow\":[\"*.npmjs.org\"]}", "npmjs.org", NULL, 443, rule) == NET_NONE &&
	    decide("{\"allow\":[\"*.npmjs.org\"]}", "evilnpmjs.org", NULL, 443, rule) == NET_NONE,
	    "but not the apex or a look-alike");
	check(decide("{\"allow\":[\"pypi.org:443\"]}", "pypi.org", NULL, 80, rule) == NET_NONE,
	    "a port entry allows that port only");
	check(decide("{\"allow\":[\"10.0.0.0/8\"]}", NULL, "10.20.30.40", 22, rule) == NET_ALLOW &&
	    decide("{\"allow\":[\"10.0.0.0/8\"]}", NULL, "11.0.0.1", 22, rule) == NET_NONE,
	    "a CIDR covers its addresses only");
	check(decide("{\"allow\":[\"10.0.0.0/8\"]}", "db.internal", "10.1.1.1", 5432, rule) ==
	    NET_ALLOW, "a name resolving into an allowed CIDR is allowed");
	check(decide("{\"allow\":[\"*\"],\"deny\":[\"evil.com\"]}", "evil.com", NULL, 443, rule) ==
	    NET_DENY && strcmp(rule, "deny evil.com") == 0, "deny wins over allow, and is named");
	check(decide("{\"allow\":[\"*.corp.com\"],\"deny\":[\"10.0.0.0/8\"]}", "x.corp.com",
	    "10.9.9.9", 443, rule) == NET_DENY, "a denied address wins over an allowed name");
	check(decide("{\"allow\":[\"*\"]}", "localhost", "127.0.0.1", 80, rule) == NET_NONE &&
	    decide("{\"allow\":[\"h.test\"]}", "h.test", "::1", 80, rule) == NET_NONE &&
	    decide("{\"allow\":[\"h.test\"]}", "h.test", "169.254.169.254", 80, rule) == NET_NONE &&
	    decide("{\"allow\":[\"h.test\"]}", "h.test", "::ffff:127.0.0.1", 80, rule) == NET_NONE,
	    "a name never reaches a host-local address (loopback, link-local, mapped)");
	check(decide("{\"allow\":[\"127.0.0.1:8080\"]}", NULL, "127.0.0.1", 8080, rule) ==
	    NET_ALLOW, "an address entry may name one");
	check(local("::127.0.0.1") == 1 && local("64:ff9b::7f00:1") == 1 &&
	    local("::ffff:169.254.169.254") == 1 && local("64:ff9b::a9fe:a9fe") == 1 &&
	    local("::ffff:0.0.0.0") == 1 && local("::") == 1 && local("::1") == 1,
	    "IPv4 loopback and link-local in every IPv6 spelling are host-local");
	check(local("64:ff9b::808:808") == 0 && local("::ffff:10.0.0.1") == 0 &&
	    local("2001:db8::7f00:1") == 0 && local("64:ff9b:1::7f00:1") == 0,
	    "and other addresses are not");
	check(decide("{\"allow\":[\"*\"]}", "x.test", "::127.0.0.1", 80, rule) == NET_NONE &&
	    decide("{\"allow\":[\"*\"]}", "x.test", "64:ff9b::127.0.0.1", 80, rule) == NET_NONE &&
	    decide("{\"allow\":[\"*\"]}", NULL, "::ffff:7f00:1", 80, rule) == NET_NONE,
	    "--allow '*' reaches no IPv6 spelling of loopback (compatible, NAT64, mapped)");
	check(decide("{\"allow\":[\"127.0.0.1\"]}", NULL, "::ffff:127.0.0.1", 80, rule) == NET_ALLOW &&
	    decide("{\"allow\":[\"127.0.0.1\"]}", "l.test", "64:ff9b::7f00:1", 80, rule) ==
	    NET_ALLOW, "an address entry for 127.0.0.1 covers its IPv6 spellings");
	check(decide("{\"allow\":[\"*\"],\"deny\":[\"10.0.0.0/8\"]}", "x.test", "::ffff:10.1.2.3",
	    80, rule) == NET_DENY && decide("{\"allow\":[\"*\"],\"deny\":[\"10.0.0.0/8\"]}", NULL,
	    "64:ff9b::10.9.9.9", 80, rule) == NET_DENY,
	    "a deny entry for an IPv4 network catches its IPv6 spellings");
	check(strcmp(canon("[::ffff:127.0.0.1]"), "127.0.0.1") == 0 &&
	    strcmp(canon("[::ffff:10.0.0.0/104]:22"), "10.0.0.0/8:22") == 0 &&
	    strcmp(canon("[64:ff9b::7f00:1]"), "127.0.0.1") == 0 &&
	    strcmp(canon("[::1]"), "[::1]") == 0 && strcmp(canon("[::]"), "[::]") == 0 &&
	    strcmp(canon("[64:ff9b::/64]"), "[64:ff9b::/64]") == 0,
	    "an entry naming an IPv4 address in IPv6 is stored in its IPv4 form");
	check(decide_own("{\"allow\":[\"*\"]}", "me.test", "10.9.9.9", 80, 1, rule) == NET_NONE &&
	    decide_own("{\"allow\":[\"me.test\"]}", "me.test", "10.9.9.9", 80, 1, rule) == NET_NONE &&
	    decide_own("{\"allow\":[\"10.9.9.9\"]}", "me.test", "10.9.9.9", 80, 1, rule) == NET_ALLOW,
	    "the host's own addresses only through an address entry");
	check(decide("{\"grants\":[{\"rule\":\"a.test:443\",\"until\":2000}]}", "a.test", NULL,
	    443, rule) == NET_ALLOW &&
	    decide("{\"grants\":[{\"rule\":\"a.test:443\",\"until\":500}]}", "a.test", NULL, 443,
	    rule) == NET_NONE, "a grant allows until it lapses");
	check(decide("{\"allow\":[7]}", "a", NULL, 1, rule) == (enum net_verdict)-1,
	    "a policy with a non-string entry is an error");
	check(decide(NULL, "a.test", NULL, 443, rule) == NET_NONE, "no policy allows nothing");

	check(within("registry.npmjs.org", "*.npmjs.org") == 1 &&
	    within("*.a.npmjs.org", "*.npmjs.org") == 1 && within("*.npmjs.org", "*.npmjs.org") == 1,
	    "names and narrower wildcards are within a wildcard");
	check(within("npmjs.org", "*.npmjs.org") == 0 && within("*.org", "*.npmjs.org") == 0 &&
	    within("*", "*.npmjs.org") == 0, "wider ones are not");
	check(within("10.1.0.0/16", "10.0.0.0/8") == 1 && within("10.0.0.0/7", "10.0.0.0/8") == 0 &&
	    within("a.com", "10.0.0.0/8") == 0, "networks within networks, not names");
	check(within("a.com:443", "a.com") == 1 && within("a.com", "a.com:443") == 0,
	    "a port within any port, not the other way");

	check(net_rules_list("a.com, *.b.org,10.0.0.0/8", &list, &e) == 0 &&
	    cJSON_GetArraySize(list) == 3 && strcmp(cJSON_GetArrayItem(list, 1)->valuestring,
	    "*.b.org") == 0, "a configuration list");
	cJSON_Delete(list);
	check(net_rules_list("a.com,b c!", &list, &e) < 0 && strstr(e.msg, "'c!'") != NULL,
	    "a bad configuration entry is named");
	return tap_end();
}
