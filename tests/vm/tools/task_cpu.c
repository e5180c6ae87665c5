// SPDX-License-Identifier: GPL-2.0
/*
 * task_cpu PID CPU N MS: sample N times, MS milliseconds apart, the CPU the
 * kernel has PID on (/proc/PID/stat, field 39: task_cpu()) and print how many
 * samples found it on CPU, as "K N".
 *
 * One process sleeping between reads: a shell loop forking awk and usleep
 * every sample puts two short tasks per sample on a machine whose CPUs are
 * all in objects, and each of them splits an object to run (pinned_object:
 * the sampled task was on its representative in 14 of 20 samples in CI, 20
 * of 20 alone). The sampler should not be what moves the task it samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The task's CPU, or -1 if it is gone. */
static int task_cpu(const char *path)
{
	char buf[1024], *p;
	size_t len;
	int field, cpu = -1;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return -1;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* The name (field 2) may hold spaces and ')': count from the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	for (field = 2; field < 39 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		cpu = atoi(p + 1);
	return cpu;
}

int main(int argc, char **argv)
{
	struct timespec nap;
	char path[64];
	int cpu, n, i, c, on = 0;
	long ms;

	if (argc != 5 || (n = atoi(argv[3])) <= 0 || (ms = atol(argv[4])) <= 0) {
		fprintf(stderr, "usage: task_cpu PID CPU N MS\n");
		return 2;
	}
	cpu = atoi(argv[2]);
	snprintf(path, sizeof(path), "/proc/%s/stat", argv[1]);
	nap.tv_sec = ms / 1000;
	nap.tv_nsec = ms % 1000 * 1000000;
	for (i = 0; i < n; i++) {
		c = task_cpu(path);
		if (c < 0) {
			fprintf(stderr, "task_cpu: no task %s\n", argv[1]);
			return 1;
		}
		on += c == cpu;
		if (i + 1 < n)
			nanosleep(&nap, NULL);
	}
	printf("%d %d\n", on, n);
	return 0;
}
