/* The core's side of network policies (net.h): the policy at create, the
 * proxy's start and end, live changes, the log, and the answers to what the
 * proxy holds for the operator. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core-int.h"
#include "core/net.h"
#include "core/net/policy.h"
#include "core/registry.h"
#include "lib/log.h"
#include "lib/util.h"

#define GRANT_ONCE_MS (10 * 60 * 1000)
/* Where a sandbox with secrets finds the CA bundle that includes its own CA. */
#define CA_BUNDLE "/etc/ssl/sbxtop-ca.pem"

static const char *const ca_vars[] = { "SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
	"NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT" };
#define RULES_MAX 256

static const char *const proxy_vars[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
	"https_proxy", "ALL_PROXY", "all_proxy" };

/* Parse and canonicalise every entry of arr (strings) into out (an array). */
static int
add_rules(cJSON *out, const cJSON *arr, const char *what, struct sbx_err *e)
{
	const cJSON *it;

	if (arr == NULL || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr))
		return sbx_error(e, SBX_EINVAL, NULL, "%s must be an array of entries", what);
	cJSON_ArrayForEach(it, arr) {
		struct net_rule r;
		const cJSON *x;
		int dup = 0;
		if (!cJSON_IsString(it))
			return sbx_error(e, SBX_EINVAL, NULL, "%s: every entry is a string", what);
		if (net_rule_parse(it->valuestring, &r, e) < 0)
			return -1;
		cJSON_ArrayForEach(x, out)
			dup |= strcmp(x->valuestring, r.text) == 0;
		if (!dup)
			cJSON_AddItemToArray(out, cJSON_CreateString(r.text));
		if (cJSON_GetArraySize(out) > RULES_MAX)
			return sbx_error(e, SBX_EINVAL, NULL, "%s: at most %d entries", what, RULES_MAX);
	}
	return 0;
}

static void
drop_rule(cJSON *arr, const char *text)
{
	for (int i = cJSON_GetArraySize(arr) - 1; i >= 0; i--)
		if (strcmp(cJSON_GetArrayItem(arr, i)->valuestring, text) == 0)
			cJSON_DeleteItemFromArray(arr, i);
}

/* Where sandboxes of b reach their proxy. */
static const char *
proxy_addr(const struct backend *b)
{
	return b != NULL && b->net_proxy_addr != NULL ? b->net_proxy_addr : "127.0.0.1";
}

static int
from_agent(const char *owner)
{
	return owner != NULL && strcmp(owner, "cli") != 0 && strcmp(owner, "console") != 0;
}

int
core_net_prepare(struct core *c, const struct core_create_opts *o, struct sandbox *s,
    struct sbx_err *e)
{
	const struct config *cfg = core_config(c);
	const cJSON *req = o->net;
	const struct backend *b;
	cJSON *net = NULL, *allow, *deny, *list = NULL, *limit = NULL;
	struct net_policy lp = { 0 };	/* the limit, when it bounds this sandbox */
	int ask, rc = -1, asked_rules, agent = o->agent ? o->agent > 0 : from_agent(s->owner);
	int bounded = 0;

	asked_rules = req != NULL && (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req,
	    "allow")) > 0 || cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req,
	    "secrets")) > 0 || cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req, "deny")) > 0 ||
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "ask")));
	if (asked_rules && strcmp(s->network, "none") == 0 && o->network == NULL) {
		free(s->network);
		s->network = xstrdup("rules");
	}
	if (net_rules_list(config_str(cfg, "net_limit"), &limit, e) < 0)
		return -1;
	if (agent && cJSON_GetArraySize(limit) > 0 &&
	    strcmp(s->network, "egress") == 0) {
		cJSON_Delete(limit);
		return sbx_error(e, SBX_EDENIED, "ask for network \"rules\" with allow entries "
		    "within the limit", "network egress is beyond the limit the operator set for "
		    "agents (net_limit)");
	}
	if (strcmp(s->network, "rules") != 0) {
		cJSON_Delete(limit);
		if (asked_rules)
			return sbx_error(e, SBX_EINVAL, "leave out --network, or give --network rules",
			    "allow, deny and ask entries need network rules, not %s", s->network);
		return 0;
	}
	if (s->host != NULL || (b = backend_find(s->backend)) == NULL || b->net_listen == NULL) {
		cJSON_Delete(limit);
		return sbx_error(e, SBX_EUNSUPPORTED, "use --backend ns or --backend qemu on this host",
		    "network rules are enforced on local ns and qemu sandboxes only so far, not %s",
		    s->host ? "on remote hosts" : s->backend);
	}
	net = cJSON_CreateObject();
	allow = cJSON_AddArrayToObject(net, "allow");
	deny = cJSON_AddArrayToObject(net, "deny");
	if (net_rules_list(config_str(cfg, "net_allow"), &list, e) < 0 ||
	    add_rules(allow, list, "net_allow", e) < 0)
		goto out;
	cJSON_Delete(list);
	list = NULL;
	if (net_rules_list(config_str(cfg, "net_deny"), &list, e) < 0 ||
	    add_rules(deny, list, "net_deny", e) < 0 ||
	    add_rules(allow, cJSON_GetObjectItemCaseSensitive(req, "allow"), "allow", e) < 0 ||
	    add_rules(deny, cJSON_GetObjectItemCaseSensitive(req, "deny"), "deny", e) < 0)
		goto out;
	/* An agent's own entries stay within the operator's bound, and so do the
	 * hosts of the secrets it names (below). */
	if (agent && cJSON_GetArraySize(limit) > 0) {
		const cJSON *it;
		cJSON *lo = cJSON_CreateObject();
		cJSON_AddItemToObject(lo, "limit", cJSON_Duplicate(limit, 1));
		rc = net_policy_from_json(lo, 0, &lp, e);
		cJSON_Delete(lo);
		if (rc < 0)
			goto out;
		rc = -1;
		bounded = 1;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(req, "allow")) {
			struct net_rule r;
			if (net_rule_parse(it->valuestring, &r, e) < 0)
				goto out;
			if (!net_rule_within(&r, lp.limit, lp.nlimit)) {
				sbx_error(e, SBX_EDENIED, "ask the operator (sandbox_net_request), or stay "
				    "within the limit", "allow entry '%s' is beyond the limit the operator "
				    "set for agents (net_limit: %s)", it->valuestring,
				    config_str(cfg, "net_limit"));
				goto out;
			}
		}
		cJSON_AddItemToObject(net, "limit", steal_pointer(&limit));
	}
	ask = req && cJSON_GetObjectItemCaseSensitive(req, "ask") ?
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "ask")) :
	    strcmp(config_str(cfg, "net_ask"), "yes") == 0;
	cJSON_AddBoolToObject(net, "ask", ask);
	cJSON_AddNumberToObject(net, "ask_timeout_s", (double)config_int(cfg, "net_ask_timeout"));
	cJSON_AddArrayToObject(net, "grants");

	/* Secrets: the sandbox gets a placeholder; the proxy puts the value in
	 * requests to the secret's host, and only there. */
	if (s->env == NULL)
		s->env = cJSON_CreateObject();
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req, "secrets")) > 0) {
		cJSON *sec = cJSON_AddArrayToObject(net, "secrets");
		const cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(req, "secrets")) {
			cJSON *meta;
			char hex[33], rule[300];
			struct net_rule r;
			if (!cJSON_IsString(it) ||
			    (meta = net_secret_get(it->valuestring, 0, e)) == NULL) {
				if (!cJSON_IsString(it))
					sbx_error(e, SBX_EINVAL, NULL, "secrets: every entry is a name");
				goto out;
			}
			random_hex(hex, 16);
			{
				char ph[128];
				snprintf(ph, sizeof ph, "sbxtop-secret-%s-%s", it->valuestring, hex);
				cJSON_AddStringToObject(meta, "placeholder", ph);
				cJSON_DeleteItemFromObjectCaseSensitive(s->env, it->valuestring);
				cJSON_AddStringToObject(s->env, it->valuestring, ph);
			}
			snprintf(rule, sizeof rule, "%s:443",
			    cJSON_GetStringValue(cJSON_GetObjectItem(meta, "host")));
			if (net_rule_parse(rule, &r, e) < 0) {
				cJSON_Delete(meta);
				goto out;
			}
			if (bounded && !net_rule_within(&r, lp.limit, lp.nlimit)) {
				sbx_error(e, SBX_EDENIED, "ask the operator to create the sandbox, or "
				    "to widen the limit", "secret %s is bound to %s, which is beyond "
				    "the limit the operator set for agents (net_limit: %s)",
				    it->valuestring, rule, config_str(cfg, "net_limit"));
				cJSON_Delete(meta);
				goto out;
			}
			drop_rule(allow, r.text);
			cJSON_AddItemToArray(allow, cJSON_CreateString(r.text));
			cJSON_AddItemToArray(sec, meta);
		}
		for (size_t i = 0; i < ARRAY_SIZE(ca_vars); i++) {
			cJSON_DeleteItemFromObjectCaseSensitive(s->env, ca_vars[i]);
			cJSON_AddStringToObject(s->env, ca_vars[i], CA_BUNDLE);
		}
	}

	/* The usual proxy variables: curl, git, pip, npm, apt and most HTTP
	 * libraries read one of them. */
	{
		char url[64];
		snprintf(url, sizeof url, "http://%s:%d", proxy_addr(b), NET_PROXY_PORT);
		for (size_t i = 0; i < ARRAY_SIZE(proxy_vars); i++)
			if (cJSON_GetObjectItemCaseSensitive(s->env, proxy_vars[i]) == NULL)
				cJSON_AddStringToObject(s->env, proxy_vars[i], url);
		if (cJSON_GetObjectItemCaseSensitive(s->env, "NO_PROXY") == NULL)
			cJSON_AddStringToObject(s->env, "NO_PROXY", "localhost,127.0.0.1,::1");
		if (cJSON_GetObjectItemCaseSensitive(s->env, "no_proxy") == NULL)
			cJSON_AddStringToObject(s->env, "no_proxy", "localhost,127.0.0.1,::1");
	}
	cJSON_Delete(s->net);
	s->net = steal_pointer(&net);
	rc = 0;
out:
	if (bounded)
		net_policy_clear(&lp);
	cJSON_Delete(net);
	cJSON_Delete(list);
	cJSON_Delete(limit);
	return rc;
}

int
core_net_start(struct core *c, struct sandbox *s, struct sbx_err *e)
{
	const struct backend *b = backend_find(s->backend);
	pid_t init = -1, pid = -1;
	int lfd = -1;

	if (s->network == NULL || strcmp(s->network, "rules") != 0)
		return 0;
	if (b == NULL || b->net_listen == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, NULL,
		    "the %s backend cannot enforce network rules", s->backend);
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s->net, "secrets")) > 0) {
		char *pem = NULL;
		if (net_ca_make(s->id, &pem, e) < 0)
			return -1;
		free(pem);
	}
	if (net_policy_write(s->id, s->net, e) < 0 ||
	    b->net_listen(s, NET_PROXY_PORT, &lfd, &init, e) < 0 ||
	    netproxy_spawn(s->id, init, lfd, &pid, e) < 0)
		return -1;
	log_info("%s: network proxy (pid %d) on %s:%d inside", s->id, (int)pid, proxy_addr(b),
	    NET_PROXY_PORT);
	return 0;
}

/* Write content to path inside s as its root; a warning when it cannot. */
static void
put_file(struct core *c, const struct sandbox *s, const char *path, const char *content)
{
	struct sbx_err e;
	cJSON *req = cJSON_CreateObject(), *res = NULL;

	cJSON_AddStringToObject(req, "path", path);
	cJSON_AddStringToObject(req, "content", content);
	cJSON_AddNumberToObject(req, "mode", 0644);
	cJSON_AddBoolToObject(req, "as_root", 1);
	if (core_files(c, s->id, "write", req, "core", &res, &e) < 0)
		log_warnx("%s: cannot write %s: %s", s->id, path, e.msg);
	cJSON_Delete(req);
	cJSON_Delete(res);
}

void
core_net_ready(struct core *c, const struct sandbox *s)
{
	struct sbx_err e;
	_cleanup_free_ char *d = NULL, *ca = NULL, *sys = NULL, *bundle = NULL, *prof = NULL;
	static const char *const more[] = { "NO_PROXY", "no_proxy" };

	if (s->net == NULL || (d = net_dir(s->id, 0, &e)) == NULL)
		return;
	/* Commands get the variables from the record; login shells (the
	 * console's) from /etc/profile.d. */
	prof = xstrdup("# sbxtop: this sandbox reaches the network through its proxy "
	    "(network rules).\n");
	for (size_t k = 0; k < 3; k++) {
		const char *const *names = k == 0 ? proxy_vars : k == 1 ? more : ca_vars;
		size_t nn = k == 0 ? ARRAY_SIZE(proxy_vars) : k == 1 ? ARRAY_SIZE(more) :
		    ARRAY_SIZE(ca_vars);
		for (size_t i = 0; i < nn; i++) {
			const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->env,
			    names[i]));
			char *line;
			if (v == NULL || strpbrk(v, "'\n") != NULL)
				continue;
			line = xasprintf("%sexport %s='%s'\n", prof, names[i], v);
			free(prof);
			prof = line;
		}
	}
	put_file(c, s, "/etc/profile.d/sbxtop-net.sh", prof);
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s->net, "secrets")) == 0)
		return;
	{
		_cleanup_free_ char *p = xasprintf("%s/ca.pem", d);
		ca = read_file(p, 1 << 16, NULL);
	}
	if (ca == NULL) {
		log_warnx("%s: the sandbox's CA is missing", s->id);
		return;
	}
	/* The host's CAs and the sandbox's own, in the file the CA variables name. */
	sys = read_file("/etc/ssl/certs/ca-certificates.crt", 8 << 20, NULL);
	bundle = xasprintf("%s%s", sys ? sys : "", ca);
	put_file(c, s, CA_BUNDLE, bundle);
}

static pid_t
proxy_pid(const char *d)
{
	_cleanup_free_ char *p = xasprintf("%s/proxy.pid", d), *t = read_file(p, 64, NULL);
	pid_t pid = t ? (pid_t)atoi(t) : 0;
	char cmd[64];
	_cleanup_free_ char *cl = NULL;
	size_t n = 0;

	if (pid <= 1)
		return 0;
	/* Only while that pid is still a proxy (`net --proxy-daemon`). */
	snprintf(cmd, sizeof cmd, "/proc/%d/cmdline", (int)pid);
	if ((cl = read_file(cmd, 4096, &n)) == NULL)
		return 0;
	for (size_t i = 0; i + 1 < n; i++)
		if (cl[i] == '\0')
			cl[i] = ' ';
	return strstr(cl, " net --proxy-daemon ") ? pid : 0;
}

void
core_net_forget(const char *id)
{
	struct sbx_err e;
	_cleanup_free_ char *d = net_dir(id, 0, &e);
	char *cmd;
	pid_t pid;

	if (d == NULL || access(d, F_OK) < 0)
		return;
	if ((pid = proxy_pid(d)) > 0)
		kill(pid, SIGTERM);
	/* Its files only: the directory holds nothing else. */
	cmd = xasprintf("%s/ask", d);
	{
		DIR *dd = opendir(cmd);
		struct dirent *de;
		while (dd != NULL && (de = readdir(dd)) != NULL)
			if (de->d_name[0] != '.') {
				_cleanup_free_ char *f = xasprintf("%s/%s", cmd, de->d_name);
				unlink(f);
			}
		if (dd)
			closedir(dd);
		rmdir(cmd);
	}
	free(cmd);
	{
		static const char *const files[] = { "policy.json", "net.log", "net.log.1",
			"counts.json", "counts.json.tmp", "proxy.pid", "proxy.log", "ca.key", "ca.pem" };
		for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
			_cleanup_free_ char *f = xasprintf("%s/%s", d, files[i]);
			unlink(f);
		}
	}
	if (rmdir(d) < 0 && errno != ENOENT)
		log_warn("cannot remove %s", d);
}

/* --- live changes --------------------------------------------------------- */

struct change {
	const char	*verb;
	struct net_rule	 rule;
	const char	*grant;		/* a grant instead, until until */
	int64_t		 until;
	cJSON		*result;	/* the new net object */
};

static void
drop_from(cJSON *arr, const char *text)
{
	for (int i = cJSON_GetArraySize(arr) - 1; i >= 0; i--) {
		const cJSON *x = cJSON_GetArrayItem(arr, i);
		if (cJSON_IsString(x) && strcmp(x->valuestring, text) == 0)
			cJSON_DeleteItemFromArray(arr, i);
	}
}

static int
txn_change(struct registry *r, void *arg, struct sbx_err *e)
{
	struct change *ch = arg;
	struct sandbox *s = NULL;
	cJSON *allow, *deny;

	s = registry_get(r, ch->result->valuestring);
	cJSON_Delete(ch->result);
	ch->result = NULL;
	if (s == NULL)
		return sbx_error(e, SBX_ENOTFOUND, NULL, "the sandbox is gone");
	if (s->net == NULL)
		return sbx_error(e, SBX_ESTATE, "create it with --allow/--deny or --network rules",
		    "sandbox %s has network %s, not rules: its policy cannot change while it runs",
		    s->id, s->network ? s->network : "none");
	if ((allow = cJSON_GetObjectItemCaseSensitive(s->net, "allow")) == NULL)
		allow = cJSON_AddArrayToObject(s->net, "allow");
	if ((deny = cJSON_GetObjectItemCaseSensitive(s->net, "deny")) == NULL)
		deny = cJSON_AddArrayToObject(s->net, "deny");
	if (ch->grant != NULL) {
		cJSON *g = cJSON_GetObjectItemCaseSensitive(s->net, "grants"), *o;
		if (g == NULL)
			g = cJSON_AddArrayToObject(s->net, "grants");
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "rule", ch->rule.text);
		cJSON_AddNumberToObject(o, "until", (double)ch->until);
		cJSON_AddItemToArray(g, o);
	} else {
		drop_from(allow, ch->rule.text);
		drop_from(deny, ch->rule.text);
		if (strcmp(ch->verb, "allow") == 0)
			cJSON_AddItemToArray(allow, cJSON_CreateString(ch->rule.text));
		else if (strcmp(ch->verb, "deny") == 0)
			cJSON_AddItemToArray(deny, cJSON_CreateString(ch->rule.text));
	}
	ch->result = cJSON_Duplicate(s->net, 1);
	return 0;
}

static int
apply_change(struct core *c, const char *id, struct change *ch, struct sbx_err *e)
{
	cJSON *ev;

	ch->result = cJSON_CreateString(id);
	if (registry_update(txn_change, ch, e) < 0) {
		cJSON_Delete(ch->result);
		return -1;
	}
	if (net_policy_write(id, ch->result, e) < 0) {
		cJSON_Delete(ch->result);
		return -1;
	}
	ev = cJSON_CreateObject();
	cJSON_AddItemToObject(ev, "allow", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
	    ch->result, "allow"), 1));
	cJSON_AddItemToObject(ev, "deny", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
	    ch->result, "deny"), 1));
	cJSON_AddBoolToObject(ev, "ask", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
	    ch->result, "ask")));
	/* Through the log, like the proxy's lines: the process that changed it is
	 * often not the one whose console watches (net/log.c's watcher emits it). */
	cJSON_AddStringToObject(ev, "type", "policy");
	net_log_append(id, ev);
	cJSON_Delete(ch->result);
	return 0;
}

int
core_net_change(struct core *c, const char *key, const char *verb, const char *rule,
    struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	struct change ch = { .verb = verb };
	int rc;

	if (s == NULL)
		return -1;
	if (strcmp(verb, "allow") != 0 && strcmp(verb, "deny") != 0 && strcmp(verb, "remove") != 0)
		rc = sbx_error(e, SBX_EINVAL, "allow, deny or remove", "unknown change '%s'", verb);
	else if ((rc = net_rule_parse(rule, &ch.rule, e)) == 0)
		rc = apply_change(c, s->id, &ch, e);
	sandbox_free(s);
	return rc;
}

/* --- looking --------------------------------------------------------------- */

static cJSON *
read_json(const char *path)
{
	_cleanup_free_ char *t = read_file(path, 1 << 20, NULL);
	return t ? cJSON_Parse(t) : NULL;
}

static void
pending_of(const char *id, cJSON *out)
{
	struct sbx_err e;
	_cleanup_free_ char *d = net_dir(id, 0, &e), *ask = d ? xasprintf("%s/ask", d) : NULL;
	DIR *dd = ask ? opendir(ask) : NULL;
	struct dirent *de;

	while (dd != NULL && (de = readdir(dd)) != NULL) {
		size_t l = strlen(de->d_name);
		cJSON *o;
		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		{
			_cleanup_free_ char *p = xasprintf("%s/%s", ask, de->d_name);
			o = read_json(p);
		}
		if (o == NULL)
			continue;
		cJSON_AddStringToObject(o, "sandbox", id);
		cJSON_AddItemToArray(out, o);
	}
	if (dd)
		closedir(dd);
}

int
core_net_pending(struct core *c, const char *key, cJSON **out, struct sbx_err *e)
{
	*out = cJSON_CreateArray();
	if (key != NULL) {
		struct sandbox *s = core_get(c, key, e);
		if (s == NULL) {
			cJSON_Delete(*out);
			*out = NULL;
			return -1;
		}
		pending_of(s->id, *out);
		sandbox_free(s);
		return 0;
	}
	{
		struct sandbox **v;
		size_t n;
		if (core_list(c, &v, &n, e) < 0) {
			cJSON_Delete(*out);
			*out = NULL;
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i]->net != NULL)
				pending_of(v[i]->id, *out);
		core_list_free(v, n);
	}
	return 0;
}

/* The last n entries of the log of id (connections and asks). */
static cJSON *
recent_of(const char *id, int n)
{
	struct sbx_err e;
	_cleanup_free_ char *d = net_dir(id, 0, &e);
	cJSON *arr = cJSON_CreateArray();
	_cleanup_free_ char *p = d ? xasprintf("%s/net.log", d) : NULL;
	int fd = p ? open_regular_nofollow(p) : -1;
	struct stat st;
	char *buf, *line, *save = NULL;
	off_t from;
	ssize_t got;

	if (fd < 0)
		return arr;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return arr;
	}
	from = st.st_size > 256 * 1024 ? st.st_size - 256 * 1024 : 0;
	buf = xmalloc((size_t)(st.st_size - from) + 1);
	got = pread(fd, buf, (size_t)(st.st_size - from), from);
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		if (o == NULL)
			continue;
		cJSON_AddItemToArray(arr, o);
		if (cJSON_GetArraySize(arr) > n)
			cJSON_DeleteItemFromArray(arr, 0);
	}
	free(buf);
	return arr;
}

int
core_net_show(struct core *c, const char *key, int recent, cJSON **out, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	_cleanup_free_ char *d = NULL;
	cJSON *o, *px, *k;
	pid_t pid;

	if (s == NULL)
		return -1;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", s->id);
	cJSON_AddStringToObject(o, "network", s->network ? s->network : "none");
	cJSON_AddItemToObject(o, "policy", s->net ? cJSON_Duplicate(s->net, 1) : cJSON_CreateNull());
	d = net_dir(s->id, 0, e);
	pid = d ? proxy_pid(d) : 0;
	px = cJSON_AddObjectToObject(o, "proxy");
	cJSON_AddNumberToObject(px, "pid", pid);
	cJSON_AddBoolToObject(px, "running", pid > 0);
	cJSON_AddStringToObject(px, "address", proxy_addr(backend_find(s->backend)));
	cJSON_AddNumberToObject(px, "port", NET_PROXY_PORT);
	{
		_cleanup_free_ char *cp = d ? xasprintf("%s/counts.json", d) : NULL;
		k = cp ? read_json(cp) : NULL;
	}
	cJSON_AddItemToObject(o, "counts", k ? k : cJSON_CreateObject());
	{
		cJSON *pend = cJSON_AddArrayToObject(o, "pending");
		pending_of(s->id, pend);
	}
	cJSON_AddItemToObject(o, "recent", recent_of(s->id, recent));
	sandbox_free(s);
	*out = o;
	return 0;
}

/* The watcher's hook: what the proxies logged becomes the core's events. */
static void
net_event(void *arg, const char *type, const char *id, cJSON *data)
{
	core_events_emit(arg, type, id, data);
}

void
core_net_watch(struct core *c)
{
	net_watch(net_event, c);
}

void
core_net_watch_stop(struct core *c)
{
	net_watch_stop(c);
}

static int
log_gone(void *arg)
{
	struct core *c = ((void **)arg)[0];
	const char *id = ((void **)arg)[1];
	struct sbx_err e;
	struct sandbox *s = core_get(c, id, &e);
	int gone = s == NULL || s->state == SBX_TERMINATED || s->state == SBX_ERROR;

	sandbox_free(s);
	return gone;
}

int
core_net_log(struct core *c, const char *key, int follow,
    int (*entry)(void *arg, const cJSON *o), void *arg, volatile int *stop, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	_cleanup_free_ char *d = NULL, *path = NULL, *old = NULL;
	int64_t off = 0;
	ino_t ino = 0;
	int64_t last_check = 0;
	int reader_gone = 0;

	if (s == NULL)
		return -1;
	if ((d = net_dir(s->id, 0, e)) == NULL) {
		sandbox_free(s);
		return -1;
	}
	path = xasprintf("%s/net.log", d);
	old = xasprintf("%s/net.log.1", d);
	for (int pass = 0;; pass++) {
		const char *p = pass == 0 ? old : path;
		int lf = open_regular_nofollow(p);
		struct stat st;
		char buf[16384];
		ssize_t n;
		size_t have = 0;
		char *carry = NULL;

		if (lf >= 0 && fstat(lf, &st) == 0) {
			if (pass > 0 && st.st_ino != ino) {
				ino = st.st_ino;
				off = 0;
			}
			if (pass == 0)
				off = 0;
			while ((n = pread(lf, buf, sizeof buf, off)) > 0) {
				carry = xrealloc(carry, have + (size_t)n + 1);
				memcpy(carry + have, buf, (size_t)n);
				have += (size_t)n;
				off += n;
			}
			close(lf);
		} else if (lf >= 0) {
			close(lf);
		}
		if (carry != NULL) {
			char *q = carry, *nl;
			carry[have] = '\0';
			while ((nl = strchr(q, '\n')) != NULL) {
				cJSON *o;
				int rc = 0;
				*nl = '\0';
				if ((o = cJSON_Parse(q)) != NULL)
					rc = entry(arg, o);
				cJSON_Delete(o);
				q = nl + 1;
				if (rc < 0) {
					reader_gone = 1;
					break;
				}
			}
			off -= (int64_t)strlen(q);	/* a partial line: read again */
			free(carry);
		}
		if (reader_gone)
			break;
		if (pass == 0) {
			off = 0;
			continue;
		}
		if (!follow || (stop && *stop))
			break;
		if (now_ms() - last_check > 1000) {
			void *ga[2] = { c, s->id };
			if (log_gone(ga))
				break;
			last_check = now_ms();
		}
		usleep(100 * 1000);
	}
	sandbox_free(s);
	return 0;
}

/* --- answers ---------------------------------------------------------------- */

int
core_net_decide(struct core *c, const char *key, const char *req, const char *answer,
    const char *by, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	_cleanup_free_ char *d = NULL, *jp = NULL, *ap = NULL, *tmp = NULL;
	cJSON *q = NULL, *ev;
	const char *kind, *host;
	int port, fd, rc = -1;

	if (s == NULL)
		return -1;
	if (strcmp(answer, "once") != 0 && strcmp(answer, "always") != 0 &&
	    strcmp(answer, "deny") != 0) {
		sbx_error(e, SBX_EINVAL, "once, always or deny", "unknown answer '%s'", answer);
		goto out;
	}
	if (strspn(req, "0123456789abcdef") != strlen(req) || strlen(req) != 16) {
		sbx_error(e, SBX_EINVAL, "`sbxtop net ID pending` lists them", "bad request id '%s'",
		    req);
		goto out;
	}
	if ((d = net_dir(s->id, 0, e)) == NULL)
		goto out;
	jp = xasprintf("%s/ask/%s.json", d, req);
	if ((q = read_json(jp)) == NULL) {
		sbx_error(e, SBX_ENOTFOUND, "`sbxtop net ID pending` lists what waits",
		    "no request %s waits in sandbox %s (answered, or timed out)", req, s->id);
		goto out;
	}
	kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "kind"));
	host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "host"));
	port = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "port"));
	if (host != NULL && (strcmp(answer, "always") == 0 ||
	    (strcmp(answer, "once") == 0 && kind && strcmp(kind, "request") == 0))) {
		struct change ch = { .verb = "allow" };
		char text[300];
		snprintf(text, sizeof text, port > 0 ? "%s%s%s:%d" : "%s%s%s",
		    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
		if (net_rule_parse(text, &ch.rule, e) < 0)
			goto out;
		if (strcmp(answer, "once") == 0) {
			ch.grant = ch.rule.text;
			ch.until = wall_ms() + GRANT_ONCE_MS;
		}
		if (apply_change(c, s->id, &ch, e) < 0)
			goto out;
	}
	ap = xasprintf("%s/ask/%s.answer", d, req);
	tmp = xasprintf("%s.tmp", ap);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
	    write_all(fd, answer, strlen(answer)) < 0 || close(fd) < 0 || rename(tmp, ap) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", ap);
		goto out;
	}
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "req", req);
	cJSON_AddStringToObject(ev, "answer", answer);
	cJSON_AddStringToObject(ev, "by", by ? by : "cli");
	if (host)
		cJSON_AddStringToObject(ev, "host", host);
	cJSON_AddNumberToObject(ev, "port", port);
	cJSON_AddStringToObject(ev, "type", "decided");
	net_log_append(s->id, ev);
	rc = 0;
out:
	cJSON_Delete(q);
	sandbox_free(s);
	return rc;
}

int
core_net_request(struct core *c, const char *key, const char *dest, const char *reason,
    const char *origin, int (*cancelled)(void *), void *arg, cJSON **out,
    struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	struct net_policy p = { 0 };
	struct net_rule r;
	struct net_dest d = { 0 };
	char rule[320], req[17];
	_cleanup_free_ char *dir = NULL, *jp = NULL, *ap = NULL, *text = NULL;
	const char *verdict = "denied", *msg;
	int64_t end;
	int rc = -1, fd, asked = 0;
	cJSON *q;

	*out = NULL;
	if (s == NULL)
		return -1;
	if (s->net == NULL) {
		sbx_error(e, SBX_ESTATE, NULL, "sandbox %s has network %s: there is no policy to "
		    "ask about", s->id, s->network ? s->network : "none");
		goto out;
	}
	if (net_rule_parse(dest, &r, e) < 0)
		goto out;
	if (r.kind == NET_RULE_ANY || r.kind == NET_RULE_WILD || (r.kind != NET_RULE_NAME &&
	    r.prefix != (r.kind == NET_RULE_NET4 ? 32 : 128))) {
		sbx_error(e, SBX_EINVAL, "name one host (and port): pypi.org:443",
		    "a request names one destination, not '%s'", dest);
		goto out;
	}
	if (net_policy_from_json(s->net, wall_ms(), &p, e) < 0)
		goto out;
	d.name = r.kind == NET_RULE_NAME ? r.name : NULL;
	d.family = r.kind == NET_RULE_NET4 ? 4 : r.kind == NET_RULE_NET6 ? 6 : 0;
	memcpy(d.addr, r.addr, 16);
	d.port = r.port ? r.port : 443;
	d.own = d.family != 0 && net_addr_own(d.family, d.addr);
	switch (net_policy_decide(&p, &d, rule, sizeof rule)) {
	case NET_ALLOW:
		verdict = "allowed";
		msg = "the policy already allows it";
		goto answer;
	case NET_DENY:
		msg = "the policy denies it; only the operator can change that";
		goto answer;
	case NET_NONE:
		break;
	}
	if (d.own) {
		/* Never through an answer: only an entry the operator adds. */
		snprintf(rule, sizeof rule, "host-local");
		msg = "it is one of the host's own addresses, which only an address entry the "
		    "operator adds reaches";
		goto answer;
	}
	if (p.nlimit > 0 && !net_rule_within(&r, p.limit, p.nlimit)) {
		snprintf(rule, sizeof rule, "limit");
		msg = "it is beyond the limit the operator set for agents";
		goto answer;
	}
	/* Held like a connection: the console shows it, `sbxtop net ID pending`
	 * lists it, core_net_decide answers it. */
	if ((dir = net_dir(s->id, 1, e)) == NULL)
		goto out;
	random_hex(req, 8);
	jp = xasprintf("%s/ask/%s.json", dir, req);
	ap = xasprintf("%s/ask/%s.answer", dir, req);
	q = cJSON_CreateObject();
	cJSON_AddStringToObject(q, "req", req);
	cJSON_AddStringToObject(q, "kind", "request");
	cJSON_AddStringToObject(q, "host", d.name ? d.name : r.text);
	cJSON_AddNumberToObject(q, "port", r.port);
	if (reason)
		cJSON_AddStringToObject(q, "reason", reason);
	cJSON_AddStringToObject(q, "origin", origin ? origin : "mcp");
	cJSON_AddNumberToObject(q, "time_ms", (double)wall_ms());
	cJSON_AddNumberToObject(q, "expires_ms", (double)(wall_ms() + p.ask_timeout_s * 1000LL));
	text = cJSON_PrintUnformatted(q);
	if ((fd = open(jp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 ||
	    write_all(fd, text, strlen(text)) < 0) {
		if (fd >= 0)
			close(fd);
		cJSON_Delete(q);
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", jp);
		goto out;
	}
	close(fd);
	cJSON_AddStringToObject(q, "type", "ask");
	net_log_append(s->id, q);
	asked = 1;
	msg = "the operator did not answer in time";
	snprintf(rule, sizeof rule, "operator timeout");
	for (end = now_ms() + p.ask_timeout_s * 1000LL; now_ms() < end;) {
		char *a = read_file(ap, 64, NULL);
		if (a != NULL) {
			if (strcmp(a, "once") == 0 || strcmp(a, "always") == 0) {
				verdict = "allowed";
				msg = strcmp(a, "once") == 0 ? "the operator allowed it for ten minutes" :
				    "the operator allowed it";
			} else {
				msg = "the operator denied it";
			}
			snprintf(rule, sizeof rule, "operator %s", a);
			free(a);
			break;
		}
		if (cancelled != NULL && cancelled(arg)) {
			unlink(jp);
			unlink(ap);
			sbx_error(e, SBX_ETIMEOUT, NULL, "cancelled: the request was withdrawn");
			goto out;
		}
		usleep(100 * 1000);
	}
	unlink(jp);
	unlink(ap);
answer:
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "verdict", verdict);
	cJSON_AddStringToObject(*out, "destination", r.text);
	cJSON_AddStringToObject(*out, "rule", rule);
	cJSON_AddBoolToObject(*out, "asked", asked);
	cJSON_AddStringToObject(*out, "message", msg);
	rc = 0;
out:
	net_policy_clear(&p);
	sandbox_free(s);
	return rc;
}
