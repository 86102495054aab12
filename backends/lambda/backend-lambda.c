/* The lambda backend: sandboxes are AWS Lambda MicroVMs (Firecracker, managed by
 * AWS) in the user's own account, running sbxtop-agent from an image that
 * `sbxtop setup aws` builds.  The agent is reached at the MicroVM's endpoint with
 * an X-aws-proxy-auth token (minted here, re-minted before it expires or when the
 * endpoint refuses it) plus the sandbox secret, which travels to the agent only in
 * the run hook's payload.  AWS credentials never leave this host.
 *
 * backend_data: {"microvmId", "endpoint", "region", "apiEndpoint",
 * "tokenExpiresAt" (wall ms), "tokenPorts" (the token's allowedPorts)}.  A token
 * allows the agent's port plus the port of every direct (HTTP) forward recorded
 * for the sandbox: a new one is re-minted for.  See docs/lambda-backend.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "core/client/agentc.h"
#include "backends/lambda/aws-creds.h"
#include "backends/lambda/aws-doctor.h"
#include "backends/lambda/aws-microvms.h"
#include "backends/lambda/aws-setup.h"
#include "backends/lambda/lambda-pty.h"
#include "backends/backend.h"
#include "lib/log.h"
#include "lib/util.h"

#define AGENT_PORT		8080	/* the agent's port in the image (setup aws) */
#define RUNNING_WAIT_MS		120000	/* PENDING to RUNNING */
#define HEALTH_WAIT_MS		60000	/* RUNNING to the agent answering */
#define STATE_WAIT_MS		60000	/* suspend and resume */
#define PROBE_TIMEOUT_MS	5000
#define REMINT_MARGIN_MS	(5 * 60 * 1000)

static const struct config *cfg;

static void
lambda_configure(const struct config *c)
{
	cfg = c;
	/* The endpoints are HTTPS: a private CA (a test fake, a corporate TLS proxy)
	 * is trusted through the variable every AWS tool reads. */
	agentc_set_ca_file(awsmv_ca_bundle());
}

static const char *
opt(const char *name)
{
	const char *v = cfg ? config_str(cfg, name) : NULL;

	return v && *v ? v : NULL;
}

static const char *
bd_str(const struct sandbox *s, const char *k)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(s->backend_data, k));
}

/* A client for an existing sandbox: the region and API endpoint it was made in. */
static struct awsmv *
client_for(const struct sandbox *s, struct sbx_err *e)
{
	return awsmv_new(bd_str(s, "region"), NULL, bd_str(s, "apiEndpoint"), e);
}

static int
map_state(const char *aws, enum sbx_state *out)
{
	static const struct { const char *aws; enum sbx_state ours; } t[] = {
		{ "PENDING", SBX_CREATING }, { "RUNNING", SBX_RUNNING },
		{ "SUSPENDING", SBX_SUSPENDED }, { "SUSPENDED", SBX_SUSPENDED },
		{ "TERMINATING", SBX_STOPPING }, { "TERMINATED", SBX_TERMINATED },
	};
	for (size_t i = 0; aws && i < ARRAY_SIZE(t); i++)
		if (strcmp(aws, t[i].aws) == 0) {
			*out = t[i].ours;
			return 0;
		}
	return -1;
}

/* Poll GetMicrovm with a growing pause until the state is want (or a terminal
 * state, or timeout_ms).  *last gets the answer (caller frees). */
static int
wait_state(struct awsmv *c, const char *id, const char *want, int64_t timeout_ms,
    cJSON **last, struct sbx_err *e)
{
	int64_t deadline = now_ms() + timeout_ms;
	int pause = 100;

	*last = NULL;
	for (;;) {
		cJSON *o = NULL;
		const char *st;
		if (awsmv_get(c, id, &o, e) < 0)
			return -1;
		st = cJSON_GetStringValue(cJSON_GetObjectItem(o, "state"));
		if (st && strcmp(st, want) == 0) {
			*last = o;
			return 0;
		}
		if (st && (strcmp(st, "TERMINATED") == 0 || strcmp(st, "TERMINATING") == 0)) {
			const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(o, "stateReason"));
			sbx_error(e, SBX_EBACKEND, "`sbxtop doctor --backend lambda` checks the image",
			    "MicroVM %s is %s%s%s", id, st, why ? ": " : "", why ? why : "");
			cJSON_Delete(o);
			return -1;
		}
		cJSON_Delete(o);
		if (now_ms() > deadline)
			return sbx_error(e, SBX_ETIMEOUT, "retry; `sbxtop doctor --backend lambda` "
			    "checks the setup", "MicroVM %s did not become %s in %lld s", id, want,
			    (long long)(timeout_ms / 1000));
		usleep((useconds_t)pause * 1000);
		if (pause < 1000)
			pause *= 2;
	}
}

#define TOKEN_PORTS_MAX	32

/* The ports a token for s must allow: the agent's, then each direct forward's
 * (entries with "mode": "http" in the record).  Returns how many. */
static size_t
wanted_ports(const struct sandbox *s, int *ports)
{
	const cJSON *en;
	size_t n = 0;

	ports[n++] = AGENT_PORT;
	cJSON_ArrayForEach(en, s->forwards) {
		const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(en, "mode"));
		int p = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(en, "remote"));
		int dup = 0;
		if (mode == NULL || strcmp(mode, "http") != 0 || p < 1 || p > 65535)
			continue;
		for (size_t i = 0; i < n; i++)
			dup |= ports[i] == p;
		if (!dup && n < TOKEN_PORTS_MAX)
			ports[n++] = p;
	}
	return n;
}

/* Whether the current token allows every port in ports. */
static int
token_covers(const struct sandbox *s, const int *ports, size_t n)
{
	const cJSON *have = cJSON_GetObjectItem(s->backend_data, "tokenPorts");

	for (size_t i = 0; i < n; i++) {
		const cJSON *p;
		int found = 0;
		cJSON_ArrayForEach(p, have)
			found |= (int)cJSON_GetNumberValue(p) == ports[i];
		if (!found)
			return 0;
	}
	return 1;
}

static int
mint(struct awsmv *c, struct sandbox *s, struct sbx_err *e)
{
	int minutes = cfg ? (int)config_int(cfg, "lambda_token_minutes") : 60;
	int ports[TOKEN_PORTS_MAX];
	size_t np = wanted_ports(s, ports);
	char *tok = NULL;

	if (awsmv_auth_token(c, bd_str(s, "microvmId"), ports, np, minutes, &tok, e) < 0)
		return -1;
	cJSON_DeleteItemFromObject(s->backend_data, "tokenPorts");
	cJSON_AddItemToObject(s->backend_data, "tokenPorts", cJSON_CreateIntArray(ports,
	    (int)np));
	cJSON_Delete(s->agent_headers);
	s->agent_headers = cJSON_CreateObject();
	cJSON_AddStringToObject(s->agent_headers, "X-aws-proxy-auth", tok);
	explicit_bzero(tok, strlen(tok));
	free(tok);
	cJSON_DeleteItemFromObject(s->backend_data, "tokenExpiresAt");
	cJSON_AddNumberToObject(s->backend_data, "tokenExpiresAt",
	    (double)(wall_ms() + (int64_t)minutes * 60000));
	return 0;
}

static void
terminate_quietly(struct awsmv *c, const char *id)
{
	struct sbx_err sub;

	if (awsmv_action(c, id, "terminate", &sub) < 0)
		log_warnx("cannot terminate MicroVM %s after a failed create: %s", id, sub.msg);
}

/* {"secret": ..., "env": {...}}: what the agent's run hook takes. */
static char *
run_payload(const struct sandbox *s)
{
	cJSON *p = cJSON_CreateObject();
	char *text;

	cJSON_AddStringToObject(p, "secret", s->agent_secret);
	if (s->env && cJSON_GetArraySize(s->env) > 0)
		cJSON_AddItemToObject(p, "env", cJSON_Duplicate(s->env, 1));
	text = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	return text;
}

static cJSON *
connector(const char *region, const char *which)
{
	_cleanup_free_ char *arn = xasprintf("arn:aws:lambda:%s:aws:network-connector:"
	    "aws-network-connector:%s", region, which);

	return cJSON_CreateString(arn);
}

static cJSON *
connectors(const char *region, const char *which)
{
	cJSON *a = cJSON_CreateArray();

	cJSON_AddItemToArray(a, connector(region, which));
	return a;
}

/* What a create refuses before asking AWS: no image, a life or a run hook
 * payload over Lambda's limits. */
static int
create_check(const struct sandbox *s, const char *image, size_t plen, struct sbx_err *e)
{
	if (image == NULL)
		return sbx_error(e, SBX_EINVAL, "run `sbxtop setup aws`, then set lambda_image "
		    "(--lambda-image) to the image ARN it prints",
		    "no MicroVM image configured for the lambda backend");
	if (s->max_duration_s > AWSMV_MAX_DURATION)
		return sbx_error(e, SBX_EINVAL, "pass --max-duration 28800 or less",
		    "max_duration %lld is over what Lambda MicroVMs allow: 1 to %d seconds "
		    "(8 hours)", (long long)s->max_duration_s, AWSMV_MAX_DURATION);
	if (plen > AWSMV_RUN_PAYLOAD_MAX)
		return sbx_error(e, SBX_EINVAL, "pass fewer or shorter environment variables "
		    "(set the rest with `sbxtop exec` or a file)", "the run hook payload (secret "
		    "and environment) would be %zu bytes, over the %d-byte limit", plen,
		    AWSMV_RUN_PAYLOAD_MAX);
	return 0;
}

/* RunMicrovm's request for s: the image, the idle policy, the connectors,
 * the life and the run hook's payload. */
static cJSON *
run_request(const struct sandbox *s, struct awsmv *c, const char *image, const char *payload)
{
	cJSON *req = cJSON_CreateObject(), *idle;
	_cleanup_free_ char *ct = xasprintf("sbxtop-%s-%lld", s->id, (long long)s->created_at);

	cJSON_AddStringToObject(req, "imageIdentifier", image);
	if (opt("lambda_image_version"))
		cJSON_AddStringToObject(req, "imageVersion", opt("lambda_image_version"));
	/* All three fields are required.  Without an idle limit the VM stays up for
	 * its whole life; when the limit suspends it, traffic resumes it. */
	idle = cJSON_AddObjectToObject(req, "idlePolicy");
	cJSON_AddBoolToObject(idle, "autoResumeEnabled", 1);
	cJSON_AddNumberToObject(idle, "maxIdleDurationSeconds", (double)(s->idle_s > 0 ?
	    (s->idle_s < 60 ? 60 : s->idle_s) : (s->max_duration_s < 60 ? 60 : s->max_duration_s)));
	cJSON_AddNumberToObject(idle, "suspendedDurationSeconds", (double)s->max_duration_s);
	/* ALL_INGRESS for the endpoint; SHELL_INGRESS, where the operator turned
	 * it on, so the console's shells can be authorised by
	 * CreateMicrovmShellAuthToken.  Its ARN follows ALL_INGRESS's, which no
	 * real account has confirmed yet: off by default, a create never depends
	 * on it, and shells then go through the endpoint token. */
	cJSON_AddItemToObject(req, "ingressNetworkConnectors",
	    connectors(awsmv_region(c), "ALL_INGRESS"));
	if (cfg != NULL && config_int(cfg, "lambda_shell_ingress") != 0)
		cJSON_AddItemToArray(cJSON_GetObjectItem(req, "ingressNetworkConnectors"),
		    connector(awsmv_region(c), "SHELL_INGRESS"));
	if (s->network && strcmp(s->network, "egress") == 0)
		cJSON_AddItemToObject(req, "egressNetworkConnectors",
		    connectors(awsmv_region(c), "INTERNET_EGRESS"));
	cJSON_AddNumberToObject(req, "maximumDurationInSeconds", (double)s->max_duration_s);
	cJSON_AddStringToObject(req, "runHookPayload", payload);
	cJSON_AddStringToObject(req, "clientToken", ct);
	return req;
}

/* GetMicrovm's state is eventually consistent: the agent answering through
 * the endpoint is what counts.  When it does not (in time, or its certificate
 * is not trusted), MicroVM id is terminated and -1 comes with e. */
static int
wait_agent(struct sandbox *s, struct awsmv *c, const char *id, struct sbx_err *e)
{
	int64_t deadline = now_ms() + HEALTH_WAIT_MS;
	struct agentc *a = agentc_new(s, e);
	int up = 0;

	while (a != NULL && !up) {
		cJSON *h = NULL;
		struct sbx_err sub = { 0 };
		if (agentc_health(a, &h, &sub) == 0 &&
		    cJSON_IsTrue(cJSON_GetObjectItem(h, "ready")))
			up = 1;
		cJSON_Delete(h);
		if (!up && sub.reason == SBX_R_UNTRUSTED) {
			/* Waiting will not make the certificate trusted. */
			agentc_free(a);
			terminate_quietly(c, id);
			*e = sub;
			snprintf(e->msg + strlen(e->msg), sizeof e->msg - strlen(e->msg),
			    "; MicroVM %s was terminated", id);
			return -1;
		}
		if (up || now_ms() > deadline)
			break;
		usleep(100 * 1000);
	}
	agentc_free(a);
	if (!up) {
		terminate_quietly(c, id);
		return sbx_error(e, SBX_ETIMEOUT, "check the image's hooks with `sbxtop doctor "
		    "--backend lambda`", "the agent in MicroVM %s did not answer through its "
		    "endpoint in %d s; the MicroVM was terminated", id, HEALTH_WAIT_MS / 1000);
	}
	return 0;
}

static int
lambda_create(struct sandbox *s, struct sbx_err *e)
{
	const char *image = s->image ? s->image : opt("lambda_image");
	struct awsmv *c = NULL;
	cJSON *req = NULL, *out = NULL, *last = NULL;
	_cleanup_free_ char *payload = run_payload(s);
	const char *id, *endpoint;
	size_t plen = strlen(payload);
	int rc = -1;

	if (create_check(s, image, plen, e) < 0 ||
	    (c = awsmv_new(opt("lambda_region"), image, opt("lambda_endpoint_url"), e)) == NULL)
		goto out;
	req = run_request(s, c, image, payload);
	if (awsmv_run(c, req, &out, e) < 0) {
		if (strcmp(awsmv_last_error(c), "ResourceNotFoundException") == 0)
			snprintf(e->hint, sizeof e->hint, "run `sbxtop setup aws` to build the "
			    "image, or set lambda_image to an existing image ARN");
		goto out;
	}
	id = cJSON_GetStringValue(cJSON_GetObjectItem(out, "microvmId"));
	endpoint = cJSON_GetStringValue(cJSON_GetObjectItem(out, "endpoint"));
	if (id == NULL || endpoint == NULL) {
		if (id)
			terminate_quietly(c, id);
		sbx_error(e, SBX_EBACKEND, NULL, "AWS RunMicrovm: no microvmId or endpoint in "
		    "the answer");
		goto out;
	}
	cJSON_Delete(s->backend_data);
	s->backend_data = cJSON_CreateObject();
	cJSON_AddStringToObject(s->backend_data, "microvmId", id);
	cJSON_AddStringToObject(s->backend_data, "endpoint", endpoint);
	cJSON_AddStringToObject(s->backend_data, "region", awsmv_region(c));
	cJSON_AddStringToObject(s->backend_data, "apiEndpoint", awsmv_endpoint(c));
	cJSON_AddBoolToObject(s->backend_data, "shellIngress",
	    cfg != NULL && config_int(cfg, "lambda_shell_ingress") != 0);

	/* From here on a failure terminates the VM: nothing is left running unseen. */
	if (wait_state(c, id, "RUNNING", RUNNING_WAIT_MS, &last, e) < 0 || mint(c, s, e) < 0) {
		terminate_quietly(c, id);
		goto out;
	}
	free(s->agent_endpoint);
	s->agent_endpoint = xstrdup(endpoint);
	if (wait_agent(s, c, id, e) < 0)
		goto out;
	free(s->limits_note);
	s->limits_note = xstrdup("memory, cpus and pids come from the MicroVM image; disk from "
	    "Lambda");
	rc = 0;
out:
	explicit_bzero(payload, plen);
	cJSON_Delete(req);
	cJSON_Delete(out);
	cJSON_Delete(last);
	awsmv_free(c);
	return rc;
}

static int
change(struct sandbox *s, const char *action, const char *want, struct sbx_err *e)
{
	struct awsmv *c;
	cJSON *last = NULL;
	int rc;

	if (bd_str(s, "microvmId") == NULL)
		return sbx_error(e, SBX_ESTATE, NULL, "sandbox %s has no MicroVM", s->id);
	if ((c = client_for(s, e)) == NULL)
		return -1;
	rc = awsmv_action(c, bd_str(s, "microvmId"), action, e);
	if (rc == 0)
		rc = wait_state(c, bd_str(s, "microvmId"), want, STATE_WAIT_MS, &last, e);
	cJSON_Delete(last);
	awsmv_free(c);
	return rc;
}

static int
lambda_suspend(struct sandbox *s, struct sbx_err *e)
{
	return change(s, "suspend", "SUSPENDED", e);
}

static int
lambda_resume(struct sandbox *s, struct sbx_err *e)
{
	return change(s, "resume", "RUNNING", e);
}

static int
lambda_destroy(struct sandbox *s, struct sbx_err *e)
{
	const char *id = bd_str(s, "microvmId");
	struct awsmv *c;
	cJSON *o = NULL;
	int rc = 0;

	if (id == NULL)
		return 0;	/* never started: nothing to terminate */
	if ((c = client_for(s, e)) == NULL)
		return -1;
	if (awsmv_action(c, id, "terminate", e) < 0) {
		const char *why = awsmv_last_error(c);
		/* Already gone, or already going: destroy is idempotent. */
		if (strcmp(why, "ResourceNotFoundException") == 0) {
			rc = 0;
		} else if (strcmp(why, "ConflictException") == 0 && awsmv_get(c, id, &o, e) == 0) {
			const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(o, "state"));
			rc = st && (strcmp(st, "TERMINATED") == 0 || strcmp(st, "TERMINATING") == 0) ?
			    0 : sbx_error(e, SBX_ESTATE, NULL, "MicroVM %s is %s and cannot be "
			    "terminated now; retry", id, st ? st : "in an unknown state");
		} else {
			rc = -1;
		}
	}
	cJSON_Delete(o);
	awsmv_free(c);
	return rc;
}

static int
lambda_status(struct sandbox *s, struct sbx_err *e)
{
	const char *id = bd_str(s, "microvmId");
	struct awsmv *c;
	cJSON *o = NULL;
	enum sbx_state st;
	const char *aws, *why;

	if (id == NULL)
		return 0;
	if ((c = client_for(s, e)) == NULL)
		return -1;
	if (awsmv_get(c, id, &o, e) < 0) {
		if (strcmp(awsmv_last_error(c), "ResourceNotFoundException") == 0) {
			s->state = SBX_TERMINATED;
			free(s->state_reason);
			s->state_reason = xasprintf("MicroVM %s no longer exists in AWS", id);
			awsmv_free(c);
			return 0;
		}
		awsmv_free(c);
		return -1;
	}
	awsmv_free(c);
	aws = cJSON_GetStringValue(cJSON_GetObjectItem(o, "state"));
	why = cJSON_GetStringValue(cJSON_GetObjectItem(o, "stateReason"));
	if (map_state(aws, &st) < 0) {
		cJSON_Delete(o);
		return sbx_error(e, SBX_EBACKEND, NULL, "MicroVM %s: unknown state '%s'", id,
		    aws ? aws : "(none)");
	}
	/* A sandbox we just made or resumed may still read PENDING: it is not
	 * "creating" again. */
	if (!(st == SBX_CREATING && s->state != SBX_CREATING))
		s->state = st;
	free(s->state_reason);
	s->state_reason = why ? xasprintf("%s (AWS %s)", why, aws) :
	    (strcmp(aws, "SUSPENDING") == 0 ? xstrdup("AWS SUSPENDING") : NULL);
	cJSON_Delete(o);
	return 0;
}

static size_t
discard(char *p, size_t sz, size_t n, void *arg)
{
	return sz * n;
}

/* Does the endpoint take our token?  GET /health through it: 403 means no. */
static long
probe(const struct sandbox *s)
{
	const char *tok = cJSON_GetStringValue(cJSON_GetObjectItem(s->agent_headers,
	    "X-aws-proxy-auth"));
	_cleanup_free_ char *url = xasprintf("%s/health", s->agent_endpoint);
	_cleanup_free_ char *h1 = xasprintf("X-aws-proxy-auth: %s", tok ? tok : "");
	struct curl_slist *hl = curl_slist_append(NULL, h1);
	CURL *h = curl_easy_init();
	long st = 0;

	if (h == NULL)
		fatal("out of memory");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	if (agentc_ca_file() != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, agentc_ca_file());
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)PROBE_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(h);
	curl_slist_free_all(hl);
	return st;
}

static int
lambda_agent_endpoint(struct sandbox *s, struct sbx_err *e)
{
	double exp = cJSON_GetNumberValue(cJSON_GetObjectItem(s->backend_data, "tokenExpiresAt"));
	int ports[TOKEN_PORTS_MAX];
	size_t np = wanted_ports(s, ports);
	struct awsmv *c;
	int rc;

	if (bd_str(s, "microvmId") == NULL || s->agent_endpoint == NULL)
		return 0;
	/* Re-mint when the token is about to lapse, when a direct forward needs a
	 * port it does not allow, or when the endpoint refuses it (another clock, or
	 * a token revoked): once, then give up with the error. */
	if (!(exp != exp) && (int64_t)exp - wall_ms() > REMINT_MARGIN_MS &&
	    token_covers(s, ports, np) && probe(s) != 403)
		return 0;
	if ((c = client_for(s, e)) == NULL)
		return -1;
	rc = mint(c, s, e);
	awsmv_free(c);
	if (rc < 0)
		return -1;
	log_debug("sandbox %s: endpoint token re-minted", s->id);
	return 1;
}

static char *
lambda_log_path(const struct sandbox *s, const char *which, struct sbx_err *e)
{
	sbx_error(e, SBX_EUNSUPPORTED, "use `sbxtop exec` and the agent's events; the "
	    "MicroVM's own logs go where the image's logging setting says (CloudWatch)",
	    "the lambda backend keeps no %s log on this host", which);
	return NULL;
}

static void
lambda_doctor(check_fn report, void *arg)
{
	aws_doctor(opt("lambda_image"), opt("lambda_image_version"), opt("lambda_region"),
	    opt("lambda_endpoint_url"), report, arg);
}

static int
lambda_gc(const struct backend_gc *g, struct sbx_err *e)
{
	/* A MicroVM carries no sandbox id (RunMicrovm takes no tags), so stray VMs
	 * cannot be told from the user's own: they end at their maximum duration. */
	return 0;
}

static int
lambda_pty(struct sandbox *s, const char *query, const char *origin, struct sbx_err *e)
{
	return lambda_pty_open(s, query, origin, cfg ? (int)config_int(cfg,
	    "lambda_token_minutes") : 60, e);
}

const struct backend backend_lambda = {
	.name = "lambda",
	.description = "AWS Lambda MicroVMs (Firecracker, in your AWS account)",
	.create = lambda_create,
	.suspend = lambda_suspend,
	.resume = lambda_resume,
	.destroy = lambda_destroy,
	.status = lambda_status,
	.log_path = lambda_log_path,
	.doctor = lambda_doctor,
	.gc = lambda_gc,
	.configure = lambda_configure,
	.agent_endpoint = lambda_agent_endpoint,
	.verbs = lambda_verbs,
	.pty_open = lambda_pty,
};
