// SPDX-License-Identifier: GPL-2.0
/*
 * progress: a task that reports its progress through
 * include/chameleon_progress.h, for the automatic tax (auto_tax.sh).
 *   progress [-g CGROUP_DIR] spin|sleep SECONDS
 * spin: CPU-bound, one bump per loop of a little arithmetic (it goes as fast
 * as its CPU: fusing speeds it up under --emulate); sleep: one bump per
 * 1 ms sleep (its pace is the sleeps': fusing cannot speed it up). Joins
 * CGROUP_DIR first (so that it is tagged), then works for SECONDS of wall
 * time, removes its counter and prints "progress pid=P mode=M count=N".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chameleon_progress.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr, "usage: progress [-g CGROUP_DIR] spin|sleep SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct chameleon_progress *p;
	unsigned long long count = 0;
	volatile unsigned long sink = 0;
	const char *cgroup = NULL;
	double secs, end;
	int opt, spin;
	char *tail;

	while ((opt = getopt(argc, argv, "g:")) != -1) {
		if (opt != 'g')
			return usage();
		cgroup = optarg;
	}
	if (optind != argc - 2)
		return usage();
	if (!strcmp(argv[optind], "spin"))
		spin = 1;
	else if (!strcmp(argv[optind], "sleep"))
		spin = 0;
	else
		return usage();
	secs = strtod(argv[optind + 1], &tail);
	if (*tail || secs <= 0)
		return usage();
	if (cgroup) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		f = fopen(path, "w");
		if (!f || fprintf(f, "0\n") < 0 || fclose(f)) {
			fprintf(stderr, "progress: join %s: %s\n", cgroup, strerror(errno));
			return 1;
		}
	}
	p = chameleon_progress_open();
	if (!p) {
		fprintf(stderr, "progress: no counter in " CHAMELEON_PROGRESS_DIR ": %s\n", strerror(errno));
		return 1;
	}
	end = now() + secs;
	while (now() < end) {
		if (spin) {
			for (int i = 0; i < 1000; i++)
				sink += i;
		} else {
			usleep(1000);
		}
		chameleon_progress_add(p, 1);
		count++;
	}
	chameleon_progress_close(p);
	printf("progress pid=%d mode=%s count=%llu\n", getpid(), argv[optind], count);
	return 0;
}
