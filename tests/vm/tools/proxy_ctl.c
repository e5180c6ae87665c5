// SPDX-License-Identifier: GPL-2.0
/*
 * proxy_ctl: exercise /dev/chameleon_proxy from the test VM.
 *   proxy_ctl info        print the INFO ioctl's answer
 *   proxy_ctl bad-ioctl   check that an unknown ioctl fails with ENOTTY
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "chameleon_proxy.h"

int main(int argc, char **argv)
{
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: proxy_ctl info|bad-ioctl\n");
		return 2;
	}
	fd = open("/dev/chameleon_proxy", O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "open /dev/chameleon_proxy: %s\n", strerror(errno));
		return 1;
	}
	if (!strcmp(argv[1], "info")) {
		struct chameleon_proxy_info info;

		memset(&info, 0xff, sizeof(info));
		if (ioctl(fd, CHAMELEON_PROXY_IOC_INFO, &info)) {
			fprintf(stderr, "INFO: %s\n", strerror(errno));
			return 1;
		}
		printf("abi_version=%u nr_cpu_ids=%u features=%#llx\n", info.abi_version,
		       info.nr_cpu_ids, (unsigned long long)info.features);
		return 0;
	}
	if (!strcmp(argv[1], "bad-ioctl")) {
		if (ioctl(fd, _IO(CHAMELEON_PROXY_IOC_MAGIC, 0x7f), 0) == 0) {
			fprintf(stderr, "unknown ioctl succeeded\n");
			return 1;
		}
		if (errno != ENOTTY) {
			fprintf(stderr, "unknown ioctl: %s, expected ENOTTY\n", strerror(errno));
			return 1;
		}
		/* A bad user pointer must be refused with EFAULT, not crash. */
		if (ioctl(fd, CHAMELEON_PROXY_IOC_INFO, (void *)16) == 0 || errno != EFAULT) {
			fprintf(stderr, "INFO to a bad pointer: %s, expected EFAULT\n", strerror(errno));
			return 1;
		}
		printf("unknown ioctl -> ENOTTY, bad pointer -> EFAULT\n");
		return 0;
	}
	fprintf(stderr, "unknown command '%s'\n", argv[1]);
	return 2;
}
