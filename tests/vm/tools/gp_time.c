// SPDX-License-Identifier: GPL-2.0
/*
 * gp_time N: wait for N RCU grace periods, one after the other
 * (membarrier(MEMBARRIER_CMD_GLOBAL) is synchronize_rcu()), and print
 * "MEDIAN_US MAX_US" of their times.
 *
 * A grace period ends when every CPU has passed a quiescent state; one CPU
 * that does not, or a task preempted inside an RCU read-side section that
 * waits for its CPU, stretches every grace period, and rcu_preempt then
 * loops forcing quiescent states. The ratio of two runs side by side says
 * whether a scheduling state holds RCU up; one time alone says nothing
 * under TCG.
 */
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int i, n = argc > 1 ? atoi(argv[1]) : 0;
	long long *t, t0;

	if (n <= 0) {
		fprintf(stderr, "usage: gp_time N\n");
		return 2;
	}
	t = calloc(n, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < n; i++) {
		t0 = now_us();
		if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0)) {
			perror("membarrier(MEMBARRIER_CMD_GLOBAL)");
			return 1;
		}
		t[i] = now_us() - t0;
	}
	qsort(t, n, sizeof(*t), cmp);
	printf("%lld %lld\n", t[n / 2], t[n - 1]);
	return 0;
}
