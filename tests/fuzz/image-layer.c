/* Fuzz target: the layer reader (core/image/layer.c), a stranger's tar (plain,
 * gzip or zstd) unpacked as an overlay lower layer.  Whatever the input, every
 * file lands inside the layer's directory: the directory around it (which
 * holds the layer, a file and an empty directory) is checked after each run,
 * and the layer removed. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/image/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char box[64];
static int box_fd = -1;

static void
rm_tree(int dfd, const char *name)
{
	struct stat st;
	int fd;
	DIR *d;
	struct dirent *de;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(dfd, name, 0);
		return;
	}
	(void)fchmodat(dfd, name, 0700, 0);
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0 ||
	    (d = fdopendir(fd)) == NULL)
		abort();
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			rm_tree(dirfd(d), de->d_name);
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		abort();
}

/* Only "layer", "keep" (as it was) and "empty/" (still empty) in the box. */
static void
box_check(void)
{
	DIR *d = fdopendir(dup(box_fd));
	struct dirent *de;
	int n = 0;
	char buf[8];

	if (d == NULL)
		abort();
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, "layer") != 0 && strcmp(de->d_name, "keep") != 0 &&
		    strcmp(de->d_name, "empty") != 0)
			abort();	/* written outside the layer */
		n++;
	}
	closedir(d);
	int fd = openat(box_fd, "keep", O_RDONLY | O_NOFOLLOW);
	if (n != 3 || fd < 0 || read(fd, buf, sizeof buf) != 5 || memcmp(buf, "keep\n", 5) != 0)
		abort();
	close(fd);
	if ((d = fdopendir(openat(box_fd, "empty", O_RDONLY | O_DIRECTORY | O_NOFOLLOW))) == NULL)
		abort();
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			abort();
	closedir(d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image_ids ids = { 65536, 0, 1 };
	struct image_unpack_limits lim = { 8 << 20, 20000 };
	struct image_unpack_stats st;
	struct sbx_err e;
	int blob, dest;

	if (box_fd < 0) {
		snprintf(box, sizeof box, "/tmp/fuzz-layer.XXXXXX");
		if (mkdtemp(box) == NULL || (box_fd = open(box, O_RDONLY | O_DIRECTORY)) < 0)
			abort();
		int k = openat(box_fd, "keep", O_WRONLY | O_CREAT, 0600);
		if (k < 0 || write(k, "keep\n", 5) != 5 || mkdirat(box_fd, "empty", 0700) < 0)
			abort();
		close(k);
	}
	if ((blob = memfd_create("layer", 0)) < 0 || write(blob, data, size) != (ssize_t)size)
		abort();
	if (mkdirat(box_fd, "layer", 0755) < 0 ||
	    (dest = openat(box_fd, "layer", O_RDONLY | O_DIRECTORY)) < 0)
		abort();
	(void)image_layer_unpack(blob, dest, NULL, 0, NULL, &ids, &lim, &st, &e);
	close(dest);
	close(blob);
	box_check();
	rm_tree(box_fd, "layer");
	return 0;
}
