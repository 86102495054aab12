/* Unit tests of tui/model.h, the console's model apart from drawing: line
 * buffers (splitting, the open last line, the caps), each kind of source
 * message folded in with the redraw flags it answers, the selected sandbox's
 * execs and their order, the activity ring, approvals, the log read from a
 * file (never through a symlink), how a held call's sandbox is named, and the
 * pager's and list's additions (streams, live use, RUN, the CLI's calls).
 * TAP output; exit 1 on any failure. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "lib/util.h"
#include "tui/model.h"

/* Fold the JSON text in; the flags it returned. */
static int
apply(struct model *m, const char *json)
{
	cJSON *msg = cJSON_Parse(json);
	int d;

	if (msg == NULL) {
		printf("# bad test JSON: %s\n", json);
		exit(1);
	}
	d = model_apply(m, msg);
	cJSON_Delete(msg);
	return d;
}

static void
test_lines(void)
{
	struct lines l;
	char big[5000];

	lines_init(&l, 3);
	lines_append(&l, "a\nb\n", 4);
	check(l.n == 2 && strcmp(lines_at(&l, 0), "a") == 0 && strcmp(lines_at(&l, 1), "b") == 0,
	    "lines: text is split at newlines");
	check(!l.open, "lines: a text that ends in a newline leaves no line open");
	lines_append(&l, "par", 3);
	lines_append(&l, "tial\n", 5);
	check(l.n == 3 && strcmp(lines_at(&l, 2), "partial") == 0,
	    "lines: a line without its newline is continued by the next text");
	lines_append(&l, "d\ne\n", 4);
	check(l.n == 3 && l.dropped == 2 && strcmp(lines_at(&l, 0), "partial") == 0 &&
	    strcmp(lines_at(&l, 2), "e") == 0, "lines: over the cap the oldest go first, counted");
	lines_clear(&l);
	check(l.n == 0 && l.dropped == 0, "lines: clear empties");

	memset(big, 'x', sizeof big);
	lines_append(&l, big, sizeof big);
	check(l.n == 2 && strlen(lines_at(&l, 0)) == 4096 && strlen(lines_at(&l, 1)) == 904,
	    "lines: a line over 4 KiB is cut into pieces of 4 KiB");
	lines_clear(&l);
	lines_append(&l, big, 4000);
	lines_append(&l, big, 200);
	check(l.n == 2 && strlen(lines_at(&l, 0)) == 4096 && strlen(lines_at(&l, 1)) == 104,
	    "lines: an open line that grows past 4 KiB goes on in a line of its own");
	lines_free(&l);
}

static const char list_json[] =
	"{\"k\":\"list\",\"sandboxes\":["
	"{\"id\":\"sbx-aaaa11\",\"name\":\"web\",\"backend\":\"ssh\",\"host\":\"big\","
	"\"state\":\"running\",\"created_at\":1000,\"expires_at\":901000,"
	"\"limits\":{\"memory_mib\":512,\"cpus\":1.5},\"forwards\":[{},{}]},"
	"{\"id\":\"sbx-aaaa22\",\"name\":\"db\",\"backend\":\"ns\",\"state\":\"suspended\"},"
	"{\"id\":\"sbx-bbbb33\",\"name\":\"\",\"backend\":\"qemu\",\"state\":\"running\"}]}";

static void
test_list(struct model *m)
{
	int d = apply(m, list_json);
	const struct m_sandbox *s = model_sandbox(m, "sbx-aaaa11");

	check(m->nsb == 3 && (d & DIRTY_LIST), "list: three sandboxes, the list redrawn");
	check(s != NULL && strcmp(s->name, "web") == 0 && strcmp(s->state, "running") == 0,
	    "list: the record's id, name and state");
	check(s != NULL && strcmp(s->backend, "ssh:big") == 0,
	    "list: a remote sandbox's backend shows its host");
	check(s != NULL && s->memory_mib == 512 && s->cpus == 1.5 && s->nfwd == 2 &&
	    s->created_ms == 1000 && s->expires_ms == 901000,
	    "list: limits, forwards and times are read");
	check(s != NULL && s->running == -1, "list: what runs there is not known yet");
	check(s != NULL && s->rec != NULL &&
	    cJSON_IsString(cJSON_GetObjectItem(s->rec, "host")), "list: the whole record is kept");
	check(apply(m, list_json) == 0, "list: the same list again redraws nothing");
	check(model_sandbox(m, "sbx-nope") == NULL, "list: an unknown id is NULL");
	check(m->orphans == 0, "list: no orphans said, none counted");
	{
		/* The list with "orphans": the title says how many. */
		cJSON *msg = cJSON_Parse(list_json);
		cJSON_AddNumberToObject(msg, "orphans", 2);
		d = model_apply(m, msg);
		check(m->orphans == 2 && (d & DIRTY_TITLE), "list: 2 orphans, the title redrawn");
		cJSON_ReplaceItemInObject(msg, "orphans", cJSON_CreateNumber(0));
		d = model_apply(m, msg);
		check(m->orphans == 0 && (d & DIRTY_TITLE), "list: none again, the title redrawn");
		cJSON_Delete(msg);
	}
}

static void
test_find(struct model *m)
{
	const struct m_sandbox *s;

	s = model_find(m, "sbx-aaaa22");
	check(s != NULL && strcmp(s->name, "db") == 0, "find: by id");
	s = model_find(m, "web");
	check(s != NULL && strcmp(s->id, "sbx-aaaa11") == 0, "find: by name");
	s = model_find(m, "sbx-b");
	check(s != NULL && strcmp(s->id, "sbx-bbbb33") == 0, "find: by a prefix only one id has");
	check(model_find(m, "sbx-a") == NULL, "find: a prefix two ids have finds none");
	check(model_find(m, "") == NULL, "find: the empty key finds none");
}

static void
what_is(const struct model *m, const char *json, const char *want)
{
	cJSON *a = cJSON_Parse(json);
	char buf[256];

	model_approval_what(m, a, buf, sizeof buf);
	check(strcmp(buf, want) == 0, "approval: \"%s\"", want);
	if (strcmp(buf, want) != 0)
		printf("# got: %s\n", buf);
	cJSON_Delete(a);
}

static void
test_approval_what(struct model *m)
{
	what_is(m, "{\"tool\":\"sandbox_destroy\",\"arguments\":{\"sandbox_id\":\"web\"}}",
	    "sandbox_destroy on sbx-aaaa11 (web)");
	what_is(m, "{\"tool\":\"sandbox_exec\",\"arguments\":{\"sandbox_id\":\"sbx-aaaa22\","
	    "\"command\":\"rm -rf /\"}}", "sandbox_exec on sbx-aaaa22 (db)");
	what_is(m, "{\"tool\":\"sandbox_destroy\",\"arguments\":{\"sandbox_id\":\"sbx-b\"}}",
	    "sandbox_destroy on sbx-bbbb33");
	what_is(m, "{\"tool\":\"sandbox_destroy\",\"arguments\":{\"sandbox_id\":\"sbx-gone99\"}}",
	    "sandbox_destroy on sbx-gone99");
	what_is(m, "{\"tool\":\"sandbox_suspend\",\"sandbox\":\"sbx-aaaa11\",\"arguments\":{}}",
	    "sandbox_suspend on sbx-aaaa11 (web)");
	what_is(m, "{\"tool\":\"sandbox_create\",\"arguments\":{\"name\":\"fresh\"}}",
	    "sandbox_create named fresh");
	what_is(m, "{\"arguments\":{}}", "a tool");

	/* Every argument, host paths first, nothing cut. */
	char long_remote[3000];
	memset(long_remote, 'r', sizeof long_remote - 1);
	long_remote[sizeof long_remote - 1] = '\0';
	char *j = xasprintf("{\"tool\":\"sandbox_download\",\"arguments\":{\"sandbox_id\":\"web\","
	    "\"remote_path\":\"/workspace/%s\",\"local_path\":\"/home/op/.bashrc\",\"n\":3}}",
	    long_remote);
	cJSON *a = cJSON_Parse(j);
	char *args = model_approval_args(a);
	check(strncmp(args, "local_path: /home/op/.bashrc\n", 29) == 0,
	    "approval arguments: the host path comes first");
	check(strstr(args, long_remote) != NULL && strstr(args, "\nn: 3") != NULL &&
	    strstr(args, "\nsandbox_id: web\n") != NULL,
	    "approval arguments: every one, whole, one per line");
	free(args);
	cJSON_Delete(a);
	free(j);
}

static void
test_forwards(struct model *m)
{
	static const char fw[] = "{\"k\":\"forwards\",\"forwards\":[{\"sandbox\":\"sbx-aaaa11\","
	    "\"bind\":\"127.0.0.1\",\"local\":8080,\"remote\":80,\"conns\":3,\"bytes_in\":10,"
	    "\"bytes_out\":20,\"live\":true}]}";
	int d = apply(m, fw);

	check(m->nfwd == 1 && (d & DIRTY_FWD), "forwards: one, the pane redrawn");
	check(m->nfwd == 1 && m->fwd[0].local == 8080 && m->fwd[0].remote == 80 &&
	    m->fwd[0].live && m->fwd[0].conns == 3 && m->fwd[0].bytes_out == 20,
	    "forwards: ports, counters and liveness are read");
	check(apply(m, fw) == 0, "forwards: the same again redraws nothing");
	check((apply(m, "{\"k\":\"forwards\",\"forwards\":[]}") & DIRTY_FWD) && m->nfwd == 0,
	    "forwards: an empty list clears them");
	check(apply(m, "{\"k\":\"forwards\",\"forwards\":[]}") == 0,
	    "forwards: empty again redraws nothing");
}

static void
test_events(struct model *m)
{
	const struct m_sandbox *s;
	int d;

	d = apply(m, "{\"k\":\"event\",\"type\":\"sandbox.state\",\"sandbox\":\"sbx-aaaa22\","
	    "\"data\":{\"state\":\"running\"}}");
	s = model_sandbox(m, "sbx-aaaa22");
	check(s && strcmp(s->state, "running") == 0 && (d & DIRTY_LIST),
	    "event: sandbox.state changes the state shown");
	apply(m, "{\"k\":\"event\",\"type\":\"exec.started\",\"sandbox\":\"sbx-aaaa22\","
	    "\"data\":{\"command\":\"make -j2\"}}");
	check(s && s->running == 1 && strcmp(s->now, "make -j2") == 0,
	    "event: exec.started counts the command and says what runs");
	apply(m, "{\"k\":\"event\",\"type\":\"exec.exited\",\"sandbox\":\"sbx-aaaa22\",\"data\":{}}");
	check(s && s->running == 0 && s->now[0] == '\0', "event: exec.exited counts it down");
	check(apply(m, "{\"k\":\"event\",\"type\":\"sandbox.state\",\"sandbox\":\"sbx-zz\","
	    "\"data\":{\"state\":\"error\"}}") == 0, "event: one for an unknown sandbox is ignored");
	apply(m, list_json);
	s = model_sandbox(m, "sbx-aaaa11");
	check(s && s->running == -1, "event: a new list keeps what was known of what runs");

	/* Tool calls: started and finished matched by request id. */
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-aaaa11\",\"time_ms\":5,"
	    "\"data\":{\"client\":\"claude\",\"tool\":\"sandbox_exec\",\"request_id\":1,"
	    "\"arguments\":{\"command\":\"ls\"}}}");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-aaaa11\",\"time_ms\":6,"
	    "\"data\":{\"client\":\"claude\",\"tool\":\"sandbox_exec\",\"request_id\":2}}");
	d = apply(m, "{\"k\":\"event\",\"type\":\"tool.finished\",\"sandbox\":\"sbx-aaaa11\","
	    "\"data\":{\"client\":\"claude\",\"tool\":\"sandbox_exec\",\"request_id\":2,"
	    "\"duration_ms\":42,\"outcome\":\"error\",\"message\":\"no such file\"}}");
	const struct m_activity *a0 = model_activity(m, m->nact - 2);
	const struct m_activity *a1 = model_activity(m, m->nact - 1);
	check(m->nact == 2 && (d & DIRTY_RIGHT), "activity: two calls journalled");
	check(a0->duration_ms == -1 && strcmp(a0->outcome, "running") == 0 &&
	    strcmp(a0->args, "{\"command\":\"ls\"}") == 0,
	    "activity: the first still runs, with its arguments");
	check(a1->duration_ms == 42 && strcmp(a1->outcome, "error") == 0 && a1->message &&
	    strcmp(a1->message, "no such file") == 0,
	    "activity: the finish goes to the call with its request id");
	for (int i = 0; i < MODEL_ACTIVITY_MAX + 5; i++) {
		char ev[256];
		snprintf(ev, sizeof ev, "{\"k\":\"event\",\"type\":\"tool.started\","
		    "\"data\":{\"client\":\"c\",\"tool\":\"t%d\",\"request_id\":%d}}", i, 100 + i);
		apply(m, ev);
	}
	check(m->nact == MODEL_ACTIVITY_MAX, "activity: the ring keeps %d", MODEL_ACTIVITY_MAX);
	check(strcmp(model_activity(m, 0)->tool, "t5") == 0 &&
	    strcmp(model_activity(m, m->nact - 1)->tool, "t504") == 0,
	    "activity: the oldest are dropped first");
	/* A call made with an API key: the key's name, as the journal gives it. */
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-aaaa11\",\"time_ms\":7,"
	    "\"data\":{\"client\":\"rest\",\"kind\":\"rest\",\"key\":\"ci\",\"key_id\":\"key-0a1b2c3d\","
	    "\"tool\":\"sandbox_exec\",\"request_id\":3}}");
	a1 = model_activity(m, m->nact - 1);
	check(strcmp(a1->client, "rest") == 0 && strcmp(a1->key, "ci") == 0,
	    "activity: a call made with an API key names the key");
	check(strcmp(model_activity(m, m->nact - 2)->key, "") == 0,
	    "activity: one made without, none");

	/* Approvals. */
	static const char req[] = "{\"k\":\"event\",\"type\":\"approval.requested\","
	    "\"data\":{\"id\":\"7\",\"tool\":\"sandbox_destroy\",\"client\":\"claude\","
	    "\"arguments\":{\"sandbox_id\":\"web\"}}}";
	d = apply(m, req);
	check(cJSON_GetArraySize(m->approvals) == 1 && (d & DIRTY_PROMPT),
	    "approvals: a request is pending, the prompt line redrawn");
	apply(m, req);
	check(cJSON_GetArraySize(m->approvals) == 1, "approvals: the same request twice is one");
	apply(m, "{\"k\":\"event\",\"type\":\"approval.resolved\",\"data\":{\"id\":\"7\"}}");
	check(cJSON_GetArraySize(m->approvals) == 0, "approvals: a resolved one goes");
	apply(m, "{\"k\":\"approvals\",\"approvals\":[{\"id\":\"8\"},{\"id\":\"9\"}],"
	    "\"mode\":\"destructive\"}");
	check(cJSON_GetArraySize(m->approvals) == 2 && strcmp(m->approve_mode, "destructive") == 0,
	    "approvals: the fetched list and mode replace the model's");
}

static void
test_execs(struct model *m)
{
	struct m_exec *x;
	int d;

	d = model_select(m, "sbx-aaaa11");
	check((d & DIRTY_RIGHT) && strcmp(m->sel, "sbx-aaaa11") == 0, "select: a sandbox");
	check(model_select(m, "sbx-aaaa11") == 0, "select: the same again changes nothing");
	check(apply(m, "{\"k\":\"exec\",\"sandbox\":\"sbx-aaaa22\",\"id\":\"x1\"}") == 0 &&
	    m->nexecs == 0, "execs: another sandbox's are ignored");
	apply(m, "{\"k\":\"exec\",\"sandbox\":\"sbx-aaaa11\",\"id\":\"x12\",\"command\":\"b\","
	    "\"origin\":\"mcp.claude\",\"started_ms\":100}");
	apply(m, "{\"k\":\"exec\",\"sandbox\":\"sbx-aaaa11\",\"id\":\"x9\",\"command\":\"a\"}");
	check(m->nexecs == 2 && strcmp(m->execs[0]->id, "x9") == 0 &&
	    strcmp(m->execs[1]->id, "x12") == 0, "execs: in the order of their numbers (x9, x12)");
	x = model_exec(m, "x12");
	check(x && x->running && strcmp(x->origin, "mcp.claude") == 0 && x->started_ms == 100 &&
	    strcmp(x->command, "b") == 0, "execs: command, origin and start are read");
	apply(m, "{\"k\":\"output\",\"sandbox\":\"sbx-aaaa11\",\"exec\":\"x12\",\"data\":\"hello\\nwor\"}");
	d = apply(m, "{\"k\":\"output\",\"sandbox\":\"sbx-aaaa11\",\"exec\":\"x12\",\"data\":\"ld\\n\"}");
	check(x && x->out.n == 2 && strcmp(lines_at(&x->out, 1), "world") == 0 && (d & DIRTY_RIGHT),
	    "execs: output is kept in lines, across pieces");
	apply(m, "{\"k\":\"exit\",\"sandbox\":\"sbx-aaaa11\",\"exec\":\"x12\",\"exit_code\":3,"
	    "\"duration_ms\":250}");
	check(x && !x->running && x->exit_code == 3 && x->duration_ms == 250 && !x->signal[0],
	    "execs: the exit, its status and duration");
	apply(m, "{\"k\":\"exit\",\"sandbox\":\"sbx-aaaa11\",\"exec\":\"x9\",\"exit_code\":null,"
	    "\"signal\":\"KILL\"}");
	x = model_exec(m, "x9");
	check(x && !x->running && x->exit_code == -1 && strcmp(x->signal, "KILL") == 0,
	    "execs: a killed one keeps its signal");
	apply(m, "{\"k\":\"output\",\"sandbox\":\"sbx-aaaa11\",\"exec\":\"x20\",\"data\":\"early\"}");
	check(model_exec(m, "x20") && model_exec(m, "x20")->running,
	    "execs: output before its exec record makes a running exec");

	for (int i = 0; m->nexecs < MODEL_EXECS_MAX; i++) {
		char ev[128];
		snprintf(ev, sizeof ev, "{\"k\":\"exec\",\"sandbox\":\"sbx-aaaa11\",\"id\":\"x%d\"}",
		    100 + i);
		apply(m, ev);
	}
	apply(m, "{\"k\":\"exec\",\"sandbox\":\"sbx-aaaa11\",\"id\":\"x999\"}");
	check(m->nexecs == MODEL_EXECS_MAX && model_exec(m, "x999") && !model_exec(m, "x9") &&
	    model_exec(m, "x12"), "execs: past %d the oldest that has exited goes",
	    MODEL_EXECS_MAX);

	apply(m, "{\"k\":\"log\",\"sandbox\":\"sbx-aaaa11\",\"reset\":true,\"exists\":false,"
	    "\"data\":\"\"}");
	check(m->log_state == -1 && m->logs.n == 0, "log: a reset with no file says there is none");
	apply(m, "{\"k\":\"log\",\"sandbox\":\"sbx-aaaa11\",\"reset\":true,\"data\":\"l1\\nl2\\n\"}");
	check(m->log_state == 1 && m->logs.n == 2, "log: lines come after a reset");
	check(apply(m, "{\"k\":\"log\",\"sandbox\":\"sbx-aaaa22\",\"data\":\"x\\n\"}") == 0 &&
	    m->logs.n == 2, "log: another sandbox's is ignored");

	d = model_select(m, "sbx-aaaa22");
	check(d && m->nexecs == 0 && m->logs.n == 0 && m->log_state == 0,
	    "select: another sandbox starts its execs and log afresh");
}

static void
test_state(struct model *m)
{
	int d;

	check(m->sessions == -1 && strcmp(m->approve_mode, "destructive") == 0,
	    "sessions are unknown at first");
	d = apply(m, "{\"k\":\"sessions\",\"mcp\":2}");
	check(m->sessions == 2 && (d & DIRTY_TITLE), "sessions: counted in the title");
	d = apply(m, "{\"k\":\"core\",\"state\":\"lost\"}");
	check(m->core_lost && m->message_err && (d & DIRTY_TITLE),
	    "core: a lost core server is said, as an error");
	apply(m, "{\"k\":\"core\",\"state\":\"connected\",\"pid\":4242,\"reconnected\":true}");
	check(!m->core_lost && m->core_pid == 4242 && m->core_reconnects == 1 &&
	    strstr(m->message, "4242") != NULL, "core: a new one is counted and named");
	apply(m, "{\"k\":\"core\",\"state\":\"connected\",\"pid\":4243}");
	check(m->core_reconnects == 1, "core: the first connection is no reconnection");
	check(apply(m, "{\"k\":\"nonsense\"}") == 0 && apply(m, "{}") == 0,
	    "unknown kinds change nothing");
	d = model_say(m, 0, "two\nlines\tand a tab");
	check(d == DIRTY_PROMPT && strcmp(m->message, "two lines and a tab") == 0 &&
	    !m->message_err, "say: one line on the prompt line");
}

static void
put_file(const char *path, const char *text, int append)
{
	FILE *f = fopen(path, append ? "a" : "w");

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static void
test_poll_logs(struct model *m)
{
	char dir[] = "/tmp/sbx-model-XXXXXX", path[128], link[128];

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof path, "%s/agent.log", dir);
	snprintf(link, sizeof link, "%s/link.log", dir);
	model_select(m, "sbx-aaaa11");
	check(model_poll_logs(m) == 0, "log file: none set, nothing read");
	m->log_path = xstrdup(path);
	check(model_poll_logs(m) == 0 && m->logs.n == 0, "log file: missing, nothing read");
	put_file(path, "one\ntwo\n", 0);
	check(model_poll_logs(m) == DIRTY_RIGHT && m->logs.n == 2, "log file: its lines are read");
	check(model_poll_logs(m) == 0, "log file: nothing new, nothing to redraw");
	put_file(path, "three\n", 1);
	check(model_poll_logs(m) == DIRTY_RIGHT && m->logs.n == 3 &&
	    strcmp(lines_at(&m->logs, 2), "three") == 0, "log file: what is appended follows");
	put_file(path, "new\n", 0);
	model_poll_logs(m);
	check(m->logs.n == 1 && strcmp(lines_at(&m->logs, 0), "new") == 0,
	    "log file: a truncated log starts over");
	check(symlink(path, link) == 0, "log file: a symlink to it is made");
	model_select(m, "sbx-aaaa22");
	m->log_path = xstrdup(link);
	check(model_poll_logs(m) == 0 && m->logs.n == 0, "log file: never read through a symlink");
	unlink(link);
	unlink(path);
	rmdir(dir);
}

/* What the console adds for its pager and list: streams, live use, forward
 * failures, RUN after a failed exec, the CLI's calls in Activity. */
static void
test_console_additions(struct model *m)
{
	struct lines l;
	struct m_sandbox *s;
	const struct m_activity *a;
	size_t before;

	lines_init(&l, 8);
	lines_append(&l, "out-a", 5);
	l.stream_err = 1;
	lines_append(&l, "err-b\n", 6);
	l.stream_err = 0;
	lines_append(&l, "out-c\n", 6);
	check(l.n == 3 && strcmp(lines_at(&l, 0), "out-a") == 0 && !lines_err(&l, 0) &&
	    strcmp(lines_at(&l, 1), "err-b") == 0 && lines_err(&l, 1) &&
	    strcmp(lines_at(&l, 2), "out-c") == 0 && !lines_err(&l, 2),
	    "lines: an open stdout line is not continued by stderr; each keeps its stream");
	check(lines_ts(&l, 0) > 0 && lines_ts(&l, 2) >= lines_ts(&l, 0),
	    "lines: each has the time it came");
	lines_free(&l);

	apply(m, "{\"k\":\"list\",\"sandboxes\":[{\"id\":\"sbx-use001\",\"name\":\"busy\","
	    "\"backend\":\"ns\",\"state\":\"running\",\"usage\":{\"cpu_pct\":87.5,"
	    "\"mem_bytes\":1048576,\"pids\":7,\"oom_kills\":2}},{\"id\":\"sbx-use002\","
	    "\"name\":\"idle\",\"backend\":\"ns\",\"state\":\"running\"}]}");
	s = model_sandbox(m, "sbx-use001");
	check(s && s->cpu_pct == 87.5 && s->mem_bytes == 1048576 && s->pids == 7 &&
	    s->oom_kills == 2, "list: live use is read from usage");
	s = model_sandbox(m, "sbx-use002");
	check(s && s->cpu_pct < 0 && s->mem_bytes < 0 && s->pids < 0,
	    "list: no usage, every figure unknown (-1)");

	apply(m, "{\"k\":\"forwards\",\"forwards\":[{\"sandbox\":\"sbx-use001\","
	    "\"bind\":\"127.0.0.1\",\"local\":4000,\"remote\":80,\"live\":true,"
	    "\"failures\":3,\"last_error\":\"connection refused\"}]}");
	check(m->nfwd == 1 && m->fwd[0].failures == 3 &&
	    strcmp(m->fwd[0].last_error, "connection refused") == 0,
	    "forwards: failures and the last error are kept");

	/* An exec that failed before it ran ends with its tool call, not exec.exited. */
	apply(m, "{\"k\":\"event\",\"type\":\"exec.started\",\"sandbox\":\"sbx-use002\","
	    "\"data\":{\"command\":\"echo hi\"}}");
	s = model_sandbox(m, "sbx-use002");
	check(s && s->running == 1 && strcmp(s->now, "echo hi") == 0, "RUN: a started exec counts");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"idle\","
	    "\"data\":{\"tool\":\"sandbox_exec\",\"client\":\"cli\",\"request_id\":7,"
	    "\"arguments\":{\"sandbox_id\":\"idle\",\"command\":\"echo hi\"}}}");
	a = model_activity(m, m->nact - 1);
	check(strcmp(a->sandbox, "sbx-use002") == 0,
	    "activity: a call naming the sandbox by name is kept under its id");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.finished\",\"sandbox\":\"idle\","
	    "\"data\":{\"tool\":\"sandbox_exec\",\"client\":\"cli\",\"request_id\":7,"
	    "\"outcome\":\"error\",\"message\":\"agent gone\",\"result\":{\"x\":1}}}");
	s = model_sandbox(m, "sbx-use002");
	check(s && s->running == 0 && s->now[0] == '\0',
	    "RUN: a failed exec's call ending clears it (no exec.exited comes)");
	a = model_activity(m, m->nact - 1);
	check(strcmp(a->outcome, "error") == 0 && a->result && strstr(a->result, "\"x\"") != NULL,
	    "activity: the outcome and the result are kept for the details");

	apply(m, "{\"k\":\"event\",\"type\":\"exec.started\",\"sandbox\":\"sbx-use002\","
	    "\"data\":{\"command\":\"sleep 99\"}}");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-use002\","
	    "\"data\":{\"tool\":\"sandbox_exec\",\"client\":\"cli\",\"request_id\":8,"
	    "\"arguments\":{\"sandbox_id\":\"sbx-use002\",\"command\":\"sleep 99\","
	    "\"background\":true}}}");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.finished\",\"sandbox\":\"sbx-use002\","
	    "\"data\":{\"tool\":\"sandbox_exec\",\"client\":\"cli\",\"request_id\":8,"
	    "\"outcome\":\"ok\"}}");
	s = model_sandbox(m, "sbx-use002");
	check(s && s->running == 0, "RUN: a background exec is not counted past its call "
	    "(its end is never seen)");

	before = m->nact;
	apply(m, "{\"k\":\"event\",\"type\":\"forward.opened\",\"sandbox\":\"sbx-use001\","
	    "\"time_ms\":1000,\"data\":{\"bind\":\"127.0.0.1\",\"local\":4001,\"remote\":8081}}");
	a = model_activity(m, m->nact - 1);
	/* The ring may be full from the tests above: the newest entry tells. */
	check((m->nact == before + 1 || m->nact == MODEL_ACTIVITY_MAX) &&
	    strcmp(a->client, "cli") == 0 &&
	    strcmp(a->tool, "forward") == 0 && strstr(a->args, "8081") != NULL,
	    "activity: a forward with no tool call of its own shows as the CLI's");
}

/* The network policy: the selected sandbox's show, the net.* events, and
 * the asks in the queue after the held tool calls. */
static void
test_net(struct model *m)
{
	char what[256], far[64];
	const cJSON *q, *recent;
	int isnet, d;

	model_select(m, "sbx-aaaaaa");
	apply(m, "{\"k\":\"net\",\"verb\":\"show\",\"ok\":true,\"data\":{\"id\":\"sbx-other\","
	    "\"policy\":{},\"counts\":{},\"recent\":[]}}");
	check(m->net == NULL, "net: another sandbox's policy is not taken");
	d = apply(m, "{\"k\":\"net\",\"verb\":\"show\",\"ok\":true,\"data\":{\"id\":"
	    "\"sbx-aaaaaa\",\"network\":\"rules\",\"policy\":{\"allow\":[\"up.test\"],\"deny\":[],"
	    "\"ask\":false},\"counts\":{\"allowed\":2},\"recent\":[{\"host\":\"up.test\"}]}}");
	check(m->net != NULL && (d & DIRTY_RIGHT), "net: the selected sandbox's policy is taken");
	apply(m, "{\"k\":\"event\",\"type\":\"net.connection\",\"sandbox\":\"sbx-aaaaaa\","
	    "\"time_ms\":5,\"data\":{\"host\":\"other.test\",\"port\":80,\"verdict\":\"deny\","
	    "\"rule\":\"default\",\"up\":10,\"down\":20}}");
	recent = cJSON_GetObjectItem(m->net, "recent");
	check(cJSON_GetArraySize(recent) == 2 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(recent, 1), "type")), "connection") == 0,
	    "net: a connection event is added to the recent ones");
	check(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m->net, "counts"),
	    "denied")) == 1 && cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    m->net, "counts"), "allowed")) == 2, "net: and counted");
	apply(m, "{\"k\":\"event\",\"type\":\"net.policy\",\"sandbox\":\"sbx-aaaaaa\","
	    "\"data\":{\"allow\":[\"up.test\",\"third.test:80\"],\"deny\":[],\"ask\":true}}");
	check(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(m->net, "policy"),
	    "allow")) == 2 && cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(m->net,
	    "policy"), "ask")), "net: a policy event replaces the rules");

	cJSON_Delete(m->approvals);
	m->approvals = cJSON_Parse("[{\"id\":\"3\",\"tool\":\"sandbox_destroy\"}]");
	snprintf(far, sizeof far, "%lld", (long long)wall_ms() + 60000);
	char ev[512];
	snprintf(ev, sizeof ev, "{\"k\":\"event\",\"type\":\"net.ask\",\"sandbox\":"
	    "\"sbx-bbbbbb\",\"data\":{\"req\":\"00112233445566aa\",\"kind\":\"connection\","
	    "\"host\":\"pypi.org\",\"port\":443,\"expires_ms\":%s}}", far);
	d = apply(m, ev);
	apply(m, ev);
	check(model_queue_n(m) == 2 && (d & DIRTY_PROMPT), "net: an ask joins the queue, once");
	q = model_queue_at(m, 0, &isnet);
	check(q != NULL && !isnet, "net: held tool calls come first");
	q = model_queue_at(m, 1, &isnet);
	model_net_ask_what(m, q, what, sizeof what);
	check(q != NULL && isnet && strcmp(what, "sbx-bbbbbb wants pypi.org:443") == 0,
	    "net: the ask says who wants what (%s)", what);
	apply(m, "{\"k\":\"event\",\"type\":\"net.ask\",\"sandbox\":\"sbx-bbbbbb\",\"data\":"
	    "{\"req\":\"00112233445566bb\",\"kind\":\"connection\",\"host\":\"old.test\","
	    "\"port\":80,\"expires_ms\":1000}}");
	check(model_queue_n(m) == 2, "net: an ask past its timeout is not in the queue");
	apply(m, "{\"k\":\"event\",\"type\":\"net.decided\",\"sandbox\":\"sbx-bbbbbb\","
	    "\"data\":{\"req\":\"00112233445566aa\",\"answer\":\"once\"}}");
	check(model_queue_n(m) == 1, "net: a decided ask leaves the queue");
	apply(m, "{\"k\":\"net_pending\",\"pending\":[]}");
	check(cJSON_GetArraySize(m->net_asks) == 0, "net: the fetched list replaces the asks");
	model_select(m, "sbx-cccccc");
	check(m->net == NULL, "net: a new selection starts without a policy");
}

/* The operator's calls are "human" by their session's kind, never by a name
 * a client chose; RUN from the journal where the listing carries it; the end
 * of the command x started is said. */
static void
test_habits(struct model *m)
{
	const struct m_activity *a;
	struct m_sandbox *s;

	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-aaaa11\","
	    "\"data\":{\"client\":\"console 0.1.0\",\"kind\":\"console\",\"tool\":\"sandbox_exec\","
	    "\"request_id\":900}}");
	a = model_activity(m, m->nact - 1);
	check(strcmp(a->client, "human") == 0, "habits: a console session's call is the human's");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.finished\",\"sandbox\":\"sbx-aaaa11\","
	    "\"data\":{\"client\":\"console 0.1.0\",\"kind\":\"console\",\"tool\":\"sandbox_exec\","
	    "\"request_id\":900,\"duration_ms\":3,\"outcome\":\"ok\"}}");
	check(a->duration_ms == 3 && strcmp(a->outcome, "ok") == 0,
	    "habits: and its end finds it under that name");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-aaaa11\","
	    "\"data\":{\"client\":\"console\",\"kind\":\"mcp\",\"tool\":\"sandbox_exec\","
	    "\"request_id\":901}}");
	a = model_activity(m, m->nact - 1);
	check(strcmp(a->client, "console") == 0, "habits: an agent named console is not");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-aaaa11\","
	    "\"data\":{\"client\":\"console\",\"tool\":\"sandbox_exec\",\"request_id\":902}}");
	a = model_activity(m, m->nact - 1);
	check(strcmp(a->client, "human") == 0,
	    "habits: the console's own core (no kind) is the human's");

	apply(m, "{\"k\":\"list\",\"sandboxes\":[{\"id\":\"sbx-rrrr11\",\"state\":\"running\","
	    "\"usage\":{\"execs_running\":2,\"exec_now\":\"npm run dev\"}}]}");
	s = model_sandbox(m, "sbx-rrrr11");
	check(s && s->journal && s->running == 2 && strcmp(s->now, "npm run dev") == 0,
	    "habits: RUN from the journal the listing carries");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.started\",\"sandbox\":\"sbx-rrrr11\","
	    "\"data\":{\"client\":\"c\",\"tool\":\"sandbox_exec\",\"request_id\":903,"
	    "\"arguments\":{\"background\":true}}}");
	apply(m, "{\"k\":\"event\",\"type\":\"tool.finished\",\"sandbox\":\"sbx-rrrr11\","
	    "\"data\":{\"client\":\"c\",\"tool\":\"sandbox_exec\",\"request_id\":903,"
	    "\"outcome\":\"ok\"}}");
	check(s && s->running == 2, "habits: a background call's end does not count it down "
	    "where the journal says what runs");

	model_select(m, "sbx-rrrr11");
	apply(m, "{\"k\":\"exec\",\"sandbox\":\"sbx-rrrr11\",\"id\":\"x7\",\"command\":\"sleep 1\","
	    "\"state\":\"running\"}");
	m->message[0] = '\0';
	model_watch_exec(m, "sbx-rrrr11", "x7");
	check(m->message[0] == '\0', "habits: a watched command still running says nothing yet");
	apply(m, "{\"k\":\"exit\",\"sandbox\":\"sbx-rrrr11\",\"exec\":\"x7\",\"exit_code\":4}");
	check(strcmp(m->message, "command exited 4") == 0, "habits: its end is said");
	apply(m, "{\"k\":\"exec\",\"sandbox\":\"sbx-rrrr11\",\"id\":\"x8\",\"command\":\"true\","
	    "\"state\":\"exited\",\"signal\":\"TERM\"}");
	model_watch_exec(m, "sbx-rrrr11", "x8");
	check(strcmp(m->message, "command killed by TERM") == 0,
	    "habits: one that ended before its call came back is said at once");
}

int
main(void)
{
	struct model m;

	test_lines();
	model_init(&m);
	check(m.nsb == 0 && strcmp(m.approve_mode, "off") == 0 && m.sel[0] == '\0',
	    "init: empty, approvals off, nothing selected");
	test_list(&m);
	test_find(&m);
	test_approval_what(&m);
	test_forwards(&m);
	test_events(&m);
	test_execs(&m);
	test_state(&m);
	test_poll_logs(&m);
	test_console_additions(&m);
	test_net(&m);
	test_habits(&m);
	model_free(&m);
	return tap_end();
}
