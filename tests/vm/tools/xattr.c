// SPDX-License-Identifier: GPL-2.0
/*
 * xattr: set or read an extended attribute (busybox has getfattr only).
 *   xattr set PATH NAME VALUE
 *   xattr get PATH NAME          (prints the value; exit 1 if unset)
 * Used to write what a delegated cgroup owner or a damaged store could leave
 * behind, bypassing scx_chameleon's own validation.
 */
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

int main(int argc, char **argv)
{
	char buf[1024];
	ssize_t n;

	if (argc == 5 && !strcmp(argv[1], "set")) {
		if (setxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0)) {
			perror("xattr set");
			return 1;
		}
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "get")) {
		n = getxattr(argv[2], argv[3], buf, sizeof(buf) - 1);
		if (n < 0) {
			perror("xattr get");
			return 1;
		}
		buf[n] = 0;
		printf("%s\n", buf);
		return 0;
	}
	fprintf(stderr, "usage: xattr set PATH NAME VALUE | xattr get PATH NAME\n");
	return 2;
}
