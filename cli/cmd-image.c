/* sbxtop image: OCI images (pull, import, ls, rm, gc: the store of
 * core/image/) and the qemu backend's VM images (build, and in ls and rm). */
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/image/image.h"
#include "lib/jspec.h"
#include "lib/util.h"

static int cmd_image(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "kernel", required_argument, NULL, 'k' }, { "from", required_argument, NULL, 'f' },
	{ "size", required_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
	{ "debootstrap", required_argument, NULL, 'd' }, { "packages", required_argument, NULL, 'p' },
	{ "plain-http", no_argument, NULL, 'H' }, { "platform", required_argument, NULL, 'P' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_image_entry = {
	"image",
	"pull [--plain-http] [--platform OS/ARCH] [--json] REF\n"
	"       | import SRC [REF] [--json] | ls [--json] | rm REF|ID|NAME | gc [--json]\n"
	"       | build [NAME] [--kernel PATH] [--from DIR|TARBALL | --debootstrap SUITE\n"
	"             [--packages P,...]] [--size MiB] [--json]",
	"pull, import, list and remove OCI images; build VM images (qemu)",
	"  pull REF          fetch an OCI image (REF as docker names it: debian:12,\n"
	"                    ghcr.io/o/n:tag, HOST:PORT/name@sha256:...) into the store,\n"
	"                    every digest checked, and unpack it for the default backend;\n"
	"                    credentials from the podman, skopeo and docker auth files\n"
	"  --plain-http      a registry without TLS may be reached over plain HTTP\n"
	"                    (always allowed on loopback; image_http in sbxtop.conf)\n"
	"  --platform OS/ARCH  another platform's build (default: this machine's)\n"
	"  import SRC [REF]  an OCI layout directory, an OCI archive, a docker save\n"
	"                    archive (SRC:NAME picks one of several), or podman:REF /\n"
	"                    docker:REF from that tool's local store; recorded as REF\n"
	"  ls                the OCI images (layers shared between images counted once\n"
	"                    in the total), then the VM images\n"
	"  rm REF|ID|NAME    forget an OCI image's reference (its files go at gc), or\n"
	"                    remove a VM image\n"
	"  gc                remove the blobs and unpacked layers no image and no\n"
	"                    sandbox needs\n"
	"  build [NAME]      build a VM image for the qemu backend (default name:\n"
	"                    default); replaces one of that name\n"
	"  --kernel PATH     a vmlinuz file (virtio built in), a linux-image .deb, or\n"
	"                    the directory one was extracted in (default: Debian's\n"
	"                    linux-image-cloud-amd64, fetched once with apt-get download)\n"
	"  --from SRC        root filesystem directory or tarball (default: busybox)\n"
	"  --debootstrap SUITE  a Debian root made by debootstrap (minbase) from\n"
	"                    $SBXTOP_DEBIAN_MIRROR or deb.debian.org; needs root\n"
	"  --packages P,...  packages debootstrap adds (git,python3,build-essential)\n"
	"  --size MiB        ext4 size, 1 to 1048576, sparse (default 1024)\n"
	"  --json            print JSON\n",
	cmd_image,
	.options = options,
	.words = "pull|import|ls|rm|gc|build",
};

/* "12.3 MB" */
static const char *
size_text(double b, char *buf, size_t len)
{
	if (b >= 1e9)
		snprintf(buf, len, "%.1f GB", b / 1e9);
	else if (b >= 1e6)
		snprintf(buf, len, "%.1f MB", b / 1e6);
	else
		snprintf(buf, len, "%.0f kB", b / 1e3);
	return buf;
}

/* The qemu backend's verb with args (taken): 0 with *out, or the CLI's error. */
static int
image_verb(struct cli *cli, enum backend_verb verb, cJSON *args, cJSON **out)
{
	struct sbx_err e;
	int rc = core_admin(cli->core, "qemu", verb, args, NULL, out, &e);

	cJSON_Delete(args);
	return rc < 0 ? cli_error(&e) : 0;
}

/* --- progress on a terminal ---------------------------------------------- */

struct progress {
	int	 tty;
	int64_t	 last_ms;
	int	 shown;
};

static int
on_progress(uint64_t done, uint64_t total, const char *what, void *arg)
{
	struct progress *p = arg;
	char a[32], b[32];
	int64_t now = now_ms();

	if (!p->tty || (now - p->last_ms < 100 && done != total))
		return 0;
	p->last_ms = now;
	if (total > 0 && strncmp(what, "unpacking", 9) != 0)
		cli_printf(stderr, "\r\033[K%s: %s of %s (%d%%)", what, size_text((double)done, a, sizeof a),
		    size_text((double)total, b, sizeof b), (int)(done * 100 / total));
	else
		cli_printf(stderr, "\r\033[K%s", what);
	p->shown = 1;
	return 0;
}

static void
progress_end(struct progress *p)
{
	if (p->shown)
		cli_printf(stderr, "\r\033[K");
}

static void
print_pulled(const char *verb, cJSON *info)
{
	char a[32];

	cli_printf(stdout, "%s\n", jstr(info, "id", "-"));
	cli_printf(stderr, "sbxtop: %s %s (%s, %d layer%s, %s)%s%s\n", verb, jstr(info, "ref", "-"),
	    jstr(info, "platform", "-"), (int)jnum(info, "layers", NAN),
	    jnum(info, "layers", NAN) == 1 ? "" : "s", size_text(jnum(info, "size", NAN), a, sizeof a),
	    cJSON_GetObjectItemCaseSensitive(info, "unpacked_for") ? "; unpacked for " : "",
	    cJSON_GetObjectItemCaseSensitive(info, "unpacked_for") ? jstr(info, "unpacked_for", "-") : "");
}

/* After a pull or an import (rc, e): the progress line gone, then the image's
 * id and a line saying what came in (or its JSON); *info is freed. */
static int
came_in(struct progress *pg, int rc, const struct sbx_err *e, cJSON **info, int json,
    const char *verb)
{
	progress_end(pg);
	if (rc < 0)
		return cli_error(e);
	if (json)
		cli_json_print(*info);
	else
		print_pulled(verb, *info);
	cJSON_Delete(*info);
	return 0;
}

static int
pull_cmd(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "plain-http", no_argument, NULL, 'h' }, { "platform", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 },
	};
	struct core_image_pull_opts o = { 0 };
	struct progress pg = { isatty(2), 0, 0 };
	struct sbx_err e;
	cJSON *info = NULL;
	int c, json = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (c == 'h')
			o.plain_http = 1;
		else if (c == 'p')
			o.platform = optarg;
		else if (c == 'j')
			json = 1;
		else
			return cli_bad_option(&cmd_image_entry, c, argv);
	}
	if (optind != argc - 1)
		return cli_usage(&cmd_image_entry, "pull takes one image reference");
	o.progress = on_progress;
	o.arg = &pg;
	return came_in(&pg, core_image_pull(cli->core, argv[optind], &o, &info, &e), &e, &info,
	    json, "pulled");
}

static int
import_cmd(struct cli *cli, int argc, char **argv)
{
	struct progress pg = { isatty(2), 0, 0 };
	struct sbx_err e;
	cJSON *info = NULL;
	const char *args[2] = { NULL, NULL };
	int n = 0, json = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (argv[i][0] == '-' && argv[i][1] != '\0')
			return cli_usage(&cmd_image_entry, "unknown option '%s'", argv[i]);
		else if (n < 2)
			args[n++] = argv[i];
		else
			return cli_usage(&cmd_image_entry, "unexpected argument '%s'", argv[i]);
	}
	if (n == 0)
		return cli_usage(&cmd_image_entry, "import takes a source: a directory, an "
		    "archive, podman:REF or docker:REF");
	return came_in(&pg, core_image_import(cli->core, args[0], args[1], on_progress, &pg, &info,
	    &e), &e, &info, json, "imported");
}

static int
ls_cmd(struct cli *cli, int argc, char **argv)
{
	int json = argc == 2 && strcmp(argv[1], "--json") == 0;
	cJSON *oci = NULL, *vm = NULL, *o;
	struct sbx_err e, ve;
	char a[32], b[32];

	if (argc > 1 && !json)
		return cli_usage(&cmd_image_entry, "unexpected argument '%s'", argv[1]);
	if (core_image_list(cli->core, &oci, &e) < 0)
		return cli_error(&e);
	/* VM images: the qemu backend's, where it can list them. */
	if (core_admin(cli->core, "qemu", BACKEND_IMAGE_LIST, NULL, NULL, &vm, &ve) < 0)
		vm = NULL;
	if (json) {
		cJSON *all = cJSON_CreateArray();
		cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(oci, "images")) {
			cJSON *d = cJSON_Duplicate(o, 1);
			cJSON_AddStringToObject(d, "kind", "oci");
			cJSON_AddStringToObject(d, "name", jstr(o, "ref", "-"));
			cJSON_AddItemToArray(all, d);
		}
		cJSON_ArrayForEach(o, vm) {
			cJSON *d = cJSON_Duplicate(o, 1);
			cJSON_AddStringToObject(d, "kind", "vm");
			cJSON_AddItemToArray(all, d);
		}
		cli_json_print(all);
		cJSON_Delete(all);
	} else {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(oci, "total");
		cli_printf(stdout, "%-48s %-14s %-12s %6s %9s %9s %s\n", "REFERENCE", "ID", "PLATFORM", "LAYERS",
		    "SIZE", "UNPACKED", "USED");
		cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(oci, "images"))
			cli_printf(stdout, "%-48s %-14.12s %-12s %6d %9s %9s %s\n", jstr(o, "ref", "-"),
			    jstr(o, "id", "-") + 7, jstr(o, "platform", "-"), (int)jnum(o, "layers", NAN),
			    size_text(jnum(o, "size", NAN), a, sizeof a),
			    size_text(jnum(o, "unpacked", NAN), b, sizeof b),
			    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "in_use")) ? "yes" : "no");
		cli_printf(stdout, "%d image%s: %s of blobs, %s unpacked (shared layers counted once)\n",
		    (int)jnum(t, "images", NAN), jnum(t, "images", NAN) == 1 ? "" : "s",
		    size_text(jnum(t, "blobs", NAN), a, sizeof a), size_text(jnum(t, "unpacked", NAN), b,
		    sizeof b));
		if (cJSON_GetArraySize(vm) > 0) {
			cli_printf(stdout, "\n%-16s %-24s %-10s %s\n", "VM IMAGE", "KERNEL", "ROOTFS", "SIZE");
			cJSON_ArrayForEach(o, vm) {
				if (cJSON_GetObjectItemCaseSensitive(o, "error") != NULL)
					cli_printf(stdout, "%-16s (broken: %s)\n", jstr(o, "name", "-"), jstr(o, "error", "-"));
				else
					cli_printf(stdout, "%-16s %-24s %-10s %gM\n", jstr(o, "name", "-"),
					    jstr(o, "kernel_version", "-"), jstr(o, "rootfs_from", "-"),
					    jnum(o, "size_mib", NAN));
			}
		}
	}
	cJSON_Delete(oci);
	cJSON_Delete(vm);
	return 0;
}

static int
rm_cmd(struct cli *cli, int argc, char **argv)
{
	struct sbx_err e, ve;
	cJSON *out = NULL, *args, *o;

	if (argc != 2)
		return cli_usage(&cmd_image_entry, "rm takes one image reference, id or VM image name");
	if (core_image_rm(cli->core, argv[1], &out, &e) == 0) {
		cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(out, "removed"))
			cli_printf(stderr, "sbxtop: removed %s (its files go at `sbxtop image gc`)\n",
			    o->valuestring);
		cJSON_Delete(out);
		return 0;
	}
	if (e.code != SBX_ENOTFOUND)
		return cli_error(&e);
	/* Not an OCI image: a VM image of that name? */
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "name", argv[1]);
	if (core_admin(cli->core, "qemu", BACKEND_IMAGE_RM, args, NULL, &out, &ve) == 0) {
		cJSON_Delete(args);
		cJSON_Delete(out);
		return 0;
	}
	cJSON_Delete(args);
	return cli_error(ve.code == SBX_ENOTFOUND || ve.code == SBX_EINVAL ? &e : &ve);
}

static int
gc_cmd(struct cli *cli, int argc, char **argv)
{
	struct sbx_err e;
	cJSON *out = NULL;
	char a[32];

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--json") != 0))
		return cli_usage(&cmd_image_entry, "gc takes no argument but --json");
	if (core_image_gc(cli->core, &out, &e) < 0)
		return cli_error(&e);
	if (argc == 2)
		cli_json_print(out);
	else
		cli_printf(stderr, "sbxtop: removed %d blob%s and %d unpacked layer%s (%s)\n",
		    (int)jnum(out, "blobs", NAN), jnum(out, "blobs", NAN) == 1 ? "" : "s",
		    (int)jnum(out, "layers", NAN), jnum(out, "layers", NAN) == 1 ? "" : "s",
		    size_text(jnum(out, "bytes", NAN), a, sizeof a));
	cJSON_Delete(out);
	return 0;
}

static int
image_build_cmd(struct cli *cli, int argc, char **argv)
{
	cJSON *args = cJSON_CreateObject(), *info = NULL;
	long long size;
	int c, rc, json = 0;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		const char *key = c == 'k' ? "kernel" : c == 'f' ? "from" : c == 'd' ? "debootstrap" :
		    c == 'p' ? "packages" : NULL;
		if (key != NULL) {
			cJSON_DeleteItemFromObjectCaseSensitive(args, key);
			cJSON_AddStringToObject(args, key, optarg);
		} else if (c == 'j') {
			json = 1;
		} else if (c == 's') {
			size = strtoll(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || size < 1 || size > 1048576) {
				cJSON_Delete(args);
				return cli_usage(&cmd_image_entry, "--size: '%s' is not valid: expected 1 to 1048576 MiB",
				    optarg);
			}
			cJSON_DeleteItemFromObjectCaseSensitive(args, "size_mib");
			cJSON_AddNumberToObject(args, "size_mib", (double)size);
		} else {
			cJSON_Delete(args);
			return cli_bad_option(&cmd_image_entry, c, argv);
		}
	}
	if (optind < argc)
		cJSON_AddStringToObject(args, "name", argv[optind++]);
	if (optind < argc) {
		cJSON_Delete(args);
		return cli_usage(&cmd_image_entry, "unexpected argument '%s'", argv[optind]);
	}
	if ((rc = image_verb(cli, BACKEND_IMAGE_BUILD, args, &info)) != 0)
		return rc;
	if (json) {
		cli_json_print(info);
	} else {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(info, "build_ms");
		cli_printf(stdout, "%s\n", jstr(info, "name", "-"));
		cli_printf(stderr, "sbxtop: built image %s in %s (kernel %s, %.1f s)\n", jstr(info, "name", "-"),
		    jstr(info, "dir", "-"), jstr(info, "kernel_version", "-"),
		    cJSON_IsNumber(ms) ? ms->valuedouble / 1000 : 0.0);
	}
	cJSON_Delete(info);
	return 0;
}

static int
cmd_image(struct cli *cli, int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(struct cli *cli, int argc, char **argv);
	} subs[] = {
		{ "pull", pull_cmd }, { "import", import_cmd }, { "ls", ls_cmd }, { "rm", rm_cmd },
		{ "gc", gc_cmd }, { "build", image_build_cmd },
	};

	if (argc < 2)
		return cli_usage(&cmd_image_entry, "expected pull, import, ls, rm, gc or build");
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
		if (strcmp(argv[1], subs[i].name) == 0)
			return subs[i].run(cli, argc - 1, argv + 1);
	return cli_usage(&cmd_image_entry, "unknown subcommand '%s': expected pull, import, ls, "
	    "rm, gc or build", argv[1]);
}
