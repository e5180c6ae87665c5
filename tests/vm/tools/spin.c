// SPDX-License-Identifier: GPL-2.0
/*
 * spin: a CPU-bound task for the VM tests.
 *   spin [-c CPU] [-g CGROUP_DIR] SECONDS
 * Optionally pins itself to CPU and moves itself into CGROUP_DIR (so that it
 * is tagged), then burns CPU for SECONDS of wall time and prints
 * "spin pid=P seconds=S loops=N" (N: work done, for speed comparisons).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *cgroup = NULL;
	unsigned long long loops = 0;
	volatile unsigned long long sink = 0;
	double secs, end;
	int opt, cpu = -1;
	char *tail;

	while ((opt = getopt(argc, argv, "c:g:")) != -1) {
		switch (opt) {
		case 'c': cpu = atoi(optarg); break;
		case 'g': cgroup = optarg; break;
		default:
			fprintf(stderr, "usage: spin [-c CPU] [-g CGROUP_DIR] SECONDS\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: spin [-c CPU] [-g CGROUP_DIR] SECONDS\n");
		return 2;
	}
	secs = strtod(argv[optind], &tail);
	if (*tail || secs <= 0) {
		fprintf(stderr, "spin: bad SECONDS '%s'\n", argv[optind]);
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "spin: pin to cpu %d: %s\n", cpu, strerror(errno));
			return 1;
		}
	}
	if (cgroup) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		f = fopen(path, "w");
		if (!f || fprintf(f, "0\n") < 0 || fclose(f)) {
			fprintf(stderr, "spin: join %s: %s\n", cgroup, strerror(errno));
			return 1;
		}
	}
	end = now() + secs;
	while (now() < end) {
		for (int i = 0; i < 100000; i++)
			sink += i;
		loops++;
	}
	printf("spin pid=%d seconds=%g loops=%llu\n", getpid(), secs, loops);
	return 0;
}
