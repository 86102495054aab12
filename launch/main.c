/* sbxtop-launch: the ns launcher as a program of its own, shipped in the agent
 * bundle, so a remote host (reached over SSH, backends/ssh/backend-ssh.c) brings sandboxes
 * up with the very code a local `sbxtop create` runs in-process (backend_ns in
 * backends/ns/backend-ns.c): one launcher, two ways to call it.
 *
 *   sbxtop-launch create|destroy|status|suspend|resume   < sandbox JSON
 *   sbxtop-launch probe                                  host facts for `host ls`
 *   sbxtop-launch doctor                                 the ns doctor checks
 *   sbxtop-launch gc                                     the client's gc here
 *                                                        (known ids in, found out)
 *
 * Input is the sandbox record with its secrets (sandbox_to_json(s, 1)); the answer
 * is one JSON line on stdout: {"sandbox": {...}} or {"error": {code, message,
 * hint}} (exit 1).  SBXTOP_AGENT_BUNDLE names the bundle the sandbox gets. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/ns/ns.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"

#define SPEC_MAX (1 << 20)

static int
answer(cJSON *o)
{
	_cleanup_free_ char *text = cJSON_PrintUnformatted(o);

	if (text == NULL)
		fatal("out of memory");
	printf("%s\n", text);
	fflush(stdout);
	cJSON_Delete(o);
	return 0;
}

static int
fail(const struct sbx_err *e)
{
	cJSON *o = cJSON_CreateObject(), *x = cJSON_AddObjectToObject(o, "error");

	cJSON_AddStringToObject(x, "code", sbx_errcode_name(e->code));
	cJSON_AddStringToObject(x, "message", e->msg);
	if (e->hint[0] != '\0')
		cJSON_AddStringToObject(x, "hint", e->hint);
	answer(o);
	return 1;
}

/* The JSON on stdin; NULL with e. */
static cJSON *
read_json(struct sbx_err *e)
{
	struct buf b;
	char chunk[8192];
	size_t n;
	cJSON *o;

	buf_init(&b, SPEC_MAX);
	while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
		if (buf_append(&b, chunk, n) < 0) {
			buf_free(&b);
			sbx_error(e, SBX_EINVAL, NULL, "the sandbox spec is larger than %d bytes", SPEC_MAX);
			return NULL;
		}
	o = cJSON_ParseWithLength(b.data ? b.data : "", b.len);
	buf_free(&b);
	if (o == NULL)
		sbx_error(e, SBX_EINVAL, NULL, "the sandbox spec on stdin is not JSON");
	return o;
}

static struct sandbox *
read_spec(struct sbx_err *e)
{
	cJSON *o = read_json(e);
	struct sandbox *s;

	if (o == NULL)
		return NULL;
	s = sandbox_from_json(o, e);
	cJSON_Delete(o);
	return s;
}

static void
gc_found(void *arg, const char *kind, const char *id, const char *what, int live)
{
	cJSON *it = cJSON_CreateObject();

	cJSON_AddStringToObject(it, "kind", kind);
	cJSON_AddStringToObject(it, "id", id);
	cJSON_AddStringToObject(it, "what", what);
	cJSON_AddBoolToObject(it, "live", live);
	cJSON_AddItemToArray(arg, it);
}

/* The client's gc on this host: {"known": [ids], "label": its label, "dry_run"}
 * in, {"found": [{kind, id, what, live}], "removed": n} out.  Only what
 * carries the client's label (or nothing's, and nothing runs) is taken: other
 * clients of this host keep theirs. */
static int
gc(void)
{
	struct sbx_err e;
	cJSON *in = read_json(&e), *o, *found;
	const cJSON *k, *it;
	char **known;
	size_t n = 0;
	int removed;

	if (in == NULL)
		return fail(&e);
	if (ns_label_use(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "label"))) < 0) {
		cJSON_Delete(in);
		sbx_error(&e, SBX_EINVAL, NULL, "gc needs the client's label (16 hex digits)");
		return fail(&e);
	}
	k = cJSON_GetObjectItemCaseSensitive(in, "known");
	known = xcalloc((size_t)cJSON_GetArraySize(k) + 1, sizeof *known);
	cJSON_ArrayForEach(it, k)
		if (cJSON_IsString(it))
			known[n++] = it->valuestring;
	found = cJSON_CreateArray();
	struct backend_gc g = { .known = known, .nknown = n,
	    .dry_run = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "dry_run")),
	    .found = gc_found, .arg = found };
	removed = backend_ns.gc(&g, &e);
	free(known);
	cJSON_Delete(in);
	if (removed < 0) {
		cJSON_Delete(found);
		return fail(&e);
	}
	o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "found", found);
	cJSON_AddNumberToObject(o, "removed", removed);
	return answer(o);
}

static long long
meminfo(const char *key)
{
	_cleanup_free_ char *text = read_file("/proc/meminfo", 65536, NULL);
	char *p;

	if (text == NULL || (p = strstr(text, key)) == NULL)
		return -1;
	return strtoll(p + strlen(key), NULL, 10) / 1024;
}

/* What `sbxtop host ls` shows: kernel, backends, sandboxes, free memory. */
static int
probe(void)
{
	cJSON *o = cJSON_CreateObject(), *bk = cJSON_AddArrayToObject(o, "backends");
	struct utsname u;
	struct sbx_err e;
	_cleanup_free_ char *dir = paths_file(PATHS_STATE, "sandboxes", 0, &e);
	_cleanup_free_ char *userns = read_file("/proc/sys/user/max_user_namespaces", 64, NULL);
	struct statvfs vfs;
	DIR *d;
	int n = 0;

	if (uname(&u) == 0)
		cJSON_AddStringToObject(o, "kernel", u.release);
	cJSON_AddBoolToObject(o, "userns", userns != NULL && atol(userns) > 0);
	if (userns != NULL && atol(userns) > 0)
		cJSON_AddItemToArray(bk, cJSON_CreateString("ns"));
	if (access("/usr/bin/qemu-system-x86_64", X_OK) == 0)
		cJSON_AddItemToArray(bk, cJSON_CreateString("qemu"));
	cJSON_AddNumberToObject(o, "mem_total_mib", (double)meminfo("MemTotal:"));
	cJSON_AddNumberToObject(o, "mem_free_mib", (double)meminfo("MemAvailable:"));
	if (dir != NULL && (d = opendir(dir)) != NULL) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL)
			n += de->d_name[0] != '.';
		closedir(d);
	}
	cJSON_AddNumberToObject(o, "sandboxes", n);
	if (dir != NULL) {
		/* Free space where sandboxes are written (their parent when new). */
		char *slash;
		while (statvfs(dir, &vfs) < 0 && (slash = strrchr(dir, '/')) != NULL && slash != dir)
			*slash = '\0';
		cJSON_AddNumberToObject(o, "disk_free_mib",
		    (double)vfs.f_bavail * (double)vfs.f_frsize / 1048576.0);
	}
	return answer(o);
}

/* The agent's socket, pinned where the sandbox cannot reach: sshd connects to
 * the path the client names (direct-streamlocal) and follows links, and
 * run/agent.sock is in the directory the sandbox's root owns, which could put a
 * link to another socket of this user there (a confused deputy: the client
 * would speak to it, with the sandbox's secret).  At create, before any command
 * of the sandbox has run, the socket (checked not to be a link, a socket, owned
 * like its directory) gets a hard link of its own in the sandbox's host
 * directory, which is not mounted inside; the endpoint names that.  When this
 * fails the endpoint stays run/agent.sock, with a warning. */
static void
pin_agent_socket(struct sandbox *s)
{
	static const char suffix[] = "/run/agent.sock";
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -1, rfd = -1, pfd = -1;
	struct stat st, rst;
	char self[40];
	size_t n;

	if (s->agent_endpoint == NULL || strncmp(s->agent_endpoint, "unix:", 5) != 0 ||
	    (n = strlen(s->agent_endpoint + 5)) <= sizeof suffix - 1 ||
	    strcmp(s->agent_endpoint + 5 + n - (sizeof suffix - 1), suffix) != 0)
		return;
	dir = xstrndup(s->agent_endpoint + 5, n - (sizeof suffix - 1));
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (rfd = openat(dfd, "run", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (pfd = openat(rfd, "agent.sock", O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(rfd, &rst) < 0 || fstat(pfd, &st) < 0) {
		log_warn("%s: the agent's socket is not pinned", s->id);
		return;
	}
	if (!S_ISSOCK(st.st_mode) || st.st_uid != rst.st_uid) {
		log_warnx("%s: run/agent.sock is not the agent's socket: not pinned", s->id);
		return;
	}
	snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
	(void)unlinkat(dfd, "agent.sock", 0);
	if (linkat(AT_FDCWD, self, dfd, "agent.sock", AT_SYMLINK_FOLLOW) < 0) {
		log_warn("%s: the agent's socket is not pinned", s->id);
		return;
	}
	free(s->agent_endpoint);
	s->agent_endpoint = xasprintf("unix:%s/agent.sock", dir);
}

static void
doctor_line(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	cJSON *o = cJSON_CreateObject();

	(void)arg;
	cJSON_AddStringToObject(o, "level", level == CHECK_OK ? "ok" :
	    level == CHECK_WARN ? "warn" : "fail");
	cJSON_AddStringToObject(o, "what", what);
	if (detail != NULL)
		cJSON_AddStringToObject(o, "detail", detail);
	if (fix != NULL)
		cJSON_AddStringToObject(o, "fix", fix);
	answer(o);
}

int
main(int argc, char **argv)
{
	const struct backend *b = &backend_ns;
	const char *verb = argc == 2 ? argv[1] : "";
	struct sandbox *s;
	struct sbx_err e;
	int rc;

	log_open("sbxtop-launch", NULL);
	log_set_level(LOG_WARN);
	sbx_err_clear(&e);
	if (strcmp(verb, "probe") == 0)
		return probe();
	if (strcmp(verb, "gc") == 0)
		return gc();
	if (strcmp(verb, "doctor") == 0) {
		b->doctor(doctor_line, NULL);
		return 0;
	}
	if (strcmp(verb, "create") != 0 && strcmp(verb, "destroy") != 0 &&
	    strcmp(verb, "status") != 0 && strcmp(verb, "suspend") != 0 &&
	    strcmp(verb, "resume") != 0) {
		fprintf(stderr, "usage: sbxtop-launch "
		    "create|destroy|status|suspend|resume|probe|doctor|gc\n");
		return 2;
	}
	if ((s = read_spec(&e)) == NULL)
		return fail(&e);
	rc = strcmp(verb, "create") == 0 ? b->create(s, &e) :
	    strcmp(verb, "destroy") == 0 ? b->destroy(s, &e) :
	    strcmp(verb, "status") == 0 ? b->status(s, &e) :
	    strcmp(verb, "suspend") == 0 ? b->suspend(s, &e) : b->resume(s, &e);
	if (rc < 0) {
		sandbox_free(s);
		return fail(&e);
	}
	if (strcmp(verb, "create") == 0)
		pin_agent_socket(s);
	{
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "sandbox", sandbox_to_json(s, 1));
		answer(o);
	}
	sandbox_free(s);
	return 0;
}
