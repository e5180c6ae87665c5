// SPDX-License-Identifier: GPL-2.0
/*
 * pi_boost [-g CGROUP_DIR] SECONDS: a priority-inheritance boost, over and
 * over. The main thread (joined to CGROUP_DIR first, so that it is tagged)
 * burns CPU and, every 50 ms, holds a PTHREAD_PRIO_INHERIT mutex for 5 ms;
 * a SCHED_FIFO thread asks for the mutex every 20 ms, so that it often
 * waits for it and the kernel lends the holder its RT priority until the
 * unlock (the holder leaves its scheduling class and comes back). Prints
 * "pi_boost pid=P boosts=N" at the end: N is how many times the RT thread
 * had to wait (a lower bound of the boosts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock;
static volatile int done;
static volatile unsigned long boosts;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void burn(double secs)
{
	volatile unsigned long sink = 0;
	double end = now() + secs;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

static void *rt_thread(void *arg)
{
	(void)arg;
	while (!done) {
		usleep(20000);
		if (pthread_mutex_trylock(&lock) == 0) {
			pthread_mutex_unlock(&lock);
			continue;
		}
		pthread_mutex_lock(&lock);
		boosts++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *cgroup = NULL;
	pthread_mutexattr_t ma;
	pthread_attr_t ta;
	struct sched_param sp = { .sched_priority = 10 };
	pthread_t t;
	double secs, end;
	int opt, err;

	while ((opt = getopt(argc, argv, "g:")) != -1) {
		if (opt != 'g') {
			fprintf(stderr, "usage: pi_boost [-g CGROUP_DIR] SECONDS\n");
			return 2;
		}
		cgroup = optarg;
	}
	if (optind != argc - 1 || (secs = atof(argv[optind])) <= 0) {
		fprintf(stderr, "usage: pi_boost [-g CGROUP_DIR] SECONDS\n");
		return 2;
	}
	if (cgroup) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		f = fopen(path, "w");
		if (!f || fprintf(f, "0\n") < 0 || fclose(f)) {
			fprintf(stderr, "pi_boost: join %s: %s\n", cgroup, strerror(errno));
			return 1;
		}
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&lock, &ma);
	pthread_attr_init(&ta);
	pthread_attr_setinheritsched(&ta, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&ta, SCHED_FIFO);
	pthread_attr_setschedparam(&ta, &sp);
	err = pthread_create(&t, &ta, rt_thread, NULL);
	if (err) {
		fprintf(stderr, "pi_boost: SCHED_FIFO thread: %s\n", strerror(err));
		return 1;
	}
	end = now() + secs;
	while (now() < end) {
		pthread_mutex_lock(&lock);
		burn(0.005);
		pthread_mutex_unlock(&lock);
		burn(0.045);
	}
	done = 1;
	pthread_join(t, NULL);
	printf("pi_boost pid=%d boosts=%lu\n", getpid(), boosts);
	return 0;
}
