/* Unit tests for core/image/: references as docker names them, the
 * WWW-Authenticate challenge, what an index, a manifest and a config say,
 * which images images_allowed and the templates let an agent use, how a
 * backend takes an image's name, and the layer reader on tars made here with
 * libarchive (whiteouts, an opaque directory, hard links, and the hostile
 * entries it refuses).  TAP lines. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tap.h"
#include "core/core.h"
#include "core/image/image-int.h"
#include "lib/util.h"

static void
ref_is(const char *in, const char *want)
{
	struct image_ref r;
	struct sbx_err e;
	char out[700];
	int rc = image_ref_parse(in, &r, &e);

	if (want == NULL) {
		check(rc < 0, "\"%s\" is not a reference (%s)", in, rc < 0 ? e.msg : "taken");
		return;
	}
	if (rc == 0)
		image_ref_format(&r, out, sizeof out);
	if (!check(rc == 0 && strcmp(out, want) == 0, "\"%s\" is %s", in, want))
		printf("# got: %s\n", rc == 0 ? out : e.msg);
}

/* A tar (plain, or gzip'd) of entries "TYPE NAME [TARGET|CONTENT]" into a memfd. */
struct ent { char type; const char *name, *extra; unsigned mode; int uid; };

static int
tar_of(const struct ent *v, size_t n, int gz)
{
	struct archive *a = archive_write_new();
	static char buf[1 << 20];
	size_t used = 0;
	int fd;

	archive_write_set_format_pax_restricted(a);
	if (gz)
		archive_write_add_filter_gzip(a);
	archive_write_open_memory(a, buf, sizeof buf, &used);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *en = archive_entry_new();
		archive_entry_set_pathname(en, v[i].name);
		archive_entry_set_uid(en, v[i].uid);
		archive_entry_set_gid(en, v[i].uid);
		archive_entry_set_mtime(en, 1700000000, 0);
		switch (v[i].type) {
		case 'd':
			archive_entry_set_filetype(en, AE_IFDIR);
			archive_entry_set_perm(en, v[i].mode ? v[i].mode : 0755);
			break;
		case 'l':
			archive_entry_set_filetype(en, AE_IFLNK);
			archive_entry_set_symlink(en, v[i].extra);
			archive_entry_set_perm(en, 0777);
			break;
		case 'h':
			archive_entry_set_filetype(en, AE_IFREG);
			archive_entry_set_hardlink(en, v[i].extra);
			archive_entry_set_perm(en, 0644);
			break;
		case 'c':
			archive_entry_set_filetype(en, AE_IFCHR);
			archive_entry_set_rdev(en, makedev(1, 3));
			archive_entry_set_perm(en, 0666);
			break;
		default:
			archive_entry_set_filetype(en, AE_IFREG);
			archive_entry_set_size(en, v[i].extra ? (la_int64_t)strlen(v[i].extra) : 0);
			archive_entry_set_perm(en, v[i].mode ? v[i].mode : 0644);
		}
		archive_write_header(a, en);
		if (v[i].type == 'f' && v[i].extra)
			archive_write_data(a, v[i].extra, strlen(v[i].extra));
		archive_entry_free(en);
	}
	archive_write_close(a);
	archive_write_free(a);
	fd = memfd_create("layer", 0);
	if (fd < 0 || write(fd, buf, used) != (ssize_t)used)
		abort();
	return fd;
}

static int
unpack(const struct ent *v, size_t n, int gz, const char *dir, const int *lower, int nlower,
    const char *diff_id, int64_t max, struct image_unpack_stats *st, struct sbx_err *e)
{
	struct image_ids ids = { 65536, geteuid() == 0, 0 };
	struct image_unpack_limits lim = { max, 1000 };
	int blob = tar_of(v, n, gz), dest, rc;

	mkdir(dir, 0755);
	dest = open(dir, O_RDONLY | O_DIRECTORY);
	rc = image_layer_unpack(blob, dest, lower, nlower, diff_id, &ids, &lim, st, e);
	close(dest);
	close(blob);
	return rc;
}

static int
exists(const char *top, const char *rel, struct stat *sb)
{
	char p[512];
	struct stat tmp;

	snprintf(p, sizeof p, "%s/%s", top, rel);
	return lstat(p, sb ? sb : &tmp) == 0;
}

int
main(void)
{
	char tmpl[] = "/tmp/image-unit-XXXXXX", p[600], q[512], d[IMAGE_DIGEST_LEN], mt[128];
	const char *top = mkdtemp(tmpl);
	struct image_unpack_stats st;
	struct sbx_err e;
	struct stat sb;

	/* --- references ------------------------------------------------------- */
	ref_is("busybox", "docker.io/library/busybox:latest");
	ref_is("debian:12", "docker.io/library/debian:12");
	ref_is("index.docker.io/library/debian:12", "docker.io/library/debian:12");
	ref_is("team/tool", "docker.io/team/tool:latest");
	ref_is("ghcr.io/o/n:v1.2", "ghcr.io/o/n:v1.2");
	ref_is("localhost/x", "localhost/x:latest");
	ref_is("127.0.0.1:5000/a/b/c:t", "127.0.0.1:5000/a/b/c:t");
	ref_is("[::1]:5000/x:1", "[::1]:5000/x:1");
	ref_is("x@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "docker.io/library/x@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	ref_is("a__b/c-d.e:_x", "docker.io/a__b/c-d.e:_x");
	ref_is("", NULL);
	ref_is("Not A Ref", NULL);
	ref_is("UPPER", NULL);
	ref_is("x:", NULL);
	ref_is("x:-bad", NULL);
	ref_is("x@sha256:short", NULL);
	ref_is("a/../b", NULL);
	ref_is("a//b", NULL);
	ref_is("host:99999999/x", NULL);
	ref_is("x\ty", NULL);
	/* A long one-component name round-trips: its "library/" prefix is no
	 * reason to cut the name the length check already allowed. */
	{
		char name[236], want[300];
		memset(name, 'a', 235);
		name[235] = '\0';
		snprintf(want, sizeof want, "docker.io/library/%s:latest", name);
		ref_is(name, want);
		ref_is(want, want);
	}
	{
		struct image_ref r;
		image_ref_parse("docker.io/x", &r, NULL);
		check(strcmp(image_ref_host(&r), "registry-1.docker.io") == 0,
		    "docker.io is reached at registry-1.docker.io");
		image_ref_parse("127.0.0.1:5000/x", &r, NULL);
		check(image_ref_loopback(&r), "127.0.0.1:5000 is loopback");
		image_ref_parse("localhost:5000/x", &r, NULL);
		check(image_ref_loopback(&r), "localhost is loopback");
		image_ref_parse("127.0.0.1.example.com/x", &r, NULL);
		check(!image_ref_loopback(&r), "127.0.0.1.example.com is not");
	}

	/* --- challenges --------------------------------------------------------- */
	{
		char s[32], realm[1024], sv[256], sc[512];
		check(image_challenge_parse("Bearer realm=\"https://auth.docker.io/token\","
		    "service=\"registry.docker.io\",scope=\"repository:library/x:pull\"", s, sizeof s,
		    realm, sizeof realm, sv, sizeof sv, sc, sizeof sc) == 0 &&
		    strcmp(s, "Bearer") == 0 && strcmp(realm, "https://auth.docker.io/token") == 0 &&
		    strcmp(sv, "registry.docker.io") == 0 && strcmp(sc, "repository:library/x:pull") == 0,
		    "Docker Hub's challenge: realm, service, scope");
		check(image_challenge_parse("Basic realm=\"a \\\"q\\\" b\"", s, sizeof s, realm,
		    sizeof realm, sv, sizeof sv, sc, sizeof sc) == 0 && strcmp(s, "Basic") == 0 &&
		    strcmp(realm, "a \"q\" b") == 0, "Basic, a quoted realm with escapes");
		check(image_challenge_parse("Bearer realm=\"unterminated", s, sizeof s, realm,
		    sizeof realm, sv, sizeof sv, sc, sizeof sc) < 0, "an unterminated quote is refused");
	}

	/* --- index, manifest, config -------------------------------------------- */
	{
		const char *idx = "{\"manifests\":["
		    "{\"digest\":\"sha256:1111111111111111111111111111111111111111111111111111111111111111\","
		    "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v7\"}},"
		    "{\"digest\":\"sha256:2222222222222222222222222222222222222222222222222222222222222222\","
		    "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
		    "{\"digest\":\"sha256:3333333333333333333333333333333333333333333333333333333333333333\","
		    "\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		    "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
		check(image_index_pick(idx, strlen(idx), "linux", "amd64", "", d, mt, sizeof mt, &e) == 0 &&
		    strncmp(d + 7, "3333", 4) == 0, "the index gives linux/amd64's manifest");
		check(image_index_pick(idx, strlen(idx), "linux", "arm64", "v8", d, mt, sizeof mt, &e) == 0 &&
		    strncmp(d + 7, "2222", 4) == 0, "...and linux/arm64/v8's");
		check(image_index_pick(idx, strlen(idx), "linux", "s390x", "", d, mt, sizeof mt, &e) < 0 &&
		    strstr(e.msg, "linux/arm/v7, linux/arm64/v8, linux/amd64") != NULL,
		    "a platform it lacks: the error names those it has");
		check(image_kind_of("application/vnd.docker.distribution.manifest.list.v2+json", "", 0) ==
		    IMAGE_KIND_INDEX, "a Docker manifest list is an index");
		check(image_kind_of("application/json", idx, strlen(idx)) == IMAGE_KIND_INDEX,
		    "a vague content type: the body's shape decides");
	}
	{
		struct image_info img;
		const char *m = "{\"schemaVersion\":2,\"config\":{\"mediaType\":"
		    "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:"
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1},"
		    "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
		    "\"digest\":\"sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
		    "\"size\":10}]}";
		const char *cfg = "{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{\"type\":"
		    "\"layers\",\"diff_ids\":[\"sha256:cccccccccccccccccccccccccccccccccccccccccccccccc"
		    "cccccccccccccccc\"]},\"config\":{\"Env\":[\"PATH=/x\",\"=bad\",\"NOEQUALS\"],"
		    "\"User\":\"app\",\"WorkingDir\":\"relative\"}}";
		memset(&img, 0, sizeof img);
		check(image_manifest_parse(m, strlen(m), &img, &e) == 0 && img.nlayers == 1 &&
		    img.layers[0].size == 10, "an OCI manifest: its config and one layer");
		check(image_config_apply(cfg, strlen(cfg), &img, &e) == 0 &&
		    strncmp(img.layers[0].diff_id + 7, "cccc", 4) == 0 &&
		    strcmp(img.platform, "linux/amd64") == 0, "its config: the diff_id and platform");
		check(img.env[0] && strcmp(img.env[0], "PATH=/x") == 0 && img.env[1] == NULL,
		    "Env keeps NAME=VALUE only");
		check(strcmp(img.user, "app") == 0 && img.workdir == NULL,
		    "User kept, a relative WorkingDir left out");
		free(img.layers);
		for (char **v = img.env; *v; v++)
			free(*v);
		free(img.env);
		free(img.user);
		free(img.workdir);
		memset(&img, 0, sizeof img);
		const char *foreign = "{\"config\":{\"mediaType\":\"application/vnd.docker.container."
		    "image.v1+json\",\"digest\":\"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaaaaaaaaaaaaaaa\"},\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs."
		    "foreign.diff.tar.gzip\",\"digest\":\"sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		    "bbbbbbbbbbbbbbbbbbbbb\",\"size\":1}]}";
		check(image_manifest_parse(foreign, strlen(foreign), &img, &e) < 0 &&
		    strstr(e.msg, "foreign layer") != NULL, "a foreign (Windows) layer is refused by name");
		free(img.layers);
		memset(&img, 0, sizeof img);
		const char *helm = "{\"config\":{\"mediaType\":\"application/vnd.cncf.helm.config.v1+json\","
		    "\"digest\":\"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"},"
		    "\"layers\":[]}";
		check(image_manifest_parse(helm, strlen(helm), &img, &e) < 0 &&
		    strstr(e.msg, "not a container image") != NULL, "an artifact that is not an image");
	}

	/* --- what an agent may use, and how backends take names ---------------- */
	{
		struct config *cfg = config_new();
		struct core *c;
		config_set(cfg, "images_allowed", "python:*, 127.0.0.1:5000/team/*, debian:12, /srv/root",
		    CONFIG_FILE, &e);
		config_set(cfg, "templates", "node=node:22", CONFIG_FILE, &e);
		c = core_new(cfg);
		check(core_image_agent_may(c, "python:3.12"), "python:* allows python:3.12");
		check(core_image_agent_may(c, "docker.io/library/python:3.11-slim"), "...and its canonical name");
		check(!core_image_agent_may(c, "pythonx:1"), "...not pythonx:1");
		check(core_image_agent_may(c, "127.0.0.1:5000/team/a/b:1"), "PREFIX/* allows below it");
		check(!core_image_agent_may(c, "127.0.0.1:5000/other:1"), "...nothing beside it");
		check(core_image_agent_may(c, "debian:12") && !core_image_agent_may(c, "debian:11"),
		    "an exact reference allows that tag only");
		check(core_image_agent_may(c, "node:22"), "a template's image is allowed");
		check(core_image_agent_may(c, "/srv/root") && !core_image_agent_may(c, "/etc"),
		    "a directory only when named");
		core_free(c);
		char *k = core_image_key("ns", "debian");
		check(strcmp(k, "docker.io/library/debian:latest") == 0, "ns: a bare name is an OCI image");
		free(k);
		k = core_image_key("qemu", "default");
		check(strcmp(k, "default") == 0, "qemu: a bare name is its VM image");
		free(k);
		k = core_image_key("qemu", "debian:12");
		check(strcmp(k, "docker.io/library/debian:12") == 0, "qemu: a tag makes it an OCI image");
		free(k);
		k = core_image_key("lambda", "arn:aws:lambda:us-east-1:1:microvm-image:x");
		check(strcmp(k, "arn:aws:lambda:us-east-1:1:microvm-image:x") == 0, "lambda: an ARN stays");
		free(k);
	}

	/* --- the layer reader ------------------------------------------------------ */
	{
		const struct ent l1[] = {
			{ 'd', "./", NULL, 0755, 0 }, { 'd', "etc", NULL, 0, 0 },
			{ 'f', "etc/a", "a\n", 0, 0 }, { 'f', "etc/gone", "x", 0, 0 },
			{ 'd', "var/opq", NULL, 0, 0 }, { 'f', "var/opq/old", "o", 0, 0 },
			{ 'f', "home/app/f", "f", 0600, 1000 }, { 'h', "etc/a-link", "etc/a", 0, 0 },
			{ 'l', "etc/abs", "/etc/a", 0, 0 }, { 'c', "dev-null", NULL, 0, 0 },
		};
		snprintf(p, sizeof p, "%s/l1", top);
		check(unpack(l1, ARRAY_SIZE(l1), 1, p, NULL, 0, NULL, 0, &st, &e) == 0,
		    "a gzip'd layer unpacks (%s)", e.msg);
		check(exists(p, "etc/a-link", &sb) && sb.st_nlink == 2, "a hard link is one file");
		check(exists(p, "home/app/f", &sb) && (sb.st_mode & 07777) == 0600 &&
		    (geteuid() != 0 || sb.st_uid == 1000), "modes and owners kept (parents made)");
		check(!exists(p, "dev-null", NULL) && st.skipped_devices == 1, "a device node is left out");
		const struct ent l2[] = {
			{ 'f', "etc/.wh.gone", NULL, 0, 0 }, { 'f', "var/opq/.wh..wh..opq", NULL, 0, 0 },
			{ 'f', "var/opq/new", "n", 0, 0 }, { 'h', "b-link", "etc/a", 0, 0 },
		};
		int low = open(p, O_PATH | O_DIRECTORY);
		snprintf(q, sizeof q, "%s/l2", top);
		check(unpack(l2, ARRAY_SIZE(l2), 0, q, &low, 1, NULL, 0, &st, &e) == 0,
		    "a layer of whiteouts unpacks (%s)", e.msg);
		close(low);
		check(exists(q, "etc/gone", &sb) && S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(0, 0),
		    ".wh.gone is a 0/0 character device");
		snprintf(p, sizeof p, "%s/var/opq", q);
		char x[4] = "";
		check(getxattr(p, "user.overlay.opaque", x, sizeof x) == 1 && x[0] == 'y',
		    ".wh..wh..opq makes its directory opaque (user.overlay.opaque=y)");
		check(exists(q, "b-link", &sb) && S_ISREG(sb.st_mode) && sb.st_size == 2 &&
		    st.copied_links == 1, "a hard link to a lower layer's file is a copy");
	}
	{
		static const struct { const char *what; struct ent e[3]; size_t n; } bad[] = {
			{ "a \"..\" component", { { 'f', "a/../../x", "x", 0, 0 } }, 1 },
			{ "a path through a link", { { 'l', "l", "/etc", 0, 0 }, { 'f', "l/passwd", "x", 0, 0 } }, 2 },
			{ "a hard link out of the layer", { { 'h', "h", "../x", 0, 0 } }, 1 },
			{ "a hard link to a file nobody has", { { 'h', "h", "etc/passwd", 0, 0 } }, 1 },
		};
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			snprintf(p, sizeof p, "%s/bad%zu", top, i);
			check(unpack(bad[i].e, bad[i].n, 0, p, NULL, 0, NULL, 0, &st, &e) < 0 &&
			    strstr(e.msg, "layer refused") != NULL, "%s refuses the layer: %s", bad[i].what,
			    e.msg);
		}
		snprintf(q, sizeof q, "%s/../x", top);
		check(access(q, F_OK) < 0, "...and nothing was made outside");
		const struct ent big[] = { { 'f', "big", "0123456789", 0, 0 } };
		snprintf(p, sizeof p, "%s/big", top);
		check(unpack(big, 1, 0, p, NULL, 0, NULL, 5, &st, &e) < 0 &&
		    strstr(e.hint, "image_max_layer") != NULL, "over the cap: refused, naming the setting "
		    "(%s)", e.msg);
		snprintf(p, sizeof p, "%s/digest", top);
		check(unpack(big, 1, 0, p, NULL, 0, "sha256:00000000000000000000000000000000000000000000"
		    "00000000000000000000", 0, &st, &e) < 0 && strstr(e.msg, "config says") != NULL,
		    "a diff_id that is not the content's: refused");
	}
	snprintf(p, sizeof p, "rm -rf '%s'", top);
	if (system(p) != 0)
		printf("# could not remove %s\n", top);
	return tap_end();
}
