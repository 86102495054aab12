/* The seed disk routes (qemu sandboxes): POST /v1/seal and POST /v1/reseed; and
 * POST /v1/claim, the lifetime of an ns sandbox taken from a warm pool.
 *
 * A qemu guest learns its secret and settings from a small read-only disk the
 * host writes (the "seed", see docs/qemu-backend.md).  Snapshots need the
 * agent to forget the secret before the VM's memory is saved, and to learn a
 * new one afterwards: seal drops the secret (from memory and from the secret
 * file), so a VM restored from the snapshot answers nothing but /health until
 * it is reseeded; reseed reads the seed disk again and takes its secret, and,
 * when the seed says the VM was restored, its deadline, idle policy, hostname
 * and wall clock.  Reseed needs no secret: it only ever installs what the host
 * wrote on the seed disk, which nothing in the guest can change. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/http.h"
#include "lib/jspec.h"
#include "lib/log.h"
#include "lib/util.h"

#define SEED_MAGIC	"SBXTOP-SEED\n"
#define SEED_SIZE	4096

struct seed {
	char	 secret[1025];
	int64_t	 deadline_s;
	int64_t	 idle_s;
	int64_t	 restored_ms;	/* wall clock when the host restored the VM; 0 at boot */
	char	 hostname[65];
};

/* Read the seed with O_DIRECT: the guest's page cache of the disk holds what
 * was read at boot, which after a restore is another sandbox's seed. */
static int
seed_read(struct seed *sd, char *msg, size_t msglen)
{
	_cleanup_close_ int fd = -1;
	char *buf = NULL, *save = NULL;
	ssize_t n;

	memset(sd, 0, sizeof *sd);
	if (agent.seed_device == NULL) {
		snprintf(msg, msglen, "this sandbox has no seed disk (the agent was started "
		    "without --seed)");
		return -1;
	}
	fd = open(agent.seed_device, O_RDONLY | O_DIRECT | O_CLOEXEC);
	/* A regular file on a filesystem without O_DIRECT (tmpfs, in tests) has
	 * no stale cache to bypass. */
	if (fd < 0 && errno == EINVAL)
		fd = open(agent.seed_device, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(msg, msglen, "cannot open the seed disk %s: %s", agent.seed_device,
		    strerror(errno));
		return -1;
	}
	if (posix_memalign((void **)&buf, SEED_SIZE, SEED_SIZE + 1) != 0)
		fatal("out of memory");
	n = pread(fd, buf, SEED_SIZE, 0);
	if (n != SEED_SIZE || memcmp(buf, SEED_MAGIC, sizeof SEED_MAGIC - 1) != 0) {
		snprintf(msg, msglen, "the seed disk %s holds no seed", agent.seed_device);
		free(buf);
		return -1;
	}
	buf[SEED_SIZE] = '\0';
	for (char *l = strtok_r(buf + sizeof SEED_MAGIC - 1, "\n", &save); l != NULL;
	    l = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(l, '=');
		if (v == NULL)
			continue;
		*v++ = '\0';
		if (strcmp(l, "secret") == 0)
			snprintf(sd->secret, sizeof sd->secret, "%s", v);
		else if (strcmp(l, "deadline") == 0)
			sd->deadline_s = strtoll(v, NULL, 10);
		else if (strcmp(l, "idle") == 0)
			sd->idle_s = strtoll(v, NULL, 10);
		else if (strcmp(l, "restored") == 0)
			sd->restored_ms = strtoll(v, NULL, 10);
		else if (strcmp(l, "hostname") == 0)
			snprintf(sd->hostname, sizeof sd->hostname, "%s", v);
	}
	explicit_bzero(buf, SEED_SIZE);
	free(buf);
	if (strlen(sd->secret) < AGENT_SECRET_MIN) {
		explicit_bzero(sd, sizeof *sd);
		snprintf(msg, msglen, "the seed disk holds no usable secret");
		return -1;
	}
	return 0;
}

/* Replace the secret file (when the agent was started with one), so it never
 * disagrees with the secret in use; secret NULL removes it. */
static void
secret_file_set(const char *secret)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;

	if (agent.secret_file == NULL)
		return;
	if (secret == NULL) {
		if (unlink(agent.secret_file) < 0 && errno != ENOENT)
			log_warn("cannot remove %s", agent.secret_file);
		return;
	}
	tmp = xasprintf("%s.new", agent.secret_file);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 ||
	    write_all(fd, secret, strlen(secret)) < 0 || write_all(fd, "\n", 1) < 0 ||
	    rename(tmp, agent.secret_file) < 0)
		log_warn("cannot write %s", agent.secret_file);
}

static enum http_rc
seal(struct req *r)
{
	if (agent.seed_device == NULL)
		return http_error(r, HTTP_STATUS_CONFLICT, "no_seed",
		    "this sandbox has no seed disk to be reseeded from; sealing it would lock it "
		    "out for good");
	agent_set_secret(NULL);
	secret_file_set(NULL);
	events_emit("agent.sealed", NULL);
	log_info("sealed: the secret is forgotten until the next reseed");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "sealed", 1);
	return http_json(r, HTTP_STATUS_OK, o);
}

static enum http_rc
reseed(struct req *r)
{
	struct seed sd;
	char msg[256];
	int restored;

	if (seed_read(&sd, msg, sizeof msg) < 0)
		return http_error(r, HTTP_STATUS_CONFLICT, "no_seed", "%s", msg);
	/* Settings first, secret last: once the API accepts requests the
	 * sandbox already has its own deadline and name. */
	restored = sd.restored_ms > 0 && sd.restored_ms != agent.restored_ms;
	if (restored) {
		struct timespec ts = { .tv_sec = sd.restored_ms / 1000,
		    .tv_nsec = (long)(sd.restored_ms % 1000) * 1000000 };
		if (clock_settime(CLOCK_REALTIME, &ts) < 0)
			log_warn("cannot set the clock");
		if (sd.hostname[0] != '\0' && sethostname(sd.hostname, strlen(sd.hostname)) < 0)
			log_warn("cannot set the hostname");
		agent.deadline_s = sd.deadline_s;
		agent.idle_s = sd.idle_s;
		agent.started_ms = now_ms();
		agent.restored_ms = sd.restored_ms;
	}
	agent_touch();
	agent_set_secret(sd.secret);
	secret_file_set(sd.secret);
	explicit_bzero(sd.secret, sizeof sd.secret);
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddBoolToObject(ev, "restored", restored);
	events_emit("agent.reseeded", ev);
	log_info("reseeded from %s%s", agent.seed_device, restored ? " (restored from a snapshot)" : "");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ready", 1);
	cJSON_AddBoolToObject(o, "restored", restored);
	return http_json(r, HTTP_STATUS_OK, o);
}

/* A sandbox kept ready in a warm pool waited with no idle policy and a long
 * deadline; the create that takes it gives its own, counted from now.
 * Authenticated: only the host holds the secret. */
static const struct jfield claim_spec[] = {
	{ "deadline_s", J_INT, 1, 0, 31536000 },
	{ "idle_s", J_INT, 0, 0, 31536000 },
	{ NULL, 0, 0, 0, 0 }
};

static enum http_rc
claim(struct req *r)
{
	char msg[256];

	if (jspec_check(r->json, claim_spec, msg, sizeof msg) < 0)
		return http_bad_request(r, "%s", msg);
	if (!agent.init)
		return http_error(r, HTTP_STATUS_CONFLICT, "not_init", "only the sandbox's init "
		    "(--init) keeps a lifetime");
	agent.started_ms = now_ms();
	agent.deadline_s = jint(r->json, "deadline_s", 0);
	agent.idle_s = jint(r->json, "idle_s", 0);
	agent_touch();
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddNumberToObject(ev, "deadline_s", (double)agent.deadline_s);
	cJSON_AddNumberToObject(ev, "idle_s", (double)agent.idle_s);
	events_emit("agent.claimed", ev);
	log_info("claimed: deadline %llds, idle %llds", (long long)agent.deadline_s,
	    (long long)agent.idle_s);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "deadline_s", (double)agent.deadline_s);
	cJSON_AddNumberToObject(o, "idle_s", (double)agent.idle_s);
	return http_json(r, HTTP_STATUS_OK, o);
}

const struct route seed_routes[] = {
	{ "POST", "/v1/claim", ROUTE_JSON, claim, NULL, 0 },
	{ "POST", "/v1/seal", ROUTE_JSON, seal, NULL, 0 },
	{ "POST", "/v1/reseed", ROUTE_NOAUTH | ROUTE_JSON, reseed, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
