/* Unit tests for core/copy/guard.c: the names an archive from a sandbox may
 * use, the links it may make, and that extraction under a destination never
 * goes through a link (at the destination or under it) or outside it.  Run as
 * root and as not; TAP lines. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "core/copy/guard.h"
#include "lib/util.h"

static void
name_is(const char *in, const char *want)
{
	char out[256], why[128] = "";
	int rc = copy_guard_name(in, out, sizeof out, why, sizeof why);

	if (want == NULL)
		check(rc < 0, "the entry name \"%s\" is refused (%s)", in, why);
	else if (!check(rc == 0 && strcmp(out, want) == 0, "the entry name \"%s\" is \"%s\"", in, want))
		printf("# got: %s (%s)\n", rc == 0 ? out : "(refused)", why);
}

static void
link_is(const char *name, const char *target, int inside)
{
	check(copy_guard_link_inside(name, target) == inside, "%s -> %s %s", name, target,
	    inside ? "stays inside the tree" : "leaves it (not made)");
}

int
main(void)
{
	char tmpl[] = "/tmp/copy-guard-XXXXXX", p[512];
	const char *top = mkdtemp(tmpl);
	struct sbx_err e;
	struct stat st;
	int dfd, fd;

	name_is("a/b.txt", "a/b.txt");
	name_is("./a/b", "a/b");
	name_is("dir/", "dir");
	name_is(".", NULL);
	name_is("./", NULL);
	name_is("..", NULL);
	name_is("a/../../b", NULL);
	name_is("a/./b", NULL);
	name_is("a//b", NULL);
	name_is("/etc/passwd", NULL);
	name_is("", NULL);
	{
		char deep[2 * (COPY_GUARD_DEPTH_MAX + 1)], out[sizeof deep], why[128];
		for (int i = 0; i <= COPY_GUARD_DEPTH_MAX; i++)
			memcpy(deep + 2 * i, "a/", 2);
		deep[2 * COPY_GUARD_DEPTH_MAX - 1] = '\0';
		check(copy_guard_name(deep, out, sizeof out, why, sizeof why) == 0,
		    "a name %d directories deep is taken", COPY_GUARD_DEPTH_MAX);
		deep[2 * COPY_GUARD_DEPTH_MAX - 1] = '/';
		deep[2 * COPY_GUARD_DEPTH_MAX + 1] = '\0';
		check(copy_guard_name(deep, out, sizeof out, why, sizeof why) < 0,
		    "one deeper is refused (%s)", why);
	}

	link_is("dist", "/some/host/dir", 0);
	link_is("dist", "build", 1);
	link_is("a/b/l", "../../x", 1);
	link_is("a/b/l", "../../../x", 0);
	link_is("l", "..", 0);
	link_is("l", "./sub/./f", 1);
	link_is("a/l", "b/../..", 0);
	link_is("a/l", "", 0);

	/* The destination itself a link: refused, never written through. */
	snprintf(p, sizeof p, "%s/host", top);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/out", top);
	check(symlink("host", p) == 0, "a link out -> host");
	check(copy_guard_dest_open(p, 1, &e) < 0 && strstr(e.msg, "symlink") != NULL,
	    "a destination that is a link is refused: %s", e.msg);
	unlink(p);
	dfd = copy_guard_dest_open(p, 1, &e);
	check(dfd >= 0, "a missing destination is made and opened");
	/* A link under it, left by an earlier copy: never followed. */
	snprintf(p, sizeof p, "%s/out/dist", top);
	symlink("../host", p);
	errno = 0;
	fd = copy_guard_openat(dfd, "dist/f", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	check(fd < 0 && errno == ELOOP, "a file under a link in the destination is not written (errno %d)",
	    errno);
	snprintf(p, sizeof p, "%s/host/f", top);
	check(stat(p, &st) < 0, "and nothing reached the link's target");
	check(copy_guard_openat(dfd, "dist", O_WRONLY | O_CREAT | O_TRUNC, 0644) < 0,
	    "the link itself is not opened for writing either");
	check(copy_guard_mkdirat(dfd, "dist/sub", 0755) < 0, "no directory is made through it");
	check(copy_guard_openat(dfd, "../escape", O_WRONLY | O_CREAT, 0644) < 0,
	    "nothing is made above the destination");
	check(copy_guard_mkdirat(dfd, "new", 0755) == 0 && copy_guard_mkdirat(dfd, "new/deeper", 0755) == 0,
	    "directories are made under it");
	fd = copy_guard_openat(dfd, "new/deeper/f", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	check(fd >= 0 && write(fd, "x", 1) == 1, "a file under them is written");
	if (fd >= 0)
		close(fd);
	close(dfd);

	/* Copies in: the top is lstat'ed. */
	snprintf(p, sizeof p, "%s/config", top);
	symlink("/etc/shadow", p);
	check(copy_guard_source(p, &st, &e) < 0 && strstr(e.msg, "symlink") != NULL,
	    "a source that is a link is refused: %s", e.msg);
	snprintf(p, sizeof p, "%s/host", top);
	check(copy_guard_source(p, &st, &e) == 0 && S_ISDIR(st.st_mode), "a real directory is taken");
	snprintf(p, sizeof p, "%s/dirlink", top);
	symlink("host", p);
	check(copy_guard_source(p, &st, &e) < 0, "a link to a directory is refused");
	snprintf(p, sizeof p, "%s/dirlink/", top);
	check(copy_guard_source(p, &st, &e) == 0 && S_ISDIR(st.st_mode),
	    "... and followed when written with a trailing '/'");

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", top);
	return tap_end();
}
