/* sbxtop image: build, list and remove the VM images of the qemu backend. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/util.h"

static int cmd_image(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "kernel", required_argument, NULL, 'k' }, { "from", required_argument, NULL, 'f' },
	{ "size", required_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
	{ "debootstrap", required_argument, NULL, 'd' }, { "packages", required_argument, NULL, 'p' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_image_entry = {
	"image",
	"build [NAME] [--kernel PATH] [--from DIR|TARBALL | --debootstrap SUITE\n"
	"             [--packages P,...]] [--size MiB] [--json]\n"
	"       | ls [--json] | rm NAME",
	"build, list and remove VM images (qemu backend)",
	"  build [NAME]      build an image (default name: default); replaces one of\n"
	"                    that name\n"
	"  --kernel PATH     a vmlinuz file (virtio built in), a linux-image .deb, or\n"
	"                    the directory one was extracted in (default: Debian's\n"
	"                    linux-image-cloud-amd64, fetched once with apt-get download)\n"
	"  --from SRC        root filesystem directory or tarball (default: busybox)\n"
	"  --debootstrap SUITE  a Debian root made by debootstrap (minbase) from\n"
	"                    $SBXTOP_DEBIAN_MIRROR or deb.debian.org; needs root\n"
	"  --packages P,...  packages debootstrap adds (git,python3,build-essential)\n"
	"  --size MiB        ext4 size, 1 to 1048576, sparse (default 1024)\n"
	"  ls                list images\n"
	"  rm NAME           remove an image\n"
	"  --json            print JSON\n",
	cmd_image,
	.options = options,
	.words = "build|ls|rm",
};

static const char *
str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "-";
}

/* The qemu backend's verb with args (taken): 0 with *out, or the CLI's error. */
static int
image_verb(struct cli *cli, const char *verb, cJSON *args, cJSON **out)
{
	struct sbx_err e;
	int rc = core_admin(cli->core, "qemu", verb, args, NULL, out, &e);

	cJSON_Delete(args);
	return rc < 0 ? cli_error(&e) : 0;
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
	if ((rc = image_verb(cli, "image.build", args, &info)) != 0)
		return rc;
	if (json) {
		cli_json_print(info);
	} else {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(info, "build_ms");
		printf("%s\n", str_of(info, "name"));
		fprintf(stderr, "sbxtop: built image %s in %s (kernel %s, %.1f s)\n", str_of(info, "name"),
		    str_of(info, "dir"), str_of(info, "kernel_version"),
		    cJSON_IsNumber(ms) ? ms->valuedouble / 1000 : 0.0);
	}
	cJSON_Delete(info);
	return 0;
}

static int
cmd_image(struct cli *cli, int argc, char **argv)
{
	const char *sub;
	cJSON *args;
	int rc;

	if (argc < 2)
		return cli_usage(&cmd_image_entry, "expected build, ls or rm");
	sub = argv[1];
	if (strcmp(sub, "build") == 0)
		return image_build_cmd(cli, argc - 1, argv + 1);
	if (strcmp(sub, "ls") == 0) {
		int json = argc == 3 && strcmp(argv[2], "--json") == 0;
		cJSON *arr = NULL, *o;
		if (argc > 2 && !json)
			return cli_usage(&cmd_image_entry, "unexpected argument '%s'", argv[2]);
		if ((rc = image_verb(cli, "image.list", cJSON_CreateObject(), &arr)) != 0)
			return rc;
		if (json) {
			cli_json_print(arr);
		} else {
			printf("%-16s %-24s %-10s %s\n", "NAME", "KERNEL", "ROOTFS", "SIZE");
			cJSON_ArrayForEach(o, arr) {
				const cJSON *sz = cJSON_GetObjectItemCaseSensitive(o, "size_mib");
				if (cJSON_GetObjectItemCaseSensitive(o, "error") != NULL)
					printf("%-16s (broken: %s)\n", str_of(o, "name"), str_of(o, "error"));
				else
					printf("%-16s %-24s %-10s %gM\n", str_of(o, "name"),
					    str_of(o, "kernel_version"), str_of(o, "rootfs_from"),
					    cJSON_IsNumber(sz) ? sz->valuedouble : 0);
			}
		}
		cJSON_Delete(arr);
		return 0;
	}
	if (strcmp(sub, "rm") == 0) {
		cJSON *out = NULL;
		if (argc != 3)
			return cli_usage(&cmd_image_entry, "rm takes one image name");
		args = cJSON_CreateObject();
		cJSON_AddStringToObject(args, "name", argv[2]);
		rc = image_verb(cli, "image.rm", args, &out);
		cJSON_Delete(out);
		return rc;
	}
	return cli_usage(&cmd_image_entry, "unknown subcommand '%s': expected build, ls or rm", sub);
}
