/* AWS Lambda MicroVMs lifecycle hooks, served only on the --hooks listener:
 * POST /aws/lambda-microvms/runtime/v1/{ready,validate,run,resume,suspend,terminate}.
 *
 * The platform calls ready and validate while it builds and checks the image
 * snapshot (503 means "not yet, call again"), run once per MicroVM right after it
 * is started from the snapshot (its payload brings the sandbox secret and
 * environment, which must never be baked into the image), and the others around
 * suspend, resume and termination.  See docs/agent-api.md (Lifecycle hooks). */
#include <ctype.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/exec.h"
#include "agent/http.h"
#include "lib/jspec.h"
#include "lib/log.h"
#include "lib/util.h"

/* The run payload is at most 16 KB; JSON string escaping can multiply that. */
#define RUN_BODY_MAX		(128 * 1024)
#define SECRET_MAX		1024
#define ENV_MAX			256
#define ENV_KEY_MAX		128
#define SUSPEND_WAIT_MS		4000
#define TERMINATE_GRACE_MS	2000
#define POLL_MS			50

/* Serialises run hooks, so two concurrent ones cannot both install a secret. */
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_flag ready_reported = ATOMIC_FLAG_INIT;

static enum http_rc
hook_ok(struct req *r, cJSON *o)
{
	if (o == NULL)
		o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", 1);
	return http_json(r, HTTP_STATUS_OK, o);
}

/* Hooks other than run take no input: whatever body the platform sends is read
 * and dropped, so an unexpected body can never fail a lifecycle transition. */
static int
discard_body(struct req *r, const char *data, size_t len)
{
	return 0;
}

static enum http_rc
hook_ready(struct req *r)
{
	if (!agent.api_up)
		return http_error(r, HTTP_STATUS_SERVICE_UNAVAILABLE, "starting",
		    "the API listeners are not up yet; call this hook again");
	/* The platform polls ready until it answers 200: record the first one only. */
	if (!atomic_flag_test_and_set(&ready_reported))
		events_emit("lifecycle.ready", NULL);
	return hook_ok(r, NULL);
}

static enum http_rc
hook_validate(struct req *r)
{
	if (!agent.api_up)
		return http_error(r, HTTP_STATUS_SERVICE_UNAVAILABLE, "starting",
		    "the API listeners are not up yet; call this hook again");
	events_emit("lifecycle.validate", NULL);
	return hook_ok(r, NULL);
}

/* The secret travels in an HTTP header: printable ASCII, no spaces. */
static int
secret_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < AGENT_SECRET_MIN || n > SECRET_MAX)
		return 0;
	for (; *s != '\0'; s++)
		if (*s < 0x21 || *s > 0x7e)
			return 0;
	return 1;
}

/* A name a shell can export: [A-Za-z_][A-Za-z0-9_]*. */
static int
env_key_ok(const char *k)
{
	if (k == NULL || *k == '\0' || strlen(k) > ENV_KEY_MAX || isdigit((unsigned char)*k))
		return 0;
	for (; *k != '\0'; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return 0;
	return 1;
}

static const struct jfield run_envelope_spec[] = {
	{ "microvmId", J_STRING, 0, 0, 0 },
	{ "runHookPayload", J_STRING, 1, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

static const struct jfield run_payload_spec[] = {
	{ "secret", J_STRING, 1, 0, 0 },
	{ "env", J_STRMAP, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

/* Check the payload object completely before anything is applied.  0, or -1 with
 * a message naming the field. */
static int
run_payload_check(const cJSON *p, char *msg, size_t msglen)
{
	const cJSON *env, *e;
	int n = 0;

	if (jspec_check(p, run_payload_spec, msg, msglen) < 0)
		return -1;
	if (!secret_ok(jstr(p, "secret", ""))) {
		snprintf(msg, msglen, "field 'secret' must be %d to %d printable ASCII "
		    "characters without spaces", AGENT_SECRET_MIN, SECRET_MAX);
		return -1;
	}
	env = cJSON_GetObjectItemCaseSensitive(p, "env");
	cJSON_ArrayForEach(e, env) {
		if (++n > ENV_MAX) {
			snprintf(msg, msglen, "field 'env' has more than %d variables", ENV_MAX);
			return -1;
		}
		if (!env_key_ok(e->string)) {
			snprintf(msg, msglen, "field 'env' has an invalid variable name '%.64s' "
			    "(letters, digits and '_', not starting with a digit, at most %d)",
			    e->string ? e->string : "", ENV_KEY_MAX);
			return -1;
		}
	}
	return 0;
}

static enum http_rc
hook_run(struct req *r)
{
	char msg[256];
	const char *microvm_id = NULL, *secret;
	const char *where = "runHookPayload";
	cJSON *parsed = NULL;
	const cJSON *payload, *env, *e;
	int known, nenv = 0;
	enum http_rc rc;

	/* Two shapes: the envelope {microvmId, runHookPayload: "<JSON text>"}, or the
	 * payload object itself as the body. */
	if (cJSON_GetObjectItemCaseSensitive(r->json, "runHookPayload") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(r->json, "secret") == NULL) {
		if (jspec_check(r->json, run_envelope_spec, msg, sizeof msg) < 0)
			return http_bad_request(r, "%s", msg);
		const char *text = jstr(r->json, "runHookPayload", "");
		microvm_id = jstr(r->json, "microvmId", NULL);
		parsed = cJSON_ParseWithOpts(text, NULL, 1);	/* nothing after the object */
		if (parsed == NULL || !cJSON_IsObject(parsed)) {
			cJSON_Delete(parsed);
			return http_bad_request(r, "field 'runHookPayload' must hold a JSON object "
			    "{\"secret\": \"...\", \"env\": {...}}");
		}
		payload = parsed;
	} else {
		payload = r->json;
		where = "body";
	}
	if (run_payload_check(payload, msg, sizeof msg) < 0) {
		rc = http_bad_request(r, "%s: %s", where, msg);
		cJSON_Delete(parsed);
		return rc;
	}
	secret = jstr(payload, "secret", "");
	env = cJSON_GetObjectItemCaseSensitive(payload, "env");

	pthread_mutex_lock(&run_mu);
	known = agent_check_secret(secret);
	if (known == 0) {
		pthread_mutex_unlock(&run_mu);
		cJSON_Delete(parsed);
		log_warnx("run hook refused: it brings a different secret from the one in use");
		return http_error(r, HTTP_STATUS_CONFLICT, "conflict",
		    "this sandbox already has a different secret; it cannot be replaced "
		    "(start a new MicroVM for a new secret)");
	}
	/* Environment first, secret last: once the API accepts requests, every
	 * command already gets the environment. */
	cJSON_ArrayForEach(e, env) {
		agent_set_base_env(e->string, e->valuestring);
		nenv++;
	}
	if (known < 0)
		agent_set_secret(secret);
	pthread_mutex_unlock(&run_mu);

	cJSON *ev = cJSON_CreateObject(), *keys = cJSON_AddArrayToObject(ev, "env_keys");
	cJSON_ArrayForEach(e, env)
		cJSON_AddItemToArray(keys, cJSON_CreateString(e->string));
	if (microvm_id != NULL)
		cJSON_AddStringToObject(ev, "microvm_id", microvm_id);
	cJSON_AddBoolToObject(ev, "repeated", known > 0);
	events_emit("lifecycle.run", ev);
	log_info("run hook: secret %s, %d environment variable%s%s%s",
	    known > 0 ? "unchanged" : "set", nenv, nenv == 1 ? "" : "s",
	    microvm_id ? ", microvm " : "", microvm_id ? microvm_id : "");

	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "repeated", known > 0);
	cJSON_AddNumberToObject(o, "env", nenv);
	cJSON_Delete(parsed);
	return hook_ok(r, o);
}

static enum http_rc
hook_resume(struct req *r)
{
	/* Time spent suspended is not idleness: restart the idle clock. */
	agent_touch();
	events_emit("lifecycle.resume", NULL);
	return hook_ok(r, NULL);
}

/* Give foreground commands a bounded time to finish so the snapshot does not
 * catch them half way; background jobs are frozen with the VM and go on after
 * resume.  Always 200: the platform suspends anyway once the hook times out. */
static enum http_rc
hook_suspend(struct req *r)
{
	int64_t start = now_ms(), end = start + SUSPEND_WAIT_MS;
	int running;

	while ((running = exec_count_running(1)) > 0 && now_ms() < end)
		poll(NULL, 0, POLL_MS);

	int64_t waited = now_ms() - start;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddBoolToObject(ev, "timed_out", running > 0);
	cJSON_AddNumberToObject(ev, "running", running);
	cJSON_AddNumberToObject(ev, "waited_ms", (double)waited);
	events_emit("lifecycle.suspend", ev);
	if (running > 0)
		log_warnx("suspend hook: %d command%s still running after %d ms", running,
		    running == 1 ? "" : "s", SUSPEND_WAIT_MS);

	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "timed_out", running > 0);
	cJSON_AddNumberToObject(o, "running", running);
	cJSON_AddNumberToObject(o, "waited_ms", (double)waited);
	return hook_ok(r, o);
}

/* Stop every command: TERM, a grace, then KILL for whatever is left.  The agent
 * itself stays up (the platform stops the VM), so a retried terminate is harmless. */
static enum http_rc
hook_terminate(struct req *r)
{
	int64_t end = now_ms() + TERMINATE_GRACE_MS;
	int running;

	exec_signal_all(SIGTERM);
	while ((running = exec_count_running(0)) > 0 && now_ms() < end)
		poll(NULL, 0, POLL_MS);
	exec_signal_all(SIGKILL);

	cJSON *ev = cJSON_CreateObject();
	cJSON_AddBoolToObject(ev, "killed", running > 0);
	events_emit("lifecycle.terminate", ev);
	log_info("terminate hook: commands stopped%s", running > 0 ? " (some with KILL)" : "");

	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "killed", running > 0);
	return hook_ok(r, o);
}

#define HOOK(name) "/aws/lambda-microvms/runtime/v1/" name
#define NOBODY ROUTE_NOAUTH | ROUTE_STREAM_BODY

const struct route hooks_routes[] = {
	{ "POST", HOOK("ready"), NOBODY, hook_ready, discard_body, 0 },
	{ "POST", HOOK("validate"), NOBODY, hook_validate, discard_body, 0 },
	{ "POST", HOOK("run"), ROUTE_NOAUTH | ROUTE_JSON, hook_run, NULL, RUN_BODY_MAX },
	{ "POST", HOOK("resume"), NOBODY, hook_resume, discard_body, 0 },
	{ "POST", HOOK("suspend"), NOBODY, hook_suspend, discard_body, 0 },
	{ "POST", HOOK("terminate"), NOBODY, hook_terminate, discard_body, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
