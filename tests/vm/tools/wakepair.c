// SPDX-License-Identifier: GPL-2.0
/*
 * wakepair: a task woken onto an idle CPU at the moment an RT task wakes
 * there too, and how long it waited for a CPU, as the kernel accounts it.
 *   wakepair -r RT_CPU -w W_MASK -b BURST_MS -n ROUNDS
 * Two children: H, SCHED_FIFO 10 pinned to RT_CPU, spins BURST_MS each time
 * it is woken; W, allowed on the CPUs of hex W_MASK (RT_CPU among them),
 * does nothing but wait to be woken; the parent keeps the caller's affinity. Each round the parent wakes W and then H through pipes, one right
 * after the other, then waits for both to say they are done. W last ran on
 * RT_CPU (it was idle) so it is placed there again; H wakes there before
 * that CPU has switched to W, and picks first. Measured per round: W's
 * run_delay (/proc/self/schedstat, 2nd field) across the round, i.e. how
 * long it waited for a CPU while H ran. Prints
 * "wakepair rounds=N max_wait_ms=X over_half=K" (K: rounds in which W waited
 * more than half a burst).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long run_delay(void)
{
	unsigned long long run, delay;
	FILE *f = fopen("/proc/self/schedstat", "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu", &run, &delay);
	fclose(f);
	return n == 2 ? (long long)delay : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: wakepair -r RT_CPU -w W_MASK -b BURST_MS -n ROUNDS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int opt, rt_cpu = -1, burst_ms = 0, rounds = 0, over = 0;
	int to_h[2], to_w[2], from_h[2], from_w[2];
	unsigned long w_mask = 0;
	double worst = 0;
	pid_t h, w;
	char c;

	while ((opt = getopt(argc, argv, "r:w:b:n:")) != -1) {
		switch (opt) {
		case 'r': rt_cpu = atoi(optarg); break;
		case 'w': w_mask = strtoul(optarg, NULL, 16); break;
		case 'b': burst_ms = atoi(optarg); break;
		case 'n': rounds = atoi(optarg); break;
		default: usage();
		}
	}
	if (rt_cpu < 0 || rt_cpu >= 64 || !(w_mask & (1UL << rt_cpu)) ||
	    burst_ms <= 0 || rounds <= 0)
		usage();
	if (pipe(to_h) || pipe(to_w) || pipe(from_h) || pipe(from_w))
		return perror("pipe"), 1;

	h = fork();
	if (!h) {
		struct sched_param sp = { .sched_priority = 10 };
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(rt_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) ||
		    sched_setscheduler(0, SCHED_FIFO, &sp))
			return perror("wakepair: H"), 1;
		while (read(to_h[0], &c, 1) == 1) {
			double end = now() + burst_ms / 1e3;

			while (now() < end)
				;
			if (write(from_h[1], &c, 1) != 1)
				return 1;
		}
		return 0;
	}
	w = fork();
	if (!w) {
		cpu_set_t set;

		CPU_ZERO(&set);
		for (int i = 0; i < 64; i++)
			if (w_mask & (1UL << i))
				CPU_SET(i, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			return perror("wakepair: W"), 1;
		while (read(to_w[0], &c, 1) == 1) {
			long long d = run_delay();

			if (write(from_w[1], &d, sizeof(d)) != sizeof(d))
				return 1;
		}
		return 0;
	}
	if (h < 0 || w < 0)
		return perror("fork"), 1;

	for (int i = 0; i < rounds; i++) {
		long long d0, d1;

		/* W's run_delay before the round: wake it once, alone. */
		if (write(to_w[1], "x", 1) != 1 ||
		    read(from_w[0], &d0, sizeof(d0)) != sizeof(d0))
			return perror("wakepair: W"), 1;
		/* Let W go back to sleep and RT_CPU go idle. */
		usleep(20000);
		if (write(to_w[1], "x", 1) != 1 || write(to_h[1], "x", 1) != 1)
			return perror("wakepair: wake"), 1;
		if (read(from_w[0], &d1, sizeof(d1)) != sizeof(d1) ||
		    read(from_h[0], &c, 1) != 1)
			return perror("wakepair: round"), 1;
		if (d0 < 0 || d1 < d0)
			return fprintf(stderr, "wakepair: no schedstat\n"), 1;
		if ((d1 - d0) / 1e6 > worst)
			worst = (d1 - d0) / 1e6;
		if ((d1 - d0) / 1e6 > burst_ms / 2.0)
			over++;
	}
	/* Each child holds the other's pipes too: no EOF would reach them. */
	kill(h, SIGKILL);
	kill(w, SIGKILL);
	waitpid(h, NULL, 0);
	waitpid(w, NULL, 0);
	printf("wakepair rounds=%d max_wait_ms=%.1f over_half=%d\n", rounds, worst, over);
	return 0;
}
