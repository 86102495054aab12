/* XDG directories of this instance (see paths.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/paths.h"
#include "lib/log.h"
#include "lib/util.h"

static const struct {
	const char	*name;
	const char	*env;
	const char	*home_rel;	/* under $HOME when env is unset */
} kinds[] = {
	[PATHS_STATE] = { "state", "XDG_STATE_HOME", ".local/state" },
	[PATHS_CONFIG] = { "config", "XDG_CONFIG_HOME", ".config" },
	[PATHS_DATA] = { "data", "XDG_DATA_HOME", ".local/share" },
	[PATHS_CACHE] = { "cache", "XDG_CACHE_HOME", ".cache" },
	[PATHS_RUNTIME] = { "runtime", "XDG_RUNTIME_DIR", NULL },
};

const char *
paths_kind_name(enum paths_kind k)
{
	return kinds[k].name;
}

const char *
paths_home_env(void)
{
	const char *h = getenv("HOME");

	return h != NULL && h[0] == '/' ? h : NULL;
}

static const char *
home_dir(void)
{
	const char *h = paths_home_env();

	return h != NULL ? h : paths_passwd_home();
}

/* Set once a process has settled for /tmp/sbxtop-UID. */
static int runtime_fallback;

/* Without XDG_RUNTIME_DIR (an MCP client that passes only a few variables, a
 * cron job, su without a login), the directory systemd-logind makes for the
 * user is still the one a login shell's sbxtop uses: take it when it is there
 * and private, so both reach the same core server.  Only then the shared
 * /tmp, said once on stderr (or the log). */
static char *
runtime_dir(void)
{
	char d[64];
	struct stat st;

	snprintf(d, sizeof d, "/run/user/%u", (unsigned)getuid());
	if (lstat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
	    (st.st_mode & 077) == 0 && access(d, W_OK | X_OK) == 0)
		return xasprintf("%s/sbxtop", d);
	if (!__atomic_exchange_n(&runtime_fallback, 1, __ATOMIC_SEQ_CST))
		log_warnx("XDG_RUNTIME_DIR is unset and %s is missing (or not private): using "
		    "/tmp/sbxtop-%u, which an sbxtop started with XDG_RUNTIME_DIR does not see "
		    "(pass XDG_RUNTIME_DIR in the environment to share one core server)", d,
		    (unsigned)getuid());
	return xasprintf("/tmp/sbxtop-%u", (unsigned)getuid());
}

const char *
paths_runtime_fallback(void)
{
	static char d[64];

	if (!__atomic_load_n(&runtime_fallback, __ATOMIC_SEQ_CST))
		return NULL;
	snprintf(d, sizeof d, "/tmp/sbxtop-%u", (unsigned)getuid());
	return d;
}

char *
paths_dir(enum paths_kind k, struct sbx_err *e)
{
	const char *v = getenv(kinds[k].env), *home;

	if (v != NULL && v[0] == '/')
		return xasprintf("%s/sbxtop", v);
	if (k == PATHS_RUNTIME)
		return runtime_dir();
	if ((home = home_dir()) == NULL) {
		sbx_error(e, SBX_EIO, "set HOME or the XDG_*_HOME variables",
		    "cannot tell where the %s directory goes: %s is unset and no home "
		    "directory is known", kinds[k].name, kinds[k].env);
		return NULL;
	}
	return xasprintf("%s/%s/sbxtop", home, kinds[k].home_rel);
}

/* The fallback runtime directory lives in the shared /tmp: someone else may have
 * made it first to catch our sockets, so it must be ours, a real directory, and
 * private. */
static int
check_private_dir(const char *d, struct sbx_err *e)
{
	struct stat st;

	if (lstat(d, &st) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot stat %s", d);
	if (!S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_EIO, "remove it, or set XDG_RUNTIME_DIR",
		    "%s is not a directory (a symlink?): refusing to use it", d);
	if (st.st_uid != getuid())
		return sbx_error(e, SBX_EDENIED, "remove it, or set XDG_RUNTIME_DIR",
		    "%s belongs to uid %u, not to us: refusing to use it", d,
		    (unsigned)st.st_uid);
	if ((st.st_mode & 077) != 0 && chmod(d, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot make %s private", d);
	return 0;
}

char *
paths_ensure(enum paths_kind k, struct sbx_err *e)
{
	_cleanup_free_ char *d = paths_dir(k, e);

	if (d == NULL)
		return NULL;
	/* 0700 needs no umask: never touch the process-wide umask here, other
	 * threads create sandbox files at the same time. */
	if (mkdir_p(d, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, "check the permissions of its parent, or point "
		    "the XDG variables elsewhere", "cannot create the %s directory %s",
		    kinds[k].name, d);
		return NULL;
	}
	if (k == PATHS_RUNTIME && check_private_dir(d, e) < 0)
		return NULL;
	return steal_pointer(&d);
}

char *
paths_file(enum paths_kind k, const char *name, int create_dir, struct sbx_err *e)
{
	_cleanup_free_ char *d = create_dir ? paths_ensure(k, e) : paths_dir(k, e);

	return d != NULL ? xasprintf("%s/%s", d, name) : NULL;
}

char *
paths_sandbox_dir(const char *id, struct sbx_err *e)
{
	_cleanup_free_ char *d = paths_dir(PATHS_STATE, e);

	return d != NULL ? xasprintf("%s/sandboxes/%s", d, id) : NULL;
}

int
paths_state_label(char out[PATHS_LABEL_LEN + 1], struct sbx_err *e)
{
	_cleanup_free_ char *dir = paths_dir(PATHS_STATE, e), *real = NULL, *mid = NULL;
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	const char *parts[2];

	if (dir == NULL)
		return -1;
	real = realpath(dir, NULL);
	mid = read_file("/etc/machine-id", 256, NULL);
	parts[0] = mid ? mid : "";
	parts[1] = real ? real : dir;
	for (size_t i = 0; i < 2; i++) {
		for (const char *p = parts[i]; *p && *p != '\n'; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
		h = (h ^ 0) * 0x100000001b3ULL;
	}
	snprintf(out, PATHS_LABEL_LEN + 1, "%016llx", (unsigned long long)h);
	return 0;
}

char *
paths_agent_bundle(struct sbx_err *e)
{
	const char *env = getenv("SBXTOP_AGENT_BUNDLE");
	char exe[4096], path[4200];
	ssize_t n;

	if (env != NULL && env[0] != '\0') {
		snprintf(path, sizeof path, "%s/sbxtop-agent", env);
		if (env[0] == '/' && access(path, X_OK) == 0)
			return xstrdup(env);
		sbx_error(e, SBX_ENOTFOUND, "point SBXTOP_AGENT_BUNDLE at a directory made by `make agent-bundle`",
		    "SBXTOP_AGENT_BUNDLE=%s has no executable sbxtop-agent (or is not absolute)", env);
		return NULL;
	}
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash != NULL)
			*slash = '\0';
		snprintf(path, sizeof path, "%s/agent-bundle/sbxtop-agent", exe);
		if (access(path, X_OK) == 0)
			return xasprintf("%s/agent-bundle", exe);
		snprintf(path, sizeof path, "%s/../lib/sbxtop/agent-bundle/sbxtop-agent", exe);
		if (access(path, X_OK) == 0)
			return xasprintf("%s/../lib/sbxtop/agent-bundle", exe);
	}
	/* A broken build or installation, not a bad argument: exit status 1. */
	sbx_error(e, SBX_EIO, "run `make` in the source tree (it builds build/agent-bundle), "
	    "reinstall, or set SBXTOP_AGENT_BUNDLE", "no agent bundle next to this executable "
	    "(%s/agent-bundle) nor in ../lib/sbxtop", n > 0 ? exe : "?");
	return NULL;
}

char *
paths_apparmor_fix(const char *exe)
{
	static const char host_wide[] = "; or, for the whole host, sudo sysctl -w "
	    "kernel.apparmor_restrict_unprivileged_userns=0";
	_cleanup_free_ char *dir = xstrdup(exe), *src = NULL;
	char *slash = strrchr(dir, '/'), *p;
	size_t n;

	if (slash != NULL)
		*slash = '\0';
	n = strlen(dir);
	/* Installed: PREFIX/lib/sbxtop/sbxtop-core, its profile /etc/apparmor.d/sbxtop. */
	if (n >= 11 && strcmp(dir + n - 11, "/lib/sbxtop") == 0)
		return access("/etc/apparmor.d/sbxtop", F_OK) == 0 ?
		    xasprintf("sudo apparmor_parser -r /etc/apparmor.d/sbxtop%s", host_wide) :
		    xasprintf("reinstall with `sudo make install` (it installs and loads "
		    "/etc/apparmor.d/sbxtop for %s)%s", exe, host_wide);
	/* A build tree: the source is the nearest parent with the profile in it. */
	for (p = dir + n; p > dir; p = strrchr(dir, '/')) {
		_cleanup_free_ char *probe = NULL;
		*p = '\0';
		probe = xasprintf("%s/scripts/apparmor/sbxtop", dir[0] ? dir : "/");
		if (access(probe, F_OK) == 0) {
			src = xstrdup(dir[0] ? dir : "/");
			break;
		}
		if (strrchr(dir, '/') == NULL)
			break;
	}
	if (src != NULL) {
		const char *rel = exe + strlen(src) + 1;
		_cleanup_free_ char *build = xstrndup(rel, (size_t)(strrchr(rel, '/') - rel));
		return strcmp(build, "build") == 0 ?
		    xasprintf("cd %s && sudo make apparmor%s", src, host_wide) :
		    xasprintf("cd %s && sudo make apparmor BUILD=%s%s", src, build, host_wide);
	}
	return xasprintf("install sbxtop with `make install` (it installs the AppArmor "
	    "profile /etc/apparmor.d/sbxtop)%s", host_wide);
}
