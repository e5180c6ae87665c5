// SPDX-License-Identifier: GPL-2.0
/*
 * wakestorm: one task wakes many in turn, each through its own pipe (a
 * sync wakeup, as a pipe's or a socket's writer makes), and the woken
 * tasks then run CPU-bound: hackbench's start, a server's fan-out.
 *   wakestorm N [FIRST-LAST]
 * Forks N children, each blocked in read() on its own pipe; with
 * FIRST-LAST, the children run only on those CPUs until the storm (so that
 * the CPU each last ran on is one the caller keeps busy), and the parent
 * gives them its own CPUs just before it. The parent
 * writes one byte to every pipe in turn, WARM_ROUNDS times, 20 ms apart
 * (each child reads it and blocks again): wakes of distinct tasks in a
 * row, so that a scheduler knows the parent as a waker of many. Then it
 * writes 'x' to every pipe in turn; a child woken by 'x' spins until
 * killed. Prints "wakestorm pids P1 ... PN" once the last 'x' is written,
 * then waits in wait() for its children (the caller kills them).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WARM_ROUNDS 4
#define MAX_N 1024

static void child(int fd)
{
	volatile unsigned long n = 0;
	char c;

	for (;;) {
		if (read(fd, &c, 1) != 1)
			_exit(1);
		if (c == 'x')
			break;
	}
	for (;;)
		n++;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	static int wfd[MAX_N];
	static pid_t pids[MAX_N];
	int n, i, r, fds[2];

	static cpu_set_t warm, mine;
	int first, last, c;

	n = argc >= 2 ? atoi(argv[1]) : 0;
	if (n < 1 || n > MAX_N || argc > 3) {
		fprintf(stderr, "usage: wakestorm N (1..%d) [FIRST-LAST]\n", MAX_N);
		return 2;
	}
	if (sched_getaffinity(0, sizeof(mine), &mine)) {
		perror("sched_getaffinity");
		return 1;
	}
	CPU_ZERO(&warm);
	if (argc == 3) {
		if (sscanf(argv[2], "%d-%d", &first, &last) != 2 || first < 0 || last < first ||
		    last >= CPU_SETSIZE) {
			fprintf(stderr, "wakestorm: bad CPU range '%s'\n", argv[2]);
			return 2;
		}
		for (c = first; c <= last; c++)
			CPU_SET(c, &warm);
	}
	for (i = 0; i < n; i++) {
		if (pipe(fds)) {
			perror("pipe");
			return 1;
		}
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			return 1;
		}
		if (!pids[i]) {
			close(fds[1]);
			if (CPU_COUNT(&warm) && sched_setaffinity(0, sizeof(warm), &warm)) {
				perror("sched_setaffinity");
				_exit(1);
			}
			child(fds[0]);
		}
		close(fds[0]);
		wfd[i] = fds[1];
	}
	nap_ms(100);
	for (r = 0; r < WARM_ROUNDS; r++) {
		for (i = 0; i < n; i++)
			if (write(wfd[i], "w", 1) != 1) {
				perror("write");
				return 1;
			}
		nap_ms(20);
	}
	for (i = 0; CPU_COUNT(&warm) && i < n; i++)
		if (sched_setaffinity(pids[i], sizeof(mine), &mine)) {
			perror("sched_setaffinity");
			return 1;
		}
	for (i = 0; i < n; i++)
		if (write(wfd[i], "x", 1) != 1) {
			perror("write");
			return 1;
		}
	printf("wakestorm pids");
	for (i = 0; i < n; i++)
		printf(" %d", pids[i]);
	printf("\n");
	fflush(stdout);
	while (wait(NULL) > 0)
		;
	return 0;
}
