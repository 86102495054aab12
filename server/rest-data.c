/* Files, archives, logs and events over REST.  File contents go both ways as
 * raw bytes (binary-safe); the sandbox side is the agent's file API through
 * core_files, as the file tools use it.  Archives are tar.gz: a download is
 * the core's copy out (core_download, which unpacks the sandbox's archive
 * safely on the host) packed again for the client; an upload is unpacked in a
 * private directory with libarchive's secure flags and copied in with
 * core_upload.  Logs and events stream as they grow. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/copy/tar-dir.h"
#include "lib/b64.h"
#include "lib/log.h"
#include "lib/util.h"
#include "server/rest-int.h"

#define EVENTS_QUEUE_MAX	(4u << 20)	/* events waiting for a slow client */
#define KEEPALIVE_MS		15000

/* --- files ---------------------------------------------------------------- */

static enum MHD_Result
files_op(struct rest_req *rq, const char *id, const char *tool, const char *op,
    cJSON *req, unsigned status)
{
	struct rest_op o;
	struct sbx_err e;
	cJSON *out = NULL;
	int rc;

	if (rest_op_begin(&o, rq->r, tool, id, req, &e) < 0) {
		cJSON_Delete(req);
		return rest_error(rq->conn, &e);
	}
	rc = core_files(rq->r->core, id, op, req, "rest", &out, &e);
	rest_op_end(&o, rc, &e);
	cJSON_Delete(req);
	if (rc < 0) {
		cJSON_Delete(out);
		return rest_error(rq->conn, &e);
	}
	return rest_json(rq->conn, status, out ? out : cJSON_CreateObject());
}

static const char *
need_path(struct rest_req *rq)
{
	const char *p = rest_query(rq, "path");

	return p != NULL && p[0] != '\0' ? p : NULL;
}

static enum MHD_Result
bad_bool(struct rest_req *rq, const char *name)
{
	return rest_fail(rq->conn, SBX_EINVAL, "give true or false", "invalid request: "
	    "%s is not a boolean", name);
}

static enum MHD_Result
file_read(struct rest_req *rq, const char *id, const char *path)
{
	struct rest_op o;
	struct sbx_err e;
	cJSON *req = cJSON_CreateObject(), *out = NULL;
	const char *b64;
	unsigned char *data;
	size_t n;
	int rc;

	cJSON_AddStringToObject(req, "path", path);
	cJSON_AddStringToObject(req, "encoding", "base64");
	cJSON_AddNumberToObject(req, "max_bytes", REST_FILE_MAX);
	if (rest_op_begin(&o, rq->r, "sandbox_read_file", id, req, &e) < 0) {
		cJSON_Delete(req);
		return rest_error(rq->conn, &e);
	}
	rc = core_files(rq->r->core, id, "read", req, "rest", &out, &e);
	cJSON_Delete(req);
	if (rc == 0 && cJSON_IsTrue(cJSON_GetObjectItem(out, "truncated")))
		rc = sbx_error(&e, SBX_EINVAL, "download it in a tar.gz from "
		    "/v1/sandboxes/{id}/archive?path=...", "%s is over the %u MiB limit of "
		    "this route", path, REST_FILE_MAX >> 20);
	rest_op_end(&o, rc, &e);
	if (rc < 0) {
		cJSON_Delete(out);
		return rest_error(rq->conn, &e);
	}
	b64 = cJSON_GetStringValue(cJSON_GetObjectItem(out, "content"));
	data = b64_decode(b64 ? b64 : "", b64 ? strlen(b64) : 0, &n);
	cJSON_Delete(out);
	if (data == NULL)
		return rest_fail(rq->conn, SBX_EAGENT, NULL, "the agent's answer was not base64");
	struct MHD_Response *r = MHD_create_response_from_buffer(n, data, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result mr = MHD_queue_response(rq->conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return mr;
}

static enum MHD_Result
file_write(struct rest_req *rq, const char *id, const char *path)
{
	const char *mode = rest_query(rq, "mode");
	int append = rest_query_bool(rq, "append", 0);
	cJSON *req = cJSON_CreateObject();
	_cleanup_free_ char *b64 = b64_encode(rq->body.data ? rq->body.data : "",
	    rq->body.len);

	if (append < 0) {
		cJSON_Delete(req);
		return bad_bool(rq, "append");
	}
	cJSON_AddStringToObject(req, "path", path);
	cJSON_AddStringToObject(req, "content", b64);
	cJSON_AddStringToObject(req, "encoding", "base64");
	cJSON_AddBoolToObject(req, "append", append);
	if (mode != NULL) {
		char *end;
		long m = strtol(mode, &end, 8);
		if (mode[0] == '\0' || *end != '\0' || m < 0 || m > 07777) {
			cJSON_Delete(req);
			return rest_fail(rq->conn, SBX_EINVAL, "give octal permission bits, e.g. "
			    "644 or 755", "invalid request: bad mode '%.20s'", mode);
		}
		cJSON_AddNumberToObject(req, "mode", (double)m);
	}
	return files_op(rq, id, "sandbox_write_file", "write", req, MHD_HTTP_OK);
}

/* --- archives -------------------------------------------------------------- */

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

static void
rm_tree(const char *dir)
{
	nftw(dir, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static char *
scratch(struct sbx_err *e)
{
	const char *t = getenv("TMPDIR");
	char *d = xasprintf("%s/sbxtop-rest-XXXXXX", t && t[0] == '/' ? t : "/tmp");

	if (mkdtemp(d) == NULL) {
		sbx_error_errno(e, SBX_EIO, "set TMPDIR to a writable directory",
		    "cannot make a scratch directory %s", d);
		free(d);
		return NULL;
	}
	return d;
}

struct pack {
	char	*dir;		/* the scratch directory (removed at the end) */
	char	*tree;		/* what to pack, inside it */
};

static void
pack_write(void *arg, int fd, volatile int *stop)
{
	struct pack *p = arg;
	struct archive *disk = archive_read_disk_new(), *out = archive_write_new();
	struct archive_entry *ent;
	size_t plen = strlen(p->tree);

	archive_write_add_filter_gzip(out);
	archive_write_set_format_pax_restricted(out);
	archive_read_disk_set_symlink_physical(disk);
	archive_read_disk_set_behavior(disk, ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS);
	if (archive_write_open_fd(out, fd) != ARCHIVE_OK ||
	    archive_read_disk_open(disk, p->tree) != ARCHIVE_OK)
		goto out;
	for (;;) {
		ent = archive_entry_new();
		int r = archive_read_next_header2(disk, ent);
		if (r != ARCHIVE_OK || *stop) {
			archive_entry_free(ent);
			break;
		}
		archive_read_disk_descend(disk);
		const char *name = archive_entry_pathname(ent);
		if (strlen(name) <= plen) {	/* the top itself */
			archive_entry_free(ent);
			continue;
		}
		archive_entry_set_pathname(ent, name + plen + 1);
		archive_entry_set_uid(ent, 0);
		archive_entry_set_gid(ent, 0);
		archive_entry_set_uname(ent, NULL);
		archive_entry_set_gname(ent, NULL);
		if (archive_write_header(out, ent) != ARCHIVE_OK) {
			archive_entry_free(ent);
			break;
		}
		if (archive_entry_filetype(ent) == AE_IFREG) {
			int ffd = open(archive_entry_sourcepath(ent), O_RDONLY | O_NOFOLLOW |
			    O_CLOEXEC);
			char buf[65536];
			ssize_t n;
			while (ffd >= 0 && (n = read(ffd, buf, sizeof buf)) > 0)
				if (archive_write_data(out, buf, (size_t)n) < 0)
					break;
			if (ffd >= 0)
				close(ffd);
		}
		archive_entry_free(ent);
	}
	archive_write_close(out);
out:
	archive_read_free(disk);
	archive_write_free(out);
}

static void
pack_free(void *arg)
{
	struct pack *p = arg;

	rm_tree(p->dir);
	free(p->dir);
	free(p->tree);
	free(p);
}

static enum MHD_Result
archive_get(struct rest_req *rq, const char *id)
{
	const char *path = rest_query(rq, "path");
	struct core_xfer_opts xo = { .origin = "rest" };
	struct core_xfer_result res;
	struct rest_op o;
	struct sbx_err e;
	struct pack *p;
	struct MHD_Response *resp;
	cJSON *a = cJSON_CreateObject();
	_cleanup_free_ char *dir = NULL;
	static const char *const none[] = { NULL };
	int rc;

	cJSON_AddStringToObject(a, "path", path ? path : "/workspace");
	if (rest_query_bool(rq, "exclude_defaults", 1) == 0)
		xo.exclude = none;
	if (rest_op_begin(&o, rq->r, "sandbox_download", id, a, &e) < 0) {
		cJSON_Delete(a);
		return rest_error(rq->conn, &e);
	}
	cJSON_Delete(a);
	if ((dir = scratch(&e)) == NULL) {
		rest_op_end(&o, -1, &e);
		return rest_error(rq->conn, &e);
	}
	p = xcalloc(1, sizeof *p);
	p->dir = xstrdup(dir);
	p->tree = xasprintf("%s/tree", dir);
	if (mkdir(p->tree, 0700) < 0) {
		sbx_error_errno(&e, SBX_EIO, NULL, "cannot make %s", p->tree);
		rc = -1;
	} else {
		rc = core_download(rq->r->core, id, path, p->tree, &xo, &res, &e);
	}
	if (rc == 0)
		core_xfer_result_free(&res);
	rest_op_end(&o, rc, &e);
	if (rc < 0) {
		pack_free(p);
		return rest_error(rq->conn, &e);
	}
	if ((resp = rest_stream(rq->conn, pack_write, p, pack_free)) == NULL)
		return rest_fail(rq->conn, SBX_EINTERNAL, NULL, "cannot start the stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/gzip");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result mr = MHD_queue_response(rq->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return mr;
}

/* Unpack the body into dir: regular files, directories and symlinks, with
 * names that stay inside it (core/copy/tar-dir.h). */
static int
unpack(struct rest_req *rq, const char *dir, struct sbx_err *e)
{
	struct archive *in = archive_read_new();
	int rc;

	archive_read_support_filter_gzip(in);
	archive_read_support_filter_none(in);
	archive_read_support_format_tar(in);
	rc = tar_dir_unpack(in, archive_read_open_memory(in, rq->body.data ? rq->body.data : "",
	    rq->body.len), dir, "tar.gz archive", "send a whole tar.gz archive", e);
	archive_read_free(in);
	return rc;
}

static enum MHD_Result
archive_put(struct rest_req *rq, const char *id)
{
	const char *path = rest_query(rq, "path");
	static const char *const none[] = { NULL };
	struct core_xfer_opts xo = { .exclude = none, .origin = "rest" };
	struct core_xfer_result res;
	struct rest_op o;
	struct sbx_err e;
	cJSON *a = cJSON_CreateObject(), *out;
	_cleanup_free_ char *dir = NULL, *tree = NULL;
	int rc;

	cJSON_AddStringToObject(a, "path", path ? path : "/workspace");
	cJSON_AddNumberToObject(a, "bytes", (double)rq->body.len);
	if (rest_op_begin(&o, rq->r, "sandbox_upload_dir", id, a, &e) < 0) {
		cJSON_Delete(a);
		return rest_error(rq->conn, &e);
	}
	cJSON_Delete(a);
	if ((dir = scratch(&e)) == NULL) {
		rest_op_end(&o, -1, &e);
		return rest_error(rq->conn, &e);
	}
	tree = xasprintf("%s/tree", dir);
	if (mkdir(tree, 0700) < 0)
		rc = sbx_error_errno(&e, SBX_EIO, NULL, "cannot make %s", tree);
	else
		rc = unpack(rq, tree, &e);
	if (rc == 0)
		rc = core_upload(rq->r->core, id, tree, path, &xo, &res, &e);
	rm_tree(dir);
	rest_op_end(&o, rc, &e);
	if (rc < 0)
		return rest_error(rq->conn, &e);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "path", res.path ? res.path : "");
	cJSON_AddNumberToObject(out, "files", (double)res.files);
	cJSON_AddNumberToObject(out, "bytes", (double)res.bytes);
	core_xfer_result_free(&res);
	return rest_json(rq->conn, MHD_HTTP_OK, out);
}

/* --- logs ------------------------------------------------------------------ */

struct logs {
	struct core	*core;
	char		 id[80];
	char		 which[16];
	int		 follow;
	struct rest_op	 op;
};

static void
logs_write(void *arg, int fd, volatile int *stop)
{
	struct logs *l = arg;
	struct sbx_err e;
	int rc = core_logs(l->core, l->id, l->which, l->follow, fd, (volatile int *)stop,
	    &e);

	rest_op_end(&l->op, rc == 0 || *stop ? 0 : -1, &e);
}

static void
logs_free(void *arg)
{
	struct logs *l = arg;

	rest_op_end(&l->op, 0, NULL);
	free(l);
}

static enum MHD_Result
logs_get(struct rest_req *rq, const char *id)
{
	const char *which = rest_query(rq, "which");
	int follow = rest_query_bool(rq, "follow", 0);
	struct MHD_Response *resp;
	struct sandbox *s;
	struct sbx_err e;
	struct logs *l;
	cJSON *a;

	if (follow < 0)
		return bad_bool(rq, "follow");
	if (which == NULL)
		which = "agent";
	if (strcmp(which, "agent") != 0 && strcmp(which, "console") != 0)
		return rest_fail(rq->conn, SBX_EINVAL, "give which=agent or which=console",
		    "invalid request: no log '%.20s'", which);
	if ((s = core_get(rq->r->core, id, &e)) == NULL)
		return rest_error(rq->conn, &e);
	l = xcalloc(1, sizeof *l);
	l->core = rq->r->core;
	snprintf(l->id, sizeof l->id, "%s", s->id);
	sandbox_free(s);
	snprintf(l->which, sizeof l->which, "%s", which);
	l->follow = follow;
	a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "which", which);
	cJSON_AddBoolToObject(a, "follow", follow);
	if (rest_op_begin(&l->op, rq->r, "sandbox_vm_logs", l->id, a, &e) < 0) {
		cJSON_Delete(a);
		free(l);
		return rest_error(rq->conn, &e);
	}
	cJSON_Delete(a);
	if ((resp = rest_stream(rq->conn, logs_write, l, logs_free)) == NULL)
		return rest_fail(rq->conn, SBX_EINTERNAL, NULL, "cannot start the stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result mr = MHD_queue_response(rq->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return mr;
}

/* --- events ----------------------------------------------------------------- */

struct evq {
	struct core	*core;
	uint64_t	 from;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct buf	 q;		/* SSE text waiting */
	int		 overflow;
};

/* Called with the core's ring locked: only queue, never block. */
static void
on_event(const struct core_event *ev, void *arg)
{
	struct evq *q = arg;
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *t = NULL, *sse = NULL;
	char when[32];

	cJSON_AddNumberToObject(o, "seq", (double)ev->seq);
	cJSON_AddNumberToObject(o, "time_ms", (double)ev->time_ms);
	cJSON_AddStringToObject(o, "type", ev->type);
	if (ev->sandbox)
		cJSON_AddStringToObject(o, "sandbox", ev->sandbox);
	else
		cJSON_AddNullToObject(o, "sandbox");
	cJSON_AddItemToObject(o, "data", ev->data ? cJSON_Duplicate(ev->data, 1) :
	    cJSON_CreateObject());
	t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	snprintf(when, sizeof when, "%llu", (unsigned long long)ev->seq);
	sse = xasprintf("id: %s\nevent: %s\ndata: %s\n\n", when, ev->type, t);
	pthread_mutex_lock(&q->mu);
	if (!q->overflow && buf_append(&q->q, sse, strlen(sse)) < 0)
		q->overflow = 1;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

static void
events_write(void *arg, int fd, volatile int *stop)
{
	struct evq *q = arg;
	uint64_t first = 0;
	int sub = core_events_subscribe_from(q->core, q->from, on_event, q, &first);
	int64_t quiet = now_ms();

	(void)write_all(fd, ": sbxtop events\n\n", 17);
	for (;;) {
		struct timespec ts;
		char *out = NULL;
		size_t n = 0;
		int over;

		pthread_mutex_lock(&q->mu);
		if (q->q.len == 0 && !q->overflow && !*stop) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&q->cv, &q->mu, &ts);
		}
		if (q->q.len > 0) {
			n = q->q.len;
			out = buf_steal(&q->q);
			buf_init(&q->q, EVENTS_QUEUE_MAX);
		}
		over = q->overflow;
		pthread_mutex_unlock(&q->mu);
		if (*stop) {
			free(out);
			break;
		}
		if (n > 0) {
			int rc = write_all(fd, out, n);
			free(out);
			if (rc < 0)
				break;
			quiet = now_ms();
		} else {
			free(out);
		}
		if (over) {
			(void)write_all(fd, "event: overflow\ndata: {\"error\":{\"code\":\"io\","
			    "\"message\":\"the client read too slowly; events were dropped\","
			    "\"hint\":\"reconnect with ?from= the last id seen\"}}\n\n", 159);
			break;
		}
		if (now_ms() - quiet >= KEEPALIVE_MS) {
			if (write_all(fd, ": keepalive\n\n", 13) < 0)
				break;
			quiet = now_ms();
		}
	}
	core_events_unsubscribe(q->core, sub);
}

static void
events_free(void *arg)
{
	struct evq *q = arg;

	buf_free(&q->q);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

static enum MHD_Result
events_get(struct rest_req *rq)
{
	const char *from = rest_query(rq, "from");
	const char *last = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND,
	    "Last-Event-ID");
	struct MHD_Response *resp;
	struct rest_op o;
	struct sbx_err e;
	struct evq *q;
	uint64_t f = 0;
	char *end;

	if (from != NULL) {
		f = strtoull(from, &end, 10);
		if (from[0] == '\0' || *end != '\0')
			return rest_fail(rq->conn, SBX_EINVAL, "give an event's seq, or leave "
			    "from out for new events only", "invalid request: bad from '%.20s'",
			    from);
	} else if (last != NULL) {
		f = strtoull(last, NULL, 10) + 1;
	}
	if (rest_op_begin(&o, rq->r, "sbxtop_events", NULL, NULL, &e) < 0)
		return rest_error(rq->conn, &e);
	rest_op_end(&o, 0, NULL);
	q = xcalloc(1, sizeof *q);
	q->core = rq->r->core;
	q->from = f;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	buf_init(&q->q, EVENTS_QUEUE_MAX);
	if ((resp = rest_stream(rq->conn, events_write, q, events_free)) == NULL)
		return rest_fail(rq->conn, SBX_EINTERNAL, NULL, "cannot start the stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, no-transform");
	enum MHD_Result mr = MHD_queue_response(rq->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return mr;
}

/* --- the routes (server/rest-routes.c's table) ------------------------------ */

enum MHD_Result
rest_events(struct rest_req *rq)
{
	return events_get(rq);
}

enum MHD_Result
rest_logs(struct rest_req *rq)
{
	return logs_get(rq, rq->seg[2]);
}

enum MHD_Result
rest_archive_get(struct rest_req *rq)
{
	return archive_get(rq, rq->seg[2]);
}

enum MHD_Result
rest_archive_put(struct rest_req *rq)
{
	return archive_put(rq, rq->seg[2]);
}

/* The files routes' shared arguments: recursive, hidden and path (required
 * unless may_lack_path); -1 when one is wrong (answered). */
static int
files_args(struct rest_req *rq, int may_lack_path, int *rec, int *hid, const char **path,
    enum MHD_Result *rc)
{
	*rec = rest_query_bool(rq, "recursive", 0);
	*hid = rest_query_bool(rq, "hidden", 0);
	*path = need_path(rq);
	if (*rec < 0 || *hid < 0) {
		*rc = bad_bool(rq, *rec < 0 ? "recursive" : "hidden");
		return -1;
	}
	if (*path == NULL && !may_lack_path) {
		*rc = rest_fail(rq->conn, SBX_EINVAL, "add ?path=... (relative to /workspace, "
		    "or absolute)", "invalid request: path is required");
		return -1;
	}
	return 0;
}

enum MHD_Result
rest_files_list(struct rest_req *rq)
{
	const char *path, *me = rest_query(rq, "max_entries");
	enum MHD_Result rc;
	int rec, hid;
	cJSON *req;

	if (files_args(rq, 1, &rec, &hid, &path, &rc) < 0)
		return rc;
	req = cJSON_CreateObject();
	if (path)
		cJSON_AddStringToObject(req, "path", path);
	cJSON_AddBoolToObject(req, "recursive", rec);
	cJSON_AddBoolToObject(req, "hidden", hid);
	if (me != NULL) {
		char *end;
		long n = strtol(me, &end, 10);
		if (me[0] == '\0' || *end != '\0' || n < 0 || n > 100000) {
			cJSON_Delete(req);
			return rest_fail(rq->conn, SBX_EINVAL, "give 0 to 100000",
			    "invalid request: bad max_entries '%.20s'", me);
		}
		cJSON_AddNumberToObject(req, "max_entries", (double)n);
	}
	return files_op(rq, rq->seg[2], "sandbox_list_files", "list", req, MHD_HTTP_OK);
}

/* A files route of one path: its tool and op given path (and recursive). */
static enum MHD_Result
path_op(struct rest_req *rq, const char *tool, const char *op, int with_recursive)
{
	const char *path;
	enum MHD_Result rc;
	int rec, hid;
	cJSON *req;

	if (files_args(rq, 0, &rec, &hid, &path, &rc) < 0)
		return rc;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", path);
	if (with_recursive)
		cJSON_AddBoolToObject(req, "recursive", rec);
	return files_op(rq, rq->seg[2], tool, op, req, MHD_HTTP_OK);
}

enum MHD_Result
rest_files_delete(struct rest_req *rq)
{
	return path_op(rq, "sandbox_delete_path", "delete", 1);
}

enum MHD_Result
rest_files_stat(struct rest_req *rq)
{
	return path_op(rq, "sandbox_stat_path", "stat", 0);
}

/* A file's content, either way: fn with its path. */
static enum MHD_Result
content(struct rest_req *rq, enum MHD_Result (*fn)(struct rest_req *, const char *,
    const char *))
{
	const char *path;
	enum MHD_Result rc;
	int rec, hid;

	if (files_args(rq, 0, &rec, &hid, &path, &rc) < 0)
		return rc;
	return fn(rq, rq->seg[2], path);
}

enum MHD_Result
rest_file_get(struct rest_req *rq)
{
	return content(rq, file_read);
}

enum MHD_Result
rest_file_put(struct rest_req *rq)
{
	return content(rq, file_write);
}
