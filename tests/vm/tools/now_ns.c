// SPDX-License-Identifier: GPL-2.0
/* now_ns: print CLOCK_MONOTONIC in ns (the clock of bpf_ktime_get_ns()). */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("%lld\n", ts.tv_sec * 1000000000LL + ts.tv_nsec);
	return 0;
}
