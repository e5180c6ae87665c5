// SPDX-License-Identifier: GPL-2.0
/*
 * wait_watch PID MS: watch a task's /proc/PID/schedstat every 2 ms for the
 * next MS milliseconds of CLOCK_MONOTONIC and print, on one line,
 *   LONGEST_MS RUN_MS TURNS WAIT_MS GAP_MS
 * LONGEST_MS: the longest stretch in which the kernel accounted the task no
 *             CPU time at all (between two samples that saw it grow);
 * RUN_MS, TURNS, WAIT_MS: what the window added to its CPU time, to the
 *             times it was switched in, and to its time waiting on a run
 *             queue (schedstat fields 1-3: the kernel's accounting);
 * GAP_MS:     the longest time between two of our own samples, i.e. the
 *             resolution LONGEST_MS had (the sampler waits for a CPU too).
 * A shell loop forking a reader per sample, on CPUs all busy, sampled about
 * once a second under TCG and saw no stretch at all where one of 500 ms was.
 * Exit 1 (nothing on stdout) if the task cannot be read at either end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Fields 1-3 of /proc/PID/schedstat; 0 if the task is gone. */
static int read3(const char *path, long long v[3])
{
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%lld %lld %lld", &v[0], &v[1], &v[2]);
	fclose(f);
	return n == 3;
}

int main(int argc, char **argv)
{
	const struct timespec tick = { 0, 2000000 };	/* 2 ms */
	long long first[3], cur[3], last_run, t0, t, end, since, prev;
	long long longest = 0, gap = 0;
	char path[64];

	if (argc != 3 || atoll(argv[2]) <= 0) {
		fprintf(stderr, "usage: wait_watch PID MS\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s/schedstat", argv[1]);
	t0 = now_ns();
	if (!read3(path, first))
		return 1;
	end = t0 + atoll(argv[2]) * 1000000LL;
	last_run = first[0];
	since = prev = t0;
	cur[0] = first[0], cur[1] = first[1], cur[2] = first[2];
	for (;;) {
		nanosleep(&tick, NULL);
		if (!read3(path, cur))
			return 1;
		t = now_ns();
		if (t - prev > gap)
			gap = t - prev;
		prev = t;
		if (cur[0] != last_run) {
			last_run = cur[0];
			since = t;
		} else if (t - since > longest) {
			longest = t - since;
		}
		if (t >= end)
			break;
	}
	printf("%lld %lld %lld %lld %lld\n", longest / 1000000,
	       (cur[0] - first[0]) / 1000000, cur[2] - first[2],
	       (cur[1] - first[1]) / 1000000, gap / 1000000);
	return 0;
}
