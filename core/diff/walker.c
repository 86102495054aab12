/* A diff's walk in a process of its own (core_diff): this same program
 * started again as its walker (CORE_DIFF_WALKER).  What the walk allocates is
 * the walker's, a crash of its is not the core's, it runs at a lower priority
 * than everything else here, and it joins the sandbox's user namespace to read
 * every file of the layers.  A fork of the core would do all that too, but
 * the child of a threaded process may not allocate (an allocator's lock that
 * another thread held at the fork stays held in it), and the walk must.  The
 * request goes to the walker's standard input as JSON; it answers frames on
 * its standard output, which the core reads with its caller's cancel in view. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core-int.h"
#include "core/diff/run.h"
#include "core/diff/text.h"
#include "lib/jspec.h"
#include "lib/util.h"

/* What the walker sends: an item (its path and diff follow), or the end. */
struct frame {
	int			kind;		/* 'I' an item, 'E' the end */
	int			rc;		/* the end: diff_run's */
	struct core_diff_info	info;
	struct core_diff_item	it;		/* its pointers are not sent */
	uint8_t			type, fold;	/* its type and folded, in diff_type_names, diff_fold_names */
	uint32_t		path_len, diff_len;	/* diff_len UINT32_MAX: none */
	struct sbx_err		err;		/* the end, when rc < 0 */
};

#define WALKER_REQ_MAX	(1u << 20)	/* bytes of a request */
#define WALKER_USERNS	3		/* the walker's descriptor of the namespace */

/* n bytes, whole: -1 at an error or an early end. */
static int
read_all(int fd, void *p, size_t n)
{
	while (n > 0) {
		ssize_t k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p = (char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

static uint8_t
name_index(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] == name)
			return (uint8_t)i;
	return 0;
}

/* The walker's item function: each item down its standard output. */
static int
send_item(void *arg, const struct core_diff_info *info, const struct core_diff_item *it)
{
	int fd = *(int *)arg;
	struct frame f;

	memset(&f, 0, sizeof f);
	f.kind = 'I';
	f.info = *info;
	f.it = *it;
	f.it.path = f.it.diff = f.it.type = f.it.folded = NULL;
	f.type = name_index(diff_type_names, DIFF_TYPES, it->type);
	f.fold = name_index(diff_fold_names, DIFF_FOLDS, it->folded);
	f.path_len = (uint32_t)strlen(it->path);
	f.diff_len = it->diff ? (uint32_t)strlen(it->diff) : UINT32_MAX;
	return write_all(fd, &f, sizeof f) < 0 || write_all(fd, it->path, f.path_len) < 0 ||
	    (it->diff && write_all(fd, it->diff, f.diff_len) < 0);
}

int
core_diff_walker_main(void)
{
	_cleanup_free_ char *in = NULL;
	struct core_diff_opts o = { 0 };
	struct core_diff_info info;
	struct backend_layer *L = NULL;
	struct frame f;
	const cJSON *ls, *x;
	cJSON *req;
	size_t nl = 0, len;
	int out = 1;

	if ((in = read_file("/dev/stdin", WALKER_REQ_MAX, &len)) == NULL ||
	    (req = cJSON_ParseWithLength(in, len)) == NULL) {
		fprintf(stderr, "sbxtop: %s: the core sends a request on standard input\n",
		    CORE_DIFF_WALKER);
		return 2;
	}
	/* Either failing, the walk still runs: at the same priority, and reading
	 * what this user may read (it says what it could not). */
	(void)!nice(10);
	if (cJSON_IsTrue(cJSON_GetObjectItem(req, "userns"))) {
		(void)!setns(WALKER_USERNS, CLONE_NEWUSER);
		close(WALKER_USERNS);
	}
	ls = cJSON_GetObjectItem(req, "layers");
	L = xcalloc((size_t)cJSON_GetArraySize(ls) + 1, sizeof *L);
	cJSON_ArrayForEach(x, ls) {
		L[nl].mount = (char *)jstr(x, "mount", NULL);
		L[nl].upper = (char *)jstr(x, "upper", NULL);
		L[nl].lower = (char *)jstr(x, "lower", NULL);
		if (L[nl].mount != NULL && L[nl].upper != NULL)
			nl++;
	}
	o.path = jstr(req, "path", NULL);
	o.cursor = jstr(req, "cursor", NULL);
	o.content = cJSON_IsTrue(cJSON_GetObjectItem(req, "content"));
	o.max_text = (size_t)jint_of(cJSON_GetObjectItem(req, "max_text"), 0, 0, INT64_MAX);
	memset(&f, 0, sizeof f);
	f.rc = diff_run(L, nl, jstr(req, "id", ""), &o, send_item,
	    &out, &info, &f.err);
	f.kind = 'E';
	f.info = info;
	free(L);
	cJSON_Delete(req);
	return write_all(out, &f, sizeof f) < 0;
}

/* The walker's request: what core_diff_layers takes, as JSON. */
static char *
walker_request(const struct backend_layer *L, size_t nl, const char *id,
    const struct core_diff_opts *o, int userns)
{
	cJSON *r = cJSON_CreateObject(), *ls = cJSON_AddArrayToObject(r, "layers");
	char *s;

	cJSON_AddStringToObject(r, "id", id);
	for (size_t i = 0; i < nl; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "mount", L[i].mount);
		cJSON_AddStringToObject(x, "upper", L[i].upper);
		if (L[i].lower)
			cJSON_AddStringToObject(x, "lower", L[i].lower);
		cJSON_AddItemToArray(ls, x);
	}
	if (o->path)
		cJSON_AddStringToObject(r, "path", o->path);
	if (o->cursor)
		cJSON_AddStringToObject(r, "cursor", o->cursor);
	cJSON_AddBoolToObject(r, "content", o->content);
	cJSON_AddNumberToObject(r, "max_text", (double)o->max_text);
	cJSON_AddBoolToObject(r, "userns", userns);
	s = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	return s;
}

/* The walker started with out as its standard output, the request written
 * to its standard input. */
static pid_t
walker_spawn(const char *req, int out, int nsfd, struct sbx_err *e)
{
	static char *const argv[] = { (char *)"sbxtop-core", (char *)CORE_DIFF_WALKER, NULL };
	extern char **environ;
	posix_spawn_file_actions_t fa;
	size_t len = strlen(req);
	int in[2], src[3], low[3] = { -1, -1, -1 }, rc;
	pid_t pid = -1;

	if (len > WALKER_REQ_MAX)
		return sbx_error(e, SBX_EINVAL, "give a shorter path or cursor",
		    "the diff's request is longer than %u bytes", WALKER_REQ_MAX);
	if (pipe2(in, O_CLOEXEC) < 0)
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "diff: pipe");
	/* Its descriptors are these three and nothing else of ours (no socket,
	 * no lock).  Each is moved above the ones they become first, so that no
	 * dup2 overwrites the source of another. */
	src[0] = in[0];
	src[1] = out;
	src[2] = nsfd;
	for (int i = 0; i < 3; i++)
		if (src[i] >= 0 && src[i] <= WALKER_USERNS)
			src[i] = low[i] = fcntl(src[i], F_DUPFD_CLOEXEC, WALKER_USERNS + 1);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, src[0], 0);
	posix_spawn_file_actions_adddup2(&fa, src[1], 1);
	if (nsfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, src[2], WALKER_USERNS);
	posix_spawn_file_actions_addclosefrom_np(&fa, WALKER_USERNS + 1);
	rc = src[0] < 0 || src[1] < 0 || (nsfd >= 0 && src[2] < 0) ? errno :
	    posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; i < 3; i++)
		if (low[i] >= 0)
			close(low[i]);
	close(in[0]);
	if (rc != 0) {
		close(in[1]);
		errno = rc;
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "diff: cannot start its walker");
	}
	/* It reads the whole request before anything else; one that died
	 * before is found by the caller, at the end of its output. */
	(void)write_all(in[1], req, len);
	close(in[1]);
	return pid;
}

/* diff_run in the walker, its items handed to fn here; nsfd: the user
 * namespace it joins (-1: none). */
static int
diff_in_walker(const struct backend_layer *L, size_t nl, const char *id,
    const struct core_diff_opts *o, int nsfd, core_diff_fn fn, void *arg,
    struct core_diff_info *info, struct sbx_err *e)
{
	_cleanup_free_ char *req = walker_request(L, nl, id, o, nsfd >= 0);
	struct frame f;
	int p[2], st = 0, stopped = 0, done = 0, rc = -1;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "diff: pipe");
	diff_run_enter();
	pid = walker_spawn(req, p[1], nsfd, e);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		diff_run_leave();
		return -1;
	}
	while (!stopped && !done) {
		char *path = NULL, *diff = NULL;
		if (o->cancelled && o->cancelled(o->cancel_arg))
			break;
		if (poll_in_until(p[0], now_ms() + 250) <= 0)
			continue;
		if (read_all(p[0], &f, sizeof f) < 0)
			break;
		*info = f.info;
		if (f.kind == 'E') {
			done = 1;
			rc = f.rc;
			if (rc < 0)
				*e = f.err;
			break;
		}
		if (f.path_len > DIFF_PATH_MAX + 256 || (f.diff_len != UINT32_MAX &&
		    f.diff_len > DIFF_OUT_MAX + 1024) || f.type >= DIFF_TYPES ||
		    f.fold >= DIFF_FOLDS)
			break;
		path = xmalloc(f.path_len + 1);
		diff = f.diff_len != UINT32_MAX ? xmalloc(f.diff_len + 1) : NULL;
		if (read_all(p[0], path, f.path_len) == 0 &&
		    (diff == NULL || read_all(p[0], diff, f.diff_len) == 0)) {
			path[f.path_len] = '\0';
			if (diff)
				diff[f.diff_len] = '\0';
			f.it.path = path;
			f.it.diff = diff;
			f.it.type = diff_type_names[f.type];
			f.it.folded = diff_fold_names[f.fold];
			stopped = fn(arg, &f.info, &f.it) != 0;
		} else {
			stopped = -1;
		}
		free(path);
		free(diff);
		if (stopped < 0)
			break;
	}
	if (!done)
		kill(pid, SIGKILL);
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	diff_run_leave();
	if (done || stopped > 0)
		return done ? rc : 0;
	if (o->cancelled && o->cancelled(o->cancel_arg))
		return 0;
	return sbx_error(e, SBX_EINTERNAL, "try again; a path asks for less",
	    "the diff's walk ended before it was done (%s)", WIFSIGNALED(st) ?
	    strsignal(WTERMSIG(st)) : "it exited");
}

int
core_diff(struct core *c, const char *key, const struct core_diff_opts *o, core_diff_fn fn,
    void *arg, struct core_diff_info *info, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	const struct backend *b;
	struct backend_layer *L = NULL;
	size_t nl = 0;
	int rc, nsfd;

	memset(info, 0, sizeof *info);
	if (s == NULL)
		return -1;
	b = backend_find(s->backend);
	if (b == NULL || b->layers == NULL) {
		sbx_error(e, SBX_EUNSUPPORTED, "look at its files with sandbox_list_files or "
		    "`sbxtop cp ID:/workspace DIR`",
		    "diff reads a sandbox's writable layers on this host: the %s backend "
		    "keeps none here", s->backend);
		sandbox_free(s);
		return -1;
	}
	if (b->layers(s, &L, &nl, e) < 0) {
		sandbox_free(s);
		return -1;
	}
	nsfd = b->layers_userns ? b->layers_userns(s) : -1;
	rc = diff_in_walker(L, nl, s->id, o, nsfd, fn, arg, info, e);
	if (nsfd >= 0)
		close(nsfd);
	backend_layers_free(L, nl);
	sandbox_free(s);
	return rc;
}

