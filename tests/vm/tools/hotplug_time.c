// SPDX-License-Identifier: GPL-2.0
/*
 * hotplug_time: time sysfs CPU hotplug, the baseline fuse/split and park are
 * compared against.
 *   hotplug_time CPU ROUNDS
 *   hotplug_time CPULIST ROUNDS [PAUSE_MS]
 * Each round offlines then onlines the CPUs and prints
 * "hotplug cpu=C offline_ns=N online_ns=M" for one CPU, or
 * "hotplug cpus=LIST offline_ns=N online_ns=M" for a list ("1-3", "1,2,3"):
 * its CPUs are offlined one after the other, in the list's order, each write
 * starting when the previous one returned (what native hotplug offers for
 * several CPUs), then onlined the same way; N and M are the time from the
 * first write to the end of the last one (the files are opened before).
 * PAUSE_MS (default 0) is slept between the offlines and the onlines, and
 * after the onlines: for a comparison with an operation that comes that long
 * after the one before it (the kernel's hotplug lock is cheaper to take
 * again within an RCU grace period of its last release).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 64

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "1-3" or "1,2,3" (CPU 0 excluded) into cpus[]; returns how many, -1 if bad. */
static int parse_list(const char *list, int *cpus)
{
	const char *p = list;
	int n = 0;

	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return -1;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p)
				return -1;
		}
		if (lo <= 0 || hi < lo || hi >= 4096)
			return -1;
		for (long c = lo; c <= hi; c++) {
			if (n == MAX_CPUS)
				return -1;
			cpus[n++] = (int)c;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		p = end;
	}
	return n;
}

/* Write @val to each of @fds in turn; the time it took, or -errno. */
static long long set_all(const int *fds, int n, const char *val, int *failed)
{
	long long t0 = now_ns();

	for (int i = 0; i < n; i++) {
		if (pwrite(fds[i], val, 1, 0) != 1) {
			*failed = i;
			return -errno;
		}
	}
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	int cpus[MAX_CPUS], fds[MAX_CPUS], n, rounds, pause_ms = 0, failed = 0;
	char path[128];

	n = argc == 3 || argc == 4 ? parse_list(argv[1], cpus) : -1;
	if (argc == 4)
		pause_ms = atoi(argv[3]);
	if (n <= 0 || (rounds = atoi(argv[2])) <= 0 || pause_ms < 0) {
		fprintf(stderr, "usage: hotplug_time CPU|CPULIST (no CPU 0) ROUNDS [PAUSE_MS]\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpus[i]);
		fds[i] = open(path, O_WRONLY);
		if (fds[i] < 0) {
			fprintf(stderr, "hotplug_time: %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	for (int r = 0; r < rounds; r++) {
		long long off = set_all(fds, n, "0", &failed), on = off;

		if (off >= 0) {
			usleep(pause_ms * 1000);
			on = set_all(fds, n, "1", &failed);
		}

		if (off < 0 || on < 0) {
			fprintf(stderr, "hotplug_time: cpu%d: %s\n", cpus[failed],
				strerror((int)-(off < 0 ? off : on)));
			return 1;
		}
		if (n == 1)
			printf("hotplug cpu=%d offline_ns=%lld online_ns=%lld\n", cpus[0], off, on);
		else
			printf("hotplug cpus=%s offline_ns=%lld online_ns=%lld\n", argv[1], off, on);
		fflush(stdout);
		usleep(pause_ms * 1000);
	}
	return 0;
}
