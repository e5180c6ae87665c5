// SPDX-License-Identifier: GPL-2.0
/*
 * pause: the runtime test's pod sandbox process (CRI's pause image). It
 * holds the pod's namespaces and does nothing until told to stop.
 */
#include <signal.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}

int main(void)
{
	signal(SIGTERM, stop);
	signal(SIGINT, stop);
	for (;;)
		pause();
}
