// SPDX-License-Identifier: GPL-2.0
/*
 * hotplug_time: time sysfs CPU hotplug, the baseline fuse/split is compared
 * against.
 *   hotplug_time CPU ROUNDS
 * Each round offlines then onlines CPU and prints
 * "hotplug cpu=C offline_ns=N online_ns=M".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long set_online(const char *path, const char *val)
{
	long long t0;
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return -errno;
	t0 = now_ns();
	if (write(fd, val, 1) != 1) {
		int err = errno;

		close(fd);
		return -err;
	}
	t0 = now_ns() - t0;
	close(fd);
	return t0;
}

int main(int argc, char **argv)
{
	char path[128];
	int cpu, rounds;

	if (argc != 3 || (cpu = atoi(argv[1])) <= 0 || (rounds = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: hotplug_time CPU(>0) ROUNDS\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	for (int i = 0; i < rounds; i++) {
		long long off = set_online(path, "0");
		long long on = set_online(path, "1");

		if (off < 0 || on < 0) {
			fprintf(stderr, "hotplug_time: cpu%d: %s\n", cpu,
				strerror((int)-(off < 0 ? off : on)));
			return 1;
		}
		printf("hotplug cpu=%d offline_ns=%lld online_ns=%lld\n", cpu, off, on);
	}
	return 0;
}
