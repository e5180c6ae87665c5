// SPDX-License-Identifier: GPL-2.0
/*
 * work: a stand-in program for the Chameleon figures (bench/), measured in
 * CPU time as the kernel accounts it.
 *   work [-t THREADS] [-m static|dynamic] [-k CHUNK_MS] [-g CGROUP_DIR]
 *        [-c CPU] [-N NAME] WORK_MS
 * Under the module's emulation a task's speed is the share of wall time it
 * gets to run (Chameleon §5.1), so a unit of work here is a millisecond of
 * the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), not a loop count,
 * which QEMU's TCG would make depend on how many vCPUs are busy.
 * - THREADS 1 (default): a CPU-bound sequential program (N-Queen's shape).
 * - static: every thread must do WORK_MS / THREADS (OpenMP static binding;
 *   the program ends with its slowest thread).
 * - dynamic: the threads take CHUNK_MS chunks (default 100) from a shared
 *   pool of WORK_MS until it is empty (dynamic binding: a faster thread
 *   does more). Each chunk overruns by what the thread CPU clock lets it
 *   see late: in the TCG guest ~4.5 ms, about a 4 ms tick (16 s of work
 *   in 10 ms chunks took 23.2 s of CPU, in 2 ms chunks 62 s, in 100 ms
 *   chunks 16.7 s), so chunks are long against a tick.
 * Joins CGROUP_DIR (so it is tagged) and pins to CPU before any thread
 * starts. Prints, when done:
 * "work pid=P threads=T mode=M work_ms=W wall_ms=X speedup=S" where
 * S = W / X is the CPUs' worth of time it got on average.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

static long long per_thread_ns, chunk_ns;
static atomic_llong pool_ns;
static int dynamic;

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Burn this thread's CPU until it has used @ns more of it. The clock is
 * read often: under TCG 20,000 rounds took milliseconds of CPU, so each
 * 10 ms chunk overran by half (dynamic binding did 1.45x its work).
 */
static void burn(long long ns)
{
	long long end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	volatile unsigned long long sink = 0;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 500; i++)
			sink += i * i;
}

static void *worker(void *arg)
{
	(void)arg;
	if (!dynamic) {
		burn(per_thread_ns);
		return NULL;
	}
	for (;;) {
		long long left = atomic_fetch_sub(&pool_ns, chunk_ns);

		if (left <= 0)
			return NULL;
		burn(left < chunk_ns ? left : chunk_ns);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: work [-t THREADS] [-m static|dynamic] [-k CHUNK_MS] [-g CGROUP_DIR] [-c CPU] [-N NAME] WORK_MS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *cgroup = NULL, *mode = "static";
	int opt, threads = 1, cpu = -1;
	long long work_ms, chunk_ms = 100, t0, wall;
	pthread_t *tids;
	char *tail;

	while ((opt = getopt(argc, argv, "t:m:k:g:c:N:")) != -1) {
		switch (opt) {
		case 't': threads = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 'k': chunk_ms = atoll(optarg); break;
		case 'g': cgroup = optarg; break;
		case 'c': cpu = atoi(optarg); break;
		case 'N': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
		default: usage();
		}
	}
	if (optind != argc - 1)
		usage();
	work_ms = strtoll(argv[optind], &tail, 10);
	if (*tail || work_ms <= 0 || threads < 1 || threads > 1024 || chunk_ms < 1)
		usage();
	if (!strcmp(mode, "dynamic"))
		dynamic = 1;
	else if (strcmp(mode, "static"))
		usage();

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("work: sched_setaffinity");
			return 1;
		}
	}
	if (cgroup) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		f = fopen(path, "w");
		if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f)) {
			perror("work: joining the cgroup");
			return 1;
		}
	}

	per_thread_ns = work_ms * 1000000LL / threads;
	chunk_ns = chunk_ms * 1000000LL;
	atomic_store(&pool_ns, work_ms * 1000000LL);
	tids = calloc(threads, sizeof(*tids));
	if (!tids)
		return 1;
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 1; i < threads; i++) {
		if (pthread_create(&tids[i], NULL, worker, NULL)) {
			fprintf(stderr, "work: pthread_create failed\n");
			return 1;
		}
	}
	worker(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(tids[i], NULL);
	wall = clock_ns(CLOCK_MONOTONIC) - t0;
	/* What it really used (the overrun of the last clock check included). */
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("work pid=%d threads=%d mode=%s work_ms=%lld wall_ms=%.1f speedup=%.3f cpu_ms=%.1f\n",
	       getpid(), threads, mode, work_ms, wall / 1e6, work_ms * 1e6 / wall,
	       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
	return 0;
}
