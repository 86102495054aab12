/* sandbox_create: a new sandbox owned by the calling client. */
#include <string.h>

#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	struct core_create_opts o;
	struct sandbox *s = NULL;
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(args, "env");
	cJSON *net = NULL;
	int rc = -1;

	core_create_opts_init(&o);
	o.name = mcp_arg_str(args, "name");
	o.backend = mcp_arg_str(args, "backend");
	o.host = mcp_arg_str(args, "host");
	o.image = mcp_arg_str(args, "image");
	o.network = mcp_arg_str(args, "network");
	o.max_duration_s = mcp_arg_int(args, "max_duration_s", -1);
	o.idle_s = mcp_arg_int(args, "idle_s", -1);
	o.memory_mib = mcp_arg_int(args, "memory_mib", -1);
	o.disk_mib = mcp_arg_int(args, "disk_mib", -1);
	o.cpus = mcp_arg_num(args, "cpus", -1);
	o.env = cJSON_IsObject(env) ? env : NULL;
	o.from_snapshot = mcp_arg_str(args, "from_snapshot");
	o.owner = mcp_client_name(call);
	o.idle_suspend_s = mcp_arg_int(args, "idle_suspend_s", -1);
	/* Who is an agent for net_limit: the session's kind where the core
	 * server knows it (a client calling itself "console" is still one). */
	if (mcp_call_kind(call) != NULL)
		o.agent = strcmp(mcp_call_kind(call), "mcp") == 0 ? 1 : -1;
	/* Network rules: the entries as given, bounded by the operator's net_limit;
	 * secrets by name, as `create --secret NAME`. */
	for (int i = 0; i < 4; i++) {
		static const char *const keys[] = { "allow", "deny", "ask", "secrets" };
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, keys[i]);
		if (v == NULL)
			continue;
		if (net == NULL)
			net = cJSON_CreateObject();
		cJSON_AddItemToObject(net, keys[i], cJSON_Duplicate(v, 1));
	}
	o.net = net;
	mcp_call_progress(call, 0, 2, "creating");
	if (core_create(c, &o, &s, e) < 0) {
		mcp_err_fix(e);
		goto out;
	}
	mcp_call_progress(call, 2, 2, "ready");
	*result = mcp_summary(s);
	sandbox_free(s);
	rc = 0;
out:
	cJSON_Delete(net);
	return rc;
}

const struct mcp_tool mcp_tool_create = {
	.name = "sandbox_create",
	.title = "Create a sandbox",
	.description =
	    "Create a disposable Linux sandbox (an isolated machine with bash, /workspace as "
	    "the working directory, and its own processes, files and network) and return its "
	    "summary; pass its sandbox_id to every other tool. Typical flow: sandbox_create, "
	    "sandbox_upload_dir (your project), sandbox_exec (build, test), sandbox_download "
	    "or sandbox_read_file (results), sandbox_destroy. The sandbox destroys itself "
	    "after max_duration_s, but always call sandbox_destroy when you are done. "
	    "network \"none\" (the default) allows loopback only; give allow entries "
	    "(network \"rules\": only those destinations, through a proxy the sandbox's "
	    "HTTP_PROXY/HTTPS_PROXY variables name) or ask for \"egress\" to install "
	    "packages or fetch from the internet. A destination you did not list can be "
	    "asked for later with sandbox_net_request.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{"
	    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,"
	    "\"pattern\":\"^[A-Za-z0-9_][A-Za-z0-9._-]*$\",\"description\":\"A unique, "
	    "human-readable name (letters, digits, '.', '_', '-'; not starting with \\\"sbx-\\\"); "
	    "it can be used in place of sandbox_id.\"},"
	    "\"backend\":{\"type\":\"string\",\"description\":\"Where it runs: \\\"ns\\\" "
	    "(Linux namespaces, the default on most hosts). Omit to use the configured one.\"},"
	    "\"host\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":32,\"description\":"
	    "\"Run it on this remote host (one the operator added with `sbxtop host add`), or "
	    "\\\"auto\\\" for the one with the most headroom. Omit to run it here.\"},"
	    "\"image\":{\"type\":\"string\",\"maxLength\":600,\"description\":\"An OCI image "
	    "the operator allows (resource sbx://images lists them), e.g. python:3.12. Omit for "
	    "the backend's default.\"},"
	    "\"max_duration_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,"
	    "\"description\":\"Lifetime in seconds, after which the sandbox destroys itself "
	    "(default from the configuration, normally 14400 = 4 h).\"},"
	    "\"idle_s\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":86400,"
	    "\"description\":\"Stop after this many seconds without a command (0: never).\"},"
	    "\"network\":{\"type\":\"string\",\"enum\":[\"none\",\"egress\",\"rules\"],"
	    "\"description\":\"none: loopback only; egress: outbound internet access; rules: "
	    "only what allow names (implied by allow, deny or ask).\"},"
	    "\"allow\":{\"type\":\"array\",\"maxItems\":256,\"items\":{\"type\":\"string\","
	    "\"minLength\":1,\"maxLength\":300},\"description\":\"Destinations the sandbox may "
	    "reach: a domain (\\\"pypi.org\\\"), its subdomains (\\\"*.npmjs.org\\\"), an "
	    "address or CIDR (\\\"10.0.0.0/8\\\", \\\"[2001:db8::/32]\\\"), each optionally "
	    "with :PORT. Everything else is denied. The operator may bound what an agent can "
	    "list.\"},"
	    "\"deny\":{\"type\":\"array\",\"maxItems\":256,\"items\":{\"type\":\"string\","
	    "\"minLength\":1,\"maxLength\":300},\"description\":\"Destinations denied even "
	    "when an allow entry covers them (same forms as allow).\"},"
	    "\"ask\":{\"type\":\"boolean\",\"description\":\"Hold a connection no entry "
	    "covers until the operator answers, instead of refusing it at once.\"},"
	    "\"secrets\":{\"type\":\"array\",\"maxItems\":32,\"items\":{\"type\":\"string\","
	    "\"minLength\":1,\"maxLength\":64},\"description\":\"Secrets the operator stored "
	    "(`sbxtop secret set NAME`), by name: the sandbox's $NAME holds a placeholder that "
	    "the proxy replaces with the value in requests to that secret's host only; the value "
	    "never enters the sandbox. Implies network rules and allows the host's port 443.\"},"
	    "\"idle_suspend_s\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":86400,"
	    "\"description\":\"Suspend the sandbox after this many seconds without a command "
	    "(0: never); sandbox_resume, or the next command, wakes it.\"},"
	    "\"memory_mib\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1048576,"
	    "\"description\":\"Memory limit in MiB (0: none).\"},"
	    "\"disk_mib\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1048576,"
	    "\"description\":\"Disk limit in MiB of what the sandbox writes, its root "
	    "and /workspace (0: none; default: the operator's). Writes past it fail with "
	    "ENOSPC where the host enforces it (sandbox_status says how).\"},"
	    "\"cpus\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1024,"
	    "\"description\":\"CPU limit, e.g. 1.5 (0: none).\"},"
	    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
	    "\"description\":\"Environment variables for every command in the sandbox.\"},"
	    "\"from_snapshot\":{\"type\":\"string\",\"description\":\"qemu backend only: "
	    "start from this snapshot (made with `sbxtop snapshot`) instead of booting: its "
	    "files, memory and running processes, with a new sandbox_id.\"}"
	    "},\"additionalProperties\":false}",
	.output_schema = MCP_SUMMARY_SCHEMA,
	.hints = 0,
	.run = run,
};
