// SPDX-License-Identifier: GPL-2.0
/*
 * sched_state: wait for /sys/kernel/sched_ext/state to read STATE, timing it
 * precisely (a shell loop forking cat/awk under load adds tens of ms).
 *   sched_state STATE TIMEOUT_MS [PID]
 * With PID, sends it SIGKILL first and times from the kill. Prints
 * "state=STATE after_us=N" and exits 0, or exits 1 on timeout.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int state_is(const char *want)
{
	char buf[64] = "";
	FILE *f = fopen("/sys/kernel/sched_ext/state", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return !strcmp(buf, want);
}

int main(int argc, char **argv)
{
	long long t0, limit;
	const struct timespec tick = { 0, 200000 };	/* 0.2 ms */

	if (argc < 3 || argc > 4 || atoll(argv[2]) <= 0) {
		fprintf(stderr, "usage: sched_state STATE TIMEOUT_MS [PID]\n");
		return 2;
	}
	limit = atoll(argv[2]) * 1000;
	t0 = now_us();
	if (argc == 4 && kill(atoi(argv[3]), SIGKILL)) {
		perror("sched_state: kill");
		return 2;
	}
	while (!state_is(argv[1])) {
		if (now_us() - t0 > limit) {
			printf("state!=%s after_us=%lld (timeout)\n", argv[1], now_us() - t0);
			return 1;
		}
		nanosleep(&tick, NULL);
	}
	printf("state=%s after_us=%lld\n", argv[1], now_us() - t0);
	return 0;
}
