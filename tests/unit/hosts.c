/* Unit tests for remote hosts: ssh:// URLs (good ones, and each way one can be
 * wrong), and the host list's names (taken, reserved, removed).  TAP lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "backends/ssh/hosts.h"
#include "lib/util.h"

static void
url_ok(const char *url, const char *user, const char *addr, int port)
{
	struct host h;
	struct sbx_err e;
	int rc;

	memset(&h, 0, sizeof h);
	rc = hosts_parse_url(url, &h, &e);
	check(rc == 0 && h.user && strcmp(h.user, user) == 0 && h.addr &&
	    strcmp(h.addr, addr) == 0 && h.port == port, "%s -> %s @ %s port %d", url, user,
	    addr, port);
	free(h.user);
	free(h.addr);
}

static void
url_bad(const char *url, const char *why)
{
	struct host h;
	struct sbx_err e;
	int rc;

	memset(&h, 0, sizeof h);
	rc = hosts_parse_url(url, &h, &e);
	check(rc < 0 && e.code == SBX_EINVAL && strstr(e.msg, why) != NULL &&
	    strstr(e.hint, "ssh://USER@HOST") != NULL, "%s refused: %s", url, why);
	free(h.user);
	free(h.addr);
}

int
main(void)
{
	char dir[] = "/tmp/sbxunit.XXXXXX";
	struct host h = { 0 };
	struct sbx_err e;

	url_ok("ssh://alice@big.example.com", "alice", "big.example.com", 22);
	url_ok("ssh://bob@10.0.0.7:2222", "bob", "10.0.0.7", 2222);
	url_ok("ssh://root@127.0.0.1:22/", "root", "127.0.0.1", 22);
	url_ok("ssh://c_d.e-f@[::1]:2200", "c_d.e-f", "::1", 2200);
	url_ok("ssh://u@[fe80::1]", "u", "fe80::1", 22);
	url_bad("http://alice@host", "is not an ssh:// URL");
	url_bad("alice@host", "is not an ssh:// URL");
	url_bad("ssh://host", "names no user");
	url_bad("ssh://@host", "names no user");
	url_bad("ssh://alice@host:0", "the port is not 1 to 65535");
	url_bad("ssh://alice@host:65536", "the port is not 1 to 65535");
	url_bad("ssh://alice@host:22x", "the port is not 1 to 65535");
	url_bad("ssh://alice@", "is not a valid ssh:// URL");
	url_bad("ssh://al;ice@host", "is not a valid ssh:// URL");
	url_bad("ssh://alice@[::1", "unclosed '['");

	/* The list, in a private config directory (nothing to connect to: only the
	 * checks before connecting, and the file). */
	if (mkdtemp(dir) == NULL)
		return 1;
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("XDG_STATE_HOME", dir, 1);
	{
		struct host *v;
		size_t n;
		check(hosts_list(&v, &n, &e) == 0 && n == 0, "no hosts file: an empty list");
		hosts_free(v, n);
	}
	h.name = "auto";
	h.user = "u";
	h.addr = "127.0.0.1";
	h.port = 1;
	check(hosts_add(&h, 0, &e) < 0 && strstr(e.msg, "not \"auto\"") != NULL,
	    "\"auto\" is not a host name");
	h.name = "a/b";
	check(hosts_add(&h, 0, &e) < 0 && e.code == SBX_EINVAL, "a name with '/' is refused");
	h.name = "ok";
	h.identity = "relative/key";
	check(hosts_add(&h, 0, &e) < 0 && strstr(e.msg, "not an absolute path") != NULL,
	    "a relative --identity is refused");
	check(hosts_get("nosuch", &e) == NULL && e.code == SBX_ENOTFOUND &&
	    strstr(e.hint, "host add") != NULL, "an unknown host: not found, with the fix");
	check(hosts_rm(NULL, "nosuch", &e) < 0 && e.code == SBX_ENOTFOUND, "rm of an unknown host");
	{
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return tap_end();
}
