// SPDX-License-Identifier: GPL-2.0
/*
 * exiter: processes that take a while to exit, and how long each waited for a
 * CPU while it exited, as the kernel accounts it.
 *   exiter [-m MB] SECONDS
 * For SECONDS of wall time: fork a child that touches MB (default 64) of
 * memory, reads its own run_delay (/proc/self/schedstat, 2nd field: time
 * spent runnable but not running), tells the parent and exits; freeing the
 * memory makes do_exit() long enough to be preempted in. The parent waits for
 * the zombie without reaping it (WNOWAIT), reads the child's run_delay again
 * and reaps it. The difference is the time the exiting task waited for a CPU.
 * Prints "exiter rounds=N max_exit_wait_ms=X" (X to 0.1 ms).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* run_delay of @pid in ns, or -1. */
static long long run_delay(const char *pid)
{
	unsigned long long run, delay;
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%s/schedstat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu", &run, &delay);
	fclose(f);
	return n == 2 ? (long long)delay : -1;
}

static void child(int fd, size_t bytes)
{
	char *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long d;

	if (mem == MAP_FAILED)
		_exit(1);
	for (size_t i = 0; i < bytes; i += 4096)
		mem[i] = 1;
	d = run_delay("self");
	if (write(fd, &d, sizeof(d)) != sizeof(d))
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	double secs, end, worst = 0;
	size_t mb = 64;
	long rounds = 0;
	int opt;

	while ((opt = getopt(argc, argv, "m:")) != -1) {
		if (opt != 'm' || atoi(optarg) <= 0) {
			fprintf(stderr, "usage: exiter [-m MB] SECONDS\n");
			return 2;
		}
		mb = atoi(optarg);
	}
	if (optind != argc - 1 || (secs = atof(argv[optind])) <= 0) {
		fprintf(stderr, "usage: exiter [-m MB] SECONDS\n");
		return 2;
	}
	end = now() + secs;
	while (now() < end) {
		long long d0, d1;
		char pid[24];
		siginfo_t si;
		int fds[2];
		pid_t p;

		if (pipe(fds))
			return perror("pipe"), 1;
		p = fork();
		if (p < 0)
			return perror("fork"), 1;
		if (!p) {
			close(fds[0]);
			child(fds[1], mb << 20);
		}
		close(fds[1]);
		if (read(fds[0], &d0, sizeof(d0)) != sizeof(d0) || d0 < 0) {
			fprintf(stderr, "exiter: child %d said nothing\n", p);
			return 1;
		}
		close(fds[0]);
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, p, &si, WEXITED | WNOWAIT))
			return perror("waitid"), 1;
		snprintf(pid, sizeof(pid), "%d", p);
		d1 = run_delay(pid);
		waitpid(p, NULL, 0);
		if (d1 < d0) {
			fprintf(stderr, "exiter: no schedstat for zombie %d\n", p);
			return 1;
		}
		if ((d1 - d0) / 1e6 > worst)
			worst = (d1 - d0) / 1e6;
		rounds++;
	}
	printf("exiter rounds=%ld max_exit_wait_ms=%.1f\n", rounds, worst);
	return 0;
}
