/* Unit tests of agent/path.h: path_normalize's lexical rules, and path_open /
 * path_open_parent / path_mkdir_parents staying inside a scratch root whatever
 * the symlinks in it say.  TAP output; exit 1 on any failure. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "agent/agent.h"
#include "agent/path.h"
#include "lib/util.h"

static void
norm_is(const char *ws, const char *in, const char *want)
{
	char *got = path_normalize(ws, in);
	char what[256];

	snprintf(what, sizeof what, "normalize(%s, \"%s\") = %s", ws, in, want ? want : "error");
	if (want == NULL) {
		check(got == NULL && errno == EINVAL, "%s", what);
	} else {
		check(got != NULL && strcmp(got, want) == 0, "%s", what);
		if (got != NULL && strcmp(got, want) != 0)
			printf("# got: %s\n", got);
	}
	free(got);
}

/* The content of path (inside the root) read through path_open, or "" on error. */
static const char *
read_in_root(const char *path, char *buf, size_t len)
{
	int fd = path_open(path, O_RDONLY, 0);
	ssize_t k;

	buf[0] = '\0';
	if (fd < 0)
		return buf;
	k = read(fd, buf, len - 1);
	buf[k > 0 ? k : 0] = '\0';
	close(fd);
	return buf;
}

static void
put(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fputs(content, f);
	fclose(f);
}

int
main(void)
{
	char tmpl[] = "/tmp/sbxpath.XXXXXX";
	char buf[256], p[512];
	char *top, *name = NULL;
	int fd;

	/* ---- path_normalize ---- */
	norm_is("/workspace", "a/b", "/workspace/a/b");
	norm_is("/workspace", "./a/./b/.", "/workspace/a/b");
	norm_is("/workspace", "/etc/passwd", "/etc/passwd");
	norm_is("/workspace", "../../../etc/passwd", "/etc/passwd");
	norm_is("/workspace", "/..", "/");
	norm_is("/workspace", "/../../x", "/x");
	norm_is("/workspace", "a/../../..", "/");
	norm_is("/workspace", "//a///b//", "/a/b");
	norm_is("/workspace", "a/b/", "/workspace/a/b");
	norm_is("/workspace", ".", "/workspace");
	norm_is("/workspace", "..", "/");
	norm_is("/workspace", "/", "/");
	norm_is("/workspace", "a/..", "/workspace");
	norm_is("/workspace", "...", "/workspace/...");
	norm_is("/workspace", "..a/b..", "/workspace/..a/b..");
	norm_is("/", "x", "/x");
	norm_is("/workspace", "", NULL);
	{
		char *longp = xmalloc(PATH_MAX_LEN + 2);
		memset(longp, 'a', PATH_MAX_LEN + 1);
		longp[PATH_MAX_LEN + 1] = '\0';
		norm_is("/workspace", longp, NULL);
		longp[PATH_MAX_LEN] = '\0';
		char *ok = path_normalize("/", longp);
		check(ok != NULL && strlen(ok) == PATH_MAX_LEN + 1, "a path of exactly PATH_MAX_LEN is taken");
		free(ok);
		free(longp);
	}

	/* ---- confinement in a scratch root ---- */
	if ((top = mkdtemp(tmpl)) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(p, sizeof p, "%s/root/workspace", top);
	mkdir_p(p, 0755);
	snprintf(p, sizeof p, "%s/root/etc", top);
	mkdir_p(p, 0755);
	snprintf(p, sizeof p, "%s/root/etc/passwd", top);
	put(p, "inside");
	snprintf(p, sizeof p, "%s/outside", top);
	put(p, "outside");
	snprintf(p, sizeof p, "%s/root/workspace/abs", top);
	check(symlink("/etc/passwd", p) == 0, "made an absolute symlink");
	snprintf(p, sizeof p, "%s/root/workspace/rel", top);
	check(symlink("../../outside", p) == 0, "made a relative symlink climbing out");
	snprintf(p, sizeof p, "%s/root/workspace/hostabs", top);
	snprintf(buf, sizeof buf, "%s/outside", top);
	check(symlink(buf, p) == 0, "made a symlink to the host path of a file");

	snprintf(p, sizeof p, "%s/root", top);
	agent.root = p;
	agent.workspace = "/workspace";

	check(strcmp(read_in_root("/etc/passwd", buf, sizeof buf), "inside") == 0,
	    "path_open reads the root's /etc/passwd");
	check(strcmp(read_in_root("../../../etc/passwd", buf, sizeof buf), "inside") == 0,
	    "../../../etc/passwd stays in the root");
	check(strcmp(read_in_root("abs", buf, sizeof buf), "inside") == 0,
	    "an absolute symlink resolves in the root");
	check(path_open("rel", O_RDONLY, 0) < 0 && errno == ENOENT,
	    "a relative symlink climbing out finds nothing (root/outside does not exist)");
	check(path_open("hostabs", O_RDONLY, 0) < 0 && errno == ENOENT,
	    "a symlink to a host path is taken inside the root");
	check(path_open("abs", O_RDONLY | O_NOFOLLOW, 0) < 0 && errno == ELOOP,
	    "O_NOFOLLOW refuses a symlink in the last component");

	fd = path_open("rel", O_WRONLY | O_CREAT, 0644);
	check(fd >= 0, "creating through a relative symlink works");
	if (fd >= 0) {
		check(write(fd, "w", 1) == 1, "and writes");
		close(fd);
	}
	snprintf(buf, sizeof buf, "%s/root/outside", top);
	check(access(buf, F_OK) == 0, "the file landed at root/outside");
	snprintf(buf, sizeof buf, "%s/outside", top);
	{
		char c[16] = "";
		FILE *f = fopen(buf, "r");
		if (f != NULL) {
			if (fgets(c, sizeof c, f) == NULL)
				c[0] = '\0';
			fclose(f);
		}
		check(strcmp(c, "outside") == 0, "the host file is unchanged");
	}

	fd = path_open_parent("abs", &name);
	check(fd >= 0 && name != NULL && strcmp(name, "abs") == 0,
	    "path_open_parent gives the last name without following it");
	if (fd >= 0) {
		struct stat st;
		check(fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode),
		    "the parent descriptor sees the link itself");
		close(fd);
	}
	free(name);
	name = NULL;
	check(path_open_parent("/", &name) < 0 && errno == EINVAL, "path_open_parent(/) is EINVAL");
	check(path_open_parent("", &name) < 0 && errno == EINVAL, "path_open_parent(\"\") is EINVAL");

	check(path_mkdir_parents("../../../x/y/z/file") == 0, "mkdir_parents with ..");
	snprintf(buf, sizeof buf, "%s/root/x/y/z", top);
	check(access(buf, F_OK) == 0, "parents created inside the root");
	snprintf(buf, sizeof buf, "%s/root/x/y/z/file", top);
	check(access(buf, F_OK) != 0, "the last component is not created");

	snprintf(buf, sizeof buf, "rm -rf '%s'", top);
	if (system(buf) != 0)
		printf("# could not remove %s\n", top);
	return tap_end();
}
