/* sbxtop cp: copy files and directories into and out of a sandbox. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "lib/util.h"

static int cmd_cp(struct cli *cli, int argc, char **argv);

static const struct option options[] = { { NULL, 0, NULL, 0 } };

const struct cmd_entry cmd_cp_entry = {
	"cp", "SRC DST", "copy files and directories into or out of a sandbox",
	"  One of SRC and DST is ID:PATH, a path in sandbox ID (relative paths start at\n"
	"  /workspace); the other is a host path (write ./a:b for a host path with a\n"
	"  colon).  Directories are copied whole, like cp -r: into DST when DST is an\n"
	"  existing directory, else as DST.  Modes are kept; owners are not.\n"
	"  - as DST writes a tar archive of SRC to standard output; - as SRC reads one\n"
	"  (plain or compressed) from standard input and unpacks it into the directory\n"
	"  DST, as docker cp does: `sbxtop cp ID:src - | tar -tv`, `tar -c . | sbxtop\n"
	"  cp - ID:dir`.\n",
	cmd_cp,
	.options = options,
	.words = "sandbox:path|file sandbox:path|file",
};

/* "ID:PATH" → id and path (within arg); 0 when arg is a host path. */
static int
split_remote(char *arg, char **id, char **path)
{
	char *colon = strchr(arg, ':');

	if (colon == NULL || colon == arg || memchr(arg, '/', (size_t)(colon - arg)) != NULL)
		return 0;
	*colon = '\0';
	*id = arg;
	*path = colon[1] ? colon + 1 : ".";
	return 1;
}

/* core_copy_in or core_copy_out in the core server, whose working directory
 * is not ours: the host path goes as an absolute one (as given otherwise, so
 * symlinks in it mean what they mean here). */
static int
cp_remote(struct client *c, int in, const char *key, const char *remote, const char *local,
    struct sbx_err *e)
{
	_cleanup_free_ char *cwd = NULL, *abs = NULL;
	cJSON *p;
	int rc;

	if (local[0] != '/') {
		if ((cwd = getcwd(NULL, 0)) == NULL)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot tell the working directory");
		abs = xasprintf("%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, local);
		local = abs;
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sandbox", key);
	cJSON_AddStringToObject(p, "remote", remote);
	cJSON_AddStringToObject(p, "local", local);
	rc = cli_call(c, in ? "sbxtop/copy_in" : "sbxtop/copy_out", p, NULL, e);
	cJSON_Delete(p);
	return rc;
}

static int
cmd_cp(struct cli *cli, int argc, char **argv)
{
	char *sid = NULL, *spath = NULL, *did = NULL, *dpath = NULL;
	struct client *cl;
	struct sbx_err e;
	int c, rs, rd, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1)
		return cli_bad_option(&cmd_cp_entry, c, argv);
	if (argc - optind != 2)
		return cli_usage(&cmd_cp_entry, "expected SRC and DST");
	rs = split_remote(argv[optind], &sid, &spath);
	rd = split_remote(argv[optind + 1], &did, &dpath);
	if (rs == rd)
		return cli_usage(&cmd_cp_entry, rs ? "both sides are in a sandbox: copy through "
		    "the host" : "one side must be ID:PATH");
	/* A stream: the core in this process (the server cannot reach our
	 * standard input and output), the full binary's. */
	if (strcmp(rs ? argv[optind + 1] : argv[optind], "-") == 0) {
		if (isatty(rs ? 1 : 0))
			return cli_usage(&cmd_cp_entry, "%s is a terminal: %s", rs ? "standard "
			    "output" : "standard input", rs ? "send the archive to a file or a "
			    "pipe (> out.tar, | tar -x)" : "give the archive from a file or a "
			    "pipe (< in.tar, tar -c . |)");
		if (cli->run_here != NULL)
			cli->run_here(cli);
		rc = rs ? core_copy_out_tar(cli->core, sid, spath, 1, &e) :
		    core_copy_in_tar(cli->core, did, 0, dpath, &e);
		return rc < 0 ? cli_error(&e) : 0;
	}
	if (cli_remote(cli, &cl)) {
		rc = rs ? cp_remote(cl, 0, sid, spath, argv[optind + 1], &e) :
		    cp_remote(cl, 1, did, dpath, argv[optind], &e);
		client_close(cl);
	} else if (rs) {
		rc = core_copy_out(cli->core, sid, spath, argv[optind + 1], &e);
	} else {
		rc = core_copy_in(cli->core, did, argv[optind], dpath, &e);
	}
	return rc < 0 ? cli_error(&e) : 0;
}
